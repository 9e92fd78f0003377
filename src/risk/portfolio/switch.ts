// private/change_margin_model (issue 35): an account moves between standard and portfolio margin.
// One journaled command (`change_margin_model`), refused without changing anything when:
//   - the account is in liquidation, or owes cash, in any currency;
//   - it moves onto portfolio margin with less equity than the operator's minimum (all currencies
//     at index, in BTC; Deribit: 0.5 BTC);
//   - under the new model its equity would be below maintenance margin in any currency (so moving
//     back to standard margin is refused while the standard requirement is not covered).
// The dry run (`preview`) answers the same old and new figures without the command.
//
// `cross_pm` pools the currencies' portfolio-margin surpluses at index with a haircut, `cross_sm`
// their standard-margin surpluses the same way (src/risk/portfolio/cross.ts): under a cross model a
// currency's equity less maintenance margin is the pool's surplus, so the per-currency check below
// is the pool's. Leaving a cross model for a segregated one is refused while any currency would not
// cover its own maintenance margin (the collateral that carried it stays where it is).
import { CURRENCY_CODES, type CurrencyCode } from '../../domain/currency.ts';
import { ERR, reject, type Reject } from '../../domain/errors.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { User } from '../../engine/types.ts';
import type { AccountRisk } from '../accountRisk.ts';
import { isPortfolioModel, type MarginModel } from './state.ts';
import { pow10 } from '../../domain/decimal.ts';

export interface ModelState {
  currency: CurrencyCode;
  old: AccountRisk;
  new: AccountRisk;
}

export interface SwitchResult {
  userId: number;
  from: MarginModel;
  to: MarginModel;
  states: ModelState[];
}

/** The account's figures per currency under its model and under `to` (reads only). */
export function preview(ex: Exchange, user: User, to: MarginModel): SwitchResult {
  const risk = ex.trading.risk;
  const states: ModelState[] = [];
  for (const c of CURRENCY_CODES) {
    states.push({ currency: c, old: risk.account(user, c), new: risk.asIf(user, to, () => risk.account(user, c)) });
  }
  return { userId: user.id, from: ex.pm.model(user.id), to, states };
}

/** Equity over all currencies at index, in BTC; NaN without a BTC index. A currency without an index counts for nothing. */
export function equityInBtc(ex: Exchange, user: User): number {
  const btc = ex.indexPrice('BTC');
  if (!(btc > 0)) return NaN;
  let usd = 0;
  for (const c of CURRENCY_CODES) {
    const equity = ex.trading.risk.account(user, c).equity / pow10(ex.decimals(c));
    const idx = c === 'USDC' ? 1 : ex.indexPrice(c);
    if (Number.isFinite(idx) && Number.isFinite(equity)) usd += equity * idx;
  }
  return usd / btc;
}

/** Why the switch is refused, or null (the same check for the command and its dry run). */
export function switchRefusal(ex: Exchange, user: User, r: SwitchResult): Reject | null {
  if (r.from === r.to) return null;
  const risk = ex.trading.risk;
  for (const c of CURRENCY_CODES) {
    if (ex.inLiquidation(user.id, c)) return reject(ERR.NOT_ENOUGH_FUNDS, 'account_in_liquidation', 'margin_model');
    if (user.accounts[c].balance < 0) return reject(ERR.NOT_ENOUGH_FUNDS, 'negative_balance', 'margin_model');
  }
  if (isPortfolioModel(r.to) && !risk.isPm(user)) {
    const equity = equityInBtc(ex, user);
    if (!Number.isFinite(equity)) return reject(ERR.OTHER_REJECT, 'index_price_unavailable', 'margin_model');
    if (equity < ex.pm.params.minSwitchEquityBtc) return reject(ERR.NOT_ENOUGH_FUNDS, 'equity_below_portfolio_margin_minimum', 'margin_model');
  }
  for (const s of r.states) {
    // NaN (a series without a mark) is refused too: the new requirement cannot be shown to be covered
    if (!(s.new.equity >= s.new.maintenanceMargin)) return reject(ERR.NOT_ENOUGH_FUNDS, 'account_below_maintenance', 'margin_model');
  }
  return null;
}

/** The `change_margin_model` command. */
export function changeMarginModel(ex: Exchange, userId: number, to: MarginModel): SwitchResult | Reject {
  const user = ex.users.get(userId);
  if (!user) return reject(ERR.NOT_FOUND, 'user_not_found', 'user_id');
  const r = preview(ex, user, to);
  const refusal = switchRefusal(ex, user, r);
  if (refusal !== null) return refusal;
  ex.pm.setModel(userId, to);
  return r;
}
