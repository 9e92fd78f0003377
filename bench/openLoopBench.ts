// Orders as users send them, under the state a busy venue holds (issues 16 and 36):
// (a) crossing orders: 10 users, buyers and sellers at one price, so about half of the orders trade,
//     closed loop over 100 connections beside the bare node:http server (the resting-only figure is
//     the HTTP section's); judged: >= 0.5 of the bare server's requests/s;
// (b) open loop: the same orders on a fixed schedule at half of (a)'s measured rate, latency from
//     the scheduled start (p50/p99/p99.9/max), beside the bare server on the same schedule (in
//     alternated slices, so that both see the same machine), with the simulated index feed moving
//     every mark once a second, 10,000 resting orders and 2,000 positions held; and the engine
//     thread's stalls in that run, from the server's own /metrics (strikebook_event_loop_delay_seconds:
//     how long the thread was held; engine work by kind), and each server's threads over its slices
//     from the scheduler's own accounts (bench/threadTimes.ts: the engine thread's run time and its
//     wait for a core, the other threads' run time), which tell a thread working from one waiting.
// Judged (issue 36), each against the bare server in the same run: order p99 <= 3x the bare
// server's on the same schedule; event-loop samples held past 2 ms <= 2x the bare server's, counted
// by the same sampler (on these 2-core virtual machines a bare node:http server answering a constant
// body is held past 2 ms too: issue 16's absolute "none past 2 ms" is below the machine's floor);
// and no piece of the engine's own work (market tick, liquidation scan slice, which runs the PM
// recompute, stream fan-out) over 2 ms: its own time, a GC pause inside it left out (and printed;
// GC is judged with the event-loop samples).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { alternatedLoads } from './httpBench.ts';
import type { LeanStep } from './leanLoad.ts';
import { CONNECTIONS, account, benchAdmin, crossingPlans, gridPrice, pool, tradableBooks } from './benchAccounts.ts';
import { openLoop, pooled, type OpenLoopResult } from './openLoop.ts';
import { atLeast, atMost, judgedText, zero, type SectionResult } from './judged.ts';
import { addWindow, emptyWindow, readThreadTimes, threadWindowText } from './threadTimes.ts';
import { ALTERNATED_SLICES, benchServerArgs, benchSeconds, call, runIfMain, spawnBareServer, spawnStrikebook, stopGracefully, waitHttp } from './support.ts';

const RESTING_ORDERS = 10_000;
/** Pairs of (maker, taker) accounts; each trades in POSITION_INSTRUMENTS series: 2,000 positions. */
const POSITION_PAIRS = 10;
const POSITION_INSTRUMENTS = 100;
/** The engine thread held past this is a stall (issue 16). */
const STALL_MS = 2;
const TARGET_P99_RATIO = 3;
/** Crossing orders' requests/s against the bare server's, closed loop (issue 36). */
const TARGET_CROSSING_RATIO = 0.5;
/** Event-loop samples past STALL_MS against the bare server's on the same schedule (issue 36). */
const TARGET_STALLS_RATIO = 2;
/** The engine's own work judged piece by piece (issue 36): none over STALL_MS. The PM recompute
 *  runs inside the liquidation scan's slices (src/app/marketTimers.ts), so it is judged with them;
 *  `listing` and `snapshot_inline` are printed, not judged. */
const JUDGED_WORK = ['market_tick', 'liquidation_scan_slice', 'stream_fanout'];
/** A journal commit slower than this is named in the report (a histogram bound). */
const COMMIT_SLOW_MS = 5;
/** The open loop's slices per server, alternated with the bare server's. */
const OPEN_LOOP_SLICES = 4;

