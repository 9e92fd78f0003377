// Liquidation (API.md 5.3): an account whose equity fell below its maintenance margin has its open
// orders cancelled (`autoliquidation`), is refused risk-increasing orders while it is flagged, and
// has its short options bought back with reduce-only IOC orders against the book, paying a fee of
// 0.0019 coin per contract to the insurance account, until `equity >= maintenance_margin` or it has
// no short left.
//
// Each step is one journaled `liquidate` command, submitted by the background check in
// src/app/services.ts for every account `liquidationCandidates` names; so replay repeats exactly the
// same cancels, trades and fees. A step that finds no liquidity leaves the account flagged, and the
// next check retries it.
import { CURRENCIES, type CurrencyCode } from '../domain/currency.ts';
import { ceilDiv, pow10 } from '../domain/decimal.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import { lotFraction, premiumOf, tradeFee, type Instrument } from '../domain/instrument.ts';
import { contractsOf, type AccountRisk } from '../risk/accountRisk.ts';
import type { Exchange } from './exchange.ts';
import { BUY } from './orderBook.ts';
import type { Order, Position, Trade } from './types.ts';

/** Liquidation fee per contract in units of 10^-4 coin (0.0019 coin). */
const LIQUIDATION_FEE_E4 = 19;
/** Buy-back orders per step at most: each one takes liquidity, so this only bounds a pathological book. */
const MAX_ORDERS_PER_STEP = 200;

export interface LiquidationResult {
  userId: number;
  currency: CurrencyCode;
  /** Whether the account is still flagged after this step. */
  inLiquidation: boolean;
  /** Orders cancelled with `autoliquidation`. */
  cancelled: Order[];
  /** The buy-back orders of this step (type `liquidation`). */
  orders: Order[];
  trades: Trade[];
  /** Liquidation fees moved to the insurance account, minor units. */
  fee: number;
  equity: number;
  maintenanceMargin: number;
}

export function liquidationKey(userId: number, currency: CurrencyCode): string {
  return `${userId}:${currency}`;
}

/** Below maintenance margin (an account without shorts has none and is never liquidated). */
export function belowMaintenance(r: AccountRisk): boolean {
  return r.maintenanceMargin > 0 && r.equity < r.maintenanceMargin;
}

/** Liquidation fee in minor units for `lots` of an instrument, rounded up (a fee: the exchange's favour). */
export function liquidationFee(inst: Instrument, lots: number): number {
  const { num, den } = lotFraction(inst);
  return ceilDiv(LIQUIDATION_FEE_E4 * pow10(CURRENCIES[inst.currency].decimals - 4) * lots * num, den);
}

/**
 * The accounts the background check must submit a `liquidate` for: those below maintenance margin
 * and those still flagged (retried until healthy or flat). Read-only; O(positions).
 */
export function liquidationCandidates(ex: Exchange): { userId: number; currency: CurrencyCode }[] {
  const out: { userId: number; currency: CurrencyCode }[] = [];
  const seen = new Set<string>();
  for (const u of ex.users.values()) {
    let currencies: Set<CurrencyCode> | null = null;
    for (const p of u.positions.values()) {
      if (p.size >= 0) continue;
      currencies ??= new Set();
      currencies.add(p.inst.currency);
    }
    if (currencies === null) continue;
    for (const c of currencies) {
      if (belowMaintenance(ex.trading.risk.account(u, c))) {
        out.push({ userId: u.id, currency: c });
        seen.add(liquidationKey(u.id, c));
      }
    }
  }
  for (const key of ex.liquidating) {
    if (seen.has(key)) continue;
    const [id, currency] = key.split(':');
    out.push({ userId: Number(id), currency: currency as CurrencyCode });
  }
  return out;
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
    equity: r.equity,
    maintenanceMargin: r.maintenanceMargin,
  };
  if (!belowMaintenance(r)) {
    ex.liquidating.delete(key);
    return result;
  }
  ex.liquidating.add(key);
  result.cancelled = ex.trading.cancelUserOrders(user, currency, 'autoliquidation');
  r = risk.account(user, currency);

  // the largest maintenance margin first (ties by instrument id): deterministic, biggest risk first
  const shorts = [...user.positions.values()]
    .filter((p) => p.size < 0 && p.inst.currency === currency)
    .map((p) => ({ p, mm: risk.positionMM(p) }))
    .sort((a, b) => b.mm - a.mm || a.p.inst.id - b.p.inst.id)
    .map((x) => x.p);
  let placed = 0;
  for (const p of shorts) {
    while (belowMaintenance(r) && p.size < 0 && placed < MAX_ORDERS_PER_STEP) {
      const inst = p.inst;
      if (!tradable(ex, inst)) break;
      const market = ex.markets.get(inst.id)!;
      const ask = ex.books.get(inst.id)!.bestAsk();
      // the band's top is the worst price a liquidation pays (never a bad print far above the mark)
      if (Number.isNaN(ask) || ask > market.maxPrice) break;
      const lots = lotsToBuy(ex, p, ask, r.maintenanceMargin - r.equity);
      placed++;
      const res = ex.trading.placeLiquidation(user, inst, BUY, lots, market.maxPrice);
      result.orders.push(res.order);
      for (const t of res.trades) result.trades.push(t);
      if (res.order.filled === 0) break;
      const fee = liquidationFee(inst, res.order.filled);
      user.accounts[currency].balance -= fee;
      ex.system.insurance[currency].balance += fee;
      result.fee += fee;
      r = risk.account(user, currency);
    }
    if (!belowMaintenance(r)) break;
  }
  if (!belowMaintenance(r)) ex.liquidating.delete(key);
  result.inLiquidation = ex.liquidating.has(key);
  result.equity = r.equity;
  result.maintenanceMargin = r.maintenanceMargin;
  return result;
}
