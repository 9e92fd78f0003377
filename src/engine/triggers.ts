// Trigger orders (stop_limit, stop_market, take_limit, take_market, trailing_stop): held out of the
// book until a reference price (mark, index or last trade) reaches their trigger level, then placed
// as an ordinary order by the same command that moved the price. Placement, edits and cancels are
// journaled commands; firing is not a command of its own but a consequence of the one that moved
// the price, so a replay fires the same orders in the same order (docs/api-notes.md, "Trigger
// orders").
//
// Untriggered orders wait in queues per price source (triggerIndex.ts: index per currency, mark and
// last price per instrument): a min-heap of those that fire when the price rises to their level and
// a max-heap of those that fire when it falls to it, ties broken by order id. A price move looks at
// the top of each heap only, so it costs O(what fires), not a scan. Trailing stops move their level
// with the price, which a heap cannot follow cheaply: they are kept in a set per source and each
// move looks at all of them (bounded by the per-user limit). Placements and new levels are checked
// in triggerChecks.ts.
import type { CurrencyCode } from '../domain/currency.ts';
import { ERR, isReject, reject, type Reject } from '../domain/errors.ts';
import { isOnTick, type Instrument } from '../domain/instrument.ts';
import type { Command } from './commands.ts';
import type { Exchange } from './exchange.ts';
import { forgetOldestClientOrderIds } from './orderRules.ts';
import { TriggerIndex, UNIT, queueKey } from './triggerIndex.ts';
import { checkTriggerPlace, triggerLevels, type TriggerLevels } from './triggerChecks.ts';
import type { Side } from './orderBook.ts';
import { cancelOwnMakers } from './selfTrade.ts';
import type { Order, Trade } from './types.ts';
import { TriggerOrder, firedCmd, selectsType, triggerPrint, type CancelTypeFilter, type TriggerCancelReason, type TriggerHistoryEntry, type TriggerSpec } from './triggerOrder.ts';

// the trigger order and its types moved to triggerOrder.ts; importers of triggers.ts keep them
export { TriggerOrder, selectsType } from './triggerOrder.ts';
export type { CancelTypeFilter, FiredCmd, TriggerCancelReason, TriggerHistoryEntry, TriggerOrderType, TriggerSource, TriggerSpec, TriggerState } from './triggerOrder.ts';

type PlaceCmd = Extract<Command, { t: 'place' }>;
type EditCmd = Extract<Command, { t: 'edit' }>;
type CancelAllCmd = Extract<Command, { t: 'cancel_all' }>;

/** Untriggered orders one user may have at once (Deribit answers 11035 no_more_triggers). */
export const DEFAULT_MAX_UNTRIGGERED_PER_USER = 200;
/** Closed trigger orders kept per user for get_order_state, and history entries kept per user. */
export const TRIGGER_CLOSED_KEPT = 1000;
export const TRIGGER_HISTORY_KEPT = 1000;

export interface TriggerPlaceResult {
  order: TriggerOrder;
  trades: Trade[];
}

export class Triggers {
  /** Every trigger order kept per user (untriggered ones and the latest closed), by id. */
  readonly byUser = new Map<number, Map<number, TriggerOrder>>();
  readonly history = new Map<number, TriggerHistoryEntry[]>();
  nextHistoryId = 1;
  /** The untriggered orders' queues and counts: derived, rebuilt on restore. */
  private readonly index: TriggerIndex;

  constructor(private readonly ex: Exchange) {
    this.index = new TriggerIndex(ex);
  }

  // ---- price moves (hooks; the check runs at the end of the command) --------------------------

  indexMoved(currency: CurrencyCode): void {
    this.index.indexMoved(currency);
  }

  marksMoved(currency: CurrencyCode): void {
    this.index.marksMoved(currency);
  }

  lastMoved(instId: number): void {
    this.index.lastMoved(instId);
  }

