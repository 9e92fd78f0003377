// Liquidation (API.md 5.3, docs/api-notes.md "Liquidation"): an account whose equity in a currency
// is below its maintenance margin there (zero maintenance margin included: an account holding only
// longs whose equity fell below zero), or whose balance there is below zero, is flagged and refused
// risk-increasing orders. Each step:
//   1. cancels the account's orders in that currency (`autoliquidation`);
//   2. with equity below zero, hands every position over to the insurance account at mark and
//      covers the deficit by the waterfall (src/engine/defaults.ts);
//   3. otherwise closes positions against the book inside the price band, riskiest first (for an
//      account on portfolio margin: the position whose reduction lowers its requirement most), in
//      orders of bounded size: short options are bought back (largest maintenance margin first)
//      with cash the account has, and long options are sold (most valuable first) when it needs
//      cash; each contract pays 0.0019 coin to the insurance account (never more than a sale
//      brings in);
//   4. a balance still below zero is covered by taking longs over at mark, then the waterfall.
// The account stays flagged until it is healthy; a step without liquidity changes nothing, and the
// next check retries. Each step is one journaled `liquidate` command (submitted by the background
// check in src/app/marketTimers.ts for every account `liquidationCandidates` names), so replay repeats
// exactly the same cancels, trades, fees and transfers.
import { CURRENCIES, CURRENCY_CODES, type CurrencyCode } from '../domain/currency.ts';
import { ceilDiv, pow10 } from '../domain/decimal.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import { lotFraction, premiumOf, tradeFee, type Instrument } from '../domain/instrument.ts';
import { contractsOf, type AccountRisk } from '../risk/accountRisk.ts';
import { PM_STEP_UNITS } from '../risk/portfolio/pmRisk.ts';
import { coverDeficit, post, takeOverAll, takeOverLongsForCash } from './defaults.ts';
import type { Exchange } from './exchange.ts';
import { BUY, SELL } from './orderBook.ts';
import type { Order, Position, Trade, User } from './types.ts';

/** Liquidation fee per contract in units of 10^-4 coin (0.0019 coin). */
export const LIQUIDATION_FEE_E4 = 19;
/** Orders per step at most: each one takes liquidity, so this only bounds a pathological book. */
const MAX_ORDERS_PER_STEP = 50;
/** Lots one liquidation order closes at most: a step moves a bounded size, the next tick goes on. */
export const MAX_LOTS_PER_ORDER = 100;

export interface LiquidationResult {
  userId: number;
  currency: CurrencyCode;
  /** Whether the account is still flagged after this step. */
  inLiquidation: boolean;
  /** Orders cancelled with `autoliquidation`. */
  cancelled: Order[];
  /** The liquidation orders of this step (type `liquidation`). */
  orders: Order[];
  trades: Trade[];
  /** Liquidation fees moved to the insurance account, minor units. */
  fee: number;
  /** Positions handed over to the insurance account at mark. */
  takenOver: number;
  equity: number;
  maintenanceMargin: number;
}

export function liquidationKey(userId: number, currency: CurrencyCode): string {
  return `${userId}:${currency}`;
}

/** Below maintenance margin (zero included: an account of longs with negative equity), or owing cash. */
export function belowMaintenance(r: AccountRisk): boolean {
  return r.equity < r.maintenanceMargin || r.balance < 0;
}

/** Liquidation fee in minor units for `lots` of an instrument, rounded up (a fee: the exchange's favour). */
export function liquidationFee(inst: Instrument, lots: number): number {
  const { num, den } = lotFraction(inst);
  return ceilDiv(LIQUIDATION_FEE_E4 * pow10(CURRENCIES[inst.currency].decimals - 4) * lots * num, den);
}

/**
 * The accounts the background check must submit a `liquidate` for: those below maintenance margin
 * (accounts with shorts, or a balance below zero, can be) and those still flagged (retried until
 * healthy or flat). Read-only; O(positions).
 */
export function liquidationCandidates(ex: Exchange): { userId: number; currency: CurrencyCode }[] {
  const out: { userId: number; currency: CurrencyCode }[] = [];
  for (const a of scanForLiquidation(ex)) if (a !== null) out.push(a);
  return out;
}

/**
 * The same, one account at a time (null after each user found healthy), so that the caller can
 * spread the scan over several turns of the event loop: after an index move every position is
 * valued again, which for thousands of positions is milliseconds of work (src/app/marketTimers.ts gives
 * each turn a time budget). An account on portfolio margin has its scenario sums rebuilt first, at
 * most PM_STEP_UNITS of work between two yields (nulls in the middle of a large account), so that no
 * step holds the engine long whatever one account holds (issue 35).
 */
