// Channels added for Deribit parity (issue 31): grouped books, the volatility index, the incremental
// ticker and the public-methods state. Parsed here and rendered here; the hub only calls in, so its
// own file stays as it was. The stream gateway (src/gateway/streams.ts) serves them too, from the
// event stream (src/api/ws/streamEvents.ts) and the leader's first messages.
import { CURRENCY_CODES, type CurrencyCode } from '../../domain/currency.ts';
import type { Instrument } from '../../domain/instrument.ts';
import type { Exchange } from '../../engine/exchange.ts';
import { volatilityIndex } from '../../market/volIndex.ts';
import { tickerOf } from '../methods/marketData.ts';
import { renderAnnouncement } from '../methods/announcements.ts';
import { renderAccess } from '../methods/accessLog.ts';

/** Deribit's price groups for `book.{instrument}.{group}.{depth}.{interval}` (`none` is 0). */
export const BOOK_GROUPS: ReadonlyMap<string, number> = new Map([
  ['none', 0],
  ['1', 1],
  ['2', 2],
  ['5', 5],
  ['10', 10],
  ['25', 25],
  ['100', 100],
  ['250', 250],
]);

export type ParitySpec =
  /** deribit_volatility_index.{index_name} */
  | { k: 'vol_index'; currency: CurrencyCode; indexName: string }
  /** incremental_ticker.{instrument}: a snapshot, then only the fields that changed (100 ms) */
  | { k: 'incremental_ticker'; instrument: string }
  /** platform_state.public_methods_state */
  | { k: 'public_methods_state' }
  /** announcements: each as it is published (src/engine/announcements.ts) */
  | { k: 'announcements' }
  /** user.access_log: the subscriber's logins as they happen (src/engine/accessLog.ts) */
  | { k: 'user.access_log' }
  /** user.lock: the subscriber's account locked or unlocked in a currency (private/get_user_locks) */
  | { k: 'user.lock' };

const INDEX_CURRENCIES: Record<string, CurrencyCode> = { btc_usd: 'BTC', eth_usd: 'ETH' };

/** The parity channel a name (split at dots) is, or null. */
export function parseParityChannel(p: string[], known: (instrument: string) => boolean): ParitySpec | null {
  if (p[0] === 'deribit_volatility_index' && p.length === 2 && Object.hasOwn(INDEX_CURRENCIES, p[1]!)) return { k: 'vol_index', currency: INDEX_CURRENCIES[p[1]!]!, indexName: p[1]! };
  if (p[0] === 'incremental_ticker' && p.length === 2 && known(p[1]!)) return { k: 'incremental_ticker', instrument: p[1]! };
  if (p[0] === 'platform_state' && p.length === 2 && p[1] === 'public_methods_state') return { k: 'public_methods_state' };
  if (p[0] === 'announcements' && p.length === 1) return { k: 'announcements' };
  if (p[0] === 'user' && p.length === 2 && p[1] === 'access_log') return { k: 'user.access_log' };
  if (p[0] === 'user' && p.length === 2 && p[1] === 'lock') return { k: 'user.lock' };
  return null;
}

/**
 * Book levels of one side grouped into buckets of `group` x the instrument's base tick (Deribit's
 * grouping of prices; on options in ticks, since their prices are in coin): bids rounded down, asks
 * up, so a grouped level never shows a better price than the book holds. The first `depth` buckets
 * as [price units, lots], best first.
 */
export function groupLevels(levels: ReadonlyMap<number, number>, inst: Instrument, group: number, desc: boolean, depth: number): Array<[number, number]> {
  const width = Math.max(1, group * inst.tick);
  const buckets = new Map<number, number>();
  for (const [p, q] of levels) {
    const b = group === 0 ? p : desc ? Math.floor(p / width) * width : Math.ceil(p / width) * width;
    buckets.set(b, (buckets.get(b) ?? 0) + q);
  }
  return [...buckets.entries()].sort((a, b) => (desc ? b[0] - a[0] : a[0] - b[0])).slice(0, depth);
}

/** The volatility index message, or null while the index has no value (no usable expiries). */
function volIndexData(ex: Exchange, spec: Extract<ParitySpec, { k: 'vol_index' }>): string | null {
  const v = volatilityIndex(ex, spec.currency);
  return Number.isFinite(v) ? JSON.stringify({ index_name: spec.indexName, volatility: Number(v.toFixed(2)), timestamp: ex.now }) : null;
}

/** The fields of `now` that differ from `before` (whole nested objects, such as `stats` and `greeks`). */
export function changedFields(before: Record<string, unknown>, now: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(now)) if (JSON.stringify(before[k]) !== JSON.stringify(v)) out[k] = v;
  return out;
}

/** A topic's memory between rounds (the hub's topic: `last` is what was last published). */
export interface ParityTopic {
  spec: ParitySpec;
  /** a private channel's user */
  userId: number | null;
  last?: string;
}

