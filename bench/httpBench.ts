// HTTP benchmark: durable limit orders over HTTP from 100 concurrent connections against the real
// server (a child process, journal on disk, synchronous=FULL), beside a bare node:http server
// answering the same requests with a constant body, measured the same way in the same run. The
// targets are judged on autocannon; a lean load generator (leanLoad.ts) then measures the bare
// server and a second Strikebook started afresh (same setup, same state to meet), to show how much
// of the latency and of the bare server's rate is the generator's own on a small machine.
// Then (c): journal replay speed over the journal that run produced.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { leanLoad } from './leanLoad.ts';
import { ALTERNATED_SLICES, BOOTSTRAP, alternated, benchSeconds, benchServerArgs, call, cpuPerRequest, processCpuSeconds, spawnBareServer, spawnStrikebook, waitHttp, type Alternated, type LoadResult } from './support.ts';
import { measureReplay, replayJudged, replayLine } from './replayBench.ts';
import { atLeast, judgedText, type SectionResult } from './judged.ts';

export const CONNECTIONS = 100;
/** Issue 36: resting (durable) orders at >= 0.6 of the bare node:http server's requests/s. */
export const TARGET_RPS_RATIO = 0.6;
export const TARGET_P99_MS = 10;

interface AutocannonResult extends LoadResult {
  /** the first non-200 response, to explain a failed run */
  firstError: string | null;
}

interface Load {
  url: string;
  /** per connection: the sequence of (path, headers, body) it cycles through */
  plans: Array<Array<{ path: string; headers: Record<string, string>; body: string }>>;
  seconds: number;
}

/** Runs autocannon with one request plan per connection. */
export async function runLoad(load: Load): Promise<AutocannonResult> {
  let nextPlan = 0;
  let firstError: string | null = null;
  const result = await autocannon({
    url: load.url,
    connections: CONNECTIONS,
    duration: load.seconds,
    pipelining: 1,
    // autocannon resets a connection's context after each pass over `requests`, so the plan is
    // picked at the start of each pass and each step is its own entry
    requests: load.plans[0].map((_, idx) => ({
      method: 'POST',
      setupRequest: (req: any, context: any) => {
        if (context.plan === undefined) context.plan = load.plans[nextPlan++ % load.plans.length];
        const step = context.plan[idx];
        return { ...req, method: 'POST', path: step.path, headers: step.headers, body: step.body };
      },
      onResponse: (status: number, body: string) => {
        if (status !== 200 && firstError === null) firstError = `${status} ${body.slice(0, 300)}`;
      },
    })),
  } as any);
  const r = result as any;
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    total: r.requests.total,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    firstError,
  };
}


/**
 * `alternated` closed loops of autocannon on two servers (support.ts): each side pooled, with the
 * first refused request of any slice.
 */
export async function alternatedLoads(
  a: { load: Load; pid: number | undefined },
  b: { load: Load; pid: number | undefined },
  seconds: number,
): Promise<{ a: { r: AutocannonResult; server: string; client: string }; b: { r: AutocannonResult; server: string; client: string } }> {
  const runs = await alternated(
    { run: (sec) => runLoad({ ...a.load, seconds: sec }), pid: a.pid },
    { run: (sec) => runLoad({ ...b.load, seconds: sec }), pid: b.pid },
    seconds,
  );
  const side = (x: Alternated<AutocannonResult>) => ({
    r: { ...x.pooled, firstError: x.slices.find((r) => r.firstError !== null)?.firstError ?? null },
    server: x.server,
    client: x.client,
  });
  return { a: side(runs.a), b: side(runs.b) };
}

/** One measured load run, with the CPU per request of the server (all threads) and of this process. */
async function measured<R extends LoadResult>(pid: number | undefined, run: () => Promise<R>): Promise<{ r: R; server: string; client: string }> {
  const server0 = processCpuSeconds(pid);
  const client0 = process.cpuUsage();
  const r = await run();
  const client = process.cpuUsage(client0);
  const server1 = processCpuSeconds(pid);
  const clientPer = r.total > 0 ? `${((client.user + client.system) / r.total).toFixed(1)} us` : 'n/a';
  return { r, server: cpuPerRequest(server0, server1, r.total), client: clientPer };
}

