// Portfolio margin (issue 35): what it costs the engine. (1) An order check of an account with 200
// positions on portfolio margin against the same check of the same account on standard margin (a
// small resting sell placed and cancelled; the cancel is in both), measured side by side in one run.
// (2) After an index tick, the full recompute over 1,000 PM accounts of 20 positions and two desks
// holding every one of 800 series (the default catalog's size), as the liquidation scan slices it:
// one account per step, a large account's rebuild cut every PM_STEP_UNITS work units
// (src/engine/liquidation.ts; src/app/marketTimers.ts runs steps until SCAN_SLICE_MS per turn). Judged:
// the largest step, which must stay under 2 ms (no engine turn over 2 ms from PM work). (3) An order
// of a desk that arrives right after a tick, before the scan reached it: the edge's warm-up
// (src/risk/portfolio/warmup.ts) rebuilds it in slices, then the check runs; judged: its largest
// slice and the check, each under 2 ms (beside them: the same check rebuilding in its own turn, as
// it did without the warm-up). Engine only, without HTTP or the journal.
import { PerformanceObserver } from 'node:perf_hooks';
import type { Sequenced } from '../src/engine/commands.ts';
import { Exchange } from '../src/engine/exchange.ts';
import { instrumentName } from '../src/domain/instrument.ts';
import { scanForLiquidation } from '../src/engine/liquidation.ts';
import { PM_STEP_UNITS, WORK } from '../src/risk/portfolio/pmRisk.ts';
import { PmWarmup } from '../src/risk/portfolio/warmup.ts';
import { applyCommand } from '../src/sequencer/sequencer.ts';

const T0 = Date.UTC(2026, 0, 5, 12);
const EXPIRIES = [Date.UTC(2026, 1, 27, 8), Date.UTC(2026, 2, 27, 8)];
/** 50 strikes x call/put x 2 expiries: 200 series. */
const STRIKES = Array.from({ length: 50 }, (_, i) => 76000 + 1000 * i);
/** The recompute's catalog: 100 strikes x call/put x 4 expiries, 800 series (the default catalog has ~830). */
const SCAN_EXPIRIES = [Date.UTC(2026, 0, 30, 8), ...EXPIRIES, Date.UTC(2026, 5, 26, 8)];
const SCAN_STRIKES = Array.from({ length: 100 }, (_, i) => 50_000 + 1000 * i);
/** Accounts holding every series of the catalog (a desk quoting the whole board): one on each portfolio model. */
const DESKS = ['segregated_pm', 'cross_pm'] as const;
const CHECKS = 4000;
const PM_ACCOUNTS = 1000;
const POSITIONS_PER_SCAN_ACCOUNT = 20;
/** The stated bound on one step of the recompute: no engine piece over 2 ms from PM work (its largest step). */
export const MAX_STEP_MS = 2;
/** The stated bound on an order check of a PM account against the same check on standard margin. */
export const MAX_CHECK_RATIO = 3;

interface Engine {
  ex: Exchange;
  apply(cmd: object): unknown;
  names: string[];
}

function engine(expiries = EXPIRIES, strikes = STRIKES): Engine {
  const ex = new Exchange();
  let seq = 0;
  const apply = (cmd: object): unknown => applyCommand(ex, { ...cmd, ts: T0 + seq, seq: ++seq } as Sequenced);
  apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null });
  const names: string[] = [];
  const instruments = [];
  for (const expiry of expiries) {
    for (const strike of strikes) {
      for (const optionType of ['call', 'put'] as const) {
        const name = instrumentName('BTC', expiry, strike, optionType);
        names.push(name);
        instruments.push({ currency: 'BTC', name, optionType, strike, expiry, settlementPeriod: 'month', tick: 1, tickSteps: [{ abovePrice: 50, tick: 5 }], lotScaled: 10_000_000, makerCommission: 30_000, takerCommission: 30_000, contractSize: 1 });
      }
    }
  }
  apply({ t: 'list', instruments });
  return { ex, apply, names };
}

