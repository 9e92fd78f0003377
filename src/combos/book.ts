// Combo order books (issue 34; docs/api-notes.md "Combo books"). Each active combo has its own book
// in the engine: price = net premium in price units (0.0001 coin tick, may be negative), amount in
// lots of the legs' minimum, band = the net of the legs' bands (legPrices.ts). Orders on a combo come
// through the ordinary `place`/`cancel`/`cancel_all`/`edit`/`cancel_orders` commands (the exchange
// routes them here by instrument name or order id); a combo order never enters a leg's book. A fill
// executes every leg at once (fill.ts) after both accounts passed their margin check for all legs
// together; a maker that cannot carry its fill is cancelled, a taker that cannot stops matching.
// Combo orders are kept here (not in the users' order maps) and snapshotted with this part
// (bookSnapshot.ts); the
// account views list them beside the ordinary ones (docs/api-notes.md "Combo orders"), and a resting
// one holds margin and cash of its account (orderMargin.ts), released as it fills or closes.
import type { CurrencyCode } from '../domain/currency.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Instrument } from '../domain/instrument.ts';
import type { Command } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';
import { BUY, OrderBook, type Side } from '../engine/orderBook.ts';
import { nextEightUtc } from '../engine/orderRules.ts';
import { selfTradingOf } from '../engine/selfTrade.ts';
import { addTradeId, newOrder, type CancelReason, type Order, type Trade, type User } from '../engine/types.ts';
import type { ComboRecord } from './combos.ts';
import { applyLegTrade, fillRefusal, legFees, legFills } from './fill.ts';
import { comboBand, legQuotes, splitPrice, type LegQuote } from './legPrices.ts';
import { ComboHolds, comboHold, restingFits, type ComboHold } from './orderMargin.ts';
import { OpenComboOrders, type SideLots } from './openOrders.ts';
import { comboBooksJson, restoreComboBooks } from './bookSnapshot.ts';

export type { SideLots } from './openOrders.ts';

type PlaceCmd = Extract<Command, { t: 'place' }>;
type EditCmd = Extract<Command, { t: 'edit' }>;
type CancelAllCmd = Extract<Command, { t: 'cancel_all' }>;

/** Closed combo orders kept for queries (the oldest forgotten first). */
const CLOSED_KEPT = 10_000;
/** Combo trades kept per combo. */
const TRADES_KEPT = 1_000;

/** A combo trade: one fill between two combo orders, made of one leg trade per leg. */
export interface ComboTrade {
  id: number;
  combo: string;
  ts: number;
  /** net price, price units */
  price: number;
  lots: number;
  takerSide: Side;
  makerOrder: Order;
  takerOrder: Order;
  /** the leg trades, in leg order */
  legs: Trade[];
}

const NO_HOLD: ComboHold = Object.freeze({ im: 0, pmIm: 0, cash: 0 });

export interface ComboPlaceResult {
  order: Order;
  /** the leg trades of the caller's fills */
  trades: Trade[];
  comboTrades: ComboTrade[];
}

export class ComboBooks {
  readonly books = new Map<string, OrderBook<Order>>();
  /** every combo order kept (open and recent closed), by id */
  readonly orders = new Map<number, Order>();
  readonly trades = new Map<string, ComboTrade[]>();
  /**
   * Each combo book's change id (Deribit `change_id`): bumped by every command that changed its
   * levels, so get_order_book and the book channels' snapshot + changes chain on it (absent: 0).
   */
  readonly changeIds = new Map<string, number>();
  nextTradeId = 1;
  /** open combo orders per user, and their lots per combo (derived: restored from the books) */
  private readonly open: OpenComboOrders;
  /** what each open combo order holds of its account (derived, cached per order) */
  readonly holds: ComboHolds;
  /** derived: the instrument object of each combo, for orders and rendering */
  private readonly insts = new Map<string, Instrument>();
  /** derived: each combo's leg instruments */
  private readonly legInstruments = new Map<string, Instrument[]>();
  private closedCount = 0;

