// Orders over WebSocket (issue 16): 100 connections, each streaming JSON-RPC private/buy or
// private/sell (the crossing users' orders: about half trade) with up to WINDOW requests
// outstanding, as a quoting bot does (a socket is not a request-reply channel: a bot sends its
// orders without waiting for each answer); beside a bare `ws` echo server that sends every message
// back, driven the same way in the same run, the two alternated (echo, Strikebook, Strikebook, echo).
// Target (issue 36): >= 0.6 of the echo server's messages/s.
//
// With one request outstanding per connection, order throughput is bounded by 100 / the journal's
// commit time (every answer waits for its batch to be durable), not by the server's CPU.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { benchAdmin, crossingPlans, tradableBooks } from './benchAccounts.ts';
import { atLeast, judgedText, type SectionResult } from './judged.ts';
import { benchSeconds, benchServerArgs, processCpuSeconds, runIfMain, spawnNode, spawnStrikebook, stopGracefully, waitHttp } from './support.ts';

const TARGET_RATIO = 0.6;
/** Requests a connection keeps outstanding. */
const WINDOW = 8;

/** One connection's request, encoded once (a private one carries its access_token, API.md 1.1). */
export interface WsPlan {
  request: string;
}

export interface WsLoad {
  messages: number;
  perSec: number;
  p50: number;
  p99: number;
  errors: number;
  /** the first error answer's error object (cut to 200 characters), or null */
  firstError: string | null;
  /** CPU microseconds per answer of the load generator (this process) and of the server process. */
  clientCpuUs: number;
  serverCpuUs: number;
  /** The server's main (engine) thread alone: the journal's worker thread is not in it. */
  engineCpuUs: number;
  /** every answer's latency, ms, sorted */
  latencies: number[];
}

/** CPU seconds of a process's main thread (its task with the process's own id), null without /proc. */
function mainThreadCpuSeconds(pid: number | undefined): number | null {
  return pid === undefined ? null : processCpuSeconds(pid, `/proc/${pid}/task/${pid}/stat`);
}

export function spawnEchoServer(port: number) {
  const source = `
const { WebSocketServer } = require('ws');
new WebSocketServer({ port: ${port}, host: '127.0.0.1' }).on('connection', (ws) => ws.on('message', (data, binary) => ws.send(data, { binary })));
`;
  return spawnNode(['-e', source], {});
}

async function open(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return ws;
}

/** One request per connection: the crossing users' orders, as JSON-RPC frames carrying their token. */
export async function wsPlans(base: string, admin: string): Promise<WsPlan[]> {
  return (await crossingPlans(base, admin, (await tradableBooks(base)).slice(0, 5))).map(([step], id) => ({
    request: JSON.stringify({
      jsonrpc: '2.0',
      id: id + 1,
      method: step!.path.slice('/v1/'.length),
      params: { ...JSON.parse(step!.body), access_token: step!.headers.authorization!.slice('Bearer '.length) },
    }),
  }));
}

/** Every connection sends its request, then the next as soon as an answer arrives, for `seconds`. */
export async function drive(url: string, plans: WsPlan[], seconds: number, serverPid?: number): Promise<WsLoad> {
  const sockets = await Promise.all(plans.map(() => open(url)));
  const latencies: number[] = [];
  // both sides' CPU: if the generator spends as much per answer as the echo server, the echo rate
  // says as much about the generator as about the server (the ratio would flatter Strikebook)
  const client0 = process.cpuUsage();
  const server0 = processCpuSeconds(serverPid);
  const engine0 = mainThreadCpuSeconds(serverPid);
  let errors = 0;
  let firstError: string | null = null;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    sockets.map(
      (ws, i) =>
        new Promise<void>((resolve) => {
          const request = plans[i]!.request;
          // answers come back in order on one connection (one engine thread, batches in order)
          const sentAt: number[] = [];
          let head = 0;
          let outstanding = 0;
          const send = () => {
            if (performance.now() >= end) {
              if (outstanding === 0) resolve();
              return;
            }
            sentAt.push(performance.now());
            outstanding++;
            ws.send(request);
          };
          ws.on('message', (data) => {
            latencies.push(performance.now() - sentAt[head++]!);
            outstanding--;
            if ((data as Buffer).includes('"error"')) {
              errors++;
              firstError ??= /"error":(\{[^}]*\})/.exec(data.toString())?.[1]?.slice(0, 200) ?? data.toString().slice(0, 200);
            }
            send();
          });
          ws.on('close', () => resolve());
          for (let k = 0; k < WINDOW; k++) send();
        }),
    ),
  );
  const client = process.cpuUsage(client0);
  const server1 = processCpuSeconds(serverPid);
  const engine1 = mainThreadCpuSeconds(serverPid);
  for (const ws of sockets) ws.terminate();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? NaN;
  const n = Math.max(1, latencies.length);
  return {
    messages: latencies.length,
    perSec: latencies.length / seconds,
    p50: at(0.5),
    p99: at(0.99),
    errors,
    firstError,
    clientCpuUs: (client.user + client.system) / n,
    serverCpuUs: server0 === null || server1 === null ? NaN : ((server1 - server0) * 1e6) / n,
    engineCpuUs: engine0 === null || engine1 === null ? NaN : ((engine1 - engine0) * 1e6) / n,
    latencies,
  };
}

