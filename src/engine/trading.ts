// Order entry, matching and the closing of orders (API.md 3.3 order rules). Cancels, edits, the risk
// check, client_order_id memory and reduce-only trimming are in files of their own, called from here.
import type { CurrencyCode } from '../domain/currency.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import { isOnTick, premiumOf, priceToNumber, stepTick, tradeFee, type Instrument } from '../domain/instrument.ts';
import { RiskEngine } from '../risk/accountRisk.ts';
import type { Command } from './commands.ts';
import type { Exchange } from './exchange.ts';
import type { MmpTag } from './mmp.ts';
import { convertAdvancedPrice } from './advancedPrice.ts';
import { cancelAllMatching, cancelInstrumentOrders, cancelOpenOrders, cancelOrderByUser, cancelUserCurrencyOrders, expireGoodTilDay, nextGoodTilDayExpiry, userCancelRefusal } from './cancels.ts';
import { editOrder } from './edit.ts';
import { ExposureOrders } from './exposureOrders.ts';
import { BUY, SELL, type OrderBook, type Side } from './orderBook.ts';
import { settleFill } from './fillSettlement.ts';
import { coversNewOrder } from './orderFunds.ts';
import { clientOrderIdRetry, pruneClosed, rememberClientOrderId } from './orderMemory.ts';
import { LiquidityWalk, nextEightUtc, reduceOnlyOpenLots, reducibleBy } from './orderRules.ts';
import { trimAfterFills, trimUserReduceOnly } from './reduceOnlyTrim.ts';
import { newOrder, type CancelReason, type Order, type OrderExposure, type Trade, type User } from './types.ts';

type PlaceCmd = Extract<Command, { t: 'place' }>;
type CancelAllCmd = Extract<Command, { t: 'cancel_all' }>;
type EditCmd = Extract<Command, { t: 'edit' }>;

// moved to orderRules.ts and fillSettlement.ts; importers of trading.ts keep them
export { applyFill, forgetOldestClientOrderIds, nextEightUtc, reduceOnlyOpenLots, reducibleBy, requestPrint } from './orderRules.ts';
export { RECENT_TRADES_KEPT } from './fillSettlement.ts';

export interface PlaceResult {
  order: Order;
  trades: Trade[];
}

export class Trading {
  readonly risk: RiskEngine;
  /** Open good_til_day orders, for expiry. */
  readonly gtdOrders = new Set<Order>();
  /** Scratch list reused by match callbacks so the hot path allocates little. */
  /** @internal the trades of the current match (fillSettlement.ts appends) */
  fills: Trade[] = [];
  private currentTaker: Order | null = null;
  /** Makers' users of the current match (reused; see trimReduceOnlyAfterFills). */
  /** @internal (fillSettlement.ts adds to it) */
  readonly touched: User[] = [];

  /** The pre-trade walk, reused by every place (orderRules.ts). */
  private readonly liquidity: LiquidityWalk;

  constructor(private readonly ex: Exchange) {
    this.risk = new RiskEngine(ex);
    this.liquidity = new LiquidityWalk(ex);
  }

  // ---- entry -----------------------------------------------------------------------------------

