// Market data of combo books (issue 34, third slice; docs/api-notes.md "Combo market data"): a combo
// (src/combos/) as Deribit shows an `option_combo` instrument, its ticker and order book (levels of
// the combo's own book, mark = the net of the legs' marks, band = the net of the legs' bands), book
// summary and public trades. The ordinary market-data methods (market.ts, marketData.ts) and the
// stream hub call in here when a name is a combo; nothing here changes state.
//
// A combo trade is one fill of the combo book (src/combos/book.ts ComboTrade): shown as a public trade
// of the combo (net price, amount in the combo's unit) with `combo_id` and `combo_trade_id`; its leg
// trades stay in the legs' trade lists, also carrying `combo_id` and `combo_trade_id`. Its `trade_id`
// is `COMBO-<combo_trade_id>` (the combo trades have their own counter, apart from the leg trades').
import type { CurrencyCode } from '../../domain/currency.ts';
import { lotsToAmount, premiumOf, priceToNumber, type Instrument } from '../../domain/instrument.ts';
import type { ComboRecord } from '../../combos/combos.ts';
import type { ComboTrade } from '../../combos/book.ts';
import { comboBand, comboMark, legQuotes } from '../../combos/legPrices.ts';
import type { Exchange } from '../../engine/exchange.ts';
import { BUY, SELL } from '../../engine/orderBook.ts';
import { lastTradeIdOf, type Trade } from '../../engine/types.ts';
import { coin, money, orderId, renderInstrument, renderUserTrade } from '../render.ts';

const DAY_MS = 24 * 3600 * 1000;

/** The options' ticker (marketData.ts tickerOf), passed in: that module calls this one. */
export type LegTicker = (ex: Exchange, inst: Instrument) => Record<string, unknown>;

/** The combo of that name, or undefined (an option, or unknown). */
export function comboOf(ex: Exchange, name: string): ComboRecord | undefined {
  return ex.combos.byId.get(name);
}

/** The instrument a channel or book names: an option's, or a combo's (kind option_combo); undefined when unknown. */
export function marketInstrument(ex: Exchange, name: string): Instrument | undefined {
  const inst = ex.instruments.get(name);
  if (inst !== undefined) return inst;
  const r = ex.combos.byId.get(name);
  return r === undefined ? undefined : ex.comboBooks.inst(r);
}

/** Whether `inst` is a combo's instrument object (never in the exchange's instrument maps). */
export function isComboInstrument(ex: Exchange, inst: Instrument): boolean {
  return ex.instruments.get(inst.name) !== inst && ex.combos.byId.has(inst.name);
}

/** A combo's state as an instrument: `open` while active, else `inactive` (a leg expired, or the soft limit). */
function stateOf(ex: Exchange, r: ComboRecord): 'open' | 'inactive' {
  return ex.combos.isActive(r) ? 'open' : 'inactive';
}

/**
 * The combo as Deribit's instrument object (kind `option_combo`): the ordinary option fields of the
 * combo's instrument (tick 0.0001, the legs' minimum amount and commissions, expiry of the earliest
 * leg); a combo has no strike or option type of its own (null).
 */
export function renderComboInstrument(ex: Exchange, r: ComboRecord): Record<string, unknown> {
  const inst = ex.comboBooks.inst(r);
  const state = stateOf(ex, r);
  return { ...renderInstrument(inst), kind: 'option_combo', option_type: null, strike: null, is_active: state === 'open', state };
}

/**
 * Combos get_instruments lists: `expired` false the active ones, true those a leg of which expired
 * (a combo deactivated by the soft limit is in neither list; get_instrument still answers it).
 */
export function comboInstruments(ex: Exchange, currency: CurrencyCode | null, expired: boolean): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const r of ex.combos.byId.values()) {
    if (currency !== null && ex.combos.currencyOf(r) !== currency) continue;
    const active = ex.combos.isActive(r);
    const ended = !active && ex.comboBooks.inst(r).expiry <= ex.now;
    if (expired ? ended : active) out.push(renderComboInstrument(ex, r));
  }
  return out.sort((a, b) => (a.instrument_id as number) - (b.instrument_id as number));
}

// ---- trades --------------------------------------------------------------------------------------

/** A combo trade with what its public form needs: the combo and its place among the combo's trades. */
export interface ComboTradeRow {
  id: number;
  seq: number;
  ts: number;
  ct: ComboTrade;
  r: ComboRecord;
  /** Deribit's tick direction against the combo trade before it */
  tick: number;
}