/** Two runs of one side as one: rates over both, quantiles of both runs' latencies together. */
function combine(a: WsLoad, b: WsLoad): WsLoad {
  const n = a.messages + b.messages;
  const latencies = [...a.latencies, ...b.latencies].sort((x, y) => x - y);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? NaN;
  const mean = (f: (r: WsLoad) => number) => (f(a) * a.messages + f(b) * b.messages) / Math.max(1, n);
  return {
    messages: n,
    perSec: n / (a.messages / a.perSec + b.messages / b.perSec),
    p50: at(0.5),
    p99: at(0.99),
    errors: a.errors + b.errors,
    firstError: a.firstError ?? b.firstError,
    clientCpuUs: mean((r) => r.clientCpuUs),
    serverCpuUs: mean((r) => r.serverCpuUs),
    engineCpuUs: mean((r) => r.engineCpuUs),
    latencies,
  };
}

/** The journal's counters from /metrics: batches, records, and the seconds batches took to commit. */
async function journalStats(base: string): Promise<{ batches: number; records: number; commitSeconds: number }> {
  const text = await fetch(`${base}/metrics`).then((r) => r.text());
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { batches: value('strikebook_journal_batches_total'), records: value('strikebook_journal_records_total'), commitSeconds: value('strikebook_journal_commit_seconds_sum') };
}

export const fmt = (label: string, r: WsLoad) =>
  `${label.padEnd(32)} ${Math.round(r.perSec).toString().padStart(7)} msg/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  (${r.messages} answers, ${r.errors} errors${r.firstError === null ? '' : `, first ${r.firstError}`})  ` +
  `CPU per answer: server ${r.serverCpuUs.toFixed(1)} us (main thread ${r.engineCpuUs.toFixed(1)}), load generator ${r.clientCpuUs.toFixed(1)} us`;

export async function runWsOrdersBench(opts: { seconds?: number } = {}): Promise<SectionResult> {
  const seconds = opts.seconds ?? benchSeconds(10);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-wsorders-'));
  const port = 21000 + Math.floor(Math.random() * 10000);
  const echoPort = port + 1;
  const base = `http://127.0.0.1:${port}`;
  // all bench connections come from 127.0.0.1
  const server = spawnStrikebook(port, dataDir, benchServerArgs(), { STRIKEBOOK_WS_MAX_CONNECTIONS_PER_IP: '1000' });
  const echo = spawnEchoServer(echoPort);
  try {
    await waitHttp(`${base}/health`);
    const admin = await benchAdmin(base);
    const plans = await wsPlans(base, admin);
    const echoPlans = plans;
    await waitHttp(`http://127.0.0.1:${echoPort}`).catch(() => undefined);
    await drive(`ws://127.0.0.1:${echoPort}`, echoPlans, 2);
    await drive(`${base.replace('http', 'ws')}/ws/api/v2`, plans, 2);
    // echo, Strikebook, Strikebook, echo (half the time each): a load that drifts over the section
    // (other processes of the machine) weighs on both sides alike; back to back, two runs of the
    // same code gave ratios of 0.17 and 0.32 at load 6-7
    const half = seconds / 2;
    const echoRun = () => drive(`ws://127.0.0.1:${echoPort}`, echoPlans, half, echo.pid);
    const sbRun = () => drive(`${base.replace('http', 'ws')}/ws/api/v2`, plans, half, server.pid);
    const e1 = await echoRun();
    const journal0 = await journalStats(base);
    const s1 = await sbRun();
    const s2 = await sbRun();
    const journal1 = await journalStats(base);
    const e2 = await echoRun();
    const bare = combine(e1, e2);
    const sb = combine(s1, s2);
    const batches = journal1.batches - journal0.batches;
    const judged = atLeast('wsOrders', sb.perSec, bare.perSec, 'msg/s', TARGET_RATIO);
    // an order refused is not an order served: errors fail the line as well
    if (sb.errors > 0) judged.pass = false;
    const ok = judged.pass;
    return {
      lines: [
        fmt('bare ws echo', bare),
        fmt('Strikebook crossing orders', sb),
        `(${WINDOW} requests outstanding per connection; ${batches} journal batches of ${(batches > 0 ? (journal1.records - journal0.records) / batches : 0).toFixed(1)} records, ` +
          `${(batches > 0 ? ((journal1.commitSeconds - journal0.commitSeconds) / batches) * 1000 : 0).toFixed(2)} ms from hand-over to durable on average)`,
        judgedText(judged) + (sb.errors > 0 ? ` (${sb.errors} error answers)` : ''),
      ],
      ok,
      judged: [judged],
    };
  } finally {
    await stopGracefully(server);
    echo.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, () => runWsOrdersBench());
