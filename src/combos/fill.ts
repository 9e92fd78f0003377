// A combo fill (issue 34; docs/api-notes.md "Combo books"): every leg of the combo executes as a leg
// trade between the two combo orders' accounts, at the split leg prices (legPrices.ts), inside one
// command and only after both accounts were checked against their margin after all legs together
// (the check reads only; from the first change on nothing refuses). Positions are held in the legs.
// Fees: each leg's fee is the ordinary trade fee at the leg price (maker or taker commission, capped
// at 12.5% of the premium); per account, the legs it trades in the cheaper direction (bought or
// sold: the group of legs with the smaller total fee) are free, so a spread pays the fee of one side.
import type { CurrencyCode } from '../domain/currency.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import { premiumOf, tradeFee, type Instrument } from '../domain/instrument.ts';
import { filledOrder, movePosition } from '../blocktrades/execute.ts';
import { optionsRefusal } from '../engine/disabledProducts.ts';
import type { Exchange } from '../engine/exchange.ts';
import { RECENT_TRADES_KEPT } from '../engine/fillSettlement.ts';
import { appendEntry } from '../engine/ledger.ts';
import { applyFill, recordUserTrade } from '../engine/orderRules.ts';
import { addTradeId, type Order, type Position, type Trade, type User } from '../engine/types.ts';
import type { ComboHold } from './orderMargin.ts';

const PUBLIC_TRADES_KEPT = 10_000;
const NO_RELEASE = { im: 0, cash: 0 };

/** One leg of a fill as one account trades it. */
export interface LegFill {
  inst: Instrument;
  /** the account's side of the leg */
  side: 0 | 1;
  price: number;
  lots: number;
}

/** The legs of `lots` combo lots for an account on `side` of the combo, at the leg prices. */
export function legFills(insts: readonly Instrument[], ratios: readonly number[], prices: readonly number[], side: 0 | 1, lots: number): LegFill[] {
  return insts.map((inst, i) => {
    const r = ratios[i]!;
    const buys = (r > 0) === (side === 0);
    return { inst, side: buys ? 0 : 1, price: prices[i]!, lots: Math.abs(r) * lots };
  });
}

/** The fee of each leg for one account (minor units): the cheaper direction's legs are free. */
export function legFees(fills: readonly LegFill[], maker: boolean): number[] {
  const fees = fills.map((f) => tradeFee(f.inst, f.price, f.lots, maker ? f.inst.makerCommission : f.inst.takerCommission));
  let bought = 0;
  let sold = 0;
  fills.forEach((f, i) => (f.side === 0 ? (bought += fees[i]!) : (sold += fees[i]!)));
  // both directions traded: the cheaper one is free (a tie frees the sold legs)
  if (bought > 0 && sold > 0) {
    const free: 0 | 1 = bought < sold ? 0 : 1;
    return fees.map((x, i) => (fills[i]!.side === free ? 0 : x));
  }
  return fees;
}

/** The resting combo order a fill comes out of: `qty` of its lots fill, releasing `hold` (orderMargin.ts ComboHolds.released). */
export interface OwnRelease {
  order: Order;
  qty: number;
  hold: ComboHold;
}

/**
 * Why `user` may not take these leg fills (with these fees), or null: its margin after every leg
 * together must leave `available` at or above zero and the premium it pays must come out of free
 * cash, as for an order and a block trade (src/blocktrades/execute.ts sideRefusal). `own`: the
 * filling resting combo order, whose hold of these lots (and, on portfolio margin, whose lots as if
 * filled in the scenario figures) the fill frees. Reads only.
 */
