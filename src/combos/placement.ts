// Placing a combo order (issue 34; docs/api-notes.md "Combo books"; the books themselves are in
// book.ts): the order's checks, its fills against the combo book maker by maker, then its rest.
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Instrument } from '../domain/instrument.ts';
import type { Command } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';
import { BUY, type OrderBook, type Side } from '../engine/orderBook.ts';
import { nextEightUtc } from '../engine/orderRules.ts';
import { selfTradingOf } from '../engine/selfTrade.ts';
import { addTradeId, newOrder, type Order, type User } from '../engine/types.ts';
import type { ComboBooks, ComboPlaceResult, ComboTrade } from './book.ts';
import type { ComboRecord } from './combos.ts';
import { applyLegTrade, fillRefusal, legFees, legFills } from './fill.ts';
import { comboBand, legQuotes, splitPrice, type LegQuote } from './legPrices.ts';
import { comboHold, restingFits } from './orderMargin.ts';

type PlaceCmd = Extract<Command, { t: 'place' }>;

/** Combo trades kept per combo. */
const TRADES_KEPT = 1_000;

/** Why the combo cannot trade now, or null. */
function marketRefusal(ex: Exchange, r: ComboRecord): Reject | null {
  if (!ex.combos.isActive(r)) return reject(ERR.BOOK_CLOSED, 'combo_inactive');
  for (const l of r.legs) {
    const inst = ex.instruments.get(l.instrument)!;
    if (inst.halted) return reject(ERR.BOOK_CLOSED, 'instrument_halted');
    const idx = ex.index[inst.currency];
    if (!idx || (!idx.manual && ex.now - idx.ts > ex.limits.indexStaleMs)) return reject(ERR.BOOK_CLOSED, 'index_stale');
  }
  return null;
}