  /** `tag` marks a mass quote (src/engine/massQuote.ts); `c.mmp` an ordinary MMP order. */
  place(c: PlaceCmd, tag: MmpTag | null = null): PlaceResult | Reject {
    const ex = this.ex;
    const user = ex.users.get(c.userId);
    if (!user) return reject(ERR.UNAUTHORIZED);
    if (c.clientOrderId !== null) {
      const retry = clientOrderIdRetry(ex, user, c, c.clientOrderId);
      if (retry !== null) return retry;
    }
    const inst = ex.instruments.get(c.instrument);
    if (!inst || inst.state === 'delivered') return reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
    if (inst.state !== 'open' || inst.halted || inst.expiry <= ex.now) return reject(ERR.BOOK_CLOSED, inst.halted ? 'instrument_halted' : 'instrument_not_open');
    const idx = ex.index[inst.currency];
    if (!idx || (!idx.manual && ex.now - idx.ts > ex.limits.indexStaleMs)) return reject(ERR.BOOK_CLOSED, 'index_stale');
    const market = ex.markets.get(inst.id)!;
    if (!(market.markCoin >= 0)) return reject(ERR.BOOK_CLOSED, 'no_mark_price');
    const mmpTag = tag ?? (c.mmp === true ? { group: null, quoteId: null, quoteSetId: null } : null);
    if (mmpTag !== null) {
      if (c.type !== 'limit') return reject(ERR.INVALID_ARGUMENTS, 'mmp_limit_only', 'mmp');
      const refused = ex.mmp.refusal(user.id, inst.currency, mmpTag.group);
      if (refused !== null) return refused;
    }

    // amount -> lots (c.lots is the amount scaled by 10^AMOUNT_SCALE)
    if (!(c.lots > 0)) return reject(ERR.INVALID_AMOUNT, 'amount_not_positive', 'amount');
    if (c.lots < inst.lotScaled) return reject(ERR.QTY_TOO_LOW, 'below_min_trade_amount', 'amount');
    if (c.lots % inst.lotScaled !== 0) return reject(ERR.INVALID_AMOUNT, 'not_multiple_of_min_trade_amount', 'amount');
    let lots = c.lots / inst.lotScaled;

    // price
    const side = c.side as Side;
    let price = NaN;
    if (c.type === 'limit') {
      if (c.advanced !== null) {
        const converted = convertAdvancedPrice(ex, inst, c.advanced, c.advPrice ?? NaN, side);
        if (typeof converted !== 'number') return converted;
        price = converted;
      } else {
        if (c.price === null) return reject(ERR.INVALID_PRICE, 'price_required', 'price');
        price = c.price;
      }
      if (!(price > 0)) return reject(ERR.INVALID_PRICE, 'price_not_positive', 'price');
      if (!isOnTick(inst, price)) return reject(ERR.PRICE_WRONG_TICK, undefined, 'price');
      if (price < market.minPrice) return reject(ERR.PRICE_TOO_LOW, undefined, 'price', String(priceToNumber(market.minPrice)));
      if (price > market.maxPrice) return reject(ERR.PRICE_TOO_HIGH, undefined, 'price', String(priceToNumber(market.maxPrice)));
    }

    // open-order limits (only orders that may rest count)
    const exposure = this.exposure(user, inst);
    const mayRest = c.type === 'limit' && (c.tif === 'good_til_cancelled' || c.tif === 'good_til_day');
    if (mayRest) {
      if (exposure.openOrders.size >= ex.limits.maxOpenOrdersPerInstrument) return reject(ERR.INVALID_ARGUMENTS, 'max_open_orders_per_instrument');
      if (user.openOrderCount >= ex.limits.maxOpenOrdersPerUser) return reject(ERR.INVALID_ARGUMENTS, 'max_open_orders');
    }
    if (mmpTag !== null) {
      const refused = ex.mmp.sizeRefusal(user.id, exposure, side, lots, mmpTag.group);
      if (refused !== null) return refused;
    }

    // reduce_only: the excess over what reduces the position is cut (Deribit). Reduce-only orders
    // already open on the same side count against the position too, otherwise two of them could
    // together flip it.
    const pos = user.positions.get(inst.id)?.size ?? 0;
    if (c.reduceOnly) {
      const reducible = (side === BUY ? Math.max(0, -pos) : Math.max(0, pos)) - reduceOnlyOpenLots(exposure, side);
      if (reducible <= 0) return reject(ERR.OTHER_REJECT, 'reduce_only', 'reduce_only');
      lots = Math.min(lots, reducible);
    }
    // an account in liquidation, or with a balance below zero in any currency, may only reduce
    // positions (API.md 5.3; docs/api-notes.md "Cash rules")
    const blocked = this.riskBlocked(user, inst.currency);
    if (blocked !== null && lots > reducibleBy(side, pos)) return reject(ERR.NOT_ENOUGH_FUNDS, blocked);

    const book = ex.books.get(inst.id)!;

    // post_only: never take liquidity; reprice one tick inside the spread or reject
    if (c.postOnly && c.type === 'limit') {
      const best = side === BUY ? book.bestAsk() : book.bestBid();
      const crosses = side === BUY ? price >= best : price <= best;
      if (!Number.isNaN(best) && crosses) {
        if (c.rejectPostOnly) return reject(ERR.POST_ONLY_REJECT, 'post_only_reject');
        price = side === BUY ? stepTick(inst, best, -1) : stepTick(inst, best, 1);
        // the moved price must pass the same band check as a price the client sent: a book resting
        // at the band edge would otherwise push the order to 0 or outside [min_price, max_price]
        if (price < market.minPrice) return reject(ERR.PRICE_TOO_LOW, undefined, 'price', String(priceToNumber(market.minPrice)));
        if (price > market.maxPrice) return reject(ERR.PRICE_TOO_HIGH, undefined, 'price', String(priceToNumber(market.maxPrice)));
      }
    }
    // the matching limit is taken only now, after a post-only re-price: matching with the client's
    // original (crossing) price would let a post-only order take liquidity
    const limit = c.type === 'limit' ? price : NaN;

    // one walk of the liquidity the order would meet: self-trade check, FOK check, market cost
    // (LiquidityWalk: no closure here, so that place() keeps its locals off the heap)
    let fillable = 0;
    let fillCost = 0;
    if (!(c.postOnly && c.type === 'limit')) {
      const w = this.liquidity;
      w.run(book, side, c.type === 'limit' ? price : NaN, user.id, inst, lots);
      if (w.selfTrade) return reject(ERR.OTHER_REJECT, 'self_trade');
      fillable = w.fillable;
      fillCost = w.cost;
    }

    // risk: the account must carry the order as if it all rested (src/engine/orderFunds.ts)
    if (!coversNewOrder(this, user, inst, side, c.type, price, lots, fillCost, exposure, pos)) {
      return reject(ERR.NOT_ENOUGH_FUNDS, 'not_enough_funds');
    }

    const order = newOrder(
      ex.nextOrderId++,
      user.id,
      side,
      c.type === 'limit' ? price : 0,
      lots,
      lots,
      inst,
      c.type,
      c.tif,
      c.postOnly,
      c.rejectPostOnly,
      c.reduceOnly,
      c.label,
      c.clientOrderId,
      ex.now,
      c.tif === 'good_til_day' ? nextEightUtc(ex.now) : 0,
      c.advanced,
      false,
    );
    order.mmp = mmpTag;
    user.orders.set(order.id, order);
    if (c.clientOrderId !== null) rememberClientOrderId(ex, user, c, c.clientOrderId, order);

    if (c.tif === 'fill_or_kill' && fillable < lots) {
      this.close(user, order, 'cancelled', null);
      return { order, trades: [] };
    }

    const trades = this.execute(order, book, limit);
    if (order.remaining > 0) {
      if (mayRest) this.rest(user, order, book, exposure);
      else this.close(user, order, 'cancelled', null);
    }
    if (trades.length > 0) this.trimReduceOnlyAfterFills(user, inst);
    return { order, trades };
  }