/** The messages (data JSON) a new subscriber gets at once. */
export function parityInitial(ex: Exchange, t: ParityTopic): string[] {
  const spec = t.spec;
  switch (spec.k) {
    case 'vol_index': {
      const d = volIndexData(ex, spec);
      return d === null ? [] : [d];
    }
    case 'incremental_ticker': {
      const inst = ex.instruments.get(spec.instrument)!;
      const ticker = tickerOf(ex, inst);
      // every subscriber starts from a snapshot; the topic diffs against what it last published
      t.last ??= JSON.stringify(ticker);
      return [JSON.stringify({ type: 'snapshot', ...ticker })];
    }
    case 'public_methods_state':
      // public methods never need authentication here (no unauthenticated-request switch exists)
      return [JSON.stringify({ allow_unauthenticated_public_requests: true })];
    case 'announcements':
      // nothing at once (public/get_announcements lists the past); the topic remembers the newest
      // id published so far, and each round sends those after it
      t.last ??= String(ex.announcements.nextId - 1);
      return [];
    case 'user.access_log':
      // as announcements: the newest entry id so far; each round sends the user's entries after it
      t.last ??= String(ex.nextAccessId - 1);
      return [];
    case 'user.lock':
      // the currencies locked now; each round sends the ones whose state changed
      t.last ??= lockedCurrencies(ex, t.userId!);
      return [];
  }
}

/** What moved in a publish round, as the parity channels need it. */
export interface ParityRound {
  cadence: 'raw' | 'agg';
  /** currencies whose index or vol smile moved */
  currencies: ReadonlySet<CurrencyCode>;
  touched: ReadonlySet<Instrument>;
}

/** The messages (data JSON) of one publish round for a topic. */
export function parityRound(ex: Exchange, t: ParityTopic, r: ParityRound): string[] {
  const spec = t.spec;
  switch (spec.k) {
    case 'vol_index': {
      if (r.cadence !== 'raw' || !r.currencies.has(spec.currency)) return [];
      const d = volIndexData(ex, spec);
      if (d === null) return [];
      const key = d.slice(0, d.lastIndexOf(',"timestamp"'));
      if (key === t.last) return [];
      t.last = key;
      return [d];
    }
    case 'incremental_ticker': {
      if (r.cadence !== 'agg') return [];
      const inst = ex.instruments.get(spec.instrument)!;
      if (!r.touched.has(inst) && !r.currencies.has(inst.currency) && t.last !== undefined) return [];
      const now = tickerOf(ex, inst);
      const text = JSON.stringify(now);
      if (text === t.last) return [];
      const before = t.last === undefined ? {} : (JSON.parse(t.last) as Record<string, unknown>);
      t.last = text;
      const changed = changedFields(before, now);
      delete changed.timestamp;
      if (Object.keys(changed).length === 0) return [];
      return [JSON.stringify({ type: 'change', timestamp: now.timestamp, instrument_name: inst.name, ...changed })];
    }
    case 'public_methods_state':
      return [];
    case 'announcements': {
      if (r.cadence !== 'raw') return [];
      const seen = Number(t.last ?? 0);
      if (ex.announcements.nextId - 1 <= seen) return [];
      t.last = String(ex.announcements.nextId - 1);
      return ex.announcements.list.filter((a) => a.id > seen).map((a) => JSON.stringify({ action: 'new', ...renderAnnouncement(a) }));
    }
    case 'user.lock': {
      if (r.cadence !== 'raw') return [];
      const now = lockedCurrencies(ex, t.userId!);
      if (now === t.last) return [];
      const before = new Set((t.last ?? '').split(',').filter((x) => x !== ''));
      const after = new Set(now.split(',').filter((x) => x !== ''));
      t.last = now;
      return CURRENCY_CODES.filter((c) => before.has(c) !== after.has(c)).map((c) => JSON.stringify({ currency: c, locked: after.has(c) }));
    }
    case 'user.access_log': {
      if (r.cadence !== 'raw') return [];
      const seen = Number(t.last ?? 0);
      if (ex.nextAccessId - 1 <= seen) return [];
      t.last = String(ex.nextAccessId - 1);
      return (ex.accessLog.get(t.userId!) ?? []).filter((e) => e.id > seen).map((e) => JSON.stringify(renderAccess(e)));
    }
  }
}

const PARITY_KINDS = new Set<string>(['vol_index', 'incremental_ticker', 'public_methods_state', 'announcements', 'user.access_log', 'user.lock']);

/** The currencies the user's account is locked in (in liquidation: get_user_locks), as text. */
function lockedCurrencies(ex: Exchange, userId: number): string {
  return CURRENCY_CODES.filter((c) => ex.inLiquidation(userId, c)).join(',');
}

export function isParitySpec(spec: { k: string }): spec is ParitySpec {
  return PARITY_KINDS.has(spec.k);
}
