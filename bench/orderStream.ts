// Order-stream benchmark, stream v1: a seeded sequence of order-book operations plus the exact
// state any correct price-time-priority book must end in.
//
// Ported from the project's shared reference `bench/order-stream.mjs` (stream v1; same mulberry32,
// same generateStream, same runBench), copied here so the project stands alone. Keep the logic
// bit-for-bit identical: for seed 42, n = 1,000,000 the stream's sha256 must be STREAM_V1_SHA256.
//
// STREAM SPEC (v1)
//   PRNG: mulberry32(seed) -> float in [0,1).
//   for i in 0..n-1:
//     r = rnd()
//     r < 0.60  -> LIMIT (GTC):  side = rnd() < 0.5 ? buy : sell
//                  d = floor(rnd()*14) - 3            // integer in [-3, 10]
//                  price = buy ? 100 - 0.5*d : 100 + 0.5*d
//                  size = 1 + floor(rnd()*10)        // 1..10
//                  id = running counter of limit orders: "1","2",...
//     r < 0.70  -> MARKET (IOC, unfilled remainder dropped):
//                  side = rnd() < 0.5 ? buy : sell; size = 1 + floor(rnd()*10)
//     else      -> CANCEL: if the reference book has no resting order the op is skipped (no rnd()
//                  drawn, nothing emitted); otherwise id = live[floor(rnd()*live.length)] where
//                  `live` is the list of resting ids kept with append-on-rest and
//                  swap-with-last-then-pop removal (on full fill or cancel).
//   Matching in the reference book: strict price-time priority, trade at the maker price, a taker
//   sweeps levels best-first; a partially filled limit rests with its remainder; market orders
//   never rest.
import { createHash } from 'node:crypto';

export const STREAM_V1_SHA256 = 'ef3decf8294482f2006be5509cacf8063e2f64a61bf498470bad06b287da2560';

export function mulberry32(seed: number): () => number {
  let a = seed;
  return function () {
    a |= 0; a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const KIND = { LIMIT: 0, MARKET: 1, CANCEL: 2 } as const;

export interface ExpectedState {
  limits: number; markets: number; cancels: number; fills: number; volume: number;
  restingAtEnd: number; avgResting: number; maxResting: number;
  /** [price, total] best first (bids descending, asks ascending), decimal prices as in the stream. */
  bids: Array<[number, number]>;
  asks: Array<[number, number]>;
}

export interface OrderStream {
  /** Number of emitted operations (skipped cancels are not emitted). */
  n: number;
  kind: Uint8Array; side: Uint8Array; price: Float64Array; size: Uint8Array; id: Uint32Array;
  /** Canonical text of op j: "L b 99.5 7 123", "M s 4", "C 123". */
  line: (j: number) => string;
  sha256: string;
  expected: ExpectedState;
}

export function generateStream({ seed = 42, n = 1_000_000 }: { seed?: number; n?: number } = {}): OrderStream {
  const rnd = mulberry32(seed);
  const kind = new Uint8Array(n), side = new Uint8Array(n); // side 0=buy 1=sell
  const price = new Float64Array(n), size = new Uint8Array(n), id = new Uint32Array(n);
  // reference book: ticks 0..40 <=> price 90..110 (price = 90 + tick/2)
  const T = 41, bids: number[][] = [], asks: number[][] = [];
  for (let t = 0; t < T; t++) { bids.push([]); asks.push([]); }
  const rem = new Map<number, number>(), level = new Map<number, number[]>(), live: number[] = [], livePos = new Map<number, number>();
  const addLive = (x: number) => { livePos.set(x, live.length); live.push(x); };
  const delLive = (x: number) => {
    const p = livePos.get(x)!, last = live[live.length - 1];
    live[p] = last; livePos.set(last, p); live.pop(); livePos.delete(x);
  };
  const bestAsk = () => { for (let t = 0; t < T; t++) if (asks[t].length) return t; return -1; };
  const bestBid = () => { for (let t = T - 1; t >= 0; t--) if (bids[t].length) return t; return -1; };
  let fills = 0, volume = 0, sumLive = 0, maxLive = 0;
  const take = (s: number, qty: number, limitTick?: number) => { // s: taker side
    while (qty > 0) {
      const t = s === 0 ? bestAsk() : bestBid();
      if (t < 0) break;
      if (limitTick !== undefined && (s === 0 ? t > limitTick : t < limitTick)) break;
      const q = s === 0 ? asks[t] : bids[t], m = q[0], r = rem.get(m)!, f = Math.min(r, qty);
      qty -= f; fills++; volume += f;
      if (f === r) { q.shift(); rem.delete(m); level.delete(m); delLive(m); } else rem.set(m, r - f);
    }
    return qty;
  };
  let k = 0, nextId = 0;
  const counts = [0, 0, 0];
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r < 0.6) {
      const s = rnd() < 0.5 ? 0 : 1, d = Math.floor(rnd() * 14) - 3;
      const p = s === 0 ? 100 - 0.5 * d : 100 + 0.5 * d, q = 1 + Math.floor(rnd() * 10), x = ++nextId;
      kind[k] = 0; side[k] = s; price[k] = p; size[k] = q; id[k] = x; k++;
      const tick = (p - 90) * 2, left = take(s, q, tick);
      if (left > 0) { const lv = (s === 0 ? bids : asks)[tick]; lv.push(x); rem.set(x, left); level.set(x, lv); addLive(x); }
    } else if (r < 0.7) {
      const s = rnd() < 0.5 ? 0 : 1, q = 1 + Math.floor(rnd() * 10);
      kind[k] = 1; side[k] = s; size[k] = q; k++;
      take(s, q);
    } else {
      if (live.length === 0) continue;
      const x = live[Math.floor(rnd() * live.length)];
      kind[k] = 2; id[k] = x; k++;
      const lv = level.get(x)!; lv.splice(lv.indexOf(x), 1); rem.delete(x); level.delete(x); delLive(x);
    }
    counts[kind[k - 1]]++;
    sumLive += live.length; if (live.length > maxLive) maxLive = live.length;
  }
  const depthOf = (book: number[][], desc: boolean) => {
    const out: Array<[number, number]> = [];
    for (let t = desc ? T - 1 : 0; desc ? t >= 0 : t < T; desc ? t-- : t++) {
      if (book[t].length) out.push([90 + t / 2, book[t].reduce((a, m) => a + rem.get(m)!, 0)]);
    }
    return out;
  };
  // canonical text for checksum / dumping: "L b 99.5 7 123", "M s 4", "C 123"
  const h = createHash('sha256');
  const line = (j: number) => kind[j] === 0 ? `L ${side[j] ? 's' : 'b'} ${price[j]} ${size[j]} ${id[j]}`
    : kind[j] === 1 ? `M ${side[j] ? 's' : 'b'} ${size[j]}` : `C ${id[j]}`;
  for (let j = 0; j < k; j++) h.update(line(j) + '\n');
  return {
    n: k, kind: kind.subarray(0, k), side: side.subarray(0, k), price: price.subarray(0, k),
    size: size.subarray(0, k), id: id.subarray(0, k), line,
    sha256: h.digest('hex'),
    expected: {
      limits: counts[0], markets: counts[1], cancels: counts[2], fills, volume,
      restingAtEnd: live.length, avgResting: +(sumLive / n).toFixed(1), maxResting: maxLive,
      bids: depthOf(bids, true), asks: depthOf(asks, false),
    },
  };
}