  /**
   * Fires every trigger the command's price moves reached, oldest id first per price source; their
   * own trades may move the last price again, which is checked in turn. Each fired order leaves its
   * queue, so this ends.
   */
  run(): void {
    // a fired order's trades may mark its last-price queue again: looked at after those before it
    for (let fired = this.index.nextReached(); fired !== undefined; fired = this.index.nextReached()) {
      if (fired.length === 0) continue;
      fired.sort((a, b) => a.id - b.id);
      for (const t of fired) this.fire(t);
    }
  }

  /** Places the order a reached trigger stands for; a refusal (funds, reduce-only, a closed book) is its end state. */
  private fire(t: TriggerOrder): void {
    const ex = this.ex;
    this.index.forget(t);
    t.lastUpdate = ex.now;
    // self-trade prevention covers the order it places as it covers a placed one (cancel_maker:
    // the own resting orders it would meet go first; reject_taker refuses it in Trading.place)
    const cmd = t.cmd;
    if (!cmd.postOnly && (cmd.type === 'market' || cmd.price !== null)) cancelOwnMakers(ex, t.userId, cmd.instrument, cmd.side as Side, cmd.type === 'market' ? NaN : cmd.price!, cmd.lots);
    const r = ex.trading.place({ ...cmd });
    if (isReject(r)) {
      t.state = 'rejected';
      t.rejectReason = r.reason ?? String(r.code);
      this.record(t, 'trigger:order', null, t.rejectReason);
    } else {
      t.state = 'triggered';
      t.firedOrderId = r.order.id;
      r.order.origin = t;
      this.record(t, 'trigger:order', r.order.id, null);
    }
    ex.observer?.order(t);
    this.pruneClosed(t.userId);
  }

  // ---- entry -----------------------------------------------------------------------------------

  untriggeredCount(userId: number): number {
    return this.index.untriggeredCount(userId);
  }

  get maxPerUser(): number {
    return this.ex.limits.maxUntriggeredPerUser ?? DEFAULT_MAX_UNTRIGGERED_PER_USER;
  }

  place(c: PlaceCmd & { trig: TriggerSpec }): TriggerPlaceResult | Reject {
    const ex = this.ex;
    const user = ex.users.get(c.userId);
    if (user !== undefined && c.clientOrderId !== null) {
      // an idempotent retry gets the first request's order, never a second one (as for orders)
      const rec = user.clientOrderIds.get(c.clientOrderId);
      if (rec !== undefined && rec.ts >= ex.now - ex.limits.clientOrderIdTtlMs) {
        const prev = this.get(user.id, rec.orderId);
        if (prev === undefined) return reject(ERR.INVALID_ARGUMENTS, 'client_order_id_in_use', 'client_order_id');
        if (rec.fp !== undefined && rec.fp !== triggerPrint(c)) return reject(ERR.INVALID_ARGUMENTS, 'client_order_id_reused', 'client_order_id');
        return { order: prev, trades: [] };
      }
    }
    const checked = this.check(c);
    if (isReject(checked)) return checked;
    const { inst, levels } = checked;
    const t = new TriggerOrder(ex.nextOrderId++, c.userId, inst, firedCmd(c), c.trig.type, c.trig.source, levels.level, levels.offset, levels.peak, ex.now);
    if (user !== undefined && c.clientOrderId !== null) {
      t.clientOrderId = c.clientOrderId;
      // delete first so that the map stays in time order (see Trading.place)
      user.clientOrderIds.delete(c.clientOrderId);
      user.clientOrderIds.set(c.clientOrderId, { orderId: t.id, ts: ex.now, fp: triggerPrint(c) });
      forgetOldestClientOrderIds(user, ex.limits.clientOrderIdsKept, ex.now - ex.limits.clientOrderIdTtlMs);
    }
    this.add(t);
    this.record(t, 'order', null, null);
    ex.observer?.order(t);
    return { order: t, trades: [] };
  }

