// The Market data group (API.md 3.5) beyond the basics in market.ts: tickers and order books with
// marks, IVs, greeks and 24 h stats, book summaries, public trades, candles, mark history, trade
// volumes, expirations, delivery prices; and the test clock (API.md 8).
//
// Reads are pure functions of the engine state after a given command, so what they compute is
// cached per engine `seq` (the header of a book, open interest): a burst of get_order_book calls
// between two commands costs one computation, then a spread of the cached object. Books and big
// answers live in the exchange's read cache, an LRU bounded by bytes (src/api/reads/sharedReads.ts).
import { Type } from '@sinclair/typebox';
import type { CurrencyCode } from '../../domain/currency.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { lotsToAmount, premiumOf, priceToNumber, type Instrument } from '../../domain/instrument.ts';
import { intrinsicCoin, yearFraction } from '../../domain/pricing.ts';
import type { Exchange } from '../../engine/exchange.ts';
import { BUY, SELL } from '../../engine/orderBook.ts';
import type { Trade } from '../../engine/types.ts';
import { ivFromCoinPrice, optionGreeksCoin } from '../../market/smile.ts';
import type { Services } from '../../app/services.ts';
import { coin, money, renderInstrument, renderPublicTrade } from '../render.ts';
import { defineMethod } from '../rpc/registry.ts';
import { DEEP_BOOK_DEPTH, cached, catalogVersion, keep, seqVersion, sharedRead } from '../reads/sharedReads.ts';
import { RenderedJson } from '../reads/rendered.ts';
import { Count, CurrencyOrAny, CurrencyParam, InstrumentName, KindParam, Timestamp, currencyFilter } from './common.ts';
import { RESOLUTIONS, foldCandles } from './candles.ts';
import { activeCombos, comboOf, comboOrderBook, comboSummary, comboTicker, comboTradeRows, currencyComboTrades, renderComboTrade, type ComboTradeRow } from './comboMarketData.ts';

const DAY_MS = 24 * 3600 * 1000;
const MAX_MARK_HISTORY_RANGE_MS = 7 * DAY_MS;
const INDEX_CURRENCY: Record<string, CurrencyCode> = { btc_usd: 'BTC', eth_usd: 'ETH' };
const IndexName = Type.Union([Type.Literal('btc_usd'), Type.Literal('eth_usd')]);
const Sorting = Type.Union([Type.Literal('asc'), Type.Literal('desc'), Type.Literal('default')], { default: 'default' });
const Kind = Type.Union([Type.Literal('option'), Type.Literal('future'), Type.Literal('spot'), Type.Literal('future_combo'), Type.Literal('option_combo'), Type.Literal('any')]);

// ---- helpers ------------------------------------------------------------------------------------

/** A finite number rounded to `d` decimals, else null: no NaN or Infinity ever reaches a response. */
function fin(x: number | null | undefined, d = 8): number | null {
  return x !== null && x !== undefined && Number.isFinite(x) ? Number(x.toFixed(d)) : null;
}