function user(e: Engine, n: number, btc: number): number {
  const u = e.apply({ t: 'create_user', email: `pm${n}@bench.io`, passwordHash: 'x', role: 'user', inviteCode: null, by: null }) as { id: number };
  e.apply({ t: 'deposit', userId: u.id, currency: 'BTC', amount: btc * 1e8, depositId: null, by: 0 });
  return u.id;
}

function order(userId: number, side: 0 | 1, instrument: string, price: number, lots: number): object {
  return { t: 'place', userId, side, instrument, price, advanced: null, advPrice: null, lots, type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null };
}

/** A price on the grid near the mark (units of 10^-4 coin). */
function nearMark(e: Engine, name: string): number {
  const inst = e.ex.instruments.get(name)!;
  const units = Math.max(5, Math.round((e.ex.markets.get(inst.id)!.markCoin * 1e4) / 5) * 5);
  return Math.min(Math.max(units, e.ex.markets.get(inst.id)!.minPrice + 5), e.ex.markets.get(inst.id)!.maxPrice - 5);
}

/** `account` takes `lots` (negative: sells) of each name from `cp` at the mark. */
function fill(e: Engine, account: number, cp: number, names: string[], lots: (i: number) => number): void {
  names.forEach((name, i) => {
    const n = lots(i);
    const price = nearMark(e, name);
    e.apply(order(cp, n > 0 ? 1 : 0, name, price, Math.abs(n)));
    e.apply(order(account, n > 0 ? 0 : 1, name, price, Math.abs(n)));
  });
}

/** µs per order check: a 0.1 sell far above the mark, placed and cancelled, over every series in turn. */
function checks(e: Engine, userId: number): number {
  const t0 = performance.now();
  for (let i = 0; i < CHECKS; i++) {
    const name = e.names[i % e.names.length]!;
    const inst = e.ex.instruments.get(name)!;
    const r = e.apply(order(userId, 1, name, e.ex.markets.get(inst.id)!.maxPrice - 5, 10_000_000)) as { order?: { id: number } };
    if (r.order !== undefined) e.apply({ t: 'cancel', userId, orderId: r.order.id });
  }
  return ((performance.now() - t0) * 1000) / CHECKS;
}

/** Two desks holding all 800 series (first in the scan: they revalue every series), 1,000 PM accounts
 *  of 20 positions each, and the counterparty that sold or bought them. */
export function scanEngine(): Engine {
  const s = engine(SCAN_EXPIRIES, SCAN_STRIKES);
  // cross_pm pools every currency at its index: ETH's must be known for the switch
  s.apply({ t: 'index', currency: 'ETH', price: 3_000, manual: true, by: null });
  const cp = user(s, 0, 1_000_000);
  for (const [d, model] of DESKS.entries()) {
    const id = user(s, 5000 + d, 10_000);
    if (s.apply({ t: 'change_margin_model', userId: id, model }) instanceof Error) throw new Error('switch refused');
    const strike = (i: number) => SCAN_STRIKES[Math.floor(i / 2) % SCAN_STRIKES.length]!;
    fill(s, id, cp, s.names, (i) => (Math.abs(strike(i) - 100_000) < 15_000 ? -10 : 10) * 10_000_000);
  }
  for (let a = 0; a < PM_ACCOUNTS; a++) {
    const id = user(s, a + 1, 100);
    s.apply({ t: 'change_margin_model', userId: id, model: 'segregated_pm' });
    const picked = Array.from({ length: POSITIONS_PER_SCAN_ACCOUNT }, (_, k) => s.names[(a * 7 + k * 13) % s.names.length]!);
    fill(s, id, cp, [...new Set(picked)], (k) => (k % 2 === 0 ? -10_000_000 : 10_000_000));
  }
  return s;
}