export function* scanForLiquidation(ex: Exchange): Generator<{ userId: number; currency: CurrencyCode } | null> {
  const seen = new Set<string>();
  const risk = ex.trading.risk;
  const pm = risk.pm;
  // the recompute work done since the last yield
  let stepStart = pm.work;
  for (const u of ex.users.values()) {
    let currencies: Set<CurrencyCode> | null = null;
    for (const c of CURRENCY_CODES) {
      if (u.accounts[c].balance >= 0) continue;
      currencies ??= new Set();
      currencies.add(c);
    }
    for (const p of u.positions.values()) {
      if (p.size >= 0) continue;
      currencies ??= new Set();
      currencies.add(p.inst.currency);
    }
    if (currencies !== null) {
      // cross_pm reads every currency's scenario figures (the pool), segregated_pm those it checks:
      // all complete in one pass before the checks (a tick between two slices makes a currency
      // done earlier stale again: it is rebuilt in slices too, not inside the check)
      if (risk.isPm(u)) {
        const needed = risk.isCross(u) ? CURRENCY_CODES : [...currencies];
        while (!needed.every((c) => pm.refresh(u, c, PM_STEP_UNITS - (pm.work - stepStart)))) {
          yield null;
          stepStart = pm.work;
        }
      }
      for (const c of currencies) {
        if (belowMaintenance(risk.account(u, c))) {
          seen.add(liquidationKey(u.id, c));
          yield { userId: u.id, currency: c };
          stepStart = pm.work;
        }
      }
    }
    yield null;
    stepStart = pm.work;
  }
  for (const key of [...ex.liquidating]) {
    if (seen.has(key)) continue;
    const [id, currency] = key.split(':');
    yield { userId: Number(id), currency: currency as CurrencyCode };
  }
}

function tradable(ex: Exchange, inst: Instrument): boolean {
  const m = ex.markets.get(inst.id)!;
  return inst.state === 'open' && !inst.halted && inst.expiry > ex.now && m.markCoin >= 0;
}

/**
 * Lots of a short to buy back at `ask` so that the deficit (maintenance margin - equity) closes:
 * each lot bought lowers the maintenance margin and the liability at mark, and costs the premium
 * and both fees. When buying does not help (an ask far above the mark), the whole short goes.
 */
function lotsToBuy(ex: Exchange, p: Position, ask: number, deficit: number): number {
  const inst = p.inst;
  const d = CURRENCIES[inst.currency].decimals;
  const m = ex.markets.get(inst.id)!;
  const perLotContracts = contractsOf(inst, 1);
  const relief = (m.markCoin + ex.trading.risk.mmPerContract(inst)) * perLotContracts * pow10(d);
  const cost = premiumOf(inst, ask, 1) + tradeFee(inst, ask, 1, inst.takerCommission) + liquidationFee(inst, 1);
  const gain = relief - cost;
  const size = -p.size;
  if (!(gain > 0)) return size;
  return Math.max(1, Math.min(size, Math.ceil(deficit / gain)));
}

/** Lots of asks up to `limit` that `cash` pays for, premium, taker fee and liquidation fee included. */
function affordableLots(ex: Exchange, inst: Instrument, limit: number, want: number, cash: number): number {
  let lots = 0;
  let spent = 0;
  ex.books.get(inst.id)!.walk(BUY, limit, (maker) => {
    const take = Math.min(maker.remaining, want - lots);
    const per = (n: number) => premiumOf(inst, maker.price, n) + tradeFee(inst, maker.price, n, inst.takerCommission) + liquidationFee(inst, lots + n) - liquidationFee(inst, lots);
    let n = take;
    if (spent + per(n) > cash) {
      // the largest part of this level the cash still covers
      let lo = 0;
      let hi = take;
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        if (spent + per(mid) <= cash) lo = mid;
        else hi = mid - 1;
      }
      n = lo;
    }
    spent += per(n);
    lots += n;
    return n === take && lots < want;
  });
  return lots;
}

