// Standard margin of one position or one instrument's open orders at the current mark (API.md 5.3
// formulas), in integer minor units: what RiskEngine (accountRisk.ts) sums per account and keeps
// running totals of (runningTotals.ts). Reads the exchange's marks and index only.
import { CURRENCIES, type CurrencyCode } from '../domain/currency.ts';
import { AMOUNT_SCALE, type Instrument } from '../domain/instrument.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { OrderExposure, Position, User } from '../engine/types.ts';
import { shortInitialMargin, shortMaintenanceMargin, toMinorDown, toMinorUp } from './margin.ts';

const AMOUNT_UNIT = 10 ** AMOUNT_SCALE;

export function contractsOf(inst: Instrument, lots: number): number {
  return (lots * inst.lotScaled) / AMOUNT_UNIT;
}

/** Lots of sell orders that would open (or extend) a short, given the current position. */
export function shortOpeningLots(sellOpenLots: number, position: number): number {
  return Math.max(0, sellOpenLots - Math.max(0, position));
}

/** What an account's positions in one currency are worth and hold, at mark (minor units). */
export interface PositionTotals {
  /** Longs at mark less shorts' liability at mark. */
  value: number;
  initialMargin: number;
  maintenanceMargin: number;
}

/** Initial margin per short contract at the current mark (coin); NaN without an index. */
export function imPerContract(ex: Exchange, inst: Instrument): number {
  const m = ex.markets.get(inst.id)!;
  const index = ex.indexPrice(inst.currency);
  const c = m.imCache;
  // keyed by the inputs themselves, so no code path that moves the index or the mark has to
  // remember to invalidate it (a NaN input never matches and is recomputed, giving NaN again)
  if (c.index !== index || c.mark !== m.markCoin) {
    c.index = index;
    c.mark = m.markCoin;
    c.perContract = shortInitialMargin(inst.optionType, index, inst.strike, m.markCoin);
  }
  return c.perContract;
}

export function mmPerContract(ex: Exchange, inst: Instrument): number {
  const m = ex.markets.get(inst.id)!;
  return shortMaintenanceMargin(inst.optionType, m.markCoin);
}

/** Value of a position at mark in minor units: longs rounded down, shorts' liability up. */
export function positionValue(ex: Exchange, p: Position): number {
  if (p.size === 0) return 0;
  const m = ex.markets.get(p.inst.id)!;
  const d = CURRENCIES[p.inst.currency].decimals;
  const coin = m.markCoin * contractsOf(p.inst, Math.abs(p.size));
  return p.size > 0 ? toMinorDown(coin, d) : -toMinorUp(coin, d);
}

export function positionIM(ex: Exchange, p: Position): number {
  if (p.size >= 0) return 0;
  return toMinorUp(imPerContract(ex, p.inst) * contractsOf(p.inst, -p.size), CURRENCIES[p.inst.currency].decimals);
}

export function positionMM(ex: Exchange, p: Position): number {
  if (p.size >= 0) return 0;
  return toMinorUp(mmPerContract(ex, p.inst) * contractsOf(p.inst, -p.size), CURRENCIES[p.inst.currency].decimals);
}

/** Margin held by the open orders of one instrument. */
export function exposureIM(ex: Exchange, e: OrderExposure, position: number): number {
  let im = e.buyReserved;
  const shortLots = shortOpeningLots(e.sellOpenLots, position);
  if (shortLots > 0) im += toMinorUp(imPerContract(ex, e.inst) * contractsOf(e.inst, shortLots), CURRENCIES[e.inst.currency].decimals);
  return im;
}

// ---- the entries of RiskEngine's running totals (runningTotals.ts) ---------------------------

/** The initial margin an account's open orders hold in one currency, kept up to date per change. */
export interface OrdersMargin {
  /** Exchange.marginVersion it was computed at: any other value means recompute in full. */
  version: number;
  total: number;
}

/** PositionTotals kept up to date per position change, valid at one Exchange.marginVersion. */
export interface PositionsAggregate extends PositionTotals {
  version: number;
}

/** One account's entry in a store of running totals (kept per account and currency), made on first use. */
export function perCurrency<V>(store: WeakMap<User, Map<CurrencyCode, V>>, user: User): Map<CurrencyCode, V> {
  let byCurrency = store.get(user);
  if (byCurrency === undefined) {
    byCurrency = new Map();
    store.set(user, byCurrency);
  }
  return byCurrency;
}
