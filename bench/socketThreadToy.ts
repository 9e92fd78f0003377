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
// server's ratio to the echo server of the same round.
//
//   node --import tsx bench/socketThreadToy.ts [rounds=3] [seconds=6]   (SPIN_US=14)
//
// A toy, not the design: Node cannot hand an accepted socket to a worker thread, so a real version
// needs the HTTP server (with the upgrade) on that thread too, the engine thread getting requests
// from it; see docs/performance.md, "eighteenth stop".
import { spawn } from 'node:child_process';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import WebSocket, { WebSocketServer } from 'ws';
import { drive, spawnEchoServer, type WsLoad, type WsPlan } from './wsOrdersBench.ts';
import { runIfMain, waitHttp } from './support.ts';
import { startTsWorker } from '../src/journal/tsWorker.ts';

const MODES = ['single', 'worker-text', 'worker-parsed'] as const;
type Mode = (typeof MODES)[number];
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

/** Frames as [connection, text, connection, text, ...] once per turn; returns the answers' writer. */
function serveSockets(port: number, onBatch: (batch: Array<number | string>) => void): (answers: Array<number | string>) => void {
  const wss = new WebSocketServer({ port, host: '127.0.0.1', perMessageDeflate: false, maxPayload: 1 << 20 });
  const conns: WebSocket[] = [];
  let batch: Array<number | string> | null = null;
  wss.on('connection', (ws) => {
    const id = conns.push(ws) - 1;
    ws.on('message', (data) => {
      if (batch === null) {
        batch = [];
        setImmediate(() => {
          const b = batch!;
          batch = null;
          onBatch(b);
        });
      }
      batch.push(id, (data as Buffer).toString());
    });
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

function serve(port: number, mode: Mode): void {
  if (mode === 'single') {
    const send = serveSockets(port, (b) => {
      const out: Array<number | string> = [];
      for (let i = 0; i < b.length; i += 2) out.push(b[i]!, engine(JSON.parse(b[i + 1] as string) as ToyRequest));
      send(out);
    });
    return;
  }
  const w = startTsWorker(new URL(import.meta.url), { port, mode });
  w.on('message', (b: unknown[]) => {
    const out: Array<number | string> = [];
    for (let i = 0; i < b.length; i += 2) out.push(b[i] as number, engine((mode === 'worker-text' ? JSON.parse(b[i + 1] as string) : b[i + 1]) as ToyRequest));
    w.postMessage(out);
  });
}

function socketThread(): void {
  const { port, mode } = workerData as { port: number; mode: Mode };
  const send = serveSockets(port, (b) => {
    if (mode === 'worker-parsed') for (let i = 1; i < b.length; i += 2) b[i] = JSON.parse(b[i] as string) as never;
    parentPort!.postMessage(b);
  });
  parentPort!.on('message', send);
}

const line = (label: string, l: WsLoad, echo: number) =>
  `${label.padEnd(14)} ${l.perSec.toFixed(0).padStart(7)} msg/s = ${(l.perSec / echo).toFixed(3)} of the echo  engine thread ${l.engineCpuUs.toFixed(1)} us  process ${l.serverCpuUs.toFixed(1)} us  load generator ${l.clientCpuUs.toFixed(1)} us  p99 ${l.p99.toFixed(1)} ms`;

async function main(): Promise<{ lines: string[]; ok: boolean }> {
  const rounds = Number(process.argv[2] ?? 3);
  const seconds = Number(process.argv[3] ?? 6);
  const token = 'a'.repeat(64);
  const plans: WsPlan[] = Array.from({ length: 100 }, (_, i) => ({
    request: JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: 'private/buy', params: { instrument_name: 'BTC-27MAR26-100000-C', amount: 0.1, type: 'limit', price: 0.05, label: 'bench', access_token: token } }),
  }));
  let port = 31_000 + Math.floor(Math.random() * 1000);
  console.log(`engine work per order ${SPIN_US} us (SPIN_US); ${rounds} rounds of ${seconds} s per server, in turns`);
  for (let r = 0; r < rounds; r++) {
    const echoServer = spawnEchoServer(++port);
    await waitHttp(`http://127.0.0.1:${port}/`);
    const echo = await drive(`ws://127.0.0.1:${port}`, plans, seconds, echoServer.pid);
    echoServer.kill('SIGKILL');
    console.log(line('ws echo', echo, echo.perSec));
    for (const mode of MODES) {
      const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), 'serve', String(++port), mode], { stdio: ['ignore', 'inherit', 'inherit'], env: process.env });
      await waitHttp(`http://127.0.0.1:${port}/`);
      const l = await drive(`ws://127.0.0.1:${port}`, plans, seconds, child.pid);
      child.kill('SIGKILL');
      console.log(line(mode, l, echo.perSec));
    }
  }
  return { lines: [], ok: true };
}

if (!isMainThread) socketThread();
else if (process.argv[2] === 'serve') serve(Number(process.argv[3]), process.argv[4] as Mode);
else runIfMain(import.meta.url, main);
