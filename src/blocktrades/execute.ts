// Block trades in the engine (issue 34): the checks both parties' legs must pass, the margin each
// account would have after them, and the execution itself. One `block_trade` command applies every
// leg to both accounts, or (any check failing) nothing at all: every check is made before the first
// change, on the state as it is, and the margin check predicts each account's position after all
// legs together (docs/api-notes.md "Block trades"). Deterministic: time and rules come from the
// command, the signature was verified at the edge.
import type { CurrencyCode } from '../domain/currency.ts';
import { ERR, isReject, reject, type Reject } from '../domain/errors.ts';
import { PRICE_SCALE, isOnTick, roundToTick, premiumOf, priceToNumber, tradeFee, type Instrument } from '../domain/instrument.ts';
import type { Command } from '../engine/commands.ts';
import { optionsRefusal } from '../engine/disabledProducts.ts';
import type { Exchange } from '../engine/exchange.ts';
import { appendEntry } from '../engine/ledger.ts';
import { RECENT_TRADES_KEPT } from '../engine/fillSettlement.ts';
import { applyFill } from '../engine/orderRules.ts';
import { addTradeId, newOrder, type Order, type Position, type Trade, type User } from '../engine/types.ts';
import { agreementKey, signatureKey } from './state.ts';
import type { BlockLeg, BlockRole, BlockRules, BlockTradeRecord } from './types.ts';

type BlockCmd = Extract<Command, { t: 'block_trade' }>;
type InvalidateCmd = Extract<Command, { t: 'block_invalidate' }>;

/** Public trades kept per instrument (as src/engine/trading.ts keeps them). */
const PUBLIC_TRADES_KEPT = 10_000;
/** The absolute part of a price band, 0.01 coin in price units (as the order band's, src/market/smile.ts). */
const BAND_ABSOLUTE = 0.01 * 10 ** PRICE_SCALE;

/** Legs checked against the market: one currency, each instrument once. */
export interface CheckedLegs {
  currency: CurrencyCode;
  insts: Instrument[];
}

/** The block fee per contract: half the taker commission (the instrument's `block_trade_commission`). */
export function blockCommission(inst: Instrument): number {
  return Math.ceil(inst.takerCommission / 2);
}

/** The block price band of an instrument in price units: mark +- bandPct % of it + 0.01 coin. */
export function blockBand(ex: Exchange, inst: Instrument, bandPct: number): { min: number; max: number } {
  const mark = ex.markets.get(inst.id)!.markCoin * 10 ** PRICE_SCALE;
  const width = (mark * bandPct) / 100 + BAND_ABSOLUTE;
  // on the grid at that price (0.0005 above 0.005 coin); 1e-9 of a tick absorbs binary rounding
  return {
    min: Math.max(inst.tick, roundToTick(inst, mark - width - 1e-9, 'up')),
    max: roundToTick(inst, mark + width + 1e-9, 'down'),
  };
}

/** Whether the legs may trade as a block now, whoever the parties are (reads only). */
export function checkLegs(ex: Exchange, legs: readonly BlockLeg[], rules: BlockRules): CheckedLegs | Reject {
  if (legs.length === 0) return reject(ERR.INVALID_PARAMS, 'no_trades', 'trades');
  const insts: Instrument[] = [];
  let currency: CurrencyCode | null = null;
  for (const leg of legs) {
    const inst = ex.instruments.get(leg.instrument);
    if (!inst || inst.state === 'delivered') return reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
    if (insts.includes(inst)) return reject(ERR.INVALID_ARGUMENTS, 'instrument_repeated', 'trades');
    if (currency !== null && inst.currency !== currency) return reject(ERR.INVALID_ARGUMENTS, 'mixed_currencies', 'trades');
    currency = inst.currency;
    if (inst.state !== 'open' || inst.halted || inst.expiry <= ex.now) return reject(ERR.BOOK_CLOSED, inst.halted ? 'instrument_halted' : 'instrument_not_open');
    const idx = ex.index[inst.currency];
    if (!idx || (!idx.manual && ex.now - idx.ts > ex.limits.indexStaleMs)) return reject(ERR.BOOK_CLOSED, 'index_stale');
    if (!(ex.markets.get(inst.id)!.markCoin >= 0)) return reject(ERR.BOOK_CLOSED, 'no_mark_price');
    if (!(Number.isSafeInteger(leg.lots) && leg.lots > 0)) return reject(ERR.INVALID_AMOUNT, 'amount_not_positive', 'amount');
    if (leg.lots % inst.lotScaled !== 0) return reject(ERR.INVALID_AMOUNT, 'not_multiple_of_min_trade_amount', 'amount');
    if (leg.lots < (rules.minAmount[inst.currency] ?? inst.lotScaled)) return reject(ERR.QTY_TOO_LOW, 'below_block_trade_min_trade_amount', 'amount');
    if (!(Number.isSafeInteger(leg.price) && leg.price > 0)) return reject(ERR.INVALID_PRICE, 'price_not_positive', 'price');
    if (!isOnTick(inst, leg.price)) return reject(ERR.PRICE_WRONG_TICK, undefined, 'price');
    const band = blockBand(ex, inst, rules.bandPct);
    if (leg.price < band.min) return reject(ERR.PRICE_TOO_LOW, 'outside_block_trade_band', 'price', String(priceToNumber(band.min)));
    if (leg.price > band.max) return reject(ERR.PRICE_TOO_HIGH, 'outside_block_trade_band', 'price', String(priceToNumber(band.max)));
    insts.push(inst);
  }
  return { currency: currency!, insts };
}

