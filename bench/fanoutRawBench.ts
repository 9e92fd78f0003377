// Issue 36's fan-out line: 1,000 connections on `book.X.raw` + `trades.X.raw` for 10 instruments
// with a steady order flow (every FLOW_MS, on every instrument, a resting ask and a buy taking the
// best ask; bench/fanoutMarket.ts), served by the engine process itself; the delivery delay counts
// from the commit of the batch a notification shows (its hub.onBatch's durable callback: a raw
// round is written once its batch is durable) to the client's read of the bytes.
//
// The reference, in the same run: a bare `ws` server (bench/bareFanoutServer.ts) writing the same
// frames to the same clients. One client connection keeps the payload of every notification it
// timed (bench/wsBenchClient.ts `capture`); they are grouped into the rounds Strikebook wrote (the
// notifications of one batch, by commit time) and replayed on the same schedule to 1,000 fresh
// connections of the same client processes, each round's frames joined once and the same bytes
// written to every socket as Strikebook's hub does; the delay counts from the moment the bare
// server began writing the round. Target: Strikebook's p99 <= 1.5x the bare server's.
//
// The two runs follow each other (the frames have to exist before they are replayed), so a change
// of the machine's load between them is not evened out as the alternated sections do.
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { loadConfig } from '../src/app/config.ts';
import { startExchange } from '../src/app/services.ts';
import { fanoutMarket } from './fanoutMarket.ts';
import { atMost, judgedText, type SectionResult } from './judged.ts';
import { forkBenchClients, runIfMain } from './support.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CONNECTIONS = Number(process.env.BENCH_FANOUT_CONNECTIONS || 1000);
const INSTRUMENTS = 10;
const CLIENT_PROCESSES = 2;
/** The gateway section's order flow (bench/gatewayBench.ts), so the two raw figures compare. */
const FLOW_MS = Number(process.env.BENCH_FANOUT_FLOW_MS || 50);
const WARMUP_MS = 2_000;
const MEASURE_MS = Number(process.env.BENCH_FANOUT_MEASURE_MS || 8_000);
const TARGET_P99_RATIO = 1.5;
/** issue 36's line for a piece of engine work */
const STALL_MS = 2;

interface ClientResult {
  deliveries: number;
  unmatched: number;
  hist: number[];
  max: number;
  cpu: number;
  captured: Array<[key: string, payload: string]>;
}

interface Delivered {
  deliveries: number;
  unmatched: number;
  p50: number;
  p99: number;
  max: number;
  /** the client processes' CPU, in cores */
  clientCpu: number;
}

const wall = () => performance.timeOrigin + performance.now();

/** The clients' delays merged (0.1 ms buckets, bench/wsBenchClient.ts) into quantiles. */
function merged(parts: ClientResult[]): Delivered {
  const hist = parts[0]!.hist.map((_, b) => parts.reduce((sum, p) => sum + p.hist[b]!, 0));
  const total = hist.reduce((a, b) => a + b, 0);
  const quantile = (q: number) => {
    let acc = 0;
    for (let b = 0; b < hist.length; b++) if ((acc += hist[b]!) >= q * total) return (b + 1) / 10;
    return NaN;
  };
  return {
    deliveries: parts.reduce((a, p) => a + p.deliveries, 0),
    unmatched: parts.reduce((a, p) => a + p.unmatched, 0),
    p50: quantile(0.5),
    p99: quantile(0.99),
    max: Math.max(...parts.map((p) => p.max)),
    clientCpu: parts.reduce((a, p) => a + p.cpu, 0),
  };
}

/** A round to replay: when it was due after the window's start, its notifications' keys and payloads. */
interface Round {
  offsetMs: number;
  keys: string[];
  payloads: string[];
}

/** The engine thread's fan-out pieces in the window (strikebook_engine_work_seconds{work="stream_fanout"}:
 *  a batch's render at its seal, the first slice of its writes at its commit, each later slice), ms. */
