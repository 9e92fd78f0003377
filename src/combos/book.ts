// Combo order books (issue 34; docs/api-notes.md "Combo books"). Each active combo has its own book
// in the engine: price = net premium in price units (0.0001 coin tick, may be negative), amount in
// lots of the legs' minimum, band = the net of the legs' bands (legPrices.ts). Orders on a combo come
// through the ordinary `place`/`cancel`/`cancel_all`/`edit`/`cancel_orders` commands (the exchange
// routes them here by instrument name or order id); a combo order never enters a leg's book. A fill
// executes every leg at once (fill.ts) after both accounts passed their margin check for all legs
// together; a maker that cannot carry its fill is cancelled, a taker that cannot stops matching
// (placement.ts: an order's checks and matching).
// Combo orders are kept here (not in the users' order maps) and snapshotted with this part
// (bookSnapshot.ts); the
// account views list them beside the ordinary ones (docs/api-notes.md "Combo orders"), and a resting
// one holds margin and cash of its account (orderMargin.ts), released as it fills or closes.
import type { CurrencyCode } from '../domain/currency.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Instrument } from '../domain/instrument.ts';
import type { Command } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';
import { OrderBook, type Side } from '../engine/orderBook.ts';
import type { CancelReason, Order, Trade } from '../engine/types.ts';
import type { ComboRecord } from './combos.ts';
import { ComboHolds, type ComboHold } from './orderMargin.ts';
import { OpenComboOrders, type SideLots } from './openOrders.ts';
import { comboBooksJson, restoreComboBooks } from './bookSnapshot.ts';
import { placeComboOrder } from './placement.ts';

export type { SideLots } from './openOrders.ts';

type PlaceCmd = Extract<Command, { t: 'place' }>;
type EditCmd = Extract<Command, { t: 'edit' }>;
type CancelAllCmd = Extract<Command, { t: 'cancel_all' }>;

/** Closed combo orders kept for queries (the oldest forgotten first). */
const CLOSED_KEPT = 10_000;

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
  /** @internal open combo orders per user, and their lots per combo (derived: restored from the books; placement.ts counts them) */
  readonly open: OpenComboOrders;
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

  /** @internal Marks the combo's book changed by the current command (once per command is enough, more is harmless). */
  changed(comboId: string): void {
    this.changeIds.set(comboId, this.changeId(comboId) + 1);
  }

  book(comboId: string): OrderBook<Order> {
    let b = this.books.get(comboId);
    if (b === undefined) this.books.set(comboId, (b = new OrderBook<Order>()));
    return b;
  }

  // ---- entry (placement.ts) --------------------------------------------------------------------

  place(c: PlaceCmd, r: ComboRecord): ComboPlaceResult | Reject {
    return placeComboOrder(this, this.ex, c, r);
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

  /** @internal (placement.ts rests an order) */
  opened(o: Order, hold?: ComboHold): void {
    this.open.opened(o, hold);
  }

  /** @internal (placement.ts fills part of a maker) */
  reduced(o: Order): void {
    this.open.reduced(o);
  }

  /** @internal (placement.ts fills a maker) */
  closed(o: Order): void {
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

  /** @internal (placement.ts closes a filled or refused order) */
  close(o: Order, state: 'filled' | 'cancelled', reason: CancelReason | null): void {
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