/** The side of `role` in a leg (the leg's direction is the maker's). */
function sideOf(leg: BlockLeg, role: BlockRole): 0 | 1 {
  return role === 'maker' ? leg.side : leg.side === 0 ? 1 : 0;
}

/**
 * Why an account may not take its side of the legs, or null. Its margin after every leg together
 * (premiums and block fees paid or received, positions moved, what its open orders then hold) must
 * leave `available` at or above zero, and the premium it pays must come out of free cash, as for an
 * order (src/engine/orderFunds.ts). Reads only.
 */
export function sideRefusal(ex: Exchange, user: User, role: BlockRole, legs: readonly BlockLeg[], checked: CheckedLegs): Reject | null {
  const disabled = optionsRefusal(ex, user.id, false);
  if (disabled !== null) return disabled;
  const cur = checked.currency;
  const blocked = ex.trading.riskBlocked(user, cur);
  if (blocked !== null) return reject(ERR.NOT_ENOUGH_FUNDS, blocked);
  const risk = ex.trading.risk;
  let cash = 0;
  let change = 0;
  let valueChange = 0;
  // an instrument may come more than once (an RFQ acceptance filled by several quotes): its fills
  // are applied one after another to one predicted position, judged once against the position now
  const moved = new Map<number, { before: Position; after: Position }>();
  legs.forEach((leg, i) => {
    const inst = checked.insts[i]!;
    const lots = leg.lots / inst.lotScaled;
    const buy = sideOf(leg, role) === 0;
    const premium = premiumOf(inst, leg.price, lots);
    cash += (buy ? -premium : premium) - tradeFee(inst, leg.price, lots, blockCommission(inst));
    let m = moved.get(inst.id);
    if (m === undefined) {
      const p: Position = user.positions.get(inst.id) ?? { inst, size: 0, openCost: 0, realizedPnl: 0 };
      moved.set(inst.id, (m = { before: p, after: { ...p } }));
    }
    applyFill(m.after, inst, buy ? lots : -lots, leg.price);
  });
  for (const { before: p, after } of moved.values()) {
    valueChange += risk.positionValue(after) - risk.positionValue(p);
    change += risk.positionValue(after) - risk.positionValue(p) - (risk.positionIM(after) - risk.positionIM(p));
    const e = user.exposures.get(p.inst.id);
    if (e !== undefined && e.openOrders.size > 0) change -= risk.exposureIM(e, after.size) - risk.exposureIM(e, p.size);
  }
  if (risk.isPm(user)) change = valueChange - pmRequirementChange(ex, user, cur, moved.values());
  // cross models: the currency's equity and requirement moved within the pool (the haircut makes
  // the pool's move differ from the currency's own)
  const available = risk.isCross(user) ? risk.crossInitialAfter(user, cur, cash + valueChange, valueChange - change) : risk.available(user, cur) + cash + change;
  if (!Number.isFinite(available) || available < 0) return reject(ERR.NOT_ENOUGH_FUNDS, 'not_enough_funds');
  if (cash < 0 && risk.freeCash(user, cur) + cash < 0) return reject(ERR.NOT_ENOUGH_FUNDS, 'not_enough_funds');
  return null;
}