export async function runPmBench(): Promise<{ lines: string[]; ok: boolean }> {
  const lines: string[] = [];
  // (1) twins: the same 200 positions (a two-sided book: short the inner strikes, long the outer)
  const e = engine();
  const cp = user(e, 0, 100_000);
  const sm = user(e, 1, 10_000);
  const pm = user(e, 2, 10_000);
  const size = (i: number) => (Math.abs(STRIKES[(i >> 1) % STRIKES.length]! - 100_000) < 10_000 ? -10 : 10) * 10_000_000;
  fill(e, sm, cp, e.names, size);
  fill(e, pm, cp, e.names, size);
  if (e.apply({ t: 'change_margin_model', userId: pm, model: 'segregated_pm' }) instanceof Error) throw new Error('switch refused');
  checks(e, sm);
  checks(e, pm); // warm-up
  let smUs = Infinity;
  let pmUs = Infinity;
  for (let r = 0; r < 3; r++) {
    smUs = Math.min(smUs, checks(e, sm));
    pmUs = Math.min(pmUs, checks(e, pm));
  }
  const ratio = pmUs / smUs;
  const checkOk = ratio <= MAX_CHECK_RATIO;
  lines.push(
    `order check (place + cancel), 200 positions: portfolio margin ${pmUs.toFixed(1)} us; reference: the same account's check on standard margin ${smUs.toFixed(1)} us; ` +
      `ratio ${ratio.toFixed(2)} (target <= ${MAX_CHECK_RATIO}) ${checkOk ? 'PASS' : 'FAIL'}`,
  );

  const big = scanEngine();
  const stale = await staleDeskOrder(big);
  const scan = await recomputeSteps(big);
  lines.push(...scan.lines, ...stale.lines);
  return { lines, ok: checkOk && scan.ok && stale.ok };
}

interface Step {
  wall: number;
  cpu: number;
  units: number;
  from: number;
  to: number;
}

/** Index ticks, each followed by the whole scan, every step timed; the first tick warms the JIT and is
 *  not judged. Every tick moves the index, so each scan does the same work step for step (every
 *  series revalued, every account's sums rebuilt): a step's cost is judged as its least over them. */
const TICKS = [101_000, 100_000, 99_000, 100_500, 99_500, 100_200];

/**
 * (2) The scan after each index tick, step by step: wall time, this process's CPU time, the
 * recompute's work units, and whether a GC pause fell inside.
 */
