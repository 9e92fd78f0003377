// private/edit in the engine (API.md 3.3). An edit that puts the order back in the book (a price
// change, a size increase, a re-price) runs every check a new order of the edited state runs
// (issue 29): the instrument and its mark, tick and today's price band (even for an unchanged
// price: the band moves with the mark), MMP's freeze and max_quote_quantity, reduce-only, the
// risk block, post-only, self-trade and margin. A size decrease at the same price stays in place
// and keeps its priority; it only lowers what the order risks, so the band and MMP sizes do not
// refuse it (as a cancel is never refused by them).
import { CURRENCIES } from '../domain/currency.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import { isOnTick, premiumOf, priceToNumber, stepTick } from '../domain/instrument.ts';
import { contractsOf, shortOpeningLots } from '../risk/accountRisk.ts';
import { toMinorUp } from '../risk/margin.ts';
import type { Command } from './commands.ts';
import type { Exchange } from './exchange.ts';
import type { MmpTag } from './mmp.ts';
import { BUY } from './orderBook.ts';
import { reduceOnlyOpenLots, reducibleBy, type PlaceResult, type Trading } from './trading.ts';

type EditCmd = Extract<Command, { t: 'edit' }>;

/**
 * Changes the amount and/or price of an open order. A size decrease at the same price keeps the
 * order's time priority (the book reduces it in place); a price change or a size increase re-enters
 * it at the back of its level and may match at once, like a new order. A refused edit leaves the
 * order exactly as it was. `c.lots` is the new total amount (filled part included).
 */
