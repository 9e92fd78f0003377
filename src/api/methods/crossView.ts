// The cross-collateral figures of an account on `cross_pm` or `cross_sm` (src/risk/portfolio/cross.ts)
// as get_account_summary, the subaccounts' portfolios, simulate_portfolio and pme/simulate show them: the pooled margin balance
// and requirements in one currency, and each currency's part of the pool.
import { CURRENCIES, CURRENCY_CODES, type CurrencyCode } from '../../domain/currency.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { User } from '../../engine/types.ts';
import { crossEquity, crossHaircut, crossTerm, type CrossPart } from '../../risk/portfolio/cross.ts';
import type { PmFigures } from '../../risk/portfolio/pmRisk.ts';
import { money } from '../render.ts';

export interface CrossView {
  currency: CurrencyCode;
  /** Every currency's equity at index, in `currency` (no haircut). */
  marginBalance: number;
  /** Pooled surplus over the maintenance margin and over the initial margin with open orders. */
  maintenanceSurplus: number;
  initialSurplus: number;
  /** marginBalance less the surplus: the pooled requirement in `currency` (sum of F_k (R_k + h_k |E_k - R_k|)). */
  maintenanceMargin: number;
  initialMargin: number;
  parts: { part: CrossPart; initialMargin: number; haircut: number; maintenanceTerm: number; initialTerm: number }[];
}

function indexOf(ex: Exchange, c: CurrencyCode): number {
  return CURRENCIES[c].indexName === null ? 1 : ex.indexPrice(c);
}

/**
 * The view in `currency`, or null when the account is on neither cross model. `replace`: figures of one
 * currency as a simulation has them (what-if positions), the others as they stand.
 */
export function crossView(ex: Exchange, user: User, currency: CurrencyCode, replace?: { currency: CurrencyCode; figures: PmFigures }): CrossView | null {
  const risk = ex.trading.risk;
  if (!risk.isCross(user)) return null;
  const range = ex.pm.params.priceRange;
  const to = indexOf(ex, currency);
  const parts: CrossView['parts'] = [];
  for (const k of CURRENCY_CODES) {
    const f = replace !== undefined && replace.currency === k ? replace.figures : risk.requirements(user, k, false);
    const equity = user.accounts[k].balance + risk.positions(user, k).value;
    const part: CrossPart = { currency: k, equity, requirement: f.maintenanceMargin, index: indexOf(ex, k) };
    const im: CrossPart = { ...part, requirement: f.initialMarginWithOrders };
    parts.push({ part, initialMargin: f.initialMarginWithOrders, haircut: crossHaircut(k, range), maintenanceTerm: crossTerm(part, currency, to, range), initialTerm: crossTerm(im, currency, to, range) });
  }
  const marginBalance = crossEquity(parts.map((p) => p.part), currency, to);
  const maintenanceSurplus = parts.reduce((s, p) => s + p.maintenanceTerm, 0);
  const initialSurplus = parts.reduce((s, p) => s + p.initialTerm, 0);
  return { currency, marginBalance, maintenanceSurplus, initialSurplus, maintenanceMargin: marginBalance - maintenanceSurplus, initialMargin: marginBalance - initialSurplus, parts };
}

/** The view on the wire (money in `currency`, each part's own figures in its own currency). */
export function crossJson(v: CrossView): Record<string, unknown> {
  const m = (x: number) => money(x, v.currency);
  return {
    collateral_currency: v.currency,
    correlation: 'none: each currency moves through its own buckets; no offset across currencies',
    margin_balance: m(v.marginBalance),
    initial_margin: m(v.initialMargin),
    maintenance_margin: m(v.maintenanceMargin),
    available_funds: m(v.initialSurplus),
    maintenance_surplus: m(v.maintenanceSurplus),
    currencies: v.parts.map((p) => ({
      currency: p.part.currency,
      index_price: Number.isFinite(p.part.index) ? p.part.index : null,
      equity: money(p.part.equity, p.part.currency),
      maintenance_margin: money(p.part.requirement, p.part.currency),
      initial_margin: money(p.initialMargin, p.part.currency),
      haircut: p.haircut,
      maintenance_surplus: m(p.maintenanceTerm),
      initial_surplus: m(p.initialTerm),
    })),
  };
}