export async function recomputeSteps(s: Engine): Promise<{ lines: string[]; ok: boolean }> {
  const pm = s.ex.trading.risk.pm;
  const gcs: { start: number; end: number }[] = [];
  const obs = new PerformanceObserver((l) => {
    for (const e of l.getEntries()) gcs.push({ start: e.startTime, end: e.startTime + e.duration });
  });
  obs.observe({ entryTypes: ['gc'] });
  /** Per measured tick, its steps in order. */
  const ticks: Step[][] = [];
  const totals: number[] = [];
  for (const [t, price] of TICKS.entries()) {
    s.apply({ t: 'index', currency: 'BTC', price, manual: true, by: null });
    let n = 0;
    const t0 = performance.now();
    let last = t0;
    let lastCpu = process.cpuUsage();
    let lastWork = pm.work;
    const steps: Step[] = [];
    if (t > 0) ticks.push(steps);
    for (const _ of scanForLiquidation(s.ex)) {
      const now = performance.now();
      const c = process.cpuUsage(lastCpu);
      steps.push({ wall: now - last, cpu: (c.user + c.system) / 1000, units: pm.work - lastWork, from: last, to: now });
      n++;
      lastWork = pm.work;
      last = performance.now();
      lastCpu = process.cpuUsage();
    }
    if (t > 0) totals.push(performance.now() - t0);
    if (n < PM_ACCOUNTS) throw new Error(`scan made ${n} steps`);
  }
  const cal = calibrate(s);
  // the observer reports asynchronously: let it deliver, then set apart every step a collection overlapped
  await new Promise((r) => setTimeout(r, 50));
  obs.disconnect();
  const gcHit = (st: Step) => gcs.some((g) => g.start < st.to && g.end > st.from);
  const pct = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
  const steps = ticks.flat();
  // A step's own cost on the engine thread is at most its wall time (the thread cannot run longer
  // than the step lasted) and at most the process's CPU time in it (the thread's CPU is part of
  // it): the smaller of the two bounds it. Each alone over-counts on this shared machine: wall
  // time the turns the other helpers' processes took, process CPU V8's background threads
  // (concurrent marking, compilation), which land in whichever step they overlap. A step a
  // collection's pause fell in counts the pause: set apart. On a loaded machine both still meet in
  // a scattered step now and then (a 700-unit step at 4 ms), so the judged figure is per step of
  // the scan its least over the ticks (the same work each time) and the largest of those; the
  // largest single measurement is printed beside it.
  const cost = (st: Step) => Math.min(st.wall, st.cpu);
  const own = steps.filter((st) => !gcHit(st));
  const withGc = steps.filter(gcHit);
  const rawLargest = own.reduce((a, b) => (cost(b) > cost(a) ? b : a));
  const perStep = Array.from({ length: Math.min(...ticks.map((t) => t.length)) }, (_, i) => {
    const clean = ticks.map((t) => t[i]!).filter((st) => !gcHit(st));
    return clean.length === 0 ? null : clean.reduce((a, b) => (cost(b) < cost(a) ? b : a));
  }).filter((st): st is Step => st !== null);
  const largest = perStep.reduce((a, b) => (cost(b) > cost(a) ? b : a));
  const maxUnits = Math.max(...steps.map((st) => st.units));
  const unitsOk = maxUnits <= PM_STEP_UNITS;
  const stepOk = cost(largest) <= MAX_STEP_MS && unitsOk;
  const lines = [
    `recompute after an index tick (${ticks.length} ticks after a warm-up one), ${DESKS.length} desks x ${s.names.length} series + ${PM_ACCOUNTS} PM accounts x ${POSITIONS_PER_SCAN_ACCOUNT} positions, ` +
      `as the liquidation scan slices it (one account per step, a large one cut every ${PM_STEP_UNITS.toLocaleString('en-US')} work units): ` +
      `${(totals.reduce((a, b) => a + b, 0) / totals.length).toFixed(1)} ms a tick (wall), ${(steps.length / totals.length).toFixed(0)} steps a tick; ` +
      `work units per step max ${maxUnits.toLocaleString('en-US')} (${unitsOk ? 'within' : 'OVER'} the budget); ` +
      `step CPU p50 ${pct(steps.map((x) => x.cpu), 0.5).toFixed(3)} / p99 ${pct(steps.map((x) => x.cpu), 0.99).toFixed(3)} ms`,
    `  largest step (each step's least over the ${ticks.length} ticks, steps with a GC pause left out): ${cost(largest).toFixed(3)} ms (${largest.units.toLocaleString('en-US')} work units); ` +
      `largest single measurement without a GC pause ${cost(rawLargest).toFixed(2)} ms (${rawLargest.units.toLocaleString('en-US')} units; wall ${rawLargest.wall.toFixed(2)}, process CPU ${rawLargest.cpu.toFixed(2)}) over ${own.length} steps; ` +
      `${withGc.length} steps with a GC pause inside (max ${withGc.length > 0 ? Math.max(...withGc.map(cost)).toFixed(2) : '-'} ms); ` +
      `a step's figure: the smaller of its wall and its process CPU time; target: largest step <= ${MAX_STEP_MS} ms ${stepOk ? 'PASS' : 'FAIL'}`,
    `  calibration: a revaluation ${cal.revaluationUs.toFixed(3)} us, a leg's scenario summed ${cal.sumUs.toFixed(3)} us (ratio ${(cal.revaluationUs / cal.sumUs).toFixed(1)}, WORK.revaluation = ${WORK.revaluation}); ` +
      `a full step of ${PM_STEP_UNITS.toLocaleString('en-US')} units ~${((PM_STEP_UNITS * cal.sumUs) / 1000).toFixed(2)} ms at that rate`,
  ];
  return { lines, ok: stepOk };
}

/** CPU per unit of each kind of recompute work, from a desk's rebuild after a tick (every series
 *  revalued), then again at the same tick (the vectors cached: sums only); best of 3. */
