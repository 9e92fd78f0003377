// The reads of books the Market data methods (marketData.ts) and the channels share: the ticker
// (book header with marks, IVs, greeks and 24 h stats), order books, book summaries and quotes.
//
// Reads are pure functions of the engine state after a given command, so what they compute is
// cached per engine `seq` (the header of a book, open interest): a burst of get_order_book calls
// between two commands costs one computation, then a spread of the cached object. Books and big
// answers live in the exchange's read cache, an LRU bounded by bytes (src/api/reads/sharedReads.ts).
import type { CurrencyCode } from '../../domain/currency.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { lotsToAmount, premiumOf, priceToNumber, type Instrument } from '../../domain/instrument.ts';
import { intrinsicCoin, yearFraction } from '../../domain/pricing.ts';
import type { Exchange } from '../../engine/exchange.ts';
import { BUY, SELL } from '../../engine/orderBook.ts';
import { ivFromCoinPrice, optionGreeksCoin } from '../../market/smile.ts';
import type { Services } from '../../app/services.ts';
import { coin, money } from '../render.ts';
import { DEEP_BOOK_DEPTH, cached, keep, seqVersion, sharedRead } from '../reads/sharedReads.ts';
import { RenderedJson } from '../reads/rendered.ts';
import { comboOf, comboOrderBook } from './comboMarketData.ts';

export const DAY_MS = 24 * 3600 * 1000;

/** A finite number rounded to `d` decimals, else null: no NaN or Infinity ever reaches a response. */
export function fin(x: number | null | undefined, d = 8): number | null {
  return x !== null && x !== undefined && Number.isFinite(x) ? Number(x.toFixed(d)) : null;
}

export function instrumentOrReject(ex: Exchange, name: string): Instrument {
  const inst = ex.instruments.get(name);
  if (!inst) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
  return inst;
}

function amountOf(inst: Instrument, lots: number): number {
  return lotsToAmount(inst, lots);
}

/** Instrument state as clients see it: past expiry but not yet settled is `settlement`. */
function visibleState(ex: Exchange, inst: Instrument): string {
  return inst.state === 'open' && inst.expiry <= ex.now ? 'settlement' : inst.state;
}

/** Per seq, bounded by the number of instruments (books, whose keys a client chooses, are in the LRU). */
interface SeqCache {
  seq: number;
  headers: Map<number, Record<string, unknown>>;
  openInterest: Map<number, number> | null;
}

const caches = new WeakMap<Exchange, SeqCache>();

function cacheOf(ex: Exchange): SeqCache {
  let c = caches.get(ex);
  if (!c || c.seq !== ex.seq) {
    c = { seq: ex.seq, headers: new Map(), openInterest: null };
    caches.set(ex, c);
  }
  return c;
}

/** Open interest per instrument in lots: the sum of the long positions (equal to the shorts). */
function openInterestLots(ex: Exchange, instId: number): number {
  const c = cacheOf(ex);
  if (!c.openInterest) {
    const oi = new Map<number, number>();
    for (const u of ex.users.values()) for (const [id, p] of u.positions) if (p.size > 0) oi.set(id, (oi.get(id) ?? 0) + p.size);
    c.openInterest = oi;
  }
  return c.openInterest.get(instId) ?? 0;
}

interface Stats24h {
  high: number | null;
  low: number | null;
  price_change: number | null;
  volume: number;
  volume_usd: number;
}

function stats24h(ex: Exchange, inst: Instrument): Stats24h {
  const trades = ex.markets.get(inst.id)!.trades;
  const from = ex.now - DAY_MS;
  let high = -Infinity;
  let low = Infinity;
  let lots = 0;
  let usd = 0;
  let i = trades.length - 1;
  for (; i >= 0 && trades[i].ts > from; i--) {
    const t = trades[i];
    high = Math.max(high, t.price);
    low = Math.min(low, t.price);
    lots += t.lots;
    const a = amountOf(inst, t.lots);
    if (Number.isFinite(t.indexPrice)) usd += a * priceToNumber(t.price) * t.indexPrice;
  }
  if (lots === 0) return { high: null, low: null, price_change: null, volume: 0, volume_usd: 0 };
  // change against the last price before the window, or the first trade in it
  const ref = i >= 0 ? trades[i].price : trades[i + 1].price;
  const last = trades[trades.length - 1].price;
  return {
    high: priceToNumber(high),
    low: priceToNumber(low),
    price_change: fin(((last - ref) / ref) * 100, 4),
    volume: amountOf(inst, lots),
    volume_usd: fin(usd, 2) ?? 0,
  };
}