/** Places a combo order (ComboBooks.place): its checks, its fills against the book, then its rest or close. */
export function placeComboOrder(books: ComboBooks, ex: Exchange, c: PlaceCmd, r: ComboRecord): ComboPlaceResult | Reject {
  const user = ex.users.get(c.userId);
  if (!user) return reject(ERR.UNAUTHORIZED);
  if (c.trig !== undefined || c.advanced !== null || c.reduceOnly || c.mmp === true || c.clientOrderId !== null) {
    return reject(ERR.INVALID_ARGUMENTS, 'not_supported_for_combos', c.trig !== undefined ? 'type' : c.advanced !== null ? 'advanced' : c.reduceOnly ? 'reduce_only' : c.mmp === true ? 'mmp' : 'client_order_id');
  }
  const closed = marketRefusal(ex, r);
  if (closed !== null) return closed;
  const quotes = legQuotes(ex, r.legs);
  if (quotes === null) return reject(ERR.BOOK_CLOSED, 'no_mark_price');
  const inst = books.inst(r);
  if (!(c.lots > 0)) return reject(ERR.INVALID_AMOUNT, 'amount_not_positive', 'amount');
  if (c.lots < inst.lotScaled) return reject(ERR.QTY_TOO_LOW, 'below_min_trade_amount', 'amount');
  if (c.lots % inst.lotScaled !== 0) return reject(ERR.INVALID_AMOUNT, 'not_multiple_of_min_trade_amount', 'amount');
  const lots = c.lots / inst.lotScaled;
  const side = c.side as Side;
  const band = comboBand(quotes);
  let price: number;
  if (c.type === 'limit') {
    if (c.price === null) return reject(ERR.INVALID_PRICE, 'price_required', 'price');
    price = c.price;
    if (!Number.isSafeInteger(price)) return reject(ERR.PRICE_WRONG_TICK, undefined, 'price');
    if (price < band.min) return reject(ERR.PRICE_TOO_LOW, undefined, 'price', String(band.min / 10_000));
    if (price > band.max) return reject(ERR.PRICE_TOO_HIGH, undefined, 'price', String(band.max / 10_000));
  } else price = side === BUY ? band.max : band.min; // a market order: up to the band's edge
  const mayRest = c.type === 'limit' && (c.tif === 'good_til_cancelled' || c.tif === 'good_til_day');
  const book = books.book(r.id);
  if (mayRest && (books.open.byUser.get(user.id)?.size ?? 0) >= Math.min(ex.limits.maxOpenOrdersPerInstrument, ex.limits.maxOpenOrdersPerUser)) {
    return reject(ERR.INVALID_ARGUMENTS, 'max_open_orders_per_instrument');
  }
  if (c.postOnly && c.type === 'limit') {
    const best = side === BUY ? book.bestAsk() : book.bestBid();
    if (!Number.isNaN(best) && (side === BUY ? price >= best : price <= best)) {
      if (c.rejectPostOnly) return reject(ERR.POST_ONLY_REJECT, 'post_only_reject');
      price = side === BUY ? best - 1 : best + 1;
      if (price < band.min || price > band.max) return reject(side === BUY ? ERR.PRICE_TOO_LOW : ERR.PRICE_TOO_HIGH, undefined, 'price');
    }
  }
  // self-trade prevention, as for a leg (src/engine/selfTrade.ts)
  let fillable = 0;
  const own: Order[] = [];
  if (!c.postOnly) {
    book.walk(side, price, (m) => {
      if (m.userId === user.id) own.push(m);
      else fillable += m.remaining;
      return fillable < lots;
    });
  }
  if (own.length > 0) {
    if (selfTradingOf(ex, user.id).mode !== 'cancel_maker') return reject(ERR.OTHER_REJECT, 'self_trade');
    for (const o of own) books.closeOrder(o, 'self_trade_prevention');
  }
  // the margin of the whole order as if filled at its price: the margin of the leg positions after it
  const insts = books.legInsts(r);
  const ratios = r.legs.map((l) => l.ratio);
  const legPrices = splitPrice(quotes, price);
  if (legPrices === null) return reject(ERR.INVALID_PRICE, 'combo_price_not_splittable', 'price');
  const whole = legFills(insts, ratios, legPrices, side, lots);
  const refused = fillRefusal(ex, user, inst.currency, whole, legFees(whole, false));
  if (refused !== null) return refused;
  // what the part the book cannot fill now would hold resting (orderMargin.ts: at least its debit)
  // must fit the funds available too; an order that never rests computes no hold
  const resting = mayRest ? lots - Math.min(lots, fillable) : 0;
  let hold = resting > 0 ? comboHold(ex, r, { side, price }, resting) : null;
  if (hold !== null && !restingFits(ex, user, r, side, resting, hold)) return reject(ERR.NOT_ENOUGH_FUNDS, 'not_enough_funds');

  const order = newOrder(ex.nextOrderId++, user.id, side, price, lots, lots, inst, c.type, c.tif, c.postOnly, c.rejectPostOnly, false, c.label, null, ex.now, c.tif === 'good_til_day' ? nextEightUtc(ex.now) : 0, null, false);
  books.orders.set(order.id, order);
  if (c.tif === 'fill_or_kill' && fillable < lots) {
    books.close(order, 'cancelled', null);
    return { order, trades: [], comboTrades: [] };
  }
  const comboTrades = c.postOnly ? [] : match(books, ex, r, order, book, quotes, insts, ratios, user, legPrices);
  if (order.remaining > 0 && mayRest && order.state === 'open' && (comboTrades.length > 0 || order.remaining !== resting)) {
    // the book was not what the check above saw (makers cancelled during matching leave more to
    // rest, and the fills moved the account): what rests now is checked against the account now,
    // so no resting remainder takes the funds available below zero. Refused: the remainder is
    // cancelled (risk_mitigation), the fills stand.
    hold = comboHold(ex, r, order, order.remaining);
    if (!restingFits(ex, user, r, side, order.remaining, hold)) {
      books.close(order, 'cancelled', 'risk_mitigation');
      return { order, trades: comboTrades.flatMap((t) => t.legs), comboTrades };
    }
  }
  if (order.remaining > 0) {
    if (mayRest && order.state === 'open') {
      book.add(order);
      books.changed(r.id);
      books.opened(order, hold ?? undefined);
      ex.observer?.order(order);
    } else books.close(order, 'cancelled', null);
  } else books.close(order, 'filled', null);
  return { order, trades: comboTrades.flatMap((t) => t.legs), comboTrades };
}