/**
 * A portfolio-margin account's requirement change (its initial margin with open orders): read from
 * the scenario engine's running sums with every leg's position moved, then put back (exact: the
 * sums are integers). The sums are complete when the command comes from the edge, which waits for
 * both accounts' (src/risk/portfolio/warmup.ts); replay rebuilds them here if need be.
 */
export function pmRequirementChange(ex: Exchange, user: User, cur: CurrencyCode, moved: Iterable<{ before: Position; after: Position }>): number {
  const pm = ex.trading.risk.pm;
  const before = pm.figures(user, cur).initialMarginWithOrders;
  const changes = [...moved].map(({ before: p, after }) => ({ inst: after.inst, lots: after.size - p.size }));
  return pm.withChanges(user, cur, changes, null).initialMarginWithOrders - before;
}

/** private/simulate_block_trade and verify_block_trade's check of the caller's own side (reads only). */
export function simulateSide(ex: Exchange, userId: number, role: BlockRole, legs: readonly BlockLeg[], rules: BlockRules): Reject | null {
  const user = ex.users.get(userId);
  if (!user) return reject(ERR.UNAUTHORIZED);
  const checked = checkLegs(ex, legs, rules);
  if (isReject(checked)) return checked;
  return sideRefusal(ex, user, role, legs, checked);
}

/** Applies a block trade whole, or refuses it before changing anything. */
export function applyBlockTrade(ex: Exchange, c: BlockCmd): BlockTradeRecord | Reject {
  const bt = ex.blockTrades;
  bt.prune(ex.now);
  const executor = ex.users.get(c.executor);
  const signer = ex.users.get(c.signer);
  if (!executor) return reject(ERR.UNAUTHORIZED);
  // a signer that no longer exists signed nothing that can execute
  if (!signer) return reject(ERR.INVALID_ARGUMENTS, 'block_trade_signature_invalid', 'counterparty_signature');
  if (executor === signer) return reject(ERR.INVALID_ARGUMENTS, 'block_trade_with_self', 'counterparty_signature');
  if (ex.now > c.expiry) return reject(ERR.INVALID_ARGUMENTS, 'block_trade_signature_expired', 'counterparty_signature');
  if (bt.invalidated.has(c.sig)) return reject(ERR.INVALID_ARGUMENTS, 'block_trade_signature_invalidated', 'counterparty_signature');
  const key = agreementKey(executor.id, signer.id, c.timestamp, c.nonce);
  // once per agreement, and once per signature: the same signature with a third account is refused too
  if (bt.executed.has(key) || bt.executed.has(signatureKey(c.sig))) return reject(ERR.INVALID_ARGUMENTS, 'block_trade_already_executed', 'nonce');
  const checked = checkLegs(ex, c.legs, c.rules);
  if (isReject(checked)) return checked;
  const maker = c.role === 'maker' ? executor : signer;
  const taker = c.role === 'maker' ? signer : executor;
  for (const [u, role] of [[maker, 'maker'], [taker, 'taker']] as const) {
    const refused = sideRefusal(ex, u, role, c.legs, checked);
    // the counterparty's refusal is named as its own: the executor learns that the other side failed
    if (refused !== null) return u === executor ? refused : reject(refused.code, `counterparty_${refused.reason ?? 'refused'}`);
  }
  // every check passed: from here on nothing refuses
  bt.executed.set(key, c.timestamp);
  bt.executed.set(signatureKey(c.sig), c.timestamp);
  const rec: BlockTradeRecord = { id: bt.nextId++, ts: ex.now, currency: checked.currency, maker: maker.id, taker: taker.id, tradeIds: [], timestamp: c.timestamp, nonce: c.nonce };
  c.legs.forEach((leg, i) => rec.tradeIds.push(applyLeg(ex, rec, leg, checked.insts[i]!, maker, taker, c.legs.length).id));
  for (const inst of checked.insts) {
    ex.trading.trimReduceOnlyAfterFills(maker, inst);
    ex.trading.trimReduceOnlyAfterFills(taker, inst);
  }
  bt.record(rec);
  return rec;
}

/** private/invalidate_block_trade_signature: only its signer may (the edge checked who signed it). */
export function invalidateSignature(ex: Exchange, c: InvalidateCmd): true | Reject {
  if (!ex.users.has(c.userId)) return reject(ERR.UNAUTHORIZED);
  ex.blockTrades.prune(ex.now);
  ex.blockTrades.invalidated.set(c.sig, c.expiry);
  return true;
}