/** Premiums traded in the last 24 h, in the coin (Deribit `volume_notional`: the volume in the quote currency). */
function volumeNotional(ex: Exchange, inst: Instrument): number {
  const trades = ex.markets.get(inst.id)!.trades;
  const from = ex.now - DAY_MS;
  let minor = 0;
  for (let i = trades.length - 1; i >= 0 && trades[i].ts > from; i--) minor += premiumOf(inst, trades[i].price, trades[i].lots);
  return money(minor, inst.currency);
}

/** The Deribit ticker object (a fresh copy: callers may change it). */
export function tickerOf(ex: Exchange, inst: Instrument): Record<string, unknown> {
  return { ...bookHeader(ex, inst) };
}

/** Everything of a Deribit order book object except the levels; also the ticker. Cached per seq:
 * the object is shared, so it must not be changed (tickerOf / renderOrderBook give copies). */
export function bookHeader(ex: Exchange, inst: Instrument): Record<string, unknown> {
  const cache = cacheOf(ex);
  const hit = cache.headers.get(inst.id);
  if (hit) return hit;
  const m = ex.markets.get(inst.id)!;
  const book = ex.books.get(inst.id)!;
  const F = ex.indexPrice(inst.currency);
  const T = yearFraction(ex.now, inst.expiry);
  const live = inst.state === 'open' && T > 0 && F > 0;
  const bid = book.depth(BUY, 1)[0];
  const ask = book.depth(SELL, 1)[0];
  const iv = (price: number | undefined) => {
    if (price === undefined || !live) return null;
    const v = ivFromCoinPrice(inst.optionType, priceToNumber(price), F, inst.strike, T);
    return v === null ? null : fin(v * 100, 2);
  };
  const greeks = live && Number.isFinite(m.markIv) ? optionGreeksCoin(inst.optionType, F, inst.strike, T, m.markIv) : { delta: 0, gamma: 0, vega: 0, theta: 0, rho: 0 };
  const delivered = inst.state === 'delivered' && inst.deliveryPrice !== null;
  const settledAt = delivered ? intrinsicCoin(inst.optionType, inst.deliveryPrice!, inst.strike) : NaN;
  const header: Record<string, unknown> = {
    instrument_name: inst.name,
    timestamp: ex.now,
    state: visibleState(ex, inst),
    change_id: m.changeId,
    best_bid_price: bid ? priceToNumber(bid[0]) : 0,
    best_bid_amount: bid ? amountOf(inst, bid[1]) : 0,
    best_ask_price: ask ? priceToNumber(ask[0]) : 0,
    best_ask_amount: ask ? amountOf(inst, ask[1]) : 0,
    last_price: m.lastPrice === null ? null : priceToNumber(m.lastPrice),
    mark_price: delivered ? fin(settledAt) : coin(m.markCoin),
    mark_iv: fin(m.markIv * 100, 2),
    bid_iv: iv(bid?.[0]),
    ask_iv: iv(ask?.[0]),
    index_price: fin(F, 2),
    underlying_price: fin(F, 2),
    underlying_index: 'index_price',
    interest_rate: 0,
    estimated_delivery_price: delivered ? inst.deliveryPrice : fin(F, 2),
    min_price: priceToNumber(m.minPrice),
    max_price: priceToNumber(m.maxPrice),
    open_interest: amountOf(inst, openInterestLots(ex, inst.id)),
    settlement_price: delivered ? fin(settledAt) : null,
    delivery_price: delivered ? inst.deliveryPrice : null,
    greeks: { delta: fin(greeks.delta, 5) ?? 0, gamma: fin(greeks.gamma, 5) ?? 0, vega: fin(greeks.vega, 5) ?? 0, theta: fin(greeks.theta, 5) ?? 0, rho: fin(greeks.rho, 5) ?? 0 },
    stats: stats24h(ex, inst),
  };
  cache.headers.set(inst.id, header);
  return header;
}

/** A depth past the deeper side of the book shows the same levels: those requests share one entry. */
function effectiveDepth(ex: Exchange, inst: Instrument, depth: number): number {
  const book = ex.books.get(inst.id)!;
  return Math.min(depth, Math.max(book.levels(BUY), book.levels(SELL), 1));
}

/** Rough heap size of a book object: its header and two small arrays per level. */
const bookBytes = (levels: number): number => 1500 + 80 * levels;