function fmt(label: string, r: LoadResult, indent = ''): string {
  return (
    `${indent}${label.padEnd(34 - indent.length)} ${Math.round(r.rps).toString().padStart(7)} req/s  p50 ${r.p50.toFixed(2)} ms  ` +
    `p99 ${r.p99.toFixed(2)} ms  (${r.total} requests, ${r.non2xx} non-2xx, ${r.errors} errors)`
  );
}

/**
 * Setup on a started server: one user per connection, each funded, each cycling over 20 instruments
 * with buys below the mark and sells above it, so every order is accepted and rests (a durable write).
 */
export async function preparePlans(base: string): Promise<Load['plans']> {
  await call(base, 'private/create_admin', { email: 'bench-admin@example.com', password: 'bench-password', bootstrap_token: BOOTSTRAP });
  const admin = (await call(base, 'public/auth', { grant_type: 'password', username: 'bench-admin@example.com', password: 'bench-password' })).access_token;
  const instruments = (await call(base, 'public/get_instruments', { currency: 'BTC' })) as any[];
  const chosen = instruments.filter((i) => i.settlement_period !== 'day').slice(0, 400);
  const books = await Promise.all(chosen.map((i) => call(base, 'public/get_order_book', { instrument_name: i.instrument_name, depth: 1 })));
  const tradable = books.filter((b) => b.max_price >= 0.0006 && b.min_price <= b.max_price - 0.0005);
  const plans: Load['plans'] = [];
  for (let u = 0; u < CONNECTIONS; u++) {
    const email = `bench-${u}@example.com`;
    const user = await call(base, 'private/create_user', { email, password: 'bench-password' }, admin);
    const token = (await call(base, 'public/auth', { grant_type: 'password', username: email, password: 'bench-password' })).access_token;
    await call(base, 'private/deposit_collateral', { currency: 'BTC', amount: 100000, user_id: user.user_id }, admin);
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
    const plan: Load['plans'][number] = [];
    for (let k = 0; k < 20; k++) {
      const b = tradable[(u * 7 + k) % tradable.length];
      const low = b.max_price < 0.005 ? b.min_price : Math.max(0.005, Math.ceil(b.min_price / 0.0005) * 0.0005);
      const high = b.max_price < 0.005 ? b.max_price : Math.floor(b.max_price / 0.0005) * 0.0005;
      plan.push({ path: '/v1/private/buy', headers, body: JSON.stringify({ instrument_name: b.instrument_name, amount: 0.1, price: Number(low.toFixed(4)), type: 'limit' }) });
      plan.push({ path: '/v1/private/sell', headers, body: JSON.stringify({ instrument_name: b.instrument_name, amount: 0.1, price: Number(high.toFixed(4)), type: 'limit' }) });
    }
    plans.push(plan);
  }
  // every planned order must be accepted: check one of each side before measuring
  for (const step of plans[0].slice(0, 2)) {
    const r = await fetch(`${base}${step.path}`, { method: 'POST', headers: step.headers, body: step.body });
    const body = (await r.json()) as any;
    if (body.error) throw new Error(`bench order refused: ${step.body} -> ${JSON.stringify(body.error)}`);
  }
  return plans;
}