export function editOrder(t: Trading, ex: Exchange, c: EditCmd): PlaceResult | Reject {
  const user = ex.users.get(c.userId);
  const order = user?.orders.get(c.orderId);
  if (!user || !order) return reject(ERR.ORDER_NOT_FOUND, undefined, 'order_id');
  if (order.state !== 'open' || order.level === null) return reject(ERR.ALREADY_CLOSED, undefined, 'order_id');
  const inst = order.inst;
  if (inst.state !== 'open' || inst.halted || inst.expiry <= ex.now) return reject(ERR.BOOK_CLOSED, inst.halted ? 'instrument_halted' : 'instrument_not_open');
  const idx = ex.index[inst.currency];
  if (!idx || (!idx.manual && ex.now - idx.ts > ex.limits.indexStaleMs)) return reject(ERR.BOOK_CLOSED, 'index_stale');
  const market = ex.markets.get(inst.id)!;

  if (!(c.lots > 0)) return reject(ERR.INVALID_AMOUNT, 'amount_not_positive', 'amount');
  if (c.lots < inst.lotScaled) return reject(ERR.QTY_TOO_LOW, 'below_min_trade_amount', 'amount');
  if (c.lots % inst.lotScaled !== 0) return reject(ERR.INVALID_AMOUNT, 'not_multiple_of_min_trade_amount', 'amount');
  const newAmount = c.lots / inst.lotScaled;
  let remaining = newAmount - order.filled;
  if (remaining <= 0) return reject(ERR.INVALID_AMOUNT, 'amount_not_above_filled_amount', 'amount');

  let price = order.price;
  if (c.price !== null && c.price !== order.price) {
    price = c.price;
    if (!(price > 0)) return reject(ERR.INVALID_PRICE, 'price_not_positive', 'price');
    if (!isOnTick(inst, price)) return reject(ERR.PRICE_WRONG_TICK, undefined, 'price');
  }
  const side = order.side;
  const e = t.exposure(user, inst);
  const pos = user.positions.get(inst.id)?.size ?? 0;
  // as for a new order: while blocked, an edit may only leave the order reducing the position
  const blocked = t.riskBlocked(user, inst.currency);
  if (blocked !== null && remaining > order.remaining && remaining > reducibleBy(side, pos)) return reject(ERR.NOT_ENOUGH_FUNDS, blocked);
  if (order.reduceOnly && remaining > order.remaining) {
    // an increase may not take a reduce-only order beyond what is left to reduce
    const reducible = (side === BUY ? Math.max(0, -pos) : Math.max(0, pos)) - (reduceOnlyOpenLots(e, side) - order.remaining);
    remaining = Math.min(remaining, reducible);
    if (remaining <= 0) return reject(ERR.OTHER_REJECT, 'reduce_only', 'reduce_only');
  }
  const book = ex.books.get(inst.id)!;
  // `mmp` on an edit flags or unflags an ordinary order; a mass quote stays in its group
  let mmpTag: MmpTag | null = order.mmp;
  if (c.mmp === true && mmpTag === null) mmpTag = { group: null, quoteId: null, quoteSetId: null };
  else if (c.mmp === false && mmpTag !== null && mmpTag.quoteId === null) mmpTag = null;
  const inPlace = price === order.price && remaining <= order.remaining;
  const joins = mmpTag !== null && (order.mmp === null || order.mmp.group !== mmpTag.group);

  if (!inPlace) {
    // the band of today's mark, whatever price the order rested at (a new order would meet it)
    if (!(market.markCoin >= 0)) return reject(ERR.BOOK_CLOSED, 'no_mark_price');
    if (price < market.minPrice) return reject(ERR.PRICE_TOO_LOW, undefined, 'price', String(priceToNumber(market.minPrice)));
    if (price > market.maxPrice) return reject(ERR.PRICE_TOO_HIGH, undefined, 'price', String(priceToNumber(market.maxPrice)));
  }
  if (mmpTag !== null && (!inPlace || joins)) {
    const frozen = ex.mmp.refusal(user.id, inst.currency, mmpTag.group);
    if (frozen !== null) return frozen;
    // what the group would hold open on this side: the order itself counted once, at its new size
    const counted = order.mmp !== null && !joins ? order.remaining : 0;
    const tooBig = ex.mmp.sizeRefusal(user.id, e, side, remaining - counted, mmpTag.group);
    if (tooBig !== null) return tooBig;
  }

  // same price, smaller: in place, keeping time priority
  if (inPlace) {
    order.mmp = mmpTag;
    const cut = order.remaining - remaining;
    if (cut > 0) {
      t.releaseExposure(user, order, cut);
      book.reduce(order, cut);
      order.amount -= cut;
      order.lastUpdate = ex.now;
      market.changeId++;
      ex.observer?.order(order);
    }
    return { order, trades: [] };
  }

  const postOnly = c.postOnly ?? order.postOnly;
  const rejectPostOnly = c.rejectPostOnly ?? order.rejectPostOnly;
  if (postOnly) {
    const best = side === BUY ? book.bestAsk() : book.bestBid();
    const crosses = side === BUY ? price >= best : price <= best;
    if (!Number.isNaN(best) && crosses) {
      if (rejectPostOnly) return reject(ERR.POST_ONLY_REJECT, 'post_only_reject');
      price = side === BUY ? stepTick(inst, best, -1) : stepTick(inst, best, 1);
      if (price < market.minPrice) return reject(ERR.PRICE_TOO_LOW, undefined, 'price', String(priceToNumber(market.minPrice)));
      if (price > market.maxPrice) return reject(ERR.PRICE_TOO_HIGH, undefined, 'price', String(priceToNumber(market.maxPrice)));
    }
  } else {
    // only the liquidity the edited order would actually take counts, as for a new order
    let selfTrade = false;
    let taken = 0;
    book.walk(side, price, (maker) => {
      if (maker.userId === user.id) selfTrade = true;
      taken += maker.remaining;
      return !selfTrade && taken < remaining;
    });
    if (selfTrade) return reject(ERR.OTHER_REJECT, 'self_trade');
  }

  // risk: what the edited order reserves, against the funds available once its current
  // reservation is released
  const free = t.risk.available(user, inst.currency);
  let available: number;
  let required: number;
  /** What the order holds now and gives back to the currency's requirement before the new one. */
  let released: number;
  if (side === BUY) {
    released = order.reserved;
    available = Math.min(free, t.risk.freeCash(user, inst.currency)) + order.reserved;
    required = premiumOf(inst, price, remaining) + t.maxFee(inst, price, remaining);
  } else {
    const others = e.sellOpenLots - order.remaining;
    const extraNow = shortOpeningLots(e.sellOpenLots, pos) - shortOpeningLots(others, pos);
    const extraNew = shortOpeningLots(others + remaining, pos) - shortOpeningLots(others, pos);
    const im = t.risk.imPerContract(inst);
    const dec = CURRENCIES[inst.currency].decimals;
    released = extraNow > 0 ? toMinorUp(im * contractsOf(inst, extraNow), dec) : 0;
    available = free + released;
    required = extraNew > 0 ? toMinorUp(im * contractsOf(inst, extraNew), dec) : 0;
  }
  // portfolio margin (issue 35): what the new size adds to the scenario requirement, against the
  // funds as they stand (the current size already counts in them)
  const change = remaining - order.remaining;
  const pmIM = t.risk.pmOrderIM(user, inst, side === BUY ? change : 0, side === BUY ? 0 : change);
  // cross standard margin: what the edit adds to the currency's requirement (the new reservation
  // less the one released), against the pool
  const covered =
    pmIM !== null
      ? t.risk.pmCovers(user, inst.currency, side === BUY ? required - order.reserved : 0, pmIM)
      : t.risk.isCross(user)
        ? t.risk.crossSmCovers(user, inst.currency, required - released, side === BUY ? required - order.reserved : 0)
        : Number.isFinite(required) && available - required >= 0;
  if (!covered) {
    return reject(ERR.NOT_ENOUGH_FUNDS, 'not_enough_funds');
  }

  // out of the book and its exposure, then in again as a taker that may rest: loses priority
  order.mmp = mmpTag;
  book.remove(order);
  t.releaseExposure(user, order, order.remaining);
  e.openOrders.delete(order);
  user.openOrderCount--;
  if (order.reduceOnly) e.reduceOnlyOpen--;
  t.gtdOrders.delete(order);
  order.price = price;
  order.remaining = remaining;
  order.amount = order.filled + remaining;
  order.lastUpdate = ex.now;
  market.changeId++;
  const trades = t.execute(order, book, price);
  if (order.remaining > 0) t.rest(user, order, book, e);
  if (trades.length > 0) t.trimReduceOnlyAfterFills(user, inst);
  return { order, trades };
}