  /**
   * Whether a trigger placement is accepted, and at which levels; reads only (triggerChecks.ts). A
   * refusal here is the answer place() would give to a request without client_order_id.
   */
  check(c: PlaceCmd & { trig: TriggerSpec }): { inst: Instrument; levels: TriggerLevels } | Reject {
    return checkTriggerPlace(this.ex, this, c);
  }

  /**
   * private/edit of an untriggered order: amount, limit price, trigger price or offset. The order
   * keeps its id and, at an equal level, its place among equal levels (ties go by id).
   */
  edit(c: EditCmd, t: TriggerOrder): TriggerPlaceResult | Reject {
    const ex = this.ex;
    if (t.state !== 'untriggered') return reject(ERR.ALREADY_CLOSED, undefined, 'order_id');
    const inst = t.inst;
    if (inst.state !== 'open' || inst.halted || inst.expiry <= ex.now) return reject(ERR.BOOK_CLOSED, inst.halted ? 'instrument_halted' : 'instrument_not_open');
    if (!(c.lots > 0)) return reject(ERR.INVALID_AMOUNT, 'amount_not_positive', 'amount');
    if (c.lots < inst.lotScaled) return reject(ERR.QTY_TOO_LOW, 'below_min_trade_amount', 'amount');
    if (c.lots % inst.lotScaled !== 0) return reject(ERR.INVALID_AMOUNT, 'not_multiple_of_min_trade_amount', 'amount');
    let price = t.cmd.price;
    if (c.price !== null && t.cmd.type === 'limit') {
      if (!(c.price > 0)) return reject(ERR.INVALID_PRICE, 'price_not_positive', 'price');
      if (!isOnTick(inst, c.price)) return reject(ERR.PRICE_WRONG_TICK, undefined, 'price');
      price = c.price;
    }
    let level = t.level;
    let offset = t.offset;
    const peak = t.peak;
    const trigPrice = c.triggerPrice ?? null;
    const trigOffset = c.triggerOffset ?? null;
    if (t.trailing && trigPrice !== null) return reject(ERR.INVALID_ARGUMENTS, 'trailing_stop_has_no_trigger_price', 'trigger_price');
    if (!t.trailing && trigOffset !== null) return reject(ERR.INVALID_ARGUMENTS, 'trigger_offset_only_for_trailing_stop', 'trigger_offset');
    if (trigPrice !== null) {
      const l = triggerLevels(ex, t, inst, { price: trigPrice, offset: null });
      if (isReject(l)) return l;
      level = l.level;
    }
    if (trigOffset !== null) {
      if (!(trigOffset > 0) || !Number.isSafeInteger(trigOffset)) return reject(ERR.INVALID_ARGUMENTS, 'invalid_trigger_offset', 'trigger_offset');
      // the peak since placement stays; the level moves with the new offset
      offset = trigOffset / UNIT;
      level = t.firesUp ? peak + offset : peak - offset;
    }
    this.index.unqueue(t);
    t.cmd = { ...t.cmd, lots: c.lots, price, postOnly: c.postOnly ?? t.cmd.postOnly, rejectPostOnly: c.rejectPostOnly ?? t.cmd.rejectPostOnly };
    t.level = level;
    t.offset = offset;
    t.peak = peak;
    t.lastUpdate = ex.now;
    this.index.enqueue(t);
    this.record(t, 'edit', null, null);
    ex.observer?.order(t);
    // a trailing stop whose new offset is already passed fires now, like one the price reached
    if (t.trailing) this.index.markDirty(queueKey(t.source, inst));
    return { order: t, trades: [] };
  }

  // ---- cancels ---------------------------------------------------------------------------------

  get(userId: number, id: number): TriggerOrder | undefined {
    return this.byUser.get(userId)?.get(id);
  }

  cancelRefusal(t: TriggerOrder): Reject | null {
    return t.state === 'untriggered' ? null : reject(ERR.ALREADY_CLOSED, undefined, 'order_id');
  }