function instrumentOrReject(ex: Exchange, name: string): Instrument {
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
function bookHeader(ex: Exchange, inst: Instrument): Record<string, unknown> {
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

function summaryOf(ex: Exchange, inst: Instrument): Record<string, unknown> {
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

function activeInstruments(ex: Exchange, currency: CurrencyCode | null): Instrument[] {
  const out: Instrument[] = [];
  for (const inst of ex.instruments.values()) if (inst.state !== 'delivered' && (currency === null || inst.currency === currency)) out.push(inst);
  return out;
}

interface TradeQuery {
  startTs?: number;
  endTs?: number;
  startSeq?: number;
  endSeq?: number;
  startId?: number;
  endId?: number;
  count: number;
  sorting: 'asc' | 'desc' | 'default';
}

/** Deribit's public trade selection: the latest `count` matches (the earliest with `asc`); `render`
 * makes each picked one's public object (a combo trade's differs from a leg trade's). */
function selectTrades<T extends { ts: number; seq: number; id: number }>(trades: T[], q: TradeQuery, render: (t: T) => Record<string, unknown>): { trades: Record<string, unknown>[]; has_more: boolean } {
  const match = trades.filter(
    (t) =>
      (q.startTs === undefined || t.ts >= q.startTs) &&
      (q.endTs === undefined || t.ts <= q.endTs) &&
      (q.startSeq === undefined || t.seq >= q.startSeq) &&
      (q.endSeq === undefined || t.seq <= q.endSeq) &&
      (q.startId === undefined || t.id >= q.startId) &&
      (q.endId === undefined || t.id <= q.endId),
  );
  const asc = q.sorting === 'asc';
  const picked = asc ? match.slice(0, q.count) : match.slice(-q.count).reverse();
  return { trades: picked.map(render), has_more: match.length > q.count };
}

/**
 * The public trades of a currency a `kind` selects: option (or any, or none given) the leg trades, a
 * combo fill's legs among them; option_combo (or combo) the combo trades themselves; other kinds none.
 */
function currencyTradesSelected(ex: Exchange, currency: CurrencyCode, kind: string | undefined, q: TradeQuery): { trades: Record<string, unknown>[]; has_more: boolean } {
  if (kind === 'option_combo' || kind === 'combo') return selectTrades(currencyComboTrades(ex, currency), q, (row) => renderComboTrade(ex, row));
  return selectTrades(currencyTrades(ex, currency, kind), q, renderPublicTrade);
}

/** The trades of an instrument or a combo (its combo trades); unknown: 10020. */
function instrumentTradesSelected(ex: Exchange, name: string, q: TradeQuery): { trades: Record<string, unknown>[]; has_more: boolean } {
  const r = comboOf(ex, name);
  if (r !== undefined) return selectTrades<ComboTradeRow>(comboTradeRows(ex, r), q, (row) => renderComboTrade(ex, row));
  const inst = instrumentOrReject(ex, name);
  return selectTrades(ex.markets.get(inst.id)!.trades, q, renderPublicTrade);
}

function currencyTrades(ex: Exchange, currency: CurrencyCode, kind: string | undefined): Trade[] {
  if (kind !== undefined && kind !== 'option' && kind !== 'any') return [];
  const all: Trade[] = [];
  for (const m of ex.markets.values()) if (m.inst.currency === currency) all.push(...m.trades);
  return all.sort((a, b) => a.id - b.id);
}

function tradeIdParam(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const m = /^(?:[A-Z]+-)?(\d{1,15})$/.exec(v);
  if (!m) throw reject(ERR.INVALID_PARAMS, 'trade_id_invalid', 'start_id');
  return Number(m[1]);
}

function optionCurrencies(s: Services, currency: CurrencyCode | null): CurrencyCode[] {
  const listed = s.catalog.currencies.map((c) => c.currency);
  return currency === null ? listed : [currency];
}

function activeExpiries(ex: Exchange, currency: CurrencyCode): number[] {
  const set = new Set<number>();
  for (const inst of ex.instruments.values()) if (inst.currency === currency && inst.state !== 'delivered' && inst.expiry > ex.now) set.add(inst.expiry);
  return [...set].sort((a, b) => a - b);
}

function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

const contracts = (scaled: number) => Number((scaled / 1e8).toFixed(8));

// ---- methods ------------------------------------------------------------------------------------

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

export const marketDataMethods = [
  defineMethod({
    name: 'public/ticker',
    scope: 'none',
    params: Type.Object({ instrument_name: InstrumentName }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      return ctx.services.seq.read(() => {
        const r = comboOf(ex, p.instrument_name);
        return r !== undefined ? comboTicker(ex, r, tickerOf) : bookHeader(ex, instrumentOrReject(ex, p.instrument_name));
      });
    },
  }),
  defineMethod({
    name: 'public/get_all_instruments',
    scope: 'none',
    params: Type.Object({ expired: Type.Boolean({ default: false }) }),
    handler(ctx, p) {
      const s = ctx.services;
      return sharedRead(s, `all_instruments:${p.expired}`, catalogVersion, () => {
        const out: Record<string, unknown>[] = [];
        for (const inst of s.ex.instruments.values()) if ((inst.state === 'delivered') === p.expired) out.push(renderInstrument(inst));
        return out;
      });
    },
  }),
  defineMethod({
    name: 'public/get_all_order_books',
    scope: 'none',
    params: Type.Object({ currency: Type.Union([CurrencyOrAny], { default: 'any' }), depth: Type.Integer({ minimum: 1, maximum: 1000, default: 5 }) }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      return sharedRead(ctx.services, `all_books:${p.currency}:${p.depth}`, seqVersion, () => activeInstruments(ex, currencyFilter(p.currency)).map((inst) => orderBookOf(ex, inst, p.depth)));
    },
  }),
  defineMethod({
    name: 'public/get_book_summary_per_currency',
    aliases: ['public/get_book_summary_by_currency'],
    scope: 'none',
    pathParam: 'currency',
    params: Type.Object({ currency: CurrencyParam, kind: Type.Optional(Kind) }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      const cur = p.currency as CurrencyCode;
      // kind left out: every kind, as Deribit (the options, then the active combos)
      if (p.kind === 'option_combo') return ctx.services.seq.read(() => activeCombos(ex, cur).map((r) => comboSummary(ex, r, tickerOf)));
      if (p.kind !== undefined && p.kind !== 'option' && p.kind !== 'any') return [];
      const withCombos = p.kind === undefined || p.kind === 'any';
      return sharedRead(ctx.services, `summaries:${p.currency}:${withCombos}`, seqVersion, () => {
        const out = activeInstruments(ex, cur).map((inst) => summaryOf(ex, inst));
        if (withCombos) for (const r of activeCombos(ex, cur)) out.push(comboSummary(ex, r, tickerOf));
        return out;
      });
    },
  }),
  defineMethod({
    name: 'public/get_book_summary_per_instrument',
    aliases: ['public/get_book_summary_by_instrument'],
    scope: 'none',
    pathParam: 'instrument_name',
    params: Type.Object({ instrument_name: InstrumentName }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      return ctx.services.seq.read(() => {
        const r = comboOf(ex, p.instrument_name);
        return [r !== undefined ? comboSummary(ex, r, tickerOf) : summaryOf(ex, instrumentOrReject(ex, p.instrument_name))];
      });
    },
  }),
  defineMethod({
    name: 'public/get_contract_size',
    scope: 'none',
    pathParam: 'instrument_name',
    params: Type.Object({ instrument_name: InstrumentName }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      return ctx.services.seq.read(() => {
        const r = comboOf(ex, p.instrument_name);
        return { contract_size: r !== undefined ? ex.comboBooks.inst(r).contractSize : instrumentOrReject(ex, p.instrument_name).contractSize };
      });
    },
  }),
  defineMethod({
    name: 'public/get_expiration_timestamps',
    scope: 'none',
    params: Type.Object({ currency: Type.Union([CurrencyOrAny], { default: 'any' }), kind: Type.Optional(Kind) }),
    handler(ctx, p) {
      const s = ctx.services;
      return s.seq.read(() => {
        const out: Record<string, number[]> = {};
        const optionsWanted = p.kind === undefined || p.kind === 'option' || p.kind === 'any';
        for (const c of optionCurrencies(s, currencyFilter(p.currency))) out[c] = optionsWanted ? activeExpiries(s.ex, c) : [];
        return out;
      });
    },
  }),
  defineMethod({
    name: 'public/get_order_book_by_instrument_id',
    scope: 'none',
    pathParam: 'instrument_id',
    params: Type.Object({ instrument_id: Type.Integer({ minimum: 1, maximum: 2 ** 31 }), depth: Type.Integer({ minimum: 1, maximum: 10000, default: 20 }) }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      return ctx.services.seq.read(() => {
        const inst = ex.instrumentsById.get(p.instrument_id);
        if (!inst) {
          // a combo takes its instrument id from the same counter
          for (const r of ex.combos.byId.values()) if (r.instrumentId === p.instrument_id) return comboOrderBook(ex, r, p.depth, tickerOf);
          throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_id');
        }
        return orderBookOf(ex, inst, p.depth);
      });
    },
  }),
  defineMethod({
    name: 'public/get_simplified_order_book',
    scope: 'none',
    pathParam: 'instrument_name',
    params: Type.Object({ instrument_name: InstrumentName, depth: Type.Integer({ minimum: 1, maximum: 10000, default: 10 }) }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      return ctx.services.seq.read(() => {
        const inst = instrumentOrReject(ex, p.instrument_name);
        const b = orderBookOf(ex, inst, p.depth);
        const bids = b.bids as number[][];
        const asks = b.asks as number[][];
        const bid = bids.length ? bids[0][0] : null;
        const ask = asks.length ? asks[0][0] : null;
        return {
          instrument_name: inst.name,
          timestamp: ex.now,
          bids,
          asks,
          best_bid_price: bid,
          best_ask_price: ask,
          mid_price: bid !== null && ask !== null ? fin((bid + ask) / 2) : null,
          spread: bid !== null && ask !== null ? fin(ask - bid) : null,
          mark_price: b.mark_price,
        };
      });
    },
  }),
  defineMethod({
    name: 'public/get_last_trades_by_instrument',
    scope: 'none',
    params: Type.Object({
      instrument_name: InstrumentName,
      start_seq: Type.Optional(Type.Integer({ minimum: 0 })),
      end_seq: Type.Optional(Type.Integer({ minimum: 0 })),
      start_timestamp: Type.Optional(Timestamp),
      end_timestamp: Type.Optional(Timestamp),
      count: Count(10),
      sorting: Sorting,
      include_old: Type.Optional(Type.Boolean()),
    }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      return ctx.services.seq.read(() =>
        instrumentTradesSelected(ex, p.instrument_name, { startSeq: p.start_seq, endSeq: p.end_seq, startTs: p.start_timestamp, endTs: p.end_timestamp, count: p.count, sorting: p.sorting }),
      );
    },
  }),
  defineMethod({
    name: 'public/get_last_trades_by_instrument_and_time',
    scope: 'none',
    params: Type.Object({
      instrument_name: InstrumentName,
      start_timestamp: Timestamp,
      end_timestamp: Type.Optional(Timestamp),
      count: Count(10),
      sorting: Sorting,
      include_old: Type.Optional(Type.Boolean()),
    }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      return ctx.services.seq.read(() => instrumentTradesSelected(ex, p.instrument_name, { startTs: p.start_timestamp, endTs: p.end_timestamp ?? ex.now, count: p.count, sorting: p.sorting }));
    },
  }),
  defineMethod({
    name: 'public/get_last_trades_by_currency',
    scope: 'none',
    params: Type.Object({
      currency: CurrencyParam,
      kind: KindParam,
      start_id: Type.Optional(Type.String({ maxLength: 32 })),
      end_id: Type.Optional(Type.String({ maxLength: 32 })),
      start_timestamp: Type.Optional(Timestamp),
      end_timestamp: Type.Optional(Timestamp),
      count: Count(10),
      sorting: Sorting,
      include_old: Type.Optional(Type.Boolean()),
    }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      const startId = tradeIdParam(p.start_id);
      const endId = tradeIdParam(p.end_id);
      return ctx.services.seq.read(() =>
        currencyTradesSelected(ex, p.currency as CurrencyCode, p.kind, { startId, endId, startTs: p.start_timestamp, endTs: p.end_timestamp, count: p.count, sorting: p.sorting }),
      );
    },
  }),
  defineMethod({
    name: 'public/get_last_trades_by_currency_and_time',
    scope: 'none',
    params: Type.Object({
      currency: CurrencyParam,
      kind: KindParam,
      start_timestamp: Timestamp,
      end_timestamp: Type.Optional(Timestamp),
      count: Count(10),
      sorting: Sorting,
      include_old: Type.Optional(Type.Boolean()),
    }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      return ctx.services.seq.read(() =>
        currencyTradesSelected(ex, p.currency as CurrencyCode, p.kind, { startTs: p.start_timestamp, endTs: p.end_timestamp ?? ex.now, count: p.count, sorting: p.sorting }),
      );
    },
  }),
  defineMethod({
    name: 'public/get_mark_price_history',
    scope: 'none',
    params: Type.Object({ instrument_name: InstrumentName, start_timestamp: Timestamp, end_timestamp: Timestamp }),
    handler(ctx, p) {
      const s = ctx.services;
      if (p.end_timestamp < p.start_timestamp) throw reject(ERR.INVALID_ARGUMENTS, 'end_before_start', 'end_timestamp');
      if (p.end_timestamp - p.start_timestamp > MAX_MARK_HISTORY_RANGE_MS) throw reject(ERR.INVALID_ARGUMENTS, 'range_over_7_days', 'end_timestamp');
      return s.seq.read(() => {
        const inst = instrumentOrReject(s.ex, p.instrument_name);
        return s.views.markHistory(inst.id, p.start_timestamp, p.end_timestamp).map(([ts, mark]) => [ts, fin(mark)]);
      });
    },
  }),
  defineMethod({
    name: 'public/get_trade_volumes',
    scope: 'none',
    params: Type.Object({ extended: Type.Boolean({ default: false }) }),
    handler(ctx, p) {
      const s = ctx.services;
      return s.seq.read(() =>
        optionCurrencies(s, null).map((c) => {
          const v = s.views.tradeVolumes(c, s.ex.now);
          const out: Record<string, unknown> = { currency: c, calls_volume: contracts(v.calls[0]), puts_volume: contracts(v.puts[0]), futures_volume: 0, spot_volume: 0 };
          if (p.extended) {
            Object.assign(out, {
              calls_volume_7d: contracts(v.calls[1]),
              puts_volume_7d: contracts(v.puts[1]),
              futures_volume_7d: 0,
              spot_volume_7d: 0,
              calls_volume_30d: contracts(v.calls[2]),
              puts_volume_30d: contracts(v.puts[2]),
              futures_volume_30d: 0,
              spot_volume_30d: 0,
            });
          }
          return out;
        }),
      );
    },
  }),
  defineMethod({
    name: 'public/get_tradingview_chart_data',
    scope: 'none',
    params: Type.Object({
      instrument_name: InstrumentName,
      start_timestamp: Timestamp,
      end_timestamp: Timestamp,
      resolution: Type.Union([Type.Integer({ minimum: 1, maximum: 1440 }), Type.String({ maxLength: 4 })]),
    }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      const minutes = RESOLUTIONS[String(p.resolution)];
      if (minutes === undefined) throw reject(ERR.INVALID_PARAMS, 'resolution_invalid', 'resolution');
      const width = minutes * 60_000;
      return ctx.services.seq.read(() => {
        const inst = instrumentOrReject(ex, p.instrument_name);
        const out = { ticks: [] as number[], open: [] as number[], high: [] as number[], low: [] as number[], close: [] as number[], volume: [] as number[], cost: [] as number[], status: 'ok' };
        const trades = ex.markets.get(inst.id)!.trades.filter((t) => t.ts >= p.start_timestamp && t.ts <= p.end_timestamp);
        for (const c of foldCandles(inst, trades, width)) {
          out.ticks.push(c.tick);
          out.open.push(c.open);
          out.high.push(c.high);
          out.low.push(c.low);
          out.close.push(c.close);
          out.volume.push(c.volume);
          out.cost.push(c.cost);
        }
        if (out.ticks.length === 0) out.status = 'no_data';
        return out;
      });
    },
  }),
  defineMethod({
    name: 'public/get_delivery_prices',
    scope: 'none',
    params: Type.Object({ index_name: IndexName, offset: Type.Integer({ minimum: 0, maximum: 1e6, default: 0 }), count: Count(10) }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      const currency = INDEX_CURRENCY[p.index_name];
      return ctx.services.seq.read(() => {
        const all = ex.deliveries.filter((d) => d.currency === currency).sort((a, b) => b.expiry - a.expiry);
        return { data: all.slice(p.offset, p.offset + p.count).map((d) => ({ date: utcDate(d.expiry), delivery_price: d.price })), records_total: all.length };
      });
    },
  }),
  defineMethod({
    name: 'private/set_test_time',
    scope: 'admin',
    params: Type.Object({ timestamp: Timestamp }),
    async handler(ctx, p) {
      const s = ctx.services;
      // the test clock does not exist unless STRIKEBOOK_TEST_CLOCK=1 (never in production)
      if (!s.testClock) throw reject(ERR.METHOD_NOT_FOUND);
      if (!s.testClock.set(p.timestamp)) throw reject(ERR.INVALID_ARGUMENTS, 'time_goes_backwards', 'timestamp');
      // what became due at the new time happens before the reply: expiries settle, orders expire,
      // new series are listed
      await s.marketTick?.();
      return s.seq.read(() => ({ timestamp: s.clock.now() }));
    },
  }),
];