function calibrate(s: Engine): { revaluationUs: number; sumUs: number } {
  const risk = s.ex.trading.risk;
  const desk = [...s.ex.users.values()].find((u) => risk.isPm(u))!;
  let price = 100_000;
  let both = Infinity;
  let sums = Infinity;
  const units = { both: 0, sums: 0 };
  for (let r = 0; r < 3; r++) {
    s.apply({ t: 'index', currency: 'BTC', price: (price += 10), manual: true, by: null });
    const run = () => {
      const w0 = risk.pm.work;
      const c0 = process.cpuUsage();
      risk.pm.refresh(desk, 'BTC', Infinity);
      const c = process.cpuUsage(c0);
      return { us: c.user + c.system, units: risk.pm.work - w0 };
    };
    const a = run();
    // the same index again: the series keep their vectors, the account's sums are rebuilt
    s.ex.marginVersion++;
    const b = run();
    if (a.us < both) [both, units.both] = [a.us, a.units];
    if (b.us < sums) [sums, units.sums] = [b.us, b.units];
  }
  const sumUs = sums / units.sums;
  const revaluations = (units.both - units.sums) / WORK.revaluation;
  return { revaluationUs: (both - sums) / revaluations, sumUs };
}

/** The smaller of a piece's wall time and this process's CPU time in it (ms): see recomputeSteps. */
function timed(f: () => void): number {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  f();
  const c = process.cpuUsage(c0);
  return Math.min(performance.now() - t0, (c.user + c.system) / 1000);
}

/**
 * (3) A desk's order right after each tick: the warm-up's slices (each timed), then the check (a
 * far sell placed and cancelled); and the same check with no warm-up (the rebuild in its turn).
 * Judged per piece as its least over the ticks, like the scan's steps (this machine's noise).
 */
async function staleDeskOrder(s: Engine): Promise<{ lines: string[]; ok: boolean }> {
  const desk = [...s.ex.users.values()].find((u) => s.ex.trading.risk.isPm(u) && u.positions.size >= s.names.length)!;
  const name = s.names[s.names.length >> 1]!;
  const inst = s.ex.instruments.get(name)!;
  const check = () => {
    // far above the mark, on the 5-unit grid
    const r = s.apply(order(desk.id, 1, name, Math.floor((s.ex.markets.get(inst.id)!.maxPrice - 5) / 5) * 5, 10_000_000)) as { order?: { id: number } };
    if (r.order === undefined) throw new Error(`the check refused the order: ${JSON.stringify(r)}`);
    s.apply({ t: 'cancel', userId: desk.id, orderId: r.order.id });
  };
  const slices: number[][] = [];
  const checksMs: number[] = [];
  const inTurn: number[] = [];
  for (const [t, price] of TICKS.entries()) {
    s.apply({ t: 'index', currency: 'BTC', price: price + 7, manual: true, by: null });
    const mine: number[] = [];
    let started = 0;
    let cpu = process.cpuUsage();
    const warm = new PmWarmup(s.ex, async () => {
      if (started > 0) {
        const c = process.cpuUsage(cpu);
        mine.push(Math.min(performance.now() - started, (c.user + c.system) / 1000));
      }
      await new Promise((r) => setImmediate(r));
      started = performance.now();
      cpu = process.cpuUsage();
    });
    await warm.readyAll([desk.id]);
    const ms = timed(check);
    s.apply({ t: 'index', currency: 'BTC', price: price + 3, manual: true, by: null });
    const rebuilt = timed(check);
    if (t === 0) continue; // JIT warm-up
    slices.push(mine);
    checksMs.push(ms);
    inTurn.push(rebuilt);
  }
  const n = Math.min(...slices.map((x) => x.length));
  const perSlice = Array.from({ length: n }, (_, i) => Math.min(...slices.map((x) => x[i]!)));
  const largest = Math.max(...perSlice);
  const checkMs = Math.min(...checksMs);
  const ok = largest <= MAX_STEP_MS && checkMs <= MAX_STEP_MS;
  return {
    lines: [
      `order of a ${desk.positions.size}-position desk right after an index tick, before the scan reached it (${slices.length} ticks): the edge's warm-up in ${n} slices, ` +
        `largest ${largest.toFixed(3)} ms; then the check ${checkMs.toFixed(3)} ms; beside them, the check rebuilding the desk in its own turn (no warm-up) ${Math.min(...inTurn).toFixed(2)} ms; ` +
        `each piece its least over the ticks; target: every piece <= ${MAX_STEP_MS} ms ${ok ? 'PASS' : 'FAIL'}`,
    ],
    ok,
  };
}