/** One liquidation order against the book; the liquidation fee goes to the insurance account. */
function closeAgainstBook(ex: Exchange, user: User, p: Position, side: 0 | 1, lots: number, result: LiquidationResult): number {
  const inst = p.inst;
  const market = ex.markets.get(inst.id)!;
  const before = user.accounts[inst.currency].balance;
  // the band is the worst price a liquidation trades at (never a bad print far from the mark)
  const res = ex.trading.placeLiquidation(user, inst, side, lots, side === BUY ? market.maxPrice : market.minPrice);
  result.orders.push(res.order);
  for (const t of res.trades) result.trades.push(t);
  const filled = res.order.filled;
  if (filled === 0) return 0;
  let fee = liquidationFee(inst, filled);
  // a sale never pays more in fees than it brought in
  if (side === SELL) fee = Math.min(fee, Math.max(0, user.accounts[inst.currency].balance - before));
  if (fee > 0) {
    post(ex, user, inst.currency, -fee, 'liquidation_fee', inst, null);
    post(ex, ex.insurance, inst.currency, fee, 'liquidation_fee', inst, user.id);
    result.fee += fee;
  }
  return filled;
}

/** Sells the most valuable long with a bid in the band, enough to raise `needed` if it can. */
function sellALong(ex: Exchange, user: User, currency: CurrencyCode, needed: number, result: LiquidationResult): boolean {
  const candidates = [...user.positions.values()]
    .filter((p) => p.size > 0 && p.inst.currency === currency && tradable(ex, p.inst))
    .map((p) => ({ p, bid: ex.books.get(p.inst.id)!.bestBid() }))
    .filter((x) => !Number.isNaN(x.bid) && x.bid >= ex.markets.get(x.p.inst.id)!.minPrice)
    .sort((a, b) => b.bid * b.p.size - a.bid * a.p.size || a.p.inst.id - b.p.inst.id);
  for (const { p, bid } of candidates) {
    const perLot = premiumOf(p.inst, bid, 1) - tradeFee(p.inst, bid, 1, p.inst.takerCommission) - liquidationFee(p.inst, 1);
    const lots = Math.min(p.size, MAX_LOTS_PER_ORDER, perLot > 0 ? Math.max(1, Math.ceil(needed / perLot)) : p.size);
    if (closeAgainstBook(ex, user, p, SELL, lots, result) > 0) return true;
  }
  return false;
}

/** One liquidation step for one account and currency (the `liquidate` command). */
export function liquidate(ex: Exchange, userId: number, currency: CurrencyCode): LiquidationResult | Reject {
  const user = ex.users.get(userId);
  if (!user) return reject(ERR.NOT_FOUND, 'user_not_found', 'user_id');
  const risk = ex.trading.risk;
  const key = liquidationKey(userId, currency);
  let r = risk.account(user, currency);
  const result: LiquidationResult = {
    userId,
    currency,
    inLiquidation: false,
    cancelled: [],
    orders: [],
    trades: [],
    fee: 0,
    takenOver: 0,
    equity: r.equity,
    maintenanceMargin: r.maintenanceMargin,
  };
  if (!belowMaintenance(r)) {
    ex.liquidating.delete(key);
    return result;
  }
  ex.liquidating.add(key);
  result.cancelled = ex.trading.cancelUserOrders(user, currency, 'autoliquidation');
  // combo orders rest in their combo's book, not in the account's exposures: cancelled alike
  if (ex.comboBooks.hasOpen()) {
    const combos = ex.comboBooks.cancelUser(user.id, currency, 'autoliquidation');
    if (combos.length > 0) result.cancelled = [...result.cancelled, ...combos].sort((a, b) => a.id - b.id);
  }
  r = risk.account(user, currency);

  if (r.equity >= 0) {
    for (let placed = 0; placed < MAX_ORDERS_PER_STEP && belowMaintenance(r); placed++) {
      const cash = user.accounts[currency].balance;
      if (cash < 0 || r.equity >= r.maintenanceMargin) {
        // owing cash: sell longs
        if (!sellALong(ex, user, currency, -cash, result)) break;
      } else if (!buyBackAShort(ex, user, currency, r, result)) break;
      r = risk.account(user, currency);
    }
  }
  if (r.equity < 0) {
    // the account cannot pay for its positions: the insurance account takes them all over at mark
    result.takenOver += takeOverAll(ex, user, currency);
  } else if (user.accounts[currency].balance < 0) {
    result.takenOver += takeOverLongsForCash(ex, user, currency);
  }
  coverDeficit(ex, user, currency);
  r = risk.account(user, currency);
  if (!belowMaintenance(r)) ex.liquidating.delete(key);
  result.inLiquidation = ex.liquidating.has(key);
  result.equity = r.equity;
  result.maintenanceMargin = r.maintenanceMargin;
  return result;
}