/** What runBench drives. side is 'buy' | 'sell', id a decimal string, price a multiple of 0.5. */
export interface StreamAdapter {
  limit(side: string, id: string, price: number, size: number): unknown;
  market(side: string, size: number): unknown;
  cancel(id: string): unknown;
  depth?(): unknown;
}

export interface LatencyUs { p50: number; p90: number; p99: number; p999: number; max: number; mean: number }

export interface BenchResult {
  label: string;
  /** run0 is the warm-up (JIT); later runs are the measured ones. */
  runs: Array<{ seconds: number; opsPerSec: number }>;
  /** depth() of the last throughput run's adapter, if it has one. */
  finalDepth?: unknown;
  /** The adapter of the last throughput run, for engine-specific checks. */
  lastAdapter: StreamAdapter;
  latencyUs: LatencyUs;
  byKindUs: Record<'limit' | 'market' | 'cancel', { count: number; p50: number; p99: number; max: number }>;
}

function pct(sorted: Float64Array, p: number): number { return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]; }

/**
 * Runs the stream `runs` times for throughput (the first run is the warm-up), then once more
 * timing every op with process.hrtime.bigint (which adds ~40-80 ns per op).
 */
export function runBench<A extends StreamAdapter>(adapterFactory: () => A, stream: OrderStream, { label = 'engine', runs = 3 } = {}): BenchResult {
  const { n, kind, side, price, size, id } = stream;
  const S = ['buy', 'sell'];
  const ids: string[] = new Array(n);
  for (let j = 0; j < n; j++) ids[j] = kind[j] === 1 ? '' : String(id[j]); // untimed
  const gc: () => void = (globalThis as { gc?: () => void }).gc ?? (() => {});
  const runResults: BenchResult['runs'] = [];
  let finalDepth: unknown;
  let lastAdapter: A | undefined;
  for (let run = 0; run < runs; run++) {
    gc();
    const a = adapterFactory();
    const t0 = process.hrtime.bigint();
    for (let j = 0; j < n; j++) {
      const kd = kind[j];
      if (kd === 0) a.limit(S[side[j]], ids[j], price[j], size[j]);
      else if (kd === 1) a.market(S[side[j]], size[j]);
      else a.cancel(ids[j]);
    }
    const ns = Number(process.hrtime.bigint() - t0);
    runResults.push({ seconds: +(ns / 1e9).toFixed(3), opsPerSec: Math.round(n / (ns / 1e9)) });
    if (run === runs - 1) { lastAdapter = a; if (a.depth) finalDepth = a.depth(); }
  }
  gc();
  const a = adapterFactory();
  const lat = new Float64Array(n);
  const per: number[][] = [[], [], []];
  for (let j = 0; j < n; j++) {
    const kd = kind[j];
    const t0 = process.hrtime.bigint();
    if (kd === 0) a.limit(S[side[j]], ids[j], price[j], size[j]);
    else if (kd === 1) a.market(S[side[j]], size[j]);
    else a.cancel(ids[j]);
    const dt = Number(process.hrtime.bigint() - t0);
    lat[j] = dt; per[kd].push(dt);
  }
  const sorted = Float64Array.from(lat).sort();
  const us = (v: number) => +(v / 1000).toFixed(2);
  const latencyUs: LatencyUs = {
    p50: us(pct(sorted, 0.5)), p90: us(pct(sorted, 0.9)), p99: us(pct(sorted, 0.99)),
    p999: us(pct(sorted, 0.999)), max: us(sorted[n - 1]), mean: us(sorted.reduce((x, y) => x + y, 0) / n),
  };
  const byKindUs = {} as BenchResult['byKindUs'];
  (['limit', 'market', 'cancel'] as const).forEach((nm, kd) => {
    const s = Float64Array.from(per[kd]).sort();
    byKindUs[nm] = { count: s.length, p50: us(pct(s, 0.5)), p99: us(pct(s, 0.99)), max: us(s[s.length - 1]) };
  });
  return { label, runs: runResults, finalDepth, lastAdapter: lastAdapter ?? a, latencyUs, byKindUs };
}
