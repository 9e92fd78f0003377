// Fan-out through stream gateways (src/gateway/) beside the single process: the same 1,000
// connections on `book.X.raw` + `trades.X.raw` for 10 instruments and the same steady order flow,
// served (a) by the engine process itself (no NATS), (b) by 1 gateway, (c) by 2 gateways (half the
// connections each), the engine publishing each durable batch once to NATS JetStream.
//
// Reported per run: deliveries/s, the delay from the batch's commit on the engine (its onCommitted)
// to arrival at the client (p50/p99), and CPU: the engine process (this one: order flow + journal +
// fan-out or NATS publishing), each gateway (from its /metrics), per 1,000 deliveries. On 2 cores
// the gateways, nats-server, the clients and the engine share the machine, so absolute figures are
// contended; the per-delivery costs are what the sizing model of docs/operations.md uses.
//
// Runs alone: `node --import tsx bench/gatewayBench.ts` (needs NATS at NATS_URL or 127.0.0.1:4222).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { performance as nodePerformance } from 'node:perf_hooks';
import pino from 'pino';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { loadConfig } from '../src/app/config.ts';
import { startExchange } from '../src/app/services.ts';
import { fanoutMarket } from './fanoutMarket.ts';
import { forkBenchClients } from './support.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '..');
const CONNECTIONS = Number(process.env.BENCH_GW_CONNECTIONS || 1000);
/** Order flow: every FLOW_MS, on every instrument, a resting ask and a buy taking the best ask. */
const FLOW_MS = Number(process.env.BENCH_GW_FLOW_MS || 50);
const INSTRUMENTS = 10;
const CLIENT_PROCESSES = 2;
const WARMUP_MS = 2_000;
const MEASURE_MS = 8_000;
const NATS_URL = process.env.NATS_URL || 'nats://127.0.0.1:4222';

interface RunResult {
  label: string;
  perSec: number;
  p50: number;
  p99: number;
  unmatched: number;
  engineCpu: number;
  /** the engine thread's busy time (event loop utilization), seconds: process CPU also counts the journal and NATS threads */
  engineBusy: number;
  gatewayCpu: number[];
  clientCpu: number;
  cmdsPerSec: number;
}

async function gatewayCpuSeconds(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = /\nprocess_cpu_seconds_total (\S+)/.exec(text);
  return m ? Number(m[1]) : NaN;
}

async function spawnGateway(env: Record<string, string>): Promise<{ url: string; proc: ChildProcess }> {
  // a port the OS just gave out (free a moment ago)
  const port = await new Promise<number>((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => resolve(typeof a === 'object' && a !== null ? a.port : 0));
    });
  });
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/gateway/main.ts')], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', STRIKEBOOK_WS_MAX_BUFFERED: String(16 * 1024 * 1024), STRIKEBOOK_WS_MAX_CONNECTIONS_PER_IP: '2000',
      // every bench client comes from 127.0.0.1, and those subscribing with an access_token each hold
      // an upstream to the leader (the default of 32 per address refused them with 10028)
      STRIKEBOOK_GATEWAY_MAX_UPSTREAMS: '4000', STRIKEBOOK_GATEWAY_MAX_UPSTREAMS_PER_IP: '2000' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (proc.exitCode !== null) throw new Error('gateway exited');
    if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) return { url, proc };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('gateway did not start');
}