/**
 * Buys back the riskiest short that has asks in the band, as much as closes the deficit and the cash
 * pays for; without the cash, sells a long first. False when nothing could be done.
 */
function buyBackAShort(ex: Exchange, user: User, currency: CurrencyCode, r: AccountRisk, result: LiquidationResult): boolean {
  const risk = ex.trading.risk;
  if (risk.isPm(user) && reduceForPortfolio(ex, user, currency, r, result)) return true;
  // the largest maintenance margin first (ties by instrument id): deterministic, biggest risk first
  const shorts = [...user.positions.values()]
    .filter((p) => p.size < 0 && p.inst.currency === currency && tradable(ex, p.inst))
    .map((p) => ({ p, mm: risk.positionMM(p) }))
    .sort((a, b) => b.mm - a.mm || a.p.inst.id - b.p.inst.id)
    .map((x) => x.p);
  for (const p of shorts) {
    const market = ex.markets.get(p.inst.id)!;
    const ask = ex.books.get(p.inst.id)!.bestAsk();
    if (Number.isNaN(ask) || ask > market.maxPrice) continue;
    const wanted = Math.min(lotsToBuy(ex, p, ask, r.maintenanceMargin - r.equity), MAX_LOTS_PER_ORDER);
    const cash = user.accounts[currency].balance;
    const lots = affordableLots(ex, p.inst, market.maxPrice, wanted, cash);
    if (lots > 0) {
      if (closeAgainstBook(ex, user, p, BUY, lots, result) > 0) return true;
      continue;
    }
    // the cash does not pay for one lot: raise it from the longs, then come back
    const perLot = premiumOf(p.inst, ask, 1) + tradeFee(p.inst, ask, 1, p.inst.takerCommission) + liquidationFee(p.inst, 1);
    return sellALong(ex, user, currency, perLot * wanted - cash, result);
  }
  return false;
}

/**
 * Portfolio margin (issue 35): closes part of the position whose reduction lowers the account's
 * scenario requirement most (a short bought back or a long sold: in a hedged book either can be
 * the risk), judged on a bounded size (MAX_LOTS_PER_ORDER) of each against the book. False when no
 * reduction lowers the requirement or none can trade; the standard order (shorts by their own
 * margin) is then tried.
 */
function reduceForPortfolio(ex: Exchange, user: User, currency: CurrencyCode, r: AccountRisk, result: LiquidationResult): boolean {
  const risk = ex.trading.risk;
  const mmNow = r.maintenanceMargin;
  const ranked: { p: Position; lots: number; relief: number }[] = [];
  for (const p of user.positions.values()) {
    if (p.size === 0 || p.inst.currency !== currency || !tradable(ex, p.inst)) continue;
    const lots = Math.min(Math.abs(p.size), MAX_LOTS_PER_ORDER);
    const after = risk.pmMaintenanceWithPosition(user, p.inst, p.size > 0 ? -lots : lots);
    const relief = mmNow - after;
    if (relief > 0) ranked.push({ p, lots, relief });
  }
  // the largest relief first, ties by instrument id: deterministic
  ranked.sort((a, b) => b.relief - a.relief || a.p.inst.id - b.p.inst.id);
  const deficit = r.maintenanceMargin - r.equity;
  for (const { p, lots, relief } of ranked) {
    const market = ex.markets.get(p.inst.id)!;
    const book = ex.books.get(p.inst.id)!;
    // as many lots as close the deficit at this relief per lot, at least one
    const wanted = Math.max(1, Math.min(lots, Math.ceil((deficit * lots) / relief)));
    if (p.size > 0) {
      const bid = book.bestBid();
      if (Number.isNaN(bid) || bid < market.minPrice) continue;
      if (closeAgainstBook(ex, user, p, SELL, wanted, result) > 0) return true;
      continue;
    }
    const ask = book.bestAsk();
    if (Number.isNaN(ask) || ask > market.maxPrice) continue;
    const cash = user.accounts[currency].balance;
    const n = affordableLots(ex, p.inst, market.maxPrice, wanted, cash);
    if (n > 0) {
      if (closeAgainstBook(ex, user, p, BUY, n, result) > 0) return true;
      continue;
    }
    const perLot = premiumOf(p.inst, ask, 1) + tradeFee(p.inst, ask, 1, p.inst.takerCommission) + liquidationFee(p.inst, 1);
    return sellALong(ex, user, currency, perLot * wanted - cash, result);
  }
  return false;
}