  constructor(private readonly ex: Exchange) {
    this.holds = new ComboHolds(ex);
    this.open = new OpenComboOrders(ex, this.holds);
  }

  isEmpty(): boolean {
    return this.orders.size === 0 && this.nextTradeId === 1;
  }

  /** The combo's instrument object (kind option_combo; never in the exchange's instrument maps). */
  inst(r: ComboRecord): Instrument {
    let i = this.insts.get(r.id);
    if (i === undefined) {
      const legs = r.legs.map((l) => this.ex.instruments.get(l.instrument)!);
      i = {
        id: r.instrumentId,
        name: r.id,
        currency: legs[0]!.currency,
        optionType: legs[0]!.optionType,
        strike: 0,
        expiry: Math.min(...legs.map((l) => l.expiry)),
        created: r.created,
        settlementPeriod: legs[0]!.settlementPeriod,
        contractSize: 1,
        tick: 1,
        tickSteps: [],
        lotScaled: Math.min(...legs.map((l) => l.lotScaled)),
        makerCommission: legs[0]!.makerCommission,
        takerCommission: legs[0]!.takerCommission,
        state: 'open',
        halted: false,
        deliveryPrice: null,
      };
      this.insts.set(r.id, i);
    }
    return i;
  }

  /** The open or kept combo order `orderId` of `userId`. */
  orderOf(userId: number, orderId: number): Order | undefined {
    const o = this.orders.get(orderId);
    return o !== undefined && o.userId === userId ? o : undefined;
  }

  /** The change id of a combo's book (0 before its first change). */
  changeId(comboId: string): number {
    return this.changeIds.get(comboId) ?? 0;
  }

  /** Marks the combo's book changed by the current command (once per command is enough, more is harmless). */
  private changed(comboId: string): void {
    this.changeIds.set(comboId, this.changeId(comboId) + 1);
  }

  book(comboId: string): OrderBook<Order> {
    let b = this.books.get(comboId);
    if (b === undefined) this.books.set(comboId, (b = new OrderBook<Order>()));
    return b;
  }

  /** Why the combo cannot trade now, or null. */
  private marketRefusal(r: ComboRecord): Reject | null {
    if (!this.ex.combos.isActive(r)) return reject(ERR.BOOK_CLOSED, 'combo_inactive');
    for (const l of r.legs) {
      const inst = this.ex.instruments.get(l.instrument)!;
      if (inst.halted) return reject(ERR.BOOK_CLOSED, 'instrument_halted');
      const idx = this.ex.index[inst.currency];
      if (!idx || (!idx.manual && this.ex.now - idx.ts > this.ex.limits.indexStaleMs)) return reject(ERR.BOOK_CLOSED, 'index_stale');
    }
    return null;
  }

  // ---- entry -----------------------------------------------------------------------------------