async function run(label: string, gateways: number): Promise<RunResult> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-gwbench-'));
  const tag = randomBytes(4).toString('hex');
  const natsEnv: Record<string, string> = gateways > 0 ? { NATS_URL, STRIKEBOOK_NATS_STREAM: `SBBENCH_${tag}`, STRIKEBOOK_NATS_SUBJECT_PREFIX: `sbbench_${tag}`, STRIKEBOOK_NATS_MAX_AGE: '300' } : {};
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    STRIKEBOOK_DATA_DIR: dataDir,
    STRIKEBOOK_BOOTSTRAP_TOKEN: 'bench-bootstrap-token-0123456789',
    STRIKEBOOK_INDEX_FEED: 'manual',
    STRIKEBOOK_DEMO_MAKER: '0',
    STRIKEBOOK_WS_MAX_BUFFERED: String(16 * 1024 * 1024),
    STRIKEBOOK_WS_MAX_CONNECTIONS_PER_IP: '2000',
    STRIKEBOOK_MAX_CONNECTIONS_PER_IP: '2000',
    STRIKEBOOK_RATE_LIMITS: '0',
    LOG_LEVEL: 'silent',
    ...natsEnv,
  });
  const app = await startExchange(config, pino({ level: 'silent' }));
  const s = app.services;
  const flow: Array<() => void> = [];
  const gws: Array<{ url: string; proc: ChildProcess }> = [];
  let clients: ChildProcess[] = [];
  let killClients = () => {};
  try {
    const { ladders, startFlow } = await fanoutMarket(s, INSTRUMENTS);

    // commit time of every book change and last trade of a batch: the delay's reference in every mode
    const published = new Map<string, number>();
    const seenChange = new Map<number, number>();
    const hub = app.ws.hub;
    const inner = hub.onBatch;
    // onBatch runs when a batch is sealed (the state is then the batch's own); what it returns runs
    // once the batch is durable: the keys are read at the seal, the commit time taken at the commit
    hub.onBatch = (batch, cmds) => {
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
        const at = performance.timeOrigin + performance.now();
        for (const k of keys) published.set(k, at);
        post?.();
      };
    };

    for (let g = 0; g < Math.max(0, gateways); g++) gws.push(await spawnGateway({ STRIKEBOOK_LEADER_URL: app.url, ...natsEnv }));
    const targets = gateways === 0 ? [app.url] : gws.map((g) => g.url);
    const nClients = gateways < 0 ? 0 : CLIENT_PROCESSES;
    const forked = forkBenchClients(nClients);
    ({ clients, kill: killClients } = forked);
    const fromClients = forked.from;
    // raw channels need an authenticated connection: the bench clients use an administrator's token
    const post = async (method: string, body: Record<string, unknown>) => ((await (await fetch(`${app.url}/api/v2/${method}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as { result: any }).result;
    await post('private/create_admin', { email: 'bench-admin@example.com', password: 'bench-password-1', bootstrap_token: 'bench-bootstrap-token-0123456789' });
    const accessToken = (await post('public/auth', { grant_type: 'password', username: 'bench-admin@example.com', password: 'bench-password-1' })).access_token as string;
    const channels = ladders.flatMap((l) => [`book.${l.inst.name}.raw`, `trades.${l.inst.name}.raw`]);
    const ready = fromClients((m) => (m.ready ? true : undefined));
    clients.forEach((c, i) => c.send({ url: targets[i % targets.length]!.replace(/^http/, 'ws') + '/ws/api/v2', connections: CONNECTIONS / CLIENT_PROCESSES, channels, accessToken }));
    await ready;

    flow.push(startFlow(FLOW_MS));
    await new Promise((r) => setTimeout(r, WARMUP_MS));
    const start = performance.timeOrigin + performance.now();
    const cpu0 = process.cpuUsage();
    const elu0 = nodePerformance.eventLoopUtilization();
    const gwCpu0 = await Promise.all(gws.map((g) => gatewayCpuSeconds(g.url)));
    const cmds0 = s.ex.seq;
    for (const c of clients) c.send({ window: [start, start + MEASURE_MS] });
    for (let w = 0; w < MEASURE_MS; w += 1000) {
      await new Promise((r) => setTimeout(r, 1000));
      if (process.env.BENCH_GW_DEBUG) console.log("leader", (await (await fetch(`${app.url}/metrics`)).text()).split("\n").filter((l) => l.startsWith("strikebook_nats")).join(" "));
      if (process.env.BENCH_GW_DEBUG) for (const g of gws) console.log(g.url, (await (await fetch(`${g.url}/metrics`)).text()).split('\n').filter((l) => l.startsWith('strikebook_')).join(' '), JSON.stringify(await (await fetch(`${g.url}/health`)).json()));
    }
    const cpu = process.cpuUsage(cpu0);
    const elu = nodePerformance.eventLoopUtilization(elu0);
    const gwCpu = (await Promise.all(gws.map((g) => gatewayCpuSeconds(g.url)))).map((v, i) => v - gwCpu0[i]!);
    const cmdsIn = s.ex.seq - cmds0;
    for (const stop of flow) stop();
    await new Promise((r) => setTimeout(r, 500));
    const results = fromClients((m) => m.result as { deliveries: number; unmatched: number; hist: number[]; cpu: number } | undefined);
    for (const c of clients) c.send({ publish: [...published] });
    const parts = clients.length > 0 ? await results : [{ deliveries: 0, unmatched: 0, hist: [0], cpu: 0 }];
    const hist = parts[0]!.hist.map((_, b) => parts.reduce((sum, p) => sum + p.hist[b]!, 0));
    const total = hist.reduce((a, b) => a + b, 0);
    const quantile = (q: number) => {
      let acc = 0;
      for (let b = 0; b < hist.length; b++) if ((acc += hist[b]!) >= q * total) return (b + 1) / 10;
      return NaN;
    };
    const deliveries = parts.reduce((a, p) => a + p.deliveries, 0);
    return {
      label,
      perSec: deliveries / (MEASURE_MS / 1000),
      p50: quantile(0.5),
      p99: quantile(0.99),
      unmatched: parts.reduce((a, p) => a + p.unmatched, 0),
      engineCpu: (cpu.user + cpu.system) / 1e6,
      engineBusy: elu.active / 1000,
      gatewayCpu: gwCpu,
      clientCpu: parts.reduce((a, p) => a + p.cpu, 0),
      cmdsPerSec: cmdsIn / (MEASURE_MS / 1000),
    };
  } finally {
    for (const stop of flow) stop();
    killClients();
    for (const g of gws) g.proc.kill('SIGTERM');
    await app.close();
    rmSync(dataDir, { recursive: true, force: true });
    if (gateways > 0) {
      const nc = await connect({ servers: NATS_URL });
      const jsm = await jetstreamManager(nc);
      await jsm.streams.delete(natsEnv.STRIKEBOOK_NATS_STREAM!).catch(() => undefined);
      await nc.close();
    }
  }
}

export async function runGatewayBench(): Promise<{ lines: string[]; ok: boolean }> {
  try {
    const nc = await connect({ servers: NATS_URL, timeout: 2000, maxReconnectAttempts: 0 });
    await nc.close();
  } catch (err) {
    return { ok: false, lines: [`SKIPPED: NATS not reachable at ${NATS_URL} (${err instanceof Error ? err.message : String(err)})`] };
  }
  const runs: RunResult[] = [];
  // -1: the same order flow with no subscriber (the engine's own cost, subtracted below)
  const modes = (process.env.BENCH_GW_MODES || '-1,0,1,2').split(',').map(Number);
  for (const n of modes) runs.push(await run(n < 0 ? 'no subscribers' : n === 0 ? 'single process' : `${n} gateway${n > 1 ? 's' : ''}`, n));
  const base = runs.find((r) => r.label === 'no subscribers');
  /** engine CPU seconds above the no-subscriber run's, per command, for this run's order flow */
  const streamingCpu = (r: RunResult) => (base ? r.engineCpu - (base.engineCpu / base.cmdsPerSec) * r.cmdsPerSec : NaN);
  const streamingBusy = (r: RunResult) => (base ? r.engineBusy - (base.engineBusy / base.cmdsPerSec) * r.cmdsPerSec : NaN);
  const lines = [`${CONNECTIONS} connections (${CLIENT_PROCESSES} client processes) on book.X.raw + trades.X.raw, ${INSTRUMENTS} instruments; delay = arrival - the batch's commit on the engine; CPU in core-seconds per 1,000 deliveries`];
  for (const r of runs) {
    const k = (r.perSec * (MEASURE_MS / 1000)) / 1000;
    const streaming = k > 0 ? `; above the no-subscriber run, per 1,000 deliveries: process CPU ${((streamingCpu(r) / k) * 1000).toFixed(2)} ms, engine thread busy ${((streamingBusy(r) / k) * 1000).toFixed(2)} ms` : '';
    const gw = r.gatewayCpu.length === 0 ? '-' : r.gatewayCpu.map((c) => `${((c / k) * 1000).toFixed(1)} ms`).join(' + ');
    lines.push(
      `${r.label.padEnd(15)} ${Math.round(r.perSec)} deliveries/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, unmatched ${r.unmatched}; order flow ${Math.round(r.cmdsPerSec)} cmds/s; ` +
        `engine process CPU ${Math.round((r.engineCpu / (MEASURE_MS / 1000)) * 100)}%, engine thread busy ${Math.round((r.engineBusy / (MEASURE_MS / 1000)) * 100)}%${k > 0 ? ` = ${((r.engineCpu / k) * 1000).toFixed(1)} ms per 1,000 deliveries` : ''}; gateways ${gw} per 1,000; clients ${Math.round(r.clientCpu * 100)}% of a core${streaming}`,
    );
  }
  const single = runs.find((r) => r.label === 'single process');
  const one = runs.find((r) => r.label === '1 gateway');
  if (single && one) {
    lines.push(
      `with 1 gateway / single process, same order flow: engine thread busy ${((one.engineBusy / single.engineBusy) * 100).toFixed(0)}%, engine process CPU ${((one.engineCpu / single.engineCpu) * 100).toFixed(0)}% (its NATS thread included)`,
    );
  }
  // a gateway path that loses or invents messages is a failure; speed is reported, not judged here
  const ok = runs.every((r) => r.unmatched === 0 && (r.label === 'no subscribers' || r.perSec > 0));
  lines.push(ok ? 'OK' : 'FAIL');
  return { ok, lines };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runGatewayBench().then(
    (r) => {
      for (const l of r.lines) console.log(l);
      process.exit(r.ok ? 0 : 1);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
