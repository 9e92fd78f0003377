// What moving WebSocket socket work off the engine thread would buy (issue 36's WebSocket line), sized
// with a toy before anyone builds it into the server. The toy's "engine" spends a fixed CPU time per
// order (SPIN_US, default 14 us: about what Strikebook's engine thread spends per answer besides the
// frame's read and parse and the answer's framing and write) and answers with ~1 KB of JSON, as an
// order's answer is. Three servers, driven in turns with the `ws` echo server by the WebSocket
// section's own client (`drive`: 100 connections, 8 requests outstanding each):
//   single         one thread: sockets, parse, engine, answer writes (Strikebook's shape today);
//   worker-text    a worker thread owns the sockets and hands the engine thread each event-loop
//                  turn's frames as one message of texts, and writes the answers it gets back (one
//                  message per batch, corked per socket);
//   worker-parsed  the same, the frames parsed on the worker (the engine thread gets clones).
// Prints messages/s, the engine (main) thread's and the whole process's CPU per message, and each
// server's ratio to the reference (the echo server) of the same round.
//
// With `http` the same three shapes serve HTTP orders instead (node:http, one ~300-byte POST, a
// ~1 KB answer, the answers of a turn written together), driven by autocannon as the durable-orders
// section drives its servers, beside that section's bare `node:http` server (a constant body).
//
//   node --import tsx bench/socketThreadToy.ts [rounds=3] [seconds=6] [ws|http]   (SPIN_US=14)
//
// A toy, not the design: Node cannot hand an accepted socket to a worker thread, so a real version
// needs the HTTP server (with the upgrade) on that thread too, the engine thread getting requests
// from it; see docs/performance.md, "eighteenth stop".
import { spawn } from 'node:child_process';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import WebSocket, { WebSocketServer } from 'ws';
import { drive, spawnEchoServer, type WsLoad, type WsPlan } from './wsOrdersBench.ts';
import { processCpuSeconds, runIfMain, spawnBareServer, waitHttp } from './support.ts';
import { runLoad } from './httpBench.ts';
import { startTsWorker } from '../src/journal/tsWorker.ts';

const MODES = ['single', 'worker-text', 'worker-parsed'] as const;
type Mode = (typeof MODES)[number];
type Transport = 'ws' | 'http';
const SPIN_US = Number(process.env.SPIN_US ?? 14);
const PAD = 'x'.repeat(900);

interface ToyRequest {
  id: number;
  params: { instrument_name: string };
}

function spin(us: number): void {
  const end = performance.now() + us / 1000;
  while (performance.now() < end);
}

/** The engine's part of one order: fixed CPU, then a ~1 KB answer. */
function engine(req: ToyRequest): string {
  spin(SPIN_US);
  return `{"jsonrpc":"2.0","id":${req.id},"result":{"order":{"order_id":"ETH-${req.id}","instrument_name":"${req.params.instrument_name}","label":"${PAD}"},"trades":[]},"usIn":1,"usOut":2,"usDiff":1,"testnet":true}`;
}

/**
 * Gathers (id, text) pairs arriving within one event-loop turn and hands them to `onBatch` as
 * [id, text, id, text, ...] after it: one hand-over per turn, as the sequencer's group commit makes.
 */
function perTurn(onBatch: (batch: Array<number | string>) => void): (id: number, text: string) => void {
  let batch: Array<number | string> | null = null;
  return (id, text) => {
    if (batch === null) {
      batch = [];
      setImmediate(() => {
        const b = batch!;
        batch = null;
        onBatch(b);
      });
    }
    batch.push(id, text);
  };
}

/** Frames as [connection, text, connection, text, ...] once per turn; returns the answers' writer. */
function serveSockets(port: number, onBatch: (batch: Array<number | string>) => void): (answers: Array<number | string>) => void {
  const wss = new WebSocketServer({ port, host: '127.0.0.1', perMessageDeflate: false, maxPayload: 1 << 20 });
  const conns: WebSocket[] = [];
  const collect = perTurn(onBatch);
  wss.on('connection', (ws) => {
    const id = conns.push(ws) - 1;
    ws.on('message', (data) => collect(id, (data as Buffer).toString()));
  });
  // `_socket` is ws's own: corking it makes one write of all of a batch's answers to a connection
  const socketOf = (ws: WebSocket) => (ws as unknown as { _socket: { cork(): void; uncork(): void } })._socket;
  return (answers) => {
    const corked = new Set<WebSocket>();
    for (let i = 0; i < answers.length; i += 2) {
      const ws = conns[answers[i] as number]!;
      if (!corked.has(ws)) {
        corked.add(ws);
        socketOf(ws).cork();
      }
      ws.send(answers[i + 1] as string);
    }
    for (const ws of corked) socketOf(ws).uncork();
  };
}

/** HTTP requests' bodies as [request, body, ...] once per turn; returns the answers' writer. */
function serveHttp(port: number, onBatch: (batch: Array<number | string>) => void): (answers: Array<number | string>) => void {
  const pending = new Map<number, ServerResponse>();
  let nextId = 0;
  const collect = perTurn(onBatch);
  http
    .createServer((req: IncomingMessage, res: ServerResponse) => {
      // the readiness probe's GET
      if (req.method !== 'POST') {
        req.resume();
        res.writeHead(404).end();
        return;
      }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const id = nextId++;
        pending.set(id, res);
        collect(id, Buffer.concat(chunks).toString());
      });
    })
    .listen(port, '127.0.0.1');
  return (answers) => {
    for (let i = 0; i < answers.length; i += 2) {
      const res = pending.get(answers[i] as number)!;
      pending.delete(answers[i] as number);
      const body = answers[i + 1] as string;
      res.writeHead(200, ['content-type', 'application/json', 'content-length', String(Buffer.byteLength(body))]);
      res.end(body);
    }
  };
}