/** Accounts and state: positions, resting orders, and the crossing users' order plans. */
export async function prepare(base: string): Promise<{ plans: LeanStep[][]; instruments: number; refused: number }> {
  const admin = await benchAdmin(base);
  const all = (await call(base, 'public/get_instruments', { currency: 'any' })) as unknown[];
  const tradable = await tradableBooks(base);
  // the simulated index moves the bands while this runs: an order the band moved past is skipped
  let refused = 0;
  const order = (a: { token: string }, method: string, params: Record<string, unknown>) => () => call(base, method, params, a.token).catch(() => refused++);

  // 2,000 positions: each maker rests an ask at mark, its taker lifts it
  const pairs = await Promise.all(Array.from({ length: POSITION_PAIRS }, async (_, i) => ({
    maker: await account(base, admin, `bench-maker-${i}@example.com`),
    taker: await account(base, admin, `bench-taker-${i}@example.com`),
  })));
  for (const [i, p] of pairs.entries()) {
    const series = Array.from({ length: POSITION_INSTRUMENTS }, (_, k) => tradable[(i * POSITION_INSTRUMENTS + k) % tradable.length]!);
    await pool(16, series.map((b) => order(p.maker, 'private/sell', { instrument_name: b.instrument_name, amount: 0.1, price: gridPrice(b, b.mark_price), type: 'limit' })));
    await pool(16, series.map((b) => order(p.taker, 'private/buy', { instrument_name: b.instrument_name, amount: 0.1, price: gridPrice(b, b.mark_price), type: 'limit', time_in_force: 'immediate_or_cancel' })));
  }
  // 10,000 resting bids low in the band, spread over every series
  const resters = await Promise.all(Array.from({ length: 20 }, (_, i) => account(base, admin, `bench-rester-${i}@example.com`)));
  const bids = Array.from({ length: RESTING_ORDERS }, (_, k) => {
    const b = tradable[k % tradable.length]!;
    return order(resters[k % resters.length]!, 'private/buy', { instrument_name: b.instrument_name, amount: 0.1, price: gridPrice(b, b.min_price + (b.max_price - b.min_price) / 4), type: 'limit' });
  });
  await pool(32, bids);

  const plans = await crossingPlans(base, admin, tradable.slice(0, 5));
  return { plans, instruments: all.length, refused };
}

function line(label: string, r: OpenLoopResult): string {
  const statuses = Object.entries(r.statuses).map(([k, v]) => `${v} x ${k}`).join(', ');
  const odd = `${r.non2xx} non-2xx${statuses ? ` (${statuses})` : ''}, ${r.errors} errors${r.unsolicited > 0 ? `, ${r.unsolicited} unsolicited answers` : ''}`;
  return `${label.padEnd(30)} p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  p99.9 ${r.p999.toFixed(2)} ms  max ${r.max.toFixed(1)} ms  (${r.answered}/${r.scheduled} answered, ${odd})`;
}

/** Cumulative bucket counts of one histogram series in Prometheus text, by `le`; `labels` (e.g.
 *  `kind="minor"`) picks the series, wherever `le` stands among its labels (prom-client puts it first). */
export function buckets(text: string, name: string, labels = ''): Map<string, number> {
  const out = new Map<string, number>();
  const re = new RegExp(`^${name}_bucket\\{([^}]*)\\} (\\S+)$`, 'gm');
  for (const m of text.matchAll(re)) {
    const le = /(?:^|,)le="([^"]+)"/.exec(m[1]!)?.[1];
    const rest = m[1]!.replace(/(?:^|,)le="[^"]+"/, '').replace(/^,/, '');
    if (le !== undefined && rest === labels) out.set(le, Number(m[2]));
  }
  return out;
}

/** Every sample line of a Prometheus text by series (name and labels), e.g. `x_bucket{le="1"}`. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^([a-zA-Z_:][\w:]*(?:\{[^}]*\})?) (\S+)$/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

/** Adds what every series grew between two scrapes to `into`. */
export function addGrowth(into: Map<string, number>, before: string, after: string): void {
  const b = samples(before);
  for (const [k, v] of samples(after)) into.set(k, (into.get(k) ?? 0) + v - (b.get(k) ?? 0));
}

/** Summed growth as Prometheus text, to read with the functions here against an empty "before". */
export function growthText(growth: Map<string, number>): string {
  return [...growth].map(([k, v]) => `${k} ${v}`).join('\n');
}

/** The sum of one histogram series (seconds) grown between two scrapes. */
export function grownSum(before: string, after: string, name: string, labels: string): number {
  const re = new RegExp(`^${name}_sum\\{${labels}\\} (\\S+)$`, 'm');
  return Number(re.exec(after)?.[1] ?? 0) - Number(re.exec(before)?.[1] ?? 0);
}

/** How much a counter series grew between two scrapes. */
export function grownCounter(before: string, after: string, name: string, labels: string): number {
  const re = new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm');
  return Number(re.exec(after)?.[1] ?? 0) - Number(re.exec(before)?.[1] ?? 0);
}

/** Samples of a histogram above `bound` seconds between two scrapes, and of all. */
export function above(before: string, after: string, name: string, bound: string, labels = ''): { over: number; all: number } {
  const b = buckets(before, name, labels);
  const a = buckets(after, name, labels);
  const all = (a.get('+Inf') ?? 0) - (b.get('+Inf') ?? 0);
  const within = (a.get(bound) ?? 0) - (b.get(bound) ?? 0);
  return { over: all - within, all };
}