/** The combo's kept trades, oldest first. `trade_seq` counts every combo trade of the combo (`traded`). */
export function comboTradeRows(ex: Exchange, r: ComboRecord): ComboTradeRow[] {
  const list = ex.comboBooks.trades.get(r.id) ?? [];
  const total = r.traded ?? list.length;
  const out: ComboTradeRow[] = [];
  let prevTick = 0;
  list.forEach((ct, k) => {
    const tick = tickDirection(ct.price, k > 0 ? list[k - 1]!.price : null, prevTick);
    out.push({ id: ct.id, seq: total - (list.length - 1 - k), ts: ct.ts, ct, r, tick });
    prevTick = tick;
  });
  return out;
}

/** Deribit's tick direction: 0 up, 1 unchanged after up, 2 down, 3 unchanged after down. */
function tickDirection(price: number, prev: number | null, prevTick: number): number {
  if (prev === null || price > prev) return 0;
  if (price < prev) return 2;
  return prevTick === 0 || prevTick === 1 ? 1 : 3;
}

/** Every kept combo trade of a currency (option combos), by combo trade id. */
export function currencyComboTrades(ex: Exchange, currency: CurrencyCode): ComboTradeRow[] {
  const out: ComboTradeRow[] = [];
  for (const r of ex.combos.byId.values()) if (ex.combos.currencyOf(r) === currency) out.push(...comboTradeRows(ex, r));
  return out.sort((a, b) => a.id - b.id);
}

/** The net of the legs' marks when the combo traded (each leg trade keeps its leg's mark), or null. */
function netMarkAt(row: ComboTradeRow): number | null {
  const legs = row.ct.legs;
  if (legs.length !== row.r.legs.length) return null;
  let s = 0;
  legs.forEach((t, i) => (s += row.r.legs[i]!.ratio * t.markPrice));
  return coin(s);
}

/** A combo trade as Deribit's public trade object (the combo's instrument, net price). */
export function renderComboTrade(ex: Exchange, row: ComboTradeRow): Record<string, unknown> {
  const inst = ex.comboBooks.inst(row.r);
  const amount = lotsToAmount(inst, row.ct.lots);
  const leg = row.ct.legs[0];
  return {
    trade_id: `COMBO-${row.ct.id}`,
    trade_seq: row.seq,
    instrument_name: row.r.id,
    timestamp: row.ct.ts,
    direction: row.ct.takerSide === BUY ? 'buy' : 'sell',
    tick_direction: row.tick,
    price: priceToNumber(row.ct.price),
    amount,
    contracts: amount / inst.contractSize,
    index_price: leg !== undefined && Number.isFinite(leg.indexPrice) ? leg.indexPrice : ex.indexPrice(inst.currency),
    mark_price: netMarkAt(row),
    // no implied volatility of a combo
    iv: null,
    combo_id: row.r.id,
    combo_trade_id: row.ct.id,
  };
}

/** Whether the user is one of a combo trade's two sides (its maker's or its taker's combo order). */
export function isComboTradeOf(row: ComboTradeRow, userId: number): boolean {
  return row.ct.makerOrder.userId === userId || row.ct.takerOrder.userId === userId;
}

/**
 * A combo trade as one of its users sees it (the `user.combo_trades.*` channels, Deribit's user trade
 * with `legs`): the public combo trade with the user's combo order's side, id and flags, the sum of
 * the user's leg fees (exact, in the fee units, converted once) and the user's leg trades as `legs`.
 * A combo order never trades with the same user's (placement.ts match), so the user is one side only.
 */
export function renderUserComboTrade(ex: Exchange, row: ComboTradeRow, userId: number): Record<string, unknown> {
  const isMaker = row.ct.makerOrder.userId === userId;
  const order = isMaker ? row.ct.makerOrder : row.ct.takerOrder;
  const currency = ex.comboBooks.inst(row.r).currency;
  let fee = 0;
  for (const t of row.ct.legs) fee += isMaker ? t.makerFee : t.takerFee;
  const last = row.ct.legs[row.ct.legs.length - 1];
  return {
    ...renderComboTrade(ex, row),
    direction: order.side === BUY ? 'buy' : 'sell',
    order_id: orderId(order),
    order_type: order.type,
    liquidity: isMaker ? 'M' : 'T',
    fee: money(fee, currency),
    fee_currency: currency,
    // the order's state just after this fill: filled when this was its last fill and it filled
    // (a combo's leg trades all say `filled`, book.ts/fill.ts, so they cannot tell)
    state: order.state === 'filled' && last !== undefined && lastTradeIdOf(order) === last.id ? 'filled' : 'open',
    label: order.label,
    post_only: order.postOnly,
    reduce_only: order.reduceOnly,
    underlying_price: row.ct.legs[0]?.indexPrice ?? ex.indexPrice(currency),
    api: true,
    mmp: false,
    risk_reducing: false,
    matching_id: null,
    self_trade: false,
    // Deribit's combo trade carries no profit of its own (its legs do)
    profit_loss: null,
    legs: row.ct.legs.map((t) => renderUserTrade(t, userId)),
  };
}