export function fillRefusal(ex: Exchange, user: User, currency: CurrencyCode, fills: readonly LegFill[], fees: readonly number[], own: OwnRelease | null = null): Reject | null {
  const disabled = optionsRefusal(ex, user.id, false);
  if (disabled !== null) return disabled;
  const blocked = ex.trading.riskBlocked(user, currency);
  if (blocked !== null) return reject(ERR.NOT_ENOUGH_FUNDS, blocked);
  const risk = ex.trading.risk;
  let cash = 0;
  let change = 0;
  let valueChange = 0;
  const afters: Position[] = [];
  fills.forEach((f, i) => {
    const premium = premiumOf(f.inst, f.price, f.lots);
    cash += (f.side === 0 ? -premium : premium) - fees[i]!;
    const p: Position = user.positions.get(f.inst.id) ?? { inst: f.inst, size: 0, openCost: 0, realizedPnl: 0 };
    const after: Position = { ...p };
    applyFill(after, f.inst, f.side === 0 ? f.lots : -f.lots, f.price);
    afters.push(after);
    valueChange += risk.positionValue(after) - risk.positionValue(p);
    change += risk.positionValue(after) - risk.positionValue(p) - (risk.positionIM(after) - risk.positionIM(p));
    const e = user.exposures.get(f.inst.id);
    if (e !== undefined && e.openOrders.size > 0) change -= risk.exposureIM(e, after.size) - risk.exposureIM(e, p.size);
  });
  const pm = risk.isPm(user);
  if (pm) {
    // the scenario figures after: the legs' positions moved, the filling order's lots no longer open
    // (from the running sums, changed and put back; a check per fill stays cheap)
    const moved = fills.map((f) => ({ inst: f.inst, lots: f.side === 0 ? f.lots : -f.lots }));
    const combo = own === null ? null : { id: own.order.inst.name, side: own.order.side as 0 | 1, lots: -own.qty };
    change = valueChange - (risk.pm.withChanges(user, currency, moved, combo).initialMarginWithOrders - risk.pm.figures(user, currency).initialMarginWithOrders);
  }
  const released = own === null ? NO_RELEASE : { im: pm ? own.hold.pmIm : own.hold.im, cash: own.hold.cash };
  // cross models: the currency's equity and requirement moved within the pool (the haircut makes
  // the pool's move differ from the currency's own); the filling order's own hold is released
  const available = risk.isCross(user) ? risk.crossInitialAfter(user, currency, cash + valueChange, valueChange - change - released.im) : risk.available(user, currency) + released.im + cash + change;
  if (!Number.isFinite(available) || available < 0) return reject(ERR.NOT_ENOUGH_FUNDS, 'not_enough_funds');
  if (cash < 0 && risk.freeCash(user, currency) + released.cash + cash < 0) return reject(ERR.NOT_ENOUGH_FUNDS, 'not_enough_funds');
  return null;
}

/**
 * Applies one leg trade between the maker's and the taker's account (checked before): premium from
 * buyer to seller, each side's fee to the fee account, both account logs, positions, the trade.
 */
export function applyLegTrade(
  ex: Exchange,
  combo: { id: string; tradeId: number },
  maker: { user: User; order: Order; fill: LegFill; fee: number },
  taker: { user: User; order: Order; fill: LegFill; fee: number },
): Trade {
  const inst = maker.fill.inst;
  const { price, lots } = maker.fill;
  const cur = inst.currency;
  const market = ex.markets.get(inst.id)!;
  const premium = premiumOf(inst, price, lots);
  const legOrder = (s: typeof maker) => filledOrder(ex, s.user, s.fill.side, inst, price, lots, s.fee, s.order.label);
  const makerOrder = legOrder(maker);
  const takerOrder = legOrder(taker);
  const buyer = maker.fill.side === 0 ? maker.user : taker.user;
  const seller = maker.fill.side === 0 ? taker.user : maker.user;
  buyer.accounts[cur].balance -= premium;
  seller.accounts[cur].balance += premium;
  for (const s of [maker, taker]) {
    s.user.accounts[cur].balance -= s.fee;
    s.user.accounts[cur].fees += s.fee;
  }
  ex.system.fees[cur].balance += maker.fee + taker.fee;
  const prev = market.trades.length > 0 ? market.trades[market.trades.length - 1]! : null;
  const trade: Trade = {
    id: ex.nextTradeId++,
    seq: ++market.tradeSeq,
    inst,
    ts: ex.now,
    price,
    lots,
    takerSide: taker.fill.side,
    makerOrder,
    takerOrder,
    makerFee: maker.fee,
    takerFee: taker.fee,
    indexPrice: ex.indexPrice(cur),
    markPrice: market.markCoin,
    tickDirection: prev === null || price > prev.price ? 0 : price < prev.price ? 2 : prev.tickDirection === 0 || prev.tickDirection === 1 ? 1 : 3,
    makerState: 'filled',
    takerState: 'filled',
    iv: undefined,
    combo: { id: combo.id, tradeId: combo.tradeId },
  };
  // a combo's leg trade is off the leg's book: the leg's last price (and its triggers) stay the book's
  addTradeId(makerOrder, trade.id);
  addTradeId(takerOrder, trade.id);
  for (const [u, o, fee] of [[maker.user, makerOrder, maker.fee], [taker.user, takerOrder, taker.fee]] as const) {
    const buy = o.side === 0;
    movePosition(ex, u, inst, buy ? lots : -lots, price);
    appendEntry(u.log, {
      id: ex.nextLogId++,
      ts: ex.now,
      type: 'trade',
      currency: cur,
      amount: (buy ? -premium : premium) - fee,
      balance: u.accounts[cur].balance,
      instrument: inst.name,
      userId: null,
      size: buy ? lots : -lots,
      price,
      fee,
      ref: trade.id,
    });
    recordUserTrade(u, trade, ex.limits.userTradesKept);
  }
  market.trades.push(trade);
  if (market.trades.length > PUBLIC_TRADES_KEPT * 2) market.trades.splice(0, market.trades.length - PUBLIC_TRADES_KEPT);
  ex.recentTrades.push(trade);
  if (ex.recentTrades.length > RECENT_TRADES_KEPT * 2) ex.recentTrades.splice(0, ex.recentTrades.length - RECENT_TRADES_KEPT);
  ex.observer?.trade(trade);
  return trade;
}