interface FanoutPieces {
  durations: number[];
  /** the process's CPU in each piece (the journal's and GC helpers' threads included), ms: on a
   *  loaded machine a piece's wall time includes the time the thread waited for a core */
  cpu: number[];
  /** sockets written per slice of writes */
  writes: number[];
}

/** Strikebook's run: the delays, its CPU, its fan-out pieces, and the rounds its captured connection received. */
async function strikebookRun(): Promise<{ d: Delivered; rounds: Round[]; cmdsPerSec: number; serverCpu: number; pieces: FanoutPieces }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-fanoutraw-'));
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    STRIKEBOOK_DATA_DIR: dataDir,
    STRIKEBOOK_BOOTSTRAP_TOKEN: 'bench-bootstrap-token-0123456789',
    STRIKEBOOK_INDEX_FEED: 'manual',
    STRIKEBOOK_DEMO_MAKER: '0',
    STRIKEBOOK_WS_MAX_BUFFERED: String(16 * 1024 * 1024),
    // all bench clients connect from 127.0.0.1
    STRIKEBOOK_WS_MAX_CONNECTIONS_PER_IP: '2000',
    STRIKEBOOK_MAX_CONNECTIONS_PER_IP: '2000',
    STRIKEBOOK_RATE_LIMITS: '0',
    LOG_LEVEL: 'silent',
  });
  const app = await startExchange(config, pino({ level: 'silent' }));
  const s = app.services;
  const flow: Array<() => void> = [];
  const { clients, from, kill } = forkBenchClients(CLIENT_PROCESSES);
  try {
    const { ladders, startFlow } = await fanoutMarket(s, INSTRUMENTS);
    // the commit time of every book change and last trade of a batch (as bench/gatewayBench.ts):
    // the keys are read when the batch is sealed, the time taken when it is durable
    const committed = new Map<string, number>();
    const seenChange = new Map<number, number>();
    const inner = app.ws.hub.onBatch;
    app.ws.hub.onBatch = (batch, cmds) => {
      const keys: string[] = [];
      for (const l of ladders) {
        const c = s.ex.markets.get(l.inst.id)!.changeId;
        if (seenChange.get(l.inst.id) !== c) {
          seenChange.set(l.inst.id, c);
          keys.push(`book.${l.inst.name}.raw|${c}`);
        }
      }
      const lastTrade = new Map<string, string>();
      for (const t of batch.trades) lastTrade.set(t.inst.name, String(t.id));
      for (const [name, id] of lastTrade) keys.push(`trades.${name}.raw|${id}`);
      const post = inner?.(batch, cmds) ?? null;
      return () => {
        const at = wall();
        for (const k of keys) committed.set(k, at);
        post?.();
      };
    };
    // raw channels need an authenticated connection: the clients use an administrator's token
    const post = async (method: string, body: Record<string, unknown>) =>
      ((await (await fetch(`${app.url}/api/v2/${method}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as { result: any }).result;
    await post('private/create_admin', { email: 'bench-admin@example.com', password: 'bench-password-1', bootstrap_token: 'bench-bootstrap-token-0123456789' });
    const accessToken = (await post('public/auth', { grant_type: 'password', username: 'bench-admin@example.com', password: 'bench-password-1' })).access_token as string;
    const channels = ladders.flatMap((l) => [`book.${l.inst.name}.raw`, `trades.${l.inst.name}.raw`]);
    const ready = from((m) => (m.ready ? true : undefined));
    const url = app.url.replace(/^http/, 'ws') + '/ws/api/v2';
    clients.forEach((c, i) => c.send({ url, connections: CONNECTIONS / CLIENT_PROCESSES, channels, accessToken, capture: i === 0 }));
    await ready;

    // every fan-out piece the engine-work metric times, and the writes of each slice, in the window
    const pieces: FanoutPieces = { durations: [], cpu: [], writes: [] };
    let measuring = false;
    const work = s.metrics.work.bind(s.metrics);
    s.metrics.work = (kind, seconds) => {
      if (measuring && kind === 'stream_fanout') pieces.durations.push(seconds * 1000);
      work(kind, seconds);
    };
    // the same pieces' CPU: the hub's entry points that services.ts times as stream_fanout
    const hubPieces = app.ws.hub as unknown as Record<'onSealed' | 'onCommitted' | 'drainTurn', (...a: unknown[]) => void>;
    for (const name of ['onSealed', 'onCommitted', 'drainTurn'] as const) {
      const inner = hubPieces[name].bind(app.ws.hub);
      hubPieces[name] = (...a: unknown[]) => {
        const cpu0 = process.cpuUsage();
        inner(...a);
        const cpu = process.cpuUsage(cpu0);
        if (measuring) pieces.cpu.push((cpu.user + cpu.system) / 1000);
      };
    }
    app.ws.hub.onPiece = (writes) => {
      if (measuring) pieces.writes.push(writes);
    };

    flow.push(startFlow(FLOW_MS));
    await new Promise((r) => setTimeout(r, WARMUP_MS));
    measuring = true;
    const start = wall();
    const cpu0 = process.cpuUsage();
    const cmds0 = s.ex.seq;
    for (const c of clients) c.send({ window: [start, start + MEASURE_MS] });
    await new Promise((r) => setTimeout(r, MEASURE_MS));
    const cpu = process.cpuUsage(cpu0);
    measuring = false;
    const cmdsPerSec = (s.ex.seq - cmds0) / (MEASURE_MS / 1000);
    for (const stop of flow) stop();
    await new Promise((r) => setTimeout(r, 500));
    const results = from((m) => m.result as ClientResult | undefined);
    for (const c of clients) c.send({ publish: [...committed] });
    const parts = await results;
    // the captured connection's notifications in the rounds they were written in: one batch's
    // notifications share its commit time (a notification whose key was not committed is left out:
    // it is counted as unmatched above)
    const rounds: Round[] = [];
    for (const [key, payload] of parts[0]!.captured) {
      const at = committed.get(key);
      if (at === undefined) continue;
      const last = rounds[rounds.length - 1];
      if (last !== undefined && last.offsetMs === at - start) {
        last.keys.push(key);
        last.payloads.push(payload);
      } else rounds.push({ offsetMs: at - start, keys: [key], payloads: [payload] });
    }
    return { d: merged(parts), rounds, cmdsPerSec, serverCpu: (cpu.user + cpu.system) / 1e6, pieces };
  } finally {
    for (const stop of flow) stop();
    kill();
    await app.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The reference's run: the same rounds on the same schedule from a bare ws server to fresh connections. */
async function bareRun(rounds: Round[], channels: string[]): Promise<{ d: Delivered; serverCpu: number; lateMs: number }> {
  const server = fork(path.join(HERE, 'bareFanoutServer.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { clients, from, kill } = forkBenchClients(CLIENT_PROCESSES);
  try {
    const port = await new Promise<number>((resolve, reject) => {
      server.once('message', (m: { port: number }) => resolve(m.port));
      server.once('exit', (code) => reject(new Error(`bare fan-out server exited (${code})`)));
    });
    const ready = from((m) => (m.ready ? true : undefined));
    clients.forEach((c) => c.send({ url: `ws://127.0.0.1:${port}/`, connections: CONNECTIONS / CLIENT_PROCESSES, channels }));
    await ready;
    // its window starts a moment from now (the schedule must reach the server first)
    const start = wall() + 500;
    const done = new Promise<{ starts: number[]; cpuSeconds: number }>((resolve) => server.once('message', resolve));
    server.send({ rounds: rounds.map((r) => [start + r.offsetMs, r.payloads]) });
    // every replayed frame counts, however late the bare server began its round (under load its
    // timers fire late): its window closes only once the last round is written and read
    for (const c of clients) c.send({ window: [start - 1_000, start + MEASURE_MS + 60_000] });
    const { starts, cpuSeconds } = await done;
    await new Promise((r) => setTimeout(r, 500));
    const results = from((m) => m.result as ClientResult | undefined);
    const began: Array<[string, number]> = rounds.flatMap((r, i) => r.keys.map((k): [string, number] => [k, starts[i]!]));
    for (const c of clients) c.send({ publish: began });
    const lateMs = Math.max(0, ...starts.map((t, i) => t - (start + rounds[i]!.offsetMs)));
    return { d: merged(await results), serverCpu: cpuSeconds, lateMs };
  } finally {
    kill();
    server.kill('SIGKILL');
  }
}

export async function runFanoutRawBench(): Promise<SectionResult> {
  const sb = await strikebookRun();
  if (sb.rounds.length === 0) return { ok: false, lines: ['no notification captured: nothing to replay from the bare server'] };
  const channels = [...new Set(sb.rounds.flatMap((r) => r.keys.map((k) => k.slice(0, k.indexOf('|')))))];
  const bare = await bareRun(sb.rounds, channels);
  const perSec = (d: Delivered) => Math.round(d.deliveries / (MEASURE_MS / 1000));
  const perDelivery = (cpuSeconds: number, d: Delivered) => `${((cpuSeconds * 1e6) / Math.max(1, d.deliveries)).toFixed(2)} us`;
  const row = (label: string, d: Delivered, cpu: string) =>
    `${label.padEnd(34)} ${perSec(d)} deliveries/s, p50 ${d.p50.toFixed(1)} ms, p99 ${d.p99.toFixed(1)} ms, max ${d.max.toFixed(1)} ms, unmatched ${d.unmatched}; ` +
    `server CPU per delivery ${cpu}; clients ${Math.round(d.clientCpu * 100)}% of a core`;
  const judged = atMost('fanout', sb.d.p99, bare.d.p99, 'ms', TARGET_P99_RATIO);
  // a fan-out that loses or invents messages is a failure whatever its delays
  if (sb.d.unmatched > 0 || bare.d.unmatched > 0) judged.pass = false;
  const frames = sb.rounds.reduce((n, r) => n + r.payloads.length, 0);
  const spread = (v: number[]) => {
    const o = [...v].sort((a, b) => a - b);
    const at = (q: number) => (o.length === 0 ? NaN : o[Math.min(o.length - 1, Math.floor(q * o.length))]!).toFixed(2);
    return `${o.filter((x) => x > STALL_MS).length} over ${STALL_MS} ms, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, longest ${at(1)} ms`;
  };
  return {
    ok: judged.pass,
    judged: [judged],
    lines: [
      `${CONNECTIONS} connections (${CLIENT_PROCESSES} client processes) on book.X.raw + trades.X.raw, ${INSTRUMENTS} instruments, order flow ${Math.round(sb.cmdsPerSec)} commands/s; ${MEASURE_MS / 1000} s each, Strikebook first, then the reference`,
      row('Strikebook (commit -> arrival)', sb.d, `${perDelivery(sb.serverCpu, sb.d)} (order flow and journal included)`),
      row('bare ws server (round start -> arrival)', bare.d, perDelivery(bare.serverCpu, bare.d)),
      `engine work stream_fanout (seal renders, commits' first slices, later slices; not judged here: the open loop judges it): ${sb.pieces.durations.length} pieces, ${spread(sb.pieces.durations)}; ` +
        `their process CPU ${spread(sb.pieces.cpu)}; ${sb.pieces.writes.length} slices of writes, at most ${Math.max(0, ...sb.pieces.writes)} sockets each`,
      `the reference replayed ${sb.rounds.length} rounds, ${frames} frames per connection (${frames * CONNECTIONS} deliveries), on Strikebook's schedule (a round began at most ${bare.lateMs.toFixed(1)} ms after it was due)`,
      judgedText(judged),
    ],
  };
}

runIfMain(import.meta.url, () => runFanoutRawBench());