/**
 * The combo trades among a batch's leg trades (each leg of a combo fill carries its combo trade id),
 * each once, in the order of their first leg: what the `trades.{combo}` channels publish.
 */
export function comboTradesOf(ex: Exchange, legTrades: readonly Trade[]): ComboTradeRow[] {
  const seen = new Set<number>();
  const out: ComboTradeRow[] = [];
  const rowsOf = new Map<string, ComboTradeRow[]>();
  for (const t of legTrades) {
    if (t.combo === undefined || seen.has(t.combo.tradeId)) continue;
    seen.add(t.combo.tradeId);
    const r = ex.combos.byId.get(t.combo.id);
    if (r === undefined) continue;
    let rows = rowsOf.get(r.id);
    if (rows === undefined) rowsOf.set(r.id, (rows = comboTradeRows(ex, r)));
    // the batch's trades are the newest: searched from the end
    for (let k = rows.length - 1; k >= 0; k--) {
      if (rows[k]!.id === t.combo.tradeId) {
        out.push(rows[k]!);
        break;
      }
    }
  }
  return out;
}

// ---- book, ticker, summary -----------------------------------------------------------------------

/** The levels of a combo's book, best first: [price units, lots of the combo's minimum amount]. */
export function comboLevels(ex: Exchange, r: ComboRecord, side: 0 | 1, depth: number): Array<[number, number]> {
  const b = ex.comboBooks.books.get(r.id);
  return b === undefined ? [] : b.depth(side, depth);
}

interface ComboStats {
  high: number | null;
  low: number | null;
  price_change: number | null;
  volume: number;
  volume_usd: number;
}

/** The last 24 h of combo trades: high, low, change against the price before the window, volumes. */
function comboStats(ex: Exchange, inst: Instrument, rows: readonly ComboTradeRow[]): ComboStats & { notional: number } {
  const from = ex.now - DAY_MS;
  let high = -Infinity;
  let low = Infinity;
  let lots = 0;
  let usd = 0;
  let notional = 0;
  let i = rows.length - 1;
  for (; i >= 0 && rows[i]!.ts > from; i--) {
    const ct = rows[i]!.ct;
    high = Math.max(high, ct.price);
    low = Math.min(low, ct.price);
    lots += ct.lots;
    // a net premium may be negative (a credit): volumes count its size
    const premium = Math.abs(premiumOf(inst, ct.price, ct.lots));
    notional += premium;
    const idx = ct.legs[0]?.indexPrice ?? NaN;
    if (Number.isFinite(idx)) usd += money(premium, inst.currency) * idx;
  }
  if (lots === 0) return { high: null, low: null, price_change: null, volume: 0, volume_usd: 0, notional: 0 };
  const ref = rows[i >= 0 ? i : i + 1]!.ct.price;
  const last = rows[rows.length - 1]!.ct.price;
  return {
    high: priceToNumber(high),
    low: priceToNumber(low),
    // against a zero (or negative) reference a percentage says nothing
    price_change: ref > 0 ? Number((((last - ref) / ref) * 100).toFixed(4)) : null,
    volume: lotsToAmount(inst, lots),
    volume_usd: Number(usd.toFixed(2)),
    notional: money(notional, inst.currency),
  };
}

/**
 * The combo's ticker (Deribit's ticker object): its own book's best levels and last trade; mark,
 * band and greeks the net of the legs' (ratio x each leg's); no implied volatilities (null) and no
 * open interest of its own (positions are held in the legs: 0). `legTicker` is the legs' ticker.
 */