  place(c: PlaceCmd, r: ComboRecord): ComboPlaceResult | Reject {
    const ex = this.ex;
    const user = ex.users.get(c.userId);
    if (!user) return reject(ERR.UNAUTHORIZED);
    if (c.trig !== undefined || c.advanced !== null || c.reduceOnly || c.mmp === true || c.clientOrderId !== null) {
      return reject(ERR.INVALID_ARGUMENTS, 'not_supported_for_combos', c.trig !== undefined ? 'type' : c.advanced !== null ? 'advanced' : c.reduceOnly ? 'reduce_only' : c.mmp === true ? 'mmp' : 'client_order_id');
    }
    const closed = this.marketRefusal(r);
    if (closed !== null) return closed;
    const quotes = legQuotes(ex, r.legs);
    if (quotes === null) return reject(ERR.BOOK_CLOSED, 'no_mark_price');
    const inst = this.inst(r);
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
    const book = this.book(r.id);
    if (mayRest && (this.open.byUser.get(user.id)?.size ?? 0) >= Math.min(ex.limits.maxOpenOrdersPerInstrument, ex.limits.maxOpenOrdersPerUser)) {
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
      for (const o of own) this.closeOrder(o, 'self_trade_prevention');
    }
    // the margin of the whole order as if filled at its price: the margin of the leg positions after it
    const insts = this.legInsts(r);
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
    this.orders.set(order.id, order);
    if (c.tif === 'fill_or_kill' && fillable < lots) {
      this.close(order, 'cancelled', null);
      return { order, trades: [], comboTrades: [] };
    }
    const comboTrades = c.postOnly ? [] : this.match(r, order, book, quotes, insts, ratios, user, legPrices);
    if (order.remaining > 0 && mayRest && order.state === 'open' && (comboTrades.length > 0 || order.remaining !== resting)) {
      // the book was not what the check above saw (makers cancelled during matching leave more to
      // rest, and the fills moved the account): what rests now is checked against the account now,
      // so no resting remainder takes the funds available below zero. Refused: the remainder is
      // cancelled (risk_mitigation), the fills stand.
      hold = comboHold(ex, r, order, order.remaining);
      if (!restingFits(ex, user, r, side, order.remaining, hold)) {
        this.close(order, 'cancelled', 'risk_mitigation');
        return { order, trades: comboTrades.flatMap((t) => t.legs), comboTrades };
      }
    }
    if (order.remaining > 0) {
      if (mayRest && order.state === 'open') {
        book.add(order);
        this.changed(r.id);
        this.opened(order, hold ?? undefined);
        ex.observer?.order(order);
      } else this.close(order, 'cancelled', null);
    } else this.close(order, 'filled', null);
    return { order, trades: comboTrades.flatMap((t) => t.legs), comboTrades };
  }