function serve(port: number, mode: Mode, transport: Transport): void {
  const serveTransport = transport === 'http' ? serveHttp : serveSockets;
  if (mode === 'single') {
    const send = serveTransport(port, (b) => {
      const out: Array<number | string> = [];
      for (let i = 0; i < b.length; i += 2) out.push(b[i]!, engine(JSON.parse(b[i + 1] as string) as ToyRequest));
      send(out);
    });
    return;
  }
  const w = startTsWorker(new URL(import.meta.url), { port, mode, transport });
  w.on('message', (b: unknown[]) => {
    const out: Array<number | string> = [];
    for (let i = 0; i < b.length; i += 2) out.push(b[i] as number, engine((mode === 'worker-text' ? JSON.parse(b[i + 1] as string) : b[i + 1]) as ToyRequest));
    w.postMessage(out);
  });
}

function socketThread(): void {
  const { port, mode, transport } = workerData as { port: number; mode: Mode; transport: Transport };
  const send = (transport === 'http' ? serveHttp : serveSockets)(port, (b) => {
    if (mode === 'worker-parsed') for (let i = 1; i < b.length; i += 2) b[i] = JSON.parse(b[i] as string) as never;
    parentPort!.postMessage(b);
  });
  parentPort!.on('message', send);
}

/** One autocannon run (the durable-orders section's 100 connections) with CPU per request. */
async function httpLoad(port: number, pid: number | undefined, seconds: number, body: string) {
  const server0 = processCpuSeconds(pid);
  const engine0 = processCpuSeconds(pid, `/proc/${pid}/task/${pid}/stat`);
  const client0 = process.cpuUsage();
  const plan = [{ path: '/api/v2', headers: { 'content-type': 'application/json', authorization: `Bearer ${'a'.repeat(64)}` }, body }];
  const r = await runLoad({ url: `http://127.0.0.1:${port}`, plans: Array.from({ length: 100 }, () => plan), seconds });
  const client = process.cpuUsage(client0);
  const per = (a: number | null, b: number | null) => (a === null || b === null ? NaN : ((b - a) * 1e6) / Math.max(1, r.total));
  return { perSec: r.rps, p99: r.p99, serverCpuUs: per(server0, processCpuSeconds(pid)), engineCpuUs: per(engine0, processCpuSeconds(pid, `/proc/${pid}/task/${pid}/stat`)), clientCpuUs: (client.user + client.system) / Math.max(1, r.total) };
}

const line = (label: string, l: Pick<WsLoad, 'perSec' | 'engineCpuUs' | 'serverCpuUs' | 'clientCpuUs' | 'p99'>, referencePerSec: number) =>
  `${label.padEnd(14)} ${l.perSec.toFixed(0).padStart(7)} /s = ${(l.perSec / referencePerSec).toFixed(3)} of the reference  engine thread ${l.engineCpuUs.toFixed(1)} us  process ${l.serverCpuUs.toFixed(1)} us  load generator ${l.clientCpuUs.toFixed(1)} us  p99 ${l.p99.toFixed(1)} ms`;

async function main(): Promise<{ lines: string[]; ok: boolean }> {
  const rounds = Number(process.argv[2] ?? 3);
  const seconds = Number(process.argv[3] ?? 6);
  const transport: Transport = process.argv[4] === 'http' ? 'http' : 'ws';
  const token = 'a'.repeat(64);
  const plans: WsPlan[] = Array.from({ length: 100 }, (_, i) => ({
    request: JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: 'private/buy', params: { instrument_name: 'BTC-27MAR26-100000-C', amount: 0.1, type: 'limit', price: 0.05, label: 'bench', access_token: token } }),
  }));
  let port = 31_000 + Math.floor(Math.random() * 1000);
  console.log(`${transport}: engine work per order ${SPIN_US} us (SPIN_US); ${rounds} rounds of ${seconds} s per server, in turns`);
  const bareBody = engine({ id: 1, params: { instrument_name: 'BTC-27MAR26-100000-C' } });
  for (let r = 0; r < rounds; r++) {
    const reference = transport === 'http' ? spawnBareServer(++port, bareBody) : spawnEchoServer(++port);
    await waitHttp(`http://127.0.0.1:${port}/`);
    const ref = transport === 'http' ? await httpLoad(port, reference.pid, seconds, plans[0]!.request) : await drive(`ws://127.0.0.1:${port}`, plans, seconds, reference.pid);
    reference.kill('SIGKILL');
    console.log(line(transport === 'http' ? 'bare node:http' : 'ws echo', ref, ref.perSec));
    for (const mode of MODES) {
      const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), 'serve', String(++port), mode, transport], { stdio: ['ignore', 'inherit', 'inherit'], env: process.env });
      await waitHttp(`http://127.0.0.1:${port}/`);
      const l = transport === 'http' ? await httpLoad(port, child.pid, seconds, plans[0]!.request) : await drive(`ws://127.0.0.1:${port}`, plans, seconds, child.pid);
      child.kill('SIGKILL');
      console.log(line(mode, l, ref.perSec));
    }
  }
  return { lines: [], ok: true };
}

if (!isMainThread) socketThread();
else if (process.argv[2] === 'serve') serve(Number(process.argv[3]), process.argv[4] as Mode, process.argv[5] as Transport);
else runIfMain(import.meta.url, main);