/** The largest bucket bound that a sample between two scrapes reached. */
export function worstBucket(before: string, after: string, name: string, labels = ''): string {
  const b = buckets(before, name, labels);
  const a = buckets(after, name, labels);
  let worst = 'none';
  let previous = 0;
  for (const [le, n] of a) {
    const grew = n - (b.get(le) ?? 0);
    if (grew > previous) worst = le === '+Inf' ? '> 2.5 s' : `<= ${Number(le) * 1000} ms`;
    previous = grew;
  }
  return worst;
}

export async function runOpenLoopBench(opts: { seconds?: number } = {}): Promise<SectionResult> {
  const seconds = opts.seconds ?? benchSeconds(20);
  // the closed loop of (a): half the open loop's length (10 s by default)
  const closedSeconds = seconds / 2;
  const lines: string[] = [];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-openloop-'));
  const port = 21000 + Math.floor(Math.random() * 10000);
  const barePort = port + 1;
  const base = `http://127.0.0.1:${port}`;
  const server = spawnStrikebook(port, dataDir, benchServerArgs(), { STRIKEBOOK_INDEX_FEED: 'simulated' });
  // the bare server runs the same event-loop sampler: its stalls are what the machine alone causes
  const bare = spawnBareServer(barePort, JSON.stringify({ jsonrpc: '2.0', result: 'hello' }), 0, { stalls: true });
  try {
    await waitHttp(`${base}/health`);
    await waitHttp(`http://127.0.0.1:${barePort}/`);
    const setupStart = performance.now();
    const { plans, instruments, refused } = await prepare(base);
    const health = (await fetch(`${base}/health`).then((r) => r.json())) as { seq: number };
    const metricsText = () => fetch(`${base}/metrics`).then((r) => r.text());
    const held = await metricsText();
    const open = /^strikebook_open_orders (\d+)$/m.exec(held)?.[1];
    lines.push(`state: ${instruments} instruments, ${open} resting orders, ${POSITION_PAIRS * POSITION_INSTRUMENTS * 2} positions, journal seq ${health.seq} (set up in ${((performance.now() - setupStart) / 1000).toFixed(1)} s, ${refused} setup orders outside the moving band skipped); simulated index feed on`);

    // (a) crossing, closed loop
    const barePlans = plans.map((p) => p.map((s) => ({ ...s, path: '/' })));
    const { a: bareRun, b: crossRun } = await alternatedLoads(
      { load: { url: `http://127.0.0.1:${barePort}`, plans: barePlans, seconds: closedSeconds }, pid: bare.pid },
      { load: { url: base, plans, seconds: closedSeconds }, pid: server.pid },
      closedSeconds,
    );
    const bareCross = bareRun.r;
    const cross = crossRun.r;
    const crossing = atLeast('httpCrossing', cross.rps, bareCross.rps, 'req/s', TARGET_CROSSING_RATIO);
    lines.push(`(a) crossing orders, ${CONNECTIONS} connections, closed loop (autocannon), ${ALTERNATED_SLICES} alternated slices of ${closedSeconds / ALTERNATED_SLICES} s per server (p50 and p99: the worst slice's):`);
    lines.push(`  bare node:http            ${Math.round(bareCross.rps)} req/s  p50 ${bareCross.p50} ms  p99 ${bareCross.p99} ms`);
    lines.push(`  Strikebook crossing orders ${Math.round(cross.rps)} req/s  p50 ${cross.p50} ms  p99 ${cross.p99} ms  (${cross.non2xx} non-2xx${cross.firstError ? `; first: ${cross.firstError}` : ''})`);
    lines.push(`  ${judgedText(crossing)}`);

    // (b) open loop at half of Strikebook's crossing capacity, both servers on the same schedule
    // BENCH_OPEN_LOOP_RATE pins the schedule, so that A/B runs (two branches, two flag sets) run
    // the same one: the capacity measured in (a) swings 2x with the machine's load
    const pinned = Number(process.env.BENCH_OPEN_LOOP_RATE);
    const rate = pinned > 0 ? Math.round(pinned) : Math.max(100, Math.round(cross.rps / 2));
    const steps = plans.flat();
    const bareSteps = barePlans.flat();
    // in slices, alternated (bare, Strikebook, Strikebook, bare, ...), so that a change of the
    // machine's load during the section hits both alike; Strikebook's metrics are the sum of its
    // slices' growth, so that the other server's slices are not in its stall figures
    const bareRuns: OpenLoopResult[] = [];
    const sbRuns: OpenLoopResult[] = [];
    const sbGrowth = new Map<string, number>();
    // each server's threads over its own slices: run on a core, and waited ready for one
    const sbThreads = emptyWindow();
    const bareThreads = emptyWindow();
    const bareGrowth = new Map<string, number>();
    const bareMetricsText = () => fetch(`http://127.0.0.1:${barePort}/metrics`).then((r) => r.text());
    const sliceSeconds = seconds / OPEN_LOOP_SLICES;
    for (let slice = 0; slice < OPEN_LOOP_SLICES; slice++) {
      for (const which of slice % 2 === 0 ? ['bare', 'sb'] : ['sb', 'bare']) {
        if (which === 'bare') {
          const sliceBefore = await bareMetricsText();
          const threadsBefore = readThreadTimes(bare.pid);
          bareRuns.push(await openLoop(barePort, bareSteps, { ratePerSec: rate, seconds: sliceSeconds, connections: CONNECTIONS }));
          addWindow(bareThreads, bare.pid!, threadsBefore, readThreadTimes(bare.pid));
          addGrowth(bareGrowth, sliceBefore, await bareMetricsText());
        } else {
          const sliceBefore = await metricsText();
          const threadsBefore = readThreadTimes(server.pid);
          sbRuns.push(await openLoop(port, steps, { ratePerSec: rate, seconds: sliceSeconds, connections: CONNECTIONS }));
          addWindow(sbThreads, server.pid!, threadsBefore, readThreadTimes(server.pid));
          addGrowth(sbGrowth, sliceBefore, await metricsText());
        }
      }
    }
    const bareOpen = pooled(bareRuns);
    const sbOpen = pooled(sbRuns);
    // the existing readers take (before, after) scrapes: the summed growth is an "after" over nothing
    const before = '';
    const afterText = growthText(sbGrowth);
    lines.push(`(b) open loop at ${rate} orders/s (${pinned > 0 ? 'BENCH_OPEN_LOOP_RATE' : 'half of (a)'}) for ${seconds} s each, in ${OPEN_LOOP_SLICES} alternated slices, ${CONNECTIONS} connections, latency from the scheduled start:`);
    lines.push(line('  bare node:http', bareOpen));
    lines.push(line('  Strikebook crossing orders', sbOpen));
    const stalls = above(before, afterText, 'strikebook_event_loop_delay_seconds', String(STALL_MS / 1000));
    const share = stalls.all === 0 ? 1 : stalls.over / stalls.all;
    const largest = worstBucket(before, afterText, 'strikebook_event_loop_delay_seconds');
    lines.push(`  largest engine-thread turn: ${largest} against the ${STALL_MS} ms line; ${stalls.over} of ${stalls.all} event-loop samples held past it (${(share * 100).toFixed(2)}%)`);
    // a stall is the thread working, or the thread ready while other threads hold both cores (V8's
    // GC helpers in a major GC's concurrent marking, the journal writer, the load generator): the
    // scheduler's own accounts of each (not judged; the reference is the bare server's)
    const sbThreadText = threadWindowText(sbThreads, seconds);
    const bareThreadText = threadWindowText(bareThreads, seconds);
    if (sbThreadText !== null) lines.push(`    Strikebook ${sbThreadText}`);
    if (bareThreadText !== null) lines.push(`    bare server ${bareThreadText}`);
    // the same stalls bounded by the process's CPU: what is left once the time the thread waited for
    // a core (a loaded machine) is taken out
    const busy = above(before, afterText, 'strikebook_event_loop_busy_seconds', String(STALL_MS / 1000));
    lines.push(`    of which working or in GC (bounded by process CPU): largest ${worstBucket(before, afterText, 'strikebook_event_loop_busy_seconds')}, ${busy.over} samples past ${STALL_MS} ms`);
    // the reference: the bare server's own event-loop delays on the same schedule, by the same
    // sampler. It runs no engine, journal or GC-heavy state, so what it shows is the machine's floor
    // (the kernel descheduling the thread, its own small GCs): no server can show fewer stalls here
    const bareText = growthText(bareGrowth);
    const bareStalls = above(before, bareText, 'strikebook_event_loop_delay_seconds', String(STALL_MS / 1000));
    const bareLargest = worstBucket(before, bareText, 'strikebook_event_loop_delay_seconds');
    lines.push(`    reference, bare node:http on the same schedule and sampler: largest ${bareLargest}; ${bareStalls.over} of ${bareStalls.all} samples held past ${STALL_MS} ms (${((bareStalls.all === 0 ? 0 : bareStalls.over / bareStalls.all) * 100).toFixed(2)}%)`);
    let workOver = 0;
    for (const work of ['market_tick', 'liquidation_scan_slice', 'stream_fanout', 'listing', 'snapshot_inline']) {
      const w = above(before, afterText, 'strikebook_engine_work_seconds', String(STALL_MS / 1000), `work="${work}"`);
      if (JUDGED_WORK.includes(work)) workOver += w.over;
      // the pieces' own time: a GC pause inside a piece is left out of it (src/app/gcPauses.ts) and
      // shown here; GC is judged with the event-loop samples, and its pauses are listed below
      const withGc = grownCounter(before, afterText, 'strikebook_engine_work_pieces_with_gc_total', `work="${work}"`);
      const gcMs = grownCounter(before, afterText, 'strikebook_engine_work_gc_seconds_total', `work="${work}"`) * 1000;
      const gcNote = withGc > 0 ? `; ${withGc} with a GC pause inside (${gcMs.toFixed(1)} ms in all, left out of their time)` : '';
      if (w.all > 0) lines.push(`    ${work.padEnd(24)} ${w.all} pieces, ${w.over} over ${STALL_MS} ms, longest ${worstBucket(before, afterText, 'strikebook_engine_work_seconds', `work="${work}"`)}${gcNote}${JUDGED_WORK.includes(work) ? '' : ' (not judged)'}`);
    }
    // GC pauses of the server's engine thread (prom-client's PerformanceObserver): minor =
    // scavenges, major = mark-compact finalization, incremental = marking steps on the thread
    for (const kind of ['minor', 'major', 'incremental', 'weakcb']) {
      const g = above(before, afterText, 'nodejs_gc_duration_seconds', String(STALL_MS / 1000), `kind="${kind}"`);
      const ms = grownSum(before, afterText, 'nodejs_gc_duration_seconds', `kind="${kind}"`) * 1000;
      if (g.all > 0) lines.push(`    GC ${kind.padEnd(21)} ${g.all} pauses, ${ms.toFixed(0)} ms in all, ${g.over} over ${STALL_MS} ms, longest ${worstBucket(before, afterText, 'nodejs_gc_duration_seconds', `kind="${kind}"`)}`);
    }
    // an order is answered once its batch is durable: a slow commit (the disk's fsync) delays every
    // order in it without holding the engine thread, so it shows in the p99 and not in the turns
    const commits = above(before, afterText, 'strikebook_journal_commit_seconds', String(COMMIT_SLOW_MS / 1000));
    lines.push(`    journal commits          ${commits.all} batches, ${commits.over} over ${COMMIT_SLOW_MS} ms, longest ${worstBucket(before, afterText, 'strikebook_journal_commit_seconds')}`);
    // the writer thread's own part of them (its insert, commit and fsync): more slow commits than
    // slow writes means the hand-over between the threads was slow (either thread waiting for a
    // core, or the engine thread busy when the reply came), not the disk
    const writes = above(before, afterText, 'strikebook_journal_write_seconds', String(COMMIT_SLOW_MS / 1000));
    if (writes.all > 0) lines.push(`      on the writer thread   ${writes.all} batches, ${writes.over} over ${COMMIT_SLOW_MS} ms, longest ${worstBucket(before, afterText, 'strikebook_journal_write_seconds')}`);
    // a snapshot due in the window (every STRIKEBOOK_SNAPSHOT_EVERY records) takes a core for
    // seconds and holds the journal's writer while its text is written: named here when one ran
    const snaps = (how: string) => sbGrowth.get(`strikebook_snapshots_total{how="${how}"}`) ?? 0;
    const seqAfter = ((await fetch(`${base}/health`).then((r) => r.json())) as { seq: number }).seq;
    lines.push(`    snapshots finished in the open loop: ${snaps('inline')} inline, ${snaps('background')} in the background, ${snaps('failed')} failed; journal seq ${seqAfter} at its end`);
    const p99Line = atMost('openLoopP99', sbOpen.p99, bareOpen.p99, 'ms', TARGET_P99_RATIO);
    const stallLine = atMost('loopStalls', stalls.over, bareStalls.over, '', TARGET_STALLS_RATIO);
    const workLine = zero('engineWork', workOver, `pieces over ${STALL_MS} ms`);
    // an open loop that lost answers did not measure the latency it prints
    if (sbOpen.errors > 0) p99Line.pass = false;
    lines.push(`  ${judgedText(p99Line)}`, `  ${judgedText(stallLine)}`, `  ${judgedText(workLine)}`);
    const judged = [crossing, p99Line, stallLine, workLine];
    return { lines, ok: judged.every((j) => j.pass), judged };
  } finally {
    await stopGracefully(server);
    bare.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, () => runOpenLoopBench());