  /** After a match, cuts open reduce-only orders to what is left to reduce: src/engine/reduceOnlyTrim.ts. */
  trimReduceOnlyAfterFills(taker: User, inst: Instrument): void {
    trimAfterFills(this, this.ex, taker, inst);
  }

  /** Why the account may not add risk in `currency` (liquidation, a negative balance), or null. */
  riskBlocked(user: User, currency: CurrencyCode): string | null {
    if (this.ex.inLiquidation(user.id, currency)) return 'account_in_liquidation';
    if (this.risk.hasNegativeBalance(user)) return 'negative_balance';
    return null;
  }

  maxFee(inst: Instrument, price: number, lots: number): number {
    return tradeFee(inst, price, lots, Math.max(inst.makerCommission, inst.takerCommission));
  }

  exposure(user: User, inst: Instrument): OrderExposure {
    let e = user.exposures.get(inst.id);
    if (!e) {
      e = { inst, buyOpenLots: 0, sellOpenLots: 0, buyReserved: 0, reduceOnlyOpen: 0, openOrders: new ExposureOrders() };
      user.exposures.set(inst.id, e);
    }
    return e;
  }

  rest(user: User, order: Order, book: OrderBook<Order>, e: OrderExposure): void {
    book.add(order);
    e.openOrders.add(order);
    if (order.reduceOnly) e.reduceOnlyOpen++;
    user.openOrderCount++;
    if (order.side === BUY) {
      e.buyOpenLots += order.remaining;
      order.reserved = premiumOf(order.inst, order.price, order.remaining) + this.maxFee(order.inst, order.price, order.remaining);
      e.buyReserved += order.reserved;
    } else {
      e.sellOpenLots += order.remaining;
    }
    if (order.expiresAt > 0) this.gtdOrders.add(order);
    this.risk.exposureChanged(user, e);
    this.ex.markets.get(order.inst.id)!.changeId++;
    this.ex.observer?.order(order);
  }

