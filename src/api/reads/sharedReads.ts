// The read cache and the budget of expensive reads, one pair per exchange (issue 14 findings 2, 3).
//
// - Every cached read result lives in one LRU bounded by bytes (STRIKEBOOK_READ_CACHE_BYTES), keyed
//   by what was asked and tagged with the state version it was computed at (the engine `seq`, or the
//   catalog version for instrument lists); an entry of an older version is a miss and is replaced.
// - Big answers are cached as rendered JSON (`RenderedJson`) and shared by every requester until the
//   state changes: sixteen clients asking for every instrument cost one serialization, not sixteen.
// - A big answer is an expensive read, rendered or found in the cache (its envelope and socket write
//   cost about a millisecond per MB): at most STRIKEBOOK_HEAVY_READS_PER_TURN of them run per
//   event-loop turn (`TurnBudget`); the others wait for later turns, in arrival order.
import type { Exchange } from '../../engine/exchange.ts';
import type { Services } from '../../app/services.ts';
import { ByteLru } from './byteLru.ts';
import { RenderedJson } from './rendered.ts';
import { TurnBudget } from './turnBudget.ts';

export interface ReadLimits {
  /** Bytes the read cache may hold (rendered text exactly, objects by estimate). */
  cacheBytes: number;
  /** Expensive reads (big answers not in the cache) started per event-loop turn. */
  heavyPerTurn: number;
}

export const DEFAULT_READ_LIMITS: ReadLimits = { cacheBytes: 64 * 1024 * 1024, heavyPerTurn: 2 };

/** A book deeper than this is a big answer: rendered, cached as text, and counted as expensive. */
export const DEEP_BOOK_DEPTH = 100;

interface Entry {
  version: number | string;
  value: unknown;
}

export interface Reads {
  readonly cache: ByteLru<Entry>;
  readonly budget: TurnBudget;
  /** Big answers rendered since start (a shared one counts once; for tests and the bench). */
  renders: number;
}

const byExchange = new WeakMap<Exchange, Reads>();

/** Sets the limits of an exchange's reads (services.ts, at start); reads of an exchange never configured use the defaults. */
export function configureReads(ex: Exchange, limits: ReadLimits): Reads {
  const r: Reads = { cache: new ByteLru(limits.cacheBytes), budget: new TurnBudget(limits.heavyPerTurn), renders: 0 };
  byExchange.set(ex, r);
  return r;
}

export function readsOf(ex: Exchange): Reads {
  return byExchange.get(ex) ?? configureReads(ex, DEFAULT_READ_LIMITS);
}

/** The cached value of `key` at `version`, or undefined. */
export function cached<V>(ex: Exchange, key: string, version: number | string): V | undefined {
  const e = readsOf(ex).cache.get(key);
  return e !== undefined && e.version === version ? (e.value as V) : undefined;
}

/** Keeps `value` for `key` at `version`; `bytes` is its size (an estimate for objects). */
export function keep(ex: Exchange, key: string, version: number | string, value: unknown, bytes: number): void {
  // the key and the entry's bookkeeping count too: a flood of tiny entries is bounded as well
  readsOf(ex).cache.set(key, { version, value }, bytes + 2 * key.length + 64);
}

/**
 * Version of the instrument list: instruments are only ever added and move one way, open ->
 * settlement -> delivered, so the count of each changes whenever anything an instrument list shows
 * changes. O(instruments), far less than rendering the list.
 */
export function catalogVersion(ex: Exchange): string {
  let open = 0;
  let delivered = 0;
  for (const inst of ex.instruments.values()) {
    if (inst.state === 'open') open++;
    else if (inst.state === 'delivered') delivered++;
  }
  return `${ex.instruments.size}:${open}:${delivered}`;
}

/**
 * A big answer, shared, once this turn's budget of expensive reads allows: the rendered text cached
 * under `key` for the current `version`, or, on a miss, `build()` rendered and cached. Runs under
 * `seq.read`, so it sees only durable state; a `build` that throws (unknown instrument) rejects.
 */
export async function sharedRead(s: Services, key: string, version: (ex: Exchange) => number | string, build: () => unknown): Promise<RenderedJson> {
  const ex = s.ex;
  // a cached answer is cheap to find but not to send: its envelope is a copy of ~1 MB and the
  // socket write another, about a millisecond of this thread for get_instruments currency=any. So
  // hits take from the same budget as renders: per turn at most N big answers of either kind.
  await readsOf(ex).budget.take();
  return s.seq.read(() => {
    const v = version(ex);
    const again = cached<RenderedJson>(ex, key, v);
    if (again !== undefined) return again;
    const r = new RenderedJson(JSON.stringify(build()));
    readsOf(ex).renders++;
    keep(ex, key, v, r, r.bytes);
    return r;
  });
}

/** The engine `seq`: the version of anything computed from the books, marks or trades. */
export const seqVersion = (ex: Exchange): number => ex.seq;