/** Fills the taker against the book, maker by maker, each fill every leg or none. */
function match(books: ComboBooks, ex: Exchange, r: ComboRecord, taker: Order, book: OrderBook<Order>, quotes: LegQuote[], insts: readonly Instrument[], ratios: number[], takerUser: User, takerSplit: number[]): ComboTrade[] {
  const out: ComboTrade[] = [];
  while (taker.remaining > 0) {
    let maker: Order | null = null;
    book.walk(taker.side, taker.price, (m) => {
      maker = m;
      return false;
    });
    if (maker === null) break;
    const m: Order = maker;
    if (m.userId === taker.userId) break; // cancelled before matching unless the taker's price was moved
    const makerUser = ex.users.get(m.userId)!;
    const qty = Math.min(m.remaining, taker.remaining);
    // a maker at the taker's own price: the split placement made (one split per price and quotes)
    const prices = m.price === taker.price ? takerSplit : splitPrice(quotes, m.price);
    if (prices === null) {
      books.closeOrder(m, 'risk_mitigation');
      continue;
    }
    const mf = legFills(insts, ratios, prices, m.side, qty);
    const tf = legFills(insts, ratios, prices, taker.side, qty);
    const mFees = legFees(mf, true);
    const tFees = legFees(tf, false);
    // the taker's whole order at its own price is the fill the placement checked, on the same
    // account (nothing of it moved since but its own makers cancelled, which only frees funds)
    const checkedAtPlacement = taker.filled === 0 && qty === taker.amount && prices === takerSplit;
    if (!checkedAtPlacement && fillRefusal(ex, takerUser, taker.inst.currency, tf, tFees) !== null) break;
    // the maker's own hold of what fills is released by the fill: counted once, as its fill
    if (fillRefusal(ex, makerUser, m.inst.currency, mf, mFees, { order: m, qty, hold: books.holds.released(m, qty) }) !== null) {
      books.closeOrder(m, 'risk_mitigation');
      continue;
    }
    // every check passed: from here on nothing refuses
    const ct: ComboTrade = { id: books.nextTradeId++, combo: r.id, ts: ex.now, price: m.price, lots: qty, takerSide: taker.side, makerOrder: m, takerOrder: taker, legs: [] };
    for (let i = 0; i < insts.length; i++) {
      ct.legs.push(applyLegTrade(ex, { id: r.id, tradeId: ct.id }, { user: makerUser, order: m, fill: mf[i]!, fee: mFees[i]! }, { user: takerUser, order: taker, fill: tf[i]!, fee: tFees[i]! }));
    }
    for (const inst of insts) ex.trading.trimReduceOnlyAfterFills(makerUser, inst);
    for (const inst of insts) ex.trading.trimReduceOnlyAfterFills(takerUser, inst);
    for (const [o, fees] of [[m, mFees], [taker, tFees]] as const) {
      o.filled += qty;
      o.filledNotional += m.price * qty;
      o.commission += fees.reduce((s, x) => s + x, 0);
      o.lastUpdate = ex.now;
      for (const t of ct.legs) addTradeId(o, t.id);
    }
    taker.remaining -= qty;
    if (m.remaining === qty) {
      book.remove(m);
      m.remaining = 0;
      books.closed(m);
      books.close(m, 'filled', null);
    } else {
      book.reduce(m, qty);
      books.reduced(m);
      ex.observer?.order(m);
    }
    books.changed(r.id);
    r.traded = (r.traded ?? 0) + 1;
    let list = books.trades.get(r.id);
    if (list === undefined) books.trades.set(r.id, (list = []));
    list.push(ct);
    if (list.length > TRADES_KEPT * 2) list.splice(0, list.length - TRADES_KEPT);
    out.push(ct);
  }
  return out;
}
