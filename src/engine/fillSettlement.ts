// The settlement of one fill inside a match (src/engine/trading.ts `execute`): the premium moves
// buyer -> seller and both fees to the fee account (each posting sums to zero, minor units), each
// side's account log gets its entry, positions move, and the trade record is kept where the
// market-data queries and the streams read it.
import type { CurrencyCode } from '../domain/currency.ts';
import { premiumOf, tradeFee, type Instrument } from '../domain/instrument.ts';
import type { Exchange } from './exchange.ts';
import { appendEntry } from './ledger.ts';
import { BUY } from './orderBook.ts';
import { applyFill, recordUserTrade, zeroTick } from './orderRules.ts';
import type { Trading } from './trading.ts';
import { addTradeId, type Order, type Trade, type User } from './types.ts';

/** Public trades kept per instrument in memory for market-data queries. */
const PUBLIC_TRADES_KEPT = 10_000;
/** Trades kept in `Exchange.recentTrades` (twice this before it is cut back). */
export const RECENT_TRADES_KEPT = 4_096;

/**
 * One fill of the current match, called by the book (through Trading.onFill) before a fully
 * filled maker is unlinked: premium and fees posted, both account logs, positions, the trade record.
 */
export function settleFill(tr: Trading, ex: Exchange, taker: Order, maker: Order, qty: number, price: number): void {
  const inst = taker.inst;
  const makerUser = ex.users.get(maker.userId)!;
  const takerUser = ex.users.get(taker.userId)!;
  const market = ex.markets.get(inst.id)!;

  // exposure of the maker shrinks by the filled part
  tr.releaseExposure(makerUser, maker, qty);
  if (makerUser.exposures.get(inst.id)!.reduceOnlyOpen > 0 && !tr.touched.includes(makerUser)) tr.touched.push(makerUser);

  const premium = premiumOf(inst, price, qty);
  const makerFee = tradeFee(inst, price, qty, inst.makerCommission);
  const takerFee = tradeFee(inst, price, qty, inst.takerCommission);
  const buyerUser = taker.side === BUY ? takerUser : makerUser;
  const sellerUser = taker.side === BUY ? makerUser : takerUser;
  const cur: CurrencyCode = inst.currency;
  // postings: premium buyer -> seller; fees -> fee account (each posting sums to zero)
  buyerUser.accounts[cur].balance -= premium;
  sellerUser.accounts[cur].balance += premium;
  makerUser.accounts[cur].balance -= makerFee;
  makerUser.accounts[cur].fees += makerFee;
  takerUser.accounts[cur].balance -= takerFee;
  takerUser.accounts[cur].fees += takerFee;
  ex.system.fees[cur].balance += makerFee + takerFee;
  updatePosition(tr, buyerUser, inst, qty, price);
  updatePosition(tr, sellerUser, inst, -qty, price);

  // the account logs: one entry per side with premium and fee, after the positions moved (the
  // entry shows the position and equity after the fill; the trade id is set once the trade exists)
  const tradeId = ex.nextTradeId;
  logFill(tr, ex, makerUser, maker, cur, maker.side === BUY ? -premium : premium, makerFee, qty, price, tradeId, 'maker');
  logFill(tr, ex, takerUser, taker, cur, taker.side === BUY ? -premium : premium, takerFee, qty, price, tradeId, 'taker');

  maker.filled += qty;
  maker.filledNotional += price * qty;
  maker.commission += makerFee;
  maker.lastUpdate = ex.now;
  taker.filled += qty;
  taker.filledNotional += price * qty;
  taker.commission += takerFee;
  taker.lastUpdate = ex.now;

  const makerDone = maker.remaining === qty;
  const prevPrice = market.lastPrice;
  const tickDirection = prevPrice === null || price > prevPrice ? 0 : price < prevPrice ? 2 : market.trades.length ? zeroTick(market.trades[market.trades.length - 1].tickDirection) : 1;
  const trade: Trade = {
    id: ex.nextTradeId++,
    seq: ++market.tradeSeq,
    inst,
    ts: ex.now,
    price,
    lots: qty,
    takerSide: taker.side,
    makerOrder: maker,
    takerOrder: taker,
    makerFee,
    takerFee,
    indexPrice: ex.indexPrice(cur),
    markPrice: market.markCoin,
    tickDirection,
    makerState: makerDone ? 'filled' : 'open',
    takerState: 'open',
    iv: undefined,
  };
  market.lastPrice = price;
  ex.triggers.lastMoved(inst.id);
  market.trades.push(trade);
  if (market.trades.length > PUBLIC_TRADES_KEPT * 2) market.trades.splice(0, market.trades.length - PUBLIC_TRADES_KEPT);
  ex.recentTrades.push(trade);
  if (ex.recentTrades.length > RECENT_TRADES_KEPT * 2) ex.recentTrades.splice(0, ex.recentTrades.length - RECENT_TRADES_KEPT);
  addTradeId(maker, trade.id);
  addTradeId(taker, trade.id);
  recordUserTrade(makerUser, trade, ex.limits.userTradesKept);
  if (takerUser !== makerUser) recordUserTrade(takerUser, trade, ex.limits.userTradesKept);
  tr.fills.push(trade);
  // market-maker protection counts the fills of MMP orders (a trigger is acted on after the match)
  if (maker.mmp !== null) ex.mmp.onFill(maker, qty);
  if (taker.mmp !== null) ex.mmp.onFill(taker, qty);
  ex.observer?.trade(trade);
  ex.observer?.order(maker);
  if (makerDone) tr.closeResting(makerUser, maker, 'filled', null, false);
}

/** Logs one side of a fill in the account's log (src/engine/ledger.ts): `cash` is the premium
 *  received (+) or paid (-), the fee comes off it; a liquidation order's side is `liquidation`. */
function logFill(tr: Trading, ex: Exchange, user: User, order: Order, cur: CurrencyCode, cash: number, fee: number, qty: number, price: number, tradeId: number, role: 'maker' | 'taker'): void {
  const balance = user.accounts[cur].balance;
  appendEntry(user.log, {
    id: ex.nextLogId++,
    ts: ex.now,
    type: order.type === 'liquidation' ? 'liquidation' : 'trade',
    currency: cur,
    amount: cash - fee,
    balance,
    instrument: order.inst.name,
    userId: null,
    size: order.side === BUY ? qty : -qty,
    price,
    fee,
    ref: tradeId,
    // Deribit's transaction log fields (issue 31): the position and equity after the fill
    orderId: order.id,
    role,
    position: user.positions.get(order.inst.id)?.size ?? 0,
    index: ex.indexPrice(cur),
    mark: ex.markets.get(order.inst.id)!.markCoin,
    // the value alone: positions() would also compute a portfolio-margin account's requirement,
    // rebuilding its scenario sums inside the fill (a maker's, after a tick) for a figure not logged
    equity: balance + tr.risk.positionsValue(user, cur, false),
  });
}

/** Position accounting: average price via open cost, realized PnL on reduction (minor units). */
function updatePosition(tr: Trading, user: User, inst: Instrument, delta: number, price: number): void {
  let p = user.positions.get(inst.id);
  if (!p) {
    p = { inst, size: 0, openCost: 0, realizedPnl: 0 };
    user.positions.set(inst.id, p);
  }
  applyFill(p, inst, delta, price);
  tr.risk.positionChanged(user, p);
  // a position change moves what the instrument's open sells hold (shortOpeningLots)
  const e = user.exposures.get(inst.id);
  if (e !== undefined) tr.risk.exposureChanged(user, e);
}