  /** Fills the taker against the book, maker by maker, each fill every leg or none. */
  private match(r: ComboRecord, taker: Order, book: OrderBook<Order>, quotes: LegQuote[], insts: readonly Instrument[], ratios: number[], takerUser: User, takerSplit: number[]): ComboTrade[] {
    const ex = this.ex;
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
        this.closeOrder(m, 'risk_mitigation');
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
      if (fillRefusal(ex, makerUser, m.inst.currency, mf, mFees, { order: m, qty, hold: this.holds.released(m, qty) }) !== null) {
        this.closeOrder(m, 'risk_mitigation');
        continue;
      }
      // every check passed: from here on nothing refuses
      const ct: ComboTrade = { id: this.nextTradeId++, combo: r.id, ts: ex.now, price: m.price, lots: qty, takerSide: taker.side, makerOrder: m, takerOrder: taker, legs: [] };
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
        this.closed(m);
        this.close(m, 'filled', null);
      } else {
        book.reduce(m, qty);
        this.reduced(m);
        ex.observer?.order(m);
      }
      this.changed(r.id);
      r.traded = (r.traded ?? 0) + 1;
      let list = this.trades.get(r.id);
      if (list === undefined) this.trades.set(r.id, (list = []));
      list.push(ct);
      if (list.length > TRADES_KEPT * 2) list.splice(0, list.length - TRADES_KEPT);
      out.push(ct);
    }
    return out;
  }

  // ---- cancels and edits -----------------------------------------------------------------------

  /** Cancels an open combo order (out of its book). */
  closeOrder(o: Order, reason: CancelReason): void {
    if (o.state !== 'open') return;
    if (this.books.get(o.inst.name)?.remove(o)) {
      this.closed(o);
      this.changed(o.inst.name);
    }
    o.remaining = 0;
    this.close(o, 'cancelled', reason);
  }

  cancel(userId: number, orderId: number): Order | Reject {
    const o = this.orderOf(userId, orderId);
    if (o === undefined) return reject(ERR.ORDER_NOT_FOUND, undefined, 'order_id');
    if (o.state !== 'open') return reject(ERR.ALREADY_CLOSED, undefined, 'order_id');
    this.closeOrder(o, 'user_request');
    return o;
  }

  /** The user's open combo orders a cancel_all selects (currency, instrument, side, label, kind). */
  cancelAll(c: CancelAllCmd): Order[] {
    if (c.kind === 'option') return [];
    const victims = this.openOf(c.userId).filter(
      (o) => (c.currency === null || o.inst.currency === c.currency) && (c.instrument === null || o.inst.name === c.instrument) && (c.side === null || o.side === c.side) && (c.label === null || o.label === c.label),
    );
    for (const o of victims) this.closeOrder(o, 'user_request');
    return victims;
  }

  cancelOrders(userId: number, ids: readonly number[], reason: CancelReason): Order[] {
    const victims = [...new Set(ids)].map((id) => this.orderOf(userId, id)).filter((o): o is Order => o !== undefined && o.state === 'open');
    victims.sort((a, b) => a.id - b.id);
    for (const o of victims) this.closeOrder(o, reason);
    return victims;
  }

  /** Cancels every open combo order of a user in one currency (liquidation: `autoliquidation`). */
  cancelUser(userId: number, currency: string, reason: CancelReason): Order[] {
    const victims = this.openOf(userId).filter((o) => o.inst.currency === currency);
    for (const o of victims) this.closeOrder(o, reason);
    return victims;
  }

  /**
   * Cancels the user's open combo orders in `currency` that set cash aside, newest first, until its
   * free cash is no longer below zero (a settlement took the cash they were accepted against:
   * `risk_mitigation`, as ordinary open buys, src/engine/settlement.ts).
   */
  cancelUnfunded(userId: number, currency: CurrencyCode): Order[] {
    const user = this.ex.users.get(userId);
    if (user === undefined) return [];
    const risk = this.ex.trading.risk;
    const victims: Order[] = [];
    for (const o of this.openOf(userId).reverse()) {
      if (risk.freeCash(user, currency) >= 0) break;
      if (o.inst.currency !== currency || !(this.holds.of(o).cash > 0)) continue;
      this.closeOrder(o, 'risk_mitigation');
      victims.push(o);
    }
    return victims;
  }

  /** Open combo orders of a user, oldest first. */
  openOf(userId: number): Order[] {
    const set = this.open.byUser.get(userId);
    if (set === undefined || set.size === 0) return [];
    return [...set].sort((a, b) => a.id - b.id);
  }

  /** What the user's open combo orders in a currency hold (initial margin, cash), minor units; `fresh`: not from the cache (checks). */
  heldBy(userId: number, currency: CurrencyCode, fresh = false): ComboHold {
    const set = this.open.byUser.get(userId);
    if (set === undefined || set.size === 0) return NO_HOLD;
    return this.holds.sum(userId, set, currency, fresh);
  }

  /** The leg instruments of a combo, in leg order (derived, cached per combo). */
  legInsts(r: ComboRecord): readonly Instrument[] {
    let a = this.legInstruments.get(r.id);
    if (a === undefined) this.legInstruments.set(r.id, (a = r.legs.map((l) => this.ex.instruments.get(l.instrument)!)));
    return a;
  }

  /** A user's open combo lots per combo, bid and ask (derived; src/combos/openOrders.ts). */
  sideLotsOf(userId: number): ReadonlyMap<string, SideLots> {
    return this.open.sideLotsOf(userId);
  }

  private opened(o: Order, hold?: ComboHold): void {
    this.open.opened(o, hold);
  }

  private reduced(o: Order): void {
    this.open.reduced(o);
  }

  private closed(o: Order): void {
    this.open.closed(o);
  }

  /**
   * private/edit of a combo order: a new price or amount is a cancel and a new order with the same
   * id's fields (Deribit keeps the id; here the order loses its time priority and keeps its id).
   */
  edit(c: EditCmd, r: ComboRecord): ComboPlaceResult | Reject {
    const o = this.orderOf(c.userId, c.orderId);
    if (o === undefined) return reject(ERR.ORDER_NOT_FOUND, undefined, 'order_id');
    if (o.state !== 'open') return reject(ERR.ALREADY_CLOSED, undefined, 'order_id');
    const newLots = c.lots / o.inst.lotScaled;
    if (!Number.isSafeInteger(newLots) || newLots <= o.filled) return reject(ERR.INVALID_AMOUNT, 'not_multiple_of_min_trade_amount', 'amount');
    // a new order for what is left, placed as any other (its checks, its matching); the old one goes first
    const left = newLots - o.filled;
    this.closeOrder(o, 'user_request');
    return this.place(
      { t: 'place', userId: c.userId, side: o.side, instrument: r.id, price: c.price ?? o.price, advanced: null, advPrice: null, lots: left * o.inst.lotScaled, type: 'limit', tif: o.tif, postOnly: c.postOnly ?? o.postOnly, rejectPostOnly: c.rejectPostOnly ?? o.rejectPostOnly, reduceOnly: false, label: o.label, clientOrderId: null },
      r,
    );
  }

  /** Cancels the orders of combos that stopped being active (a leg expired, halted books stay). */
  closeInactive(reason: CancelReason): number {
    let n = 0;
    for (const [id, b] of this.books) {
      if (b.orderCount() === 0) continue;
      const r = this.ex.combos.byId.get(id);
      if (r !== undefined && this.ex.combos.isActive(r)) continue;
      for (const o of [...b.orders()].sort((a, z) => a.id - z.id)) {
        this.closeOrder(o, reason);
        n++;
      }
    }
    return n;
  }

  /** Good-til-day combo orders past their time. */
  expire(): number {
    const due: Order[] = [];
    for (const b of this.books.values()) for (const o of b.orders()) if (o.expiresAt > 0 && o.expiresAt <= this.ex.now) due.push(o);
    due.sort((a, b) => a.id - b.id);
    for (const o of due) this.closeOrder(o, 'good_til_day');
    return due.length;
  }

  /** The earliest good-til-day time of an open combo order, or Infinity. */
  nextExpiry(): number {
    let t = Infinity;
    if (!this.hasOpen()) return t;
    for (const b of this.books.values()) for (const o of b.orders()) if (o.expiresAt > 0 && o.expiresAt < t) t = o.expiresAt;
    return t;
  }

  hasOpen(): boolean {
    return this.open.byUser.size > 0;
  }

  private close(o: Order, state: 'filled' | 'cancelled', reason: CancelReason | null): void {
    o.state = state;
    o.cancelReason = reason;
    o.lastUpdate = this.ex.now;
    this.ex.observer?.order(o);
    this.closedCount++;
    if (this.closedCount > CLOSED_KEPT + 64) {
      for (const [id, x] of this.orders) {
        if (this.closedCount <= CLOSED_KEPT) break;
        if (x.state !== 'open') {
          this.orders.delete(id);
          this.closedCount--;
        }
      }
    }
  }

  // ---- snapshot (bookSnapshot.ts) ----------------------------------------------------------------

  toJson(): unknown {
    return comboBooksJson({ nextTradeId: this.nextTradeId, orders: this.orders, books: this.books, trades: this.trades, changeIds: this.changeIds, openByUser: this.open.byUser });
  }

  /** Restores the part `toJson` wrote; `trade` finds a leg trade by id (the engine's, restored before). */
  restore(j: unknown, trade: (id: number) => Trade | undefined): void {
    restoreComboBooks(j, trade, {
      ex: this.ex,
      orders: this.orders,
      trades: this.trades,
      changeIds: this.changeIds,
      setNextTradeId: (n) => {
        this.nextTradeId = n;
      },
      book: (id) => this.book(id),
      inst: (r) => this.inst(r),
      opened: (o) => this.opened(o),
      closedKept: () => {
        this.closedCount++;
      },
    });
  }
}