  /** Removes a resting order's remainder from its exposure (after a fill or a cancel). */
  releaseExposure(user: User, order: Order, lots: number): void {
    const e = user.exposures.get(order.inst.id)!;
    if (order.side === BUY) {
      e.buyOpenLots -= lots;
      const left = order.remaining - lots;
      const nextReserved = left > 0 ? premiumOf(order.inst, order.price, left) + this.maxFee(order.inst, order.price, left) : 0;
      e.buyReserved -= order.reserved - nextReserved;
      order.reserved = nextReserved;
    } else {
      e.sellOpenLots -= lots;
    }
    this.risk.exposureChanged(user, e);
  }

  // ---- matching and settlement -----------------------------------------------------------------

  /**
   * Matches a taker against the book. A reduce-only maker may only shrink its owner's position,
   * and the same sweep can shrink that position first through the owner's other orders: then the
   * match stops before the reduce-only order (canFillMaker), the owner's reduce-only orders are cut
   * to what is left to reduce (cancelled when nothing is), and the match goes on. Without the stop,
   * one sweep through an ordinary order and a reduce-only one of the same account would flip its
   * position.
   */
  execute(taker: Order, book: OrderBook<Order>, limit: number): Trade[] {
    this.fills = [];
    this.currentTaker = taker;
    for (;;) {
      taker.remaining = book.match(taker.side, limit, taker.remaining, this.onFill, this.canFillMaker);
      const stoppedAt = this.stoppedAt;
      if (stoppedAt === null) break;
      this.stoppedAt = null;
      trimUserReduceOnly(this, this.ex, this.ex.users.get(stoppedAt.userId)!, taker.inst);
    }
    this.currentTaker = null;
    if (taker.remaining === 0) this.close(this.ex.users.get(taker.userId)!, taker, 'filled', null);
    // the taker's state at trade time is known only now for the last fill
    const trades = this.fills;
    for (const t of trades) t.takerState = taker.remaining === 0 && t === trades[trades.length - 1] ? 'filled' : 'open';
    if (trades.length > 0) this.ex.markets.get(taker.inst.id)!.changeId++;
    return trades;
  }

  /** The reduce-only maker the last match stopped before (see execute). */
  private stoppedAt: Order | null = null;

  /** Asked by the book before each maker's fill: may it fill now (see execute)? */
  private readonly canFillMaker = (maker: Order): boolean => {
    if (!maker.reduceOnly) return true;
    const owner = this.ex.users.get(maker.userId)!;
    const pos = owner.positions.get(maker.inst.id)?.size ?? 0;
    if (reduceOnlyOpenLots(owner.exposures.get(maker.inst.id)!, maker.side) <= reducibleBy(maker.side, pos)) return true;
    this.stoppedAt = maker;
    return false;
  };