export function comboTicker(ex: Exchange, r: ComboRecord, legTicker: LegTicker): Record<string, unknown> {
  const inst = ex.comboBooks.inst(r);
  const q = legQuotes(ex, r.legs);
  const band = q === null ? null : comboBand(q);
  const bid = comboLevels(ex, r, BUY, 1)[0];
  const ask = comboLevels(ex, r, SELL, 1)[0];
  const rows = comboTradeRows(ex, r);
  const last = rows[rows.length - 1];
  const greeks = { delta: 0, gamma: 0, vega: 0, theta: 0, rho: 0 };
  for (const l of r.legs) {
    const leg = ex.instruments.get(l.instrument);
    const g = leg === undefined ? undefined : (legTicker(ex, leg).greeks as Record<keyof typeof greeks, number> | undefined);
    if (g !== undefined) for (const k of Object.keys(greeks) as (keyof typeof greeks)[]) greeks[k] += l.ratio * g[k];
  }
  const F = ex.indexPrice(inst.currency);
  const index = Number.isFinite(F) ? Number(F.toFixed(2)) : null;
  const s = comboStats(ex, inst, rows);
  return {
    instrument_name: r.id,
    timestamp: ex.now,
    state: stateOf(ex, r),
    change_id: ex.comboBooks.changeId(r.id),
    best_bid_price: bid ? priceToNumber(bid[0]) : 0,
    best_bid_amount: bid ? lotsToAmount(inst, bid[1]) : 0,
    best_ask_price: ask ? priceToNumber(ask[0]) : 0,
    best_ask_amount: ask ? lotsToAmount(inst, ask[1]) : 0,
    last_price: last === undefined ? null : priceToNumber(last.ct.price),
    mark_price: q === null ? null : coin(comboMark(q) / 10_000),
    mark_iv: null,
    bid_iv: null,
    ask_iv: null,
    index_price: index,
    underlying_price: index,
    underlying_index: 'index_price',
    interest_rate: 0,
    estimated_delivery_price: index,
    min_price: band === null ? null : priceToNumber(band.min),
    max_price: band === null ? null : priceToNumber(band.max),
    open_interest: 0,
    settlement_price: null,
    delivery_price: null,
    greeks: { delta: round5(greeks.delta), gamma: round5(greeks.gamma), vega: round5(greeks.vega), theta: round5(greeks.theta), rho: round5(greeks.rho) },
    stats: { high: s.high, low: s.low, price_change: s.price_change, volume: s.volume, volume_usd: s.volume_usd },
  };
}

function round5(x: number): number {
  return Number.isFinite(x) ? Number(x.toFixed(5)) : 0;
}

/** The combo's order book object: the ticker's fields and `depth` levels a side, [price, amount]. */
export function comboOrderBook(ex: Exchange, r: ComboRecord, depth: number, legTicker: LegTicker): Record<string, unknown> {
  const inst = ex.comboBooks.inst(r);
  const side = (s: 0 | 1) => comboLevels(ex, r, s, depth).map(([p, n]) => [priceToNumber(p), lotsToAmount(inst, n)]);
  return { ...comboTicker(ex, r, legTicker), bids: side(BUY), asks: side(SELL) };
}

/** The combo's book summary (get_book_summary_by_currency / _by_instrument). */
export function comboSummary(ex: Exchange, r: ComboRecord, legTicker: LegTicker): Record<string, unknown> {
  const inst = ex.comboBooks.inst(r);
  const t = comboTicker(ex, r, legTicker);
  const stats = comboStats(ex, inst, comboTradeRows(ex, r));
  const bid = (t.best_bid_amount as number) > 0 ? (t.best_bid_price as number) : null;
  const ask = (t.best_ask_amount as number) > 0 ? (t.best_ask_price as number) : null;
  return {
    instrument_name: r.id,
    base_currency: inst.currency,
    quote_currency: inst.currency,
    creation_timestamp: ex.now,
    bid_price: bid,
    ask_price: ask,
    mid_price: bid !== null && ask !== null ? Number(((bid + ask) / 2).toFixed(8)) : null,
    last: t.last_price,
    high: stats.high,
    low: stats.low,
    price_change: stats.price_change,
    volume: stats.volume,
    volume_usd: stats.volume_usd,
    volume_notional: stats.notional,
    open_interest: 0,
    mark_price: t.mark_price,
    mark_iv: null,
    underlying_price: t.underlying_price,
    underlying_index: t.underlying_index,
    interest_rate: 0,
    estimated_delivery_price: t.estimated_delivery_price,
  };
}

/** The ticker of an option or a combo's instrument (`legTicker`: marketData.ts tickerOf, the options' own). */
export function tickerFor(ex: Exchange, inst: Instrument, legTicker: LegTicker): Record<string, unknown> {
  const r = isComboInstrument(ex, inst) ? ex.combos.byId.get(inst.name) : undefined;
  return r !== undefined ? comboTicker(ex, r, legTicker) : legTicker(ex, inst);
}

/** The active combos of a currency, by instrument id (the summaries get_book_summary_by_currency adds). */
export function activeCombos(ex: Exchange, currency: CurrencyCode): ComboRecord[] {
  return [...ex.combos.byId.values()].filter((r) => ex.combos.currencyOf(r) === currency && ex.combos.isActive(r)).sort((a, b) => a.instrumentId - b.instrumentId);
}