  cancel(t: TriggerOrder, reason: TriggerCancelReason): TriggerOrder {
    this.index.forget(t);
    t.state = 'cancelled';
    t.cancelReason = reason;
    t.lastUpdate = this.ex.now;
    this.record(t, 'cancel', null, reason);
    this.ex.observer?.order(t);
    this.pruneClosed(t.userId);
    return t;
  }

  /** private/cancel_all*: the user's untriggered orders the filters select, oldest first. */
  cancelAll(c: CancelAllCmd, type: CancelTypeFilter): TriggerOrder[] {
    if (type === 'limit') return [];
    const mine = this.byUser.get(c.userId);
    if (mine === undefined) return [];
    const victims: TriggerOrder[] = [];
    for (const t of mine.values()) {
      if (t.state !== 'untriggered') continue;
      if (c.currency !== null && t.inst.currency !== c.currency) continue;
      if (c.instrument !== null && t.inst.name !== c.instrument) continue;
      if (c.side !== null && t.side !== c.side) continue;
      if (c.label !== null && t.cmd.label !== c.label) continue;
      if (!selectsType(t, type)) continue;
      victims.push(t);
    }
    for (const t of victims) this.cancel(t, 'user_request');
    return victims;
  }

  cancelIds(userId: number, ids: number[], reason: TriggerCancelReason): TriggerOrder[] {
    const out: TriggerOrder[] = [];
    for (const id of new Set(ids)) {
      const t = this.get(userId, id);
      if (t !== undefined && t.state === 'untriggered') out.push(t);
    }
    out.sort((a, b) => a.id - b.id);
    for (const t of out) this.cancel(t, reason);
    return out;
  }

  cancelInstrument(inst: Instrument, reason: TriggerCancelReason): TriggerOrder[] {
    const set = this.index.byInst.get(inst.id);
    if (set === undefined) return [];
    const victims = [...set].sort((a, b) => a.id - b.id);
    for (const t of victims) this.cancel(t, reason);
    return victims;
  }

  /** Earliest expiry of an untriggered good_til_day order, or Infinity. */
  nextExpiry(): number {
    let t = Infinity;
    for (const o of this.index.gtd) if (o.expiresAt < t) t = o.expiresAt;
    return t;
  }

  /** Cancels the untriggered good_til_day orders whose day is over (oldest first). */
  expire(): TriggerOrder[] {
    const now = this.ex.now;
    const victims: TriggerOrder[] = [];
    for (const t of this.index.gtd) if (t.expiresAt <= now) victims.push(t);
    victims.sort((a, b) => a.id - b.id);
    for (const t of victims) this.cancel(t, 'good_til_day');
    return victims;
  }

  /** After a settlement: the untriggered orders of every instrument no longer open are cancelled. */
  cancelClosedInstruments(reason: TriggerCancelReason): void {
    const closed: Instrument[] = [];
    for (const set of this.index.byInst.values()) {
      const inst = set.values().next().value?.inst;
      if (inst !== undefined && inst.state !== 'open') closed.push(inst);
    }
    closed.sort((a, b) => a.id - b.id);
    for (const inst of closed) this.cancelInstrument(inst, reason);
  }

  // ---- bookkeeping -----------------------------------------------------------------------------

  private add(t: TriggerOrder): void {
    let mine = this.byUser.get(t.userId);
    if (mine === undefined) this.byUser.set(t.userId, (mine = new Map()));
    mine.set(t.id, t);
    this.index.add(t);
  }