export async function runHttpBench(opts: { seconds?: number } = {}): Promise<SectionResult> {
  const seconds = opts.seconds ?? benchSeconds(10);
  const lines: string[] = [];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-bench-'));
  let keepData = false;
  const port = 21000 + Math.floor(Math.random() * 10000);
  const barePort = port + 1;
  const base = `http://127.0.0.1:${port}`;
  const profileArgs = [...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF] : []), ...benchServerArgs()];
  const server = spawnStrikebook(port, dataDir, profileArgs);
  const bare = spawnBareServer(barePort, JSON.stringify({ jsonrpc: '2.0', result: 'hello' }));
  const leanDataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-bench-'));
  let leanServer: ChildProcess | null = null;
  try {
    await waitHttp(`${base}/health`);
    await waitHttp(`http://127.0.0.1:${barePort}/`);

    const plans = await preparePlans(base);
    const barePlans: Load['plans'] = plans.map((p) => p.map((s) => ({ ...s, path: '/' })));

    // both warmed up, then measured in alternated slices
    const { a: bareAc, b: sbAc } = await alternatedLoads(
      { load: { url: `http://127.0.0.1:${barePort}`, plans: barePlans, seconds }, pid: bare.pid },
      { load: { url: base, plans, seconds }, pid: server.pid },
      seconds,
    );
    lines.push(`${ALTERNATED_SLICES} alternated slices of ${seconds / ALTERNATED_SLICES} s per server (p50 and p99: the worst slice's):`);
    lines.push(fmt('bare node:http (constant body)', bareAc.r));
    lines.push(fmt('Strikebook durable limit orders', sbAc.r));
    lines.push(
      `CPU per request: bare server ${bareAc.server}, Strikebook ${sbAc.server} (all threads); ` +
        `load generator ${bareAc.client} / ${sbAc.client} (it shares the machine's cores)`,
    );
    if (sbAc.r.firstError) lines.push(`first refused request: ${sbAc.r.firstError}`);
    const resting = atLeast('httpResting', sbAc.r.rps, bareAc.r.rps, 'req/s', TARGET_RPS_RATIO);
    const rpsOk = resting.pass;
    const p99Ok = sbAc.r.p99 <= TARGET_P99_MS;
    lines.push(judgedText(resting));
    lines.push(`p99 ${sbAc.r.p99.toFixed(2)} ms (issue 16's target <= ${TARGET_P99_MS} ms): ${p99Ok ? 'PASS' : 'FAIL'}`);

    // the cross-check, on a second server started afresh, so that it meets the state the first met
    const leanPort = port + 2;
    leanServer = spawnStrikebook(leanPort, leanDataDir, profileArgs);
    await waitHttp(`http://127.0.0.1:${leanPort}/health`);
    const leanPlans = await preparePlans(`http://127.0.0.1:${leanPort}`);
    await leanLoad(barePort, barePlans, 2);
    const bareLean = await measured(bare.pid, () => leanLoad(barePort, barePlans, seconds));
    await leanLoad(leanPort, leanPlans, 2);
    const sbLean = await measured(leanServer.pid, () => leanLoad(leanPort, leanPlans, seconds));
    leanServer.kill('SIGKILL');
    lines.push('cross-check with a lean load generator (requests encoded once, bench/leanLoad.ts); not the judged figures:');
    lines.push(fmt('bare node:http', bareLean.r, '  '));
    lines.push(fmt('Strikebook durable limit orders', sbLean.r, '  '));
    lines.push(`  CPU per request: bare server ${bareLean.server}, Strikebook ${sbLean.server}; load generator ${bareLean.client} / ${sbLean.client}`);
    lines.push(`  ratio ${(sbLean.r.rps / bareLean.r.rps).toFixed(3)} of bare, p99 ${sbLean.r.p99.toFixed(2)} ms`);

    const status = await fetch(`${base}/health`).then((r) => r.json() as Promise<{ seq: number }>);
    lines.push(`journal records after the run: ${status.seq}`);
    // the live engine's state, which the replay of its journal must reach (issue 36's acceptance)
    const admin = (await call(base, 'public/auth', { grant_type: 'password', username: 'bench-admin@example.com', password: 'bench-password' })).access_token;
    const live = (await call(base, 'private/get_state_hash', {}, admin)) as { seq: number; state_hash: string };

    // (c) replay: stop the server, replay its whole journal from seq 0 on a fresh engine (the judged
    // replay figure: the journal of real requests, resting orders)
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    const replay = measureReplay(dataDir);
    lines.push(replayLine(replay));
    // nothing is journaled after the hash was read (manual index, no load), so the replay of every
    // record is the state the server held then
    if (replay.records !== live.seq || replay.hash !== live.state_hash) {
      throw new Error(`http bench: the replay of ${replay.records} records reached state hash ${replay.hash}, the live server ${live.state_hash} at seq ${live.seq}`);
    }
    lines.push(`the replay reached the live server's state hash at seq ${live.seq} (${live.state_hash.slice(0, 16)}...)`);
    if (process.env.BENCH_KEEP_DATA === '1') {
      keepData = true;
      lines.push(`journal kept (BENCH_KEEP_DATA=1): ${dataDir}`);
    }
    const replayLineJudged = replayJudged(replay);
    return { lines, ok: rpsOk && p99Ok && replay.records > 0 && replayLineJudged.pass, judged: [resting, replayLineJudged] };
  } finally {
    server.kill('SIGKILL');
    leanServer?.kill('SIGKILL');
    bare.kill('SIGKILL');
    if (!keepData) rmSync(dataDir, { recursive: true, force: true });
    rmSync(leanDataDir, { recursive: true, force: true });
  }
}
