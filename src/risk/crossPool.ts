// The cross models' pool in the live engine (issue 35): every currency's equity and its own
// requirement (RiskEngine.requirements: standard margin's on cross_sm, segregated PM's on cross_pm)
// handed to the pure pool of src/risk/portfolio/cross.ts. Reads only; the running totals it reads are
// RiskEngine's (or the full sums, `fresh`, for checks).
import { CURRENCIES, CURRENCY_CODES, type CurrencyCode } from '../domain/currency.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { User } from '../engine/types.ts';
import type { RiskEngine } from './accountRisk.ts';
import { crossMaxOutflow, crossSurplus, type CrossPart } from './portfolio/cross.ts';
import type { PmFigures } from './portfolio/pmRisk.ts';

/** The pooled surplus in one currency over the maintenance margin, the positions' IM and the IM with open orders. */
export interface CrossSums {
  maintenance: number;
  initial: number;
  initialWithOrders: number;
}

/** USD per coin of a currency (1 for USDC, which has no index of its own); NaN while unknown. */
function indexOrOne(ex: Exchange, c: CurrencyCode): number {
  return CURRENCIES[c].indexName === null ? 1 : ex.indexPrice(c);
}

/** Each currency's equity against its maintenance, initial, and initial-with-orders requirement. */
function crossParts(risk: RiskEngine, ex: Exchange, user: User, currency: CurrencyCode, replace: PmFigures | undefined, fresh: boolean, equityChange: number): { m: CrossPart[]; i: CrossPart[]; w: CrossPart[] } {
  const m: CrossPart[] = [];
  const i: CrossPart[] = [];
  const w: CrossPart[] = [];
  for (const k of CURRENCY_CODES) {
    const equity = user.accounts[k].balance + risk.positionsValue(user, k, fresh) + (k === currency ? equityChange : 0);
    const f = k === currency && replace !== undefined ? replace : risk.requirements(user, k, fresh);
    const index = indexOrOne(ex, k);
    m.push({ currency: k, equity, requirement: f.maintenanceMargin, index });
    i.push({ currency: k, equity, requirement: f.initialMargin, index });
    w.push({ currency: k, equity, requirement: f.initialMarginWithOrders, index });
  }
  return { m, i, w };
}

/**
 * The pooled surpluses in minor units of `currency`, every currency's requirement being
 * `risk.requirements`. `replace`: the figures of the account's `currency` as they would be (an order
 * check, a liquidation's choice), and `equityChange` its equity's move. `fresh`: from full sums.
 */
export function crossSums(ex: Exchange, risk: RiskEngine, user: User, currency: CurrencyCode, replace?: PmFigures, fresh = false, equityChange = 0): CrossSums {
  const { m, i, w } = crossParts(risk, ex, user, currency, replace, fresh, equityChange);
  const to = indexOrOne(ex, currency);
  const range = ex.pm.params.priceRange;
  return { maintenance: crossSurplus(m, currency, to, range), initial: crossSurplus(i, currency, to, range), initialWithOrders: crossSurplus(w, currency, to, range) };
}

/** The most that may leave `currency` with the pooled initial surplus (open orders included) still >= 0. */
export function crossMaxWithdrawal(ex: Exchange, risk: RiskEngine, user: User, currency: CurrencyCode): number {
  return crossMaxOutflow(crossParts(risk, ex, user, currency, undefined, false, 0).w, currency, indexOrOne(ex, currency), ex.pm.params.priceRange);
}