  private record(t: TriggerOrder, request: string, orderId: number | null, reason: string | null): void {
    let log = this.history.get(t.userId);
    if (log === undefined) this.history.set(t.userId, (log = []));
    log.push({
      id: this.nextHistoryId++,
      ts: this.ex.now,
      triggerOrderId: t.id,
      orderId,
      instrument: t.inst.name,
      currency: t.inst.currency,
      type: t.type,
      source: t.source,
      level: t.level,
      offset: t.offset,
      side: t.cmd.side,
      lots: t.cmd.lots,
      price: t.cmd.type === 'limit' ? t.cmd.price : null,
      state: t.state,
      request,
      label: t.cmd.label,
      reduceOnly: t.cmd.reduceOnly,
      postOnly: t.cmd.postOnly,
      reason,
    });
    // trimmed in steps, so amortised O(1)
    if (log.length > TRIGGER_HISTORY_KEPT * 2) log.splice(0, log.length - TRIGGER_HISTORY_KEPT);
  }

  /** Keeps a user's closed trigger orders bounded, oldest forgotten first. */
  private pruneClosed(userId: number): void {
    const mine = this.byUser.get(userId);
    if (mine === undefined) return;
    const open = this.untriggeredCount(userId);
    if (mine.size <= TRIGGER_CLOSED_KEPT + open + 64) return;
    let excess = mine.size - TRIGGER_CLOSED_KEPT - open;
    const user = this.ex.users.get(userId);
    for (const [id, t] of mine) {
      if (excess <= 0) break;
      if (t.state === 'untriggered') continue;
      mine.delete(id);
      // the order it became no longer names it (a restored engine would not know it either)
      if (t.firedOrderId !== null) {
        const o = user?.orders.get(t.firedOrderId);
        if (o !== undefined) o.origin = null;
      }
      excess--;
    }
  }

  // ---- queries ---------------------------------------------------------------------------------

  /** A user's untriggered orders, oldest first. */
  openOf(userId: number, filter: (t: TriggerOrder) => boolean = () => true): TriggerOrder[] {
    const out: TriggerOrder[] = [];
    const mine = this.byUser.get(userId);
    if (mine !== undefined) for (const t of mine.values()) if (t.state === 'untriggered' && filter(t)) out.push(t);
    return out;
  }

  // ---- snapshot --------------------------------------------------------------------------------

  toJson(): unknown {
    const orders: unknown[] = [];
    for (const mine of this.byUser.values()) {
      for (const t of mine.values()) {
        orders.push([t.id, t.userId, t.inst.id, t.cmd, t.type, t.source, t.level, t.offset, t.peak, t.created, t.state, t.cancelReason, t.rejectReason, t.firedOrderId, t.lastUpdate, t.clientOrderId]);
      }
    }
    orders.sort((a, b) => (a as number[])[0] - (b as number[])[0]);
    return { orders, history: [...this.history], next: this.nextHistoryId };
  }

  /** Rebuilds from toJson() (absent in snapshots taken before trigger orders existed). */
  restore(json: unknown, orderOf: (id: number) => Order | undefined): void {
    if (json === undefined || json === null) return;
    const s = json as { orders: unknown[][]; history: [number, TriggerHistoryEntry[]][]; next: number };
    for (const a of s.orders) {
      const [id, userId, instId, cmd, type, source, level, offset, peak, created, state, cancelReason, rejectReason, firedOrderId, lastUpdate, clientOrderId] = a as never[];
      const t = new TriggerOrder(id, userId, this.ex.instrumentsById.get(instId)!, cmd, type, source, level, offset, peak, created);
      t.state = state;
      t.cancelReason = cancelReason;
      t.rejectReason = rejectReason;
      t.firedOrderId = firedOrderId;
      t.lastUpdate = lastUpdate;
      t.clientOrderId = clientOrderId ?? null;
      if (state === 'untriggered') this.add(t);
      else {
        let mine = this.byUser.get(t.userId);
        if (mine === undefined) this.byUser.set(t.userId, (mine = new Map()));
        mine.set(t.id, t);
        if (firedOrderId !== null) {
          const o = orderOf(firedOrderId);
          if (o !== undefined) o.origin = t;
        }
      }
    }
    for (const [userId, log] of s.history) this.history.set(userId, log);
    this.nextHistoryId = s.next;
  }
}