/** The Deribit order book object (API.md 3.5): header plus `depth` levels a side. Cached per seq. */
export function orderBookOf(ex: Exchange, inst: Instrument, depth: number): Record<string, unknown> {
  const d = effectiveDepth(ex, inst, depth);
  const key = `book:${inst.id}:${d}`;
  const hit = cached<Record<string, unknown>>(ex, key, ex.seq);
  if (hit) return hit;
  const book = ex.books.get(inst.id)!;
  const bids = book.depth(BUY, d).map(([p, q]) => [priceToNumber(p), amountOf(inst, q)]);
  const asks = book.depth(SELL, d).map(([p, q]) => [priceToNumber(p), amountOf(inst, q)]);
  const out = { ...bookHeader(ex, inst), bids, asks };
  keep(ex, key, ex.seq, out, bookBytes(bids.length + asks.length));
  return out;
}

/**
 * A book as a big answer when it is deep (more than DEEP_BOOK_DEPTH levels asked): rendered once per
 * seq and shared; a shallow one as the cached object.
 */
export function orderBookRead(s: Services, name: string, depth: number): Promise<unknown> {
  const ex = s.ex;
  // a combo's book (comboMarketData.ts): few and small, rendered per request
  if (comboOf(ex, name) !== undefined) return s.seq.read(() => comboBookOrReject(ex, name, depth));
  if (depth <= DEEP_BOOK_DEPTH) {
    // rendered once per state and depth, and the same text sent to every reader until a command
    // changes the state: a book poller's request costs a cache lookup, not a serialization
    return s.seq.read(() => {
      const inst = instrumentOrReject(ex, name);
      const key = `book_text:${inst.id}:${effectiveDepth(ex, inst, depth)}`;
      const hit = cached<RenderedJson>(ex, key, ex.seq);
      if (hit !== undefined) return hit;
      const r = new RenderedJson(JSON.stringify(orderBookOf(ex, inst, depth)));
      keep(ex, key, ex.seq, r, r.bytes);
      return r;
    });
  }
  return sharedRead(s, `book_text:${name}:${depth}`, seqVersion, () => {
    const inst = instrumentOrReject(ex, name);
    // the effective depth is known only now; the text is the same for every depth past it
    return orderBookOf(ex, inst, depth);
  });
}

/** A combo's order book; unknown by now (read after the check above): 10020. */
function comboBookOrReject(ex: Exchange, name: string, depth: number): Record<string, unknown> {
  const r = comboOf(ex, name);
  if (r === undefined) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
  return comboOrderBook(ex, r, depth, tickerOf);
}

export function summaryOf(ex: Exchange, inst: Instrument): Record<string, unknown> {
  const h = bookHeader(ex, inst);
  const stats = h.stats as Stats24h;
  const bid = (h.best_bid_amount as number) > 0 ? (h.best_bid_price as number) : null;
  const ask = (h.best_ask_amount as number) > 0 ? (h.best_ask_price as number) : null;
  return {
    instrument_name: inst.name,
    base_currency: inst.currency,
    quote_currency: inst.currency,
    creation_timestamp: ex.now,
    bid_price: bid,
    ask_price: ask,
    mid_price: bid !== null && ask !== null ? fin((bid + ask) / 2) : null,
    last: h.last_price,
    high: stats.high,
    low: stats.low,
    price_change: stats.price_change,
    volume: stats.volume,
    volume_usd: stats.volume_usd,
    volume_notional: volumeNotional(ex, inst),
    open_interest: h.open_interest,
    mark_price: h.mark_price,
    mark_iv: h.mark_iv,
    underlying_price: h.underlying_price,
    underlying_index: h.underlying_index,
    interest_rate: 0,
    estimated_delivery_price: h.estimated_delivery_price,
  };
}

export function activeInstruments(ex: Exchange, currency: CurrencyCode | null): Instrument[] {
  const out: Instrument[] = [];
  for (const inst of ex.instruments.values()) if (inst.state !== 'delivered' && (currency === null || inst.currency === currency)) out.push(inst);
  return out;
}

/** Best bid and ask of a book (Deribit `quote.{instrument}` data); 0 where a side is empty, as in
 * the order book object. */
export function quoteOf(ex: Exchange, inst: Instrument): Record<string, unknown> {
  const h = bookHeader(ex, inst);
  return {
    timestamp: ex.now,
    instrument_name: inst.name,
    best_bid_price: h.best_bid_price,
    best_bid_amount: h.best_bid_amount,
    best_ask_price: h.best_ask_price,
    best_ask_amount: h.best_ask_amount,
  };
}