/** One leg: an order of each party, filled at once off the book, and the trade between them. */
export function applyLeg(ex: Exchange, rec: BlockTradeRecord, leg: BlockLeg, inst: Instrument, maker: User, taker: User, legCount: number): Trade {
  const lots = leg.lots / inst.lotScaled;
  const cur = inst.currency;
  const market = ex.markets.get(inst.id)!;
  const premium = premiumOf(inst, leg.price, lots);
  const fee = tradeFee(inst, leg.price, lots, blockCommission(inst));
  const makerSide = leg.side;
  const takerSide: 0 | 1 = makerSide === 0 ? 1 : 0;
  const makerOrder = filledOrder(ex, maker, makerSide, inst, leg.price, lots, fee);
  const takerOrder = filledOrder(ex, taker, takerSide, inst, leg.price, lots, fee);
  const buyer = makerSide === 0 ? maker : taker;
  const seller = makerSide === 0 ? taker : maker;
  // postings: premium buyer -> seller; each side's block fee -> fee account (the sum stays zero)
  buyer.accounts[cur].balance -= premium;
  seller.accounts[cur].balance += premium;
  for (const u of [maker, taker]) {
    u.accounts[cur].balance -= fee;
    u.accounts[cur].fees += fee;
  }
  ex.system.fees[cur].balance += 2 * fee;
  const prev = market.trades.length > 0 ? market.trades[market.trades.length - 1]! : null;
  const trade: Trade = {
    id: ex.nextTradeId++,
    seq: ++market.tradeSeq,
    inst,
    ts: ex.now,
    price: leg.price,
    lots,
    takerSide,
    makerOrder,
    takerOrder,
    makerFee: fee,
    takerFee: fee,
    indexPrice: ex.indexPrice(cur),
    markPrice: market.markCoin,
    tickDirection: prev === null || leg.price > prev.price ? 0 : leg.price < prev.price ? 2 : prev.tickDirection === 0 || prev.tickDirection === 1 ? 1 : 3,
    makerState: 'filled',
    takerState: 'filled',
    iv: undefined,
    block: { id: rec.id, legs: legCount },
  };
  // a block trade is off the book: the last price (and what triggers on it) stays the book's
  addTradeId(makerOrder, trade.id);
  addTradeId(takerOrder, trade.id);
  for (const [u, o] of [[maker, makerOrder], [taker, takerOrder]] as const) {
    const buy = o.side === 0;
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
      price: leg.price,
      fee,
      ref: trade.id,
    });
    movePosition(ex, u, inst, buy ? lots : -lots, leg.price);
    u.trades.push(trade);
    if (u.trades.length > ex.limits.userTradesKept * 2) u.trades.splice(0, u.trades.length - ex.limits.userTradesKept);
  }
  market.trades.push(trade);
  if (market.trades.length > PUBLIC_TRADES_KEPT * 2) market.trades.splice(0, market.trades.length - PUBLIC_TRADES_KEPT);
  ex.recentTrades.push(trade);
  if (ex.recentTrades.length > RECENT_TRADES_KEPT * 2) ex.recentTrades.splice(0, ex.recentTrades.length - RECENT_TRADES_KEPT);
  ex.observer?.trade(trade);
  ex.observer?.order(makerOrder);
  ex.observer?.order(takerOrder);
  return trade;
}

/** A party's order of one leg: filled in full when made, never in a book (block trades, combo legs). */
export function filledOrder(ex: Exchange, user: User, side: 0 | 1, inst: Instrument, price: number, lots: number, fee: number, label = ''): Order {
  const o = newOrder(ex.nextOrderId++, user.id, side, price, 0, lots, inst, 'limit', 'fill_or_kill', false, false, false, label, null, ex.now, 0, null, false);
  o.filled = lots;
  o.filledNotional = price * lots;
  o.commission = fee;
  o.state = 'filled';
  user.orders.set(o.id, o);
  return o;
}

/** Position accounting of a fill (as Trading's), with the risk engine's running totals kept. */
export function movePosition(ex: Exchange, user: User, inst: Instrument, delta: number, price: number): void {
  let p = user.positions.get(inst.id);
  if (!p) {
    p = { inst, size: 0, openCost: 0, realizedPnl: 0 };
    user.positions.set(inst.id, p);
  }
  applyFill(p, inst, delta, price);
  ex.trading.risk.positionChanged(user, p);
  const e = user.exposures.get(inst.id);
  if (e !== undefined) ex.trading.risk.exposureChanged(user, e);
}