  /** Called by the book for each fill, before a fully filled maker is unlinked (fillSettlement.ts). */
  private readonly onFill = (maker: Order, qty: number, price: number): void => settleFill(this, this.ex, this.currentTaker!, maker, qty, price);

  // ---- cancels ---------------------------------------------------------------------------------

  /** private/edit (API.md 3.3): src/engine/edit.ts. */
  edit(c: EditCmd): PlaceResult | Reject {
    return editOrder(this, this.ex, c);
  }

  // the cancels' bodies are in src/engine/cancels.ts

  cancelByUser(userId: number, orderId: number): Order | Reject {
    return cancelOrderByUser(this, this.ex, userId, orderId);
  }

  /** Why a user's cancel would be refused, or null when it would cancel. Reads only. */
  cancelRefusal(userId: number, orderId: number): Reject | null {
    return userCancelRefusal(this.ex, userId, orderId);
  }

  cancelAll(c: CancelAllCmd): Order[] {
    return cancelAllMatching(this, this.ex, c);
  }

  /** Cancels the listed orders of a user that are still open; unknown or closed ids are skipped. */
  cancelOrders(userId: number, orderIds: number[], reason: CancelReason): Order[] {
    return cancelOpenOrders(this, this.ex, userId, orderIds, reason);
  }

  cancelInstrument(inst: Instrument, reason: CancelReason): number {
    return cancelInstrumentOrders(this, this.ex, inst, reason);
  }

  expireOrders(): number {
    return expireGoodTilDay(this, this.ex);
  }

  /** Earliest good_til_day expiry among open orders, or Infinity. */
  nextExpiry(): number {
    return nextGoodTilDayExpiry(this, this.ex);
  }

  // ---- liquidation (driven by src/engine/liquidation.ts) ----------------------------------------

  /** Cancels every open order of a user in one currency (oldest first). */
  cancelUserOrders(user: User, currency: CurrencyCode, reason: CancelReason): Order[] {
    return cancelUserCurrencyOrders(this, user, currency, reason);
  }

  /**
   * A liquidation order: reduce-only, immediate-or-cancel, up to `limit`, type `liquidation`. No
   * risk check (it only reduces) and no self-trade risk (the account's orders were cancelled first).
   */
  placeLiquidation(user: User, inst: Instrument, side: Side, lots: number, limit: number): PlaceResult {
    const ex = this.ex;
    const order = newOrder(ex.nextOrderId++, user.id, side, limit, lots, lots, inst, 'liquidation', 'immediate_or_cancel', false, false, true, '', null, ex.now, 0, null, true);
    user.orders.set(order.id, order);
    const trades = this.execute(order, ex.books.get(inst.id)!, limit);
    if (order.remaining > 0) this.close(user, order, 'cancelled', null);
    if (trades.length > 0) this.trimReduceOnlyAfterFills(user, inst);
    return { order, trades };
  }

  /**
   * Takes a resting order out of the book and its exposure. `unlink` is false when the book itself
   * unlinks it (a maker filled during match).
   */
  /** @internal (fillSettlement.ts closes a filled maker) */
  closeResting(user: User, order: Order, state: 'filled' | 'cancelled', reason: CancelReason | null, unlink: boolean): void {
    const e = user.exposures.get(order.inst.id)!;
    if (e.openOrders.delete(order)) {
      user.openOrderCount--;
      if (order.reduceOnly) e.reduceOnlyOpen--;
      if (state === 'cancelled') this.releaseExposure(user, order, order.remaining);
      if (unlink) this.ex.books.get(order.inst.id)!.remove(order);
      this.gtdOrders.delete(order);
      this.ex.markets.get(order.inst.id)!.changeId++;
    }
    if (state === 'cancelled') order.remaining = 0;
    this.close(user, order, state, reason);
  }

  private close(user: User, order: Order, state: 'filled' | 'cancelled', reason: CancelReason | null): void {
    order.state = state;
    order.cancelReason = reason;
    order.lastUpdate = this.ex.now;
    this.ex.observer?.order(order);
    pruneClosed(this.ex, user);
  }
}

export { BUY, SELL };
