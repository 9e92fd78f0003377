// Account management group (API.md 3.4): balances, collateral, account summaries, positions (with
// PnL and greeks), positions with mints and exercisable options. Reads only: every figure is
// computed from the engine's state at the time of the read (margin moves with index and mark), money
// by src/risk/accountRisk.ts in integer minor units, greeks and prices as model floats.
import { isCrossModel, isPortfolioModel } from '../../risk/portfolio/state.ts';
import { Type } from '@sinclair/typebox';
import { CURRENCIES, CURRENCY_CODES, type CurrencyCode } from '../../domain/currency.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { PRICE_SCALE, lotsToAmount, mintOf, premiumFactor, type Instrument } from '../../domain/instrument.ts';
import { intrinsicCoin, yearFraction } from '../../domain/pricing.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { Position, User } from '../../engine/types.ts';
import { optionGreeksCoin } from '../../market/smile.ts';
import { contractsOf, type AccountRisk } from '../../risk/accountRisk.ts';
import { toMinorDown } from '../../risk/margin.ts';
import { coin } from '../render.ts';
import { crossView } from './crossView.ts';
import { defineMethod, type CallContext } from '../rpc/registry.ts';
import { CurrencyOrAny, CurrencyParam, InstrumentName, KindParam, caller, currencyFilter, readMargins } from './common.ts';
import { selfTradingOf } from '../../engine/selfTrade.ts';
import { SubaccountId, readFor } from './actingFor.ts';
import { accountSettings, currencySettings, feesOf, greekMaps, limitsOf, usdTotals } from './accountExtras.ts';
import { pow10 } from '../../domain/decimal.ts';

interface PositionFigures {
  /** Value at mark (minor units; longs positive, shorts negative). */
  value: number;
  floating: number;
  initialMargin: number;
  maintenanceMargin: number;
  ordersMargin: number;
  delta: number;
  gamma: number;
  vega: number;
  theta: number;
}

/**
 * Minor units -> the JSON number of the exact decimal, like render.ts `money` but without going
 * through text: an integer below 2^53 and 10^decimals are both exact doubles, so IEEE division gives
 * the double nearest to the exact quotient, which is the double the decimal text parses to. (An
 * account query renders a dozen amounts per position; the text route is a third of its cost.)
 */
function money(minor: number, currency: CurrencyCode): number {
  return minor / pow10(CURRENCIES[currency].decimals);
}

function round5(x: number): number {
  const r = Math.round(x * 1e5) / 1e5;
  return r === 0 ? 0 : r; // no -0 on the wire
}

function userOf(ctx: CallContext): User {
  const u = ctx.services.ex.users.get(caller(ctx).userId);
  if (!u) throw reject(ERR.UNAUTHORIZED);
  return u;
}

interface CachedGreeks {
  now: number;
  F: number;
  iv: number;
  g: { delta: number; gamma: number; vega: number; theta: number };
}
const ZERO_GREEKS = Object.freeze({ delta: 0, gamma: 0, vega: 0, theta: 0 });
/** Greeks per instrument, valid while the engine time, index and mark IV are unchanged: a user's
 *  positions share few distinct states between commands, and the account-query budget is 2 ms. */
const greeksCache = new WeakMap<Instrument, CachedGreeks>();
/** Mints are stable forever: one sha256 per instrument, not per query. */
const mintCache = new Map<string, string>();

function mint(name: string): string {
  let m = mintCache.get(name);
  if (m === undefined) {
    m = mintOf(name);
    mintCache.set(name, m);
  }
  return m;
}

/** Per-contract greeks of an instrument now (zeros without an index or past expiry). */
function greeksPerContract(ex: Exchange, inst: Instrument): CachedGreeks['g'] {
  const F = ex.indexPrice(inst.currency);
  const m = ex.markets.get(inst.id)!;
  if (!(F > 0) || !(m.markIv > 0) || inst.state !== 'open') return ZERO_GREEKS;
  const hit = greeksCache.get(inst);
  if (hit !== undefined && hit.now === ex.now && hit.F === F && hit.iv === m.markIv) return hit.g;
  const T = Math.max(0, yearFraction(ex.now, inst.expiry));
  const g = optionGreeksCoin(inst.optionType, F, inst.strike, T, m.markIv);
  greeksCache.set(inst, { now: ex.now, F, iv: m.markIv, g });
  return g;
}

function figures(ex: Exchange, user: User, p: Position): PositionFigures {
  const risk = ex.trading.risk;
  const value = risk.positionValue(p);
  const e = user.exposures.get(p.inst.id);
  const ordersMargin = e !== undefined && e.openOrders.size > 0 ? risk.exposureIM(e, p.size) : 0;
  const f: PositionFigures = {
    value,
    floating: value - p.openCost,
    initialMargin: risk.positionIM(p),
    maintenanceMargin: risk.positionMM(p),
    ordersMargin,
    delta: 0,
    gamma: 0,
    vega: 0,
    theta: 0,
  };
  if (p.size !== 0) {
    const g = greeksPerContract(ex, p.inst);
    const size = contractsOf(p.inst, p.size);
    f.delta = size * g.delta;
    f.gamma = size * g.gamma;
    f.vega = size * g.vega;
    f.theta = size * g.theta;
  }
  return f;
}

/** Average open price in coin: the open cost over the open size (0 when flat). */
function averagePrice(p: Position): number {
  if (p.size === 0) return 0;
  return Math.abs(p.openCost) / premiumFactor(p.inst) / Math.abs(p.size) / 10 ** PRICE_SCALE;
}

/** Deribit position object (reference/deribit-v2.md 6.3); `size` in coin, negative when short. */
export function renderPosition(ex: Exchange, user: User, inst: Instrument): Record<string, unknown> {
  const p: Position = user.positions.get(inst.id) ?? { inst, size: 0, openCost: 0, realizedPnl: 0 };
  const f = figures(ex, user, p);
  const cur = inst.currency;
  const index = ex.indexPrice(cur);
  const avg = averagePrice(p);
  const floatingCoin = money(f.floating, cur);
  return {
    instrument_name: inst.name,
    kind: 'option',
    direction: p.size > 0 ? 'buy' : p.size < 0 ? 'sell' : 'zero',
    size: lotsToAmount(inst, p.size),
    // an option's size is in its base currency already
    size_currency: lotsToAmount(inst, p.size),
    average_price: coin(avg),
    average_price_usd: coin(avg * index, 2),
    mark_price: coin(ex.markets.get(inst.id)!.markCoin),
    index_price: Number.isFinite(index) ? index : null,
    initial_margin: money(f.initialMargin, cur),
    maintenance_margin: money(f.maintenanceMargin, cur),
    open_orders_margin: money(f.ordersMargin, cur),
    floating_profit_loss: floatingCoin,
    floating_profit_loss_usd: coin(floatingCoin * index, 2),
    realized_profit_loss: money(p.realizedPnl, cur),
    total_profit_loss: money(f.floating + p.realizedPnl, cur),
    delta: round5(f.delta),
    gamma: round5(f.gamma),
    vega: round5(f.vega),
    theta: round5(f.theta),
    estimated_liquidation_price: null,
    // options have no daily settlement here: only a delivered instrument has a settlement price
    // (its coin value at the delivery price, as its ticker shows); leverage is a futures figure
    settlement_price: inst.state === 'delivered' && inst.deliveryPrice !== null ? coin(intrinsicCoin(inst.optionType, inst.deliveryPrice, inst.strike)) : null,
    leverage: null,
  };
}

interface Totals {
  floating: number;
  realized: number;
  delta: number;
  gamma: number;
  vega: number;
  theta: number;
}

function totals(ex: Exchange, user: User, currency: CurrencyCode): Totals {
  const t: Totals = { floating: 0, realized: 0, delta: 0, gamma: 0, vega: 0, theta: 0 };
  for (const p of user.positions.values()) {
    if (p.inst.currency !== currency) continue;
    t.realized += p.realizedPnl;
    if (p.size === 0) continue;
    const f = figures(ex, user, p);
    t.floating += f.floating;
    t.delta += f.delta;
    t.gamma += f.gamma;
    t.vega += f.vega;
    t.theta += f.theta;
  }
  return t;
}

function identity(ex: Exchange, user: User): Record<string, unknown> {
  const stp = selfTradingOf(ex, user.id);
  // Deribit sends self_trading_extended_to_subaccounts as text
  const selfTrading = { self_trading_reject_mode: stp.mode, self_trading_extended_to_subaccounts: String(stp.extendedToSubaccounts) };
  // a subaccount (src/accounts/) goes by its name; its email is its main account's
  const sub = ex.subaccounts.subs.get(user.id);
  if (sub === undefined) return { id: user.id, email: user.email, username: user.email, system_name: user.email, type: 'main', creation_timestamp: user.created, ...selfTrading };
  const email = ex.users.get(sub.mainId)?.email ?? '';
  return { id: user.id, email, username: sub.username, system_name: sub.username, type: 'subaccount', creation_timestamp: user.created, ...selfTrading };
}

/**
 * The money fields every Deribit view of a balance carries: the account summary and a subaccount's
 * portfolio. On a cross model (cross_pm, cross_sm) the margin balance and margins are the pool's in
 * this currency (crossView.ts), not the currency's own figures: those are its equity less the pooled
 * surplus, below zero when other currencies carry the account.
 */
export function balanceFields(ex: Exchange, user: User, currency: CurrencyCode, r: AccountRisk = ex.trading.risk.account(user, currency)): Record<string, unknown> {
  const m = (x: number) => money(x, currency);
  const x = crossView(ex, user, currency);
  return {
    currency,
    balance: m(r.balance),
    equity: m(r.equity),
    margin_balance: m(x?.marginBalance ?? r.equity),
    available_funds: m(r.available),
    available_withdrawal_funds: m(r.availableWithdrawal),
    initial_margin: m(x?.initialMargin ?? r.initialMargin),
    maintenance_margin: m(x?.maintenanceMargin ?? r.maintenanceMargin),
  };
}

/** get_account_summary: Deribit shape (reference/deribit-v2.md 6.4). */
export function accountSummary(ex: Exchange, user: User, currency: CurrencyCode, extended: boolean): Record<string, unknown> {
  const r = ex.trading.risk.account(user, currency);
  const t = totals(ex, user, currency);
  const m = (x: number) => money(x, currency);
  const fields = balanceFields(ex, user, currency, r);
  const out: Record<string, unknown> = {
    ...fields,
    projected_initial_margin: fields.initial_margin,
    projected_maintenance_margin: fields.maintenance_margin,
    options_value: m(r.optionsValue),
    options_pl: m(t.floating + t.realized),
    options_session_rpl: m(t.realized),
    options_session_upl: m(t.floating),
    total_pl: m(t.floating + t.realized),
    session_rpl: m(t.realized),
    session_upl: m(t.floating),
    futures_pl: 0,
    futures_session_rpl: 0,
    futures_session_upl: 0,
    options_delta: round5(t.delta),
    options_gamma: round5(t.gamma),
    options_vega: round5(t.vega),
    options_theta: round5(t.theta),
    delta_total: round5(t.delta),
    projected_delta_total: round5(t.delta),
    fee_balance: 0,
    spot_reserve: 0,
    additional_reserve: 0,
    // issue 35: the account's model; initial_margin and maintenance_margin above are the model's
    margin_model: ex.pm.model(user.id),
    portfolio_margining_enabled: isPortfolioModel(ex.pm.model(user.id)),
    cross_collateral_enabled: isCrossModel(ex.pm.model(user.id)),
    in_liquidation: ex.inLiquidation(user.id, currency),
    ...greekMaps(currency, { delta: round5(t.delta), gamma: round5(t.gamma), vega: round5(t.vega), theta: round5(t.theta) }),
    // Deribit's ratio gives a future's estimated liquidation price; only options are listed here
    estimated_liquidation_ratio: 0,
  };
  if (extended) {
    Object.assign(out, identity(ex, user), accountSettings(ex, user), currencySettings());
    out.fees = feesOf(ex, currency, m);
  }
  return out;
}

/** Deribit's total_*_usd of the user: every currency's figures at its index (accountExtras.ts). */
export function usdTotalsOf(ex: Exchange, user: User): Record<string, number> {
  const out = usdTotals(
    ex,
    CURRENCY_CODES.map((c) => ({ currency: c, risk: ex.trading.risk.account(user, c), delta: totals(ex, user, c).delta })),
  );
  // cross models: the pooled figures in USD (USDC minor units, index 1)
  const x = crossView(ex, user, 'USDC');
  if (x !== null) {
    out.total_margin_balance_usd = money(x.marginBalance, 'USDC');
    out.total_initial_margin_usd = money(x.initialMargin, 'USDC');
    out.total_maintenance_margin_usd = money(x.maintenanceMargin, 'USDC');
  }
  return out;
}

function balanceObject(r: AccountRisk): Record<string, unknown> {
  const m = (x: number) => money(x, r.currency);
  return { currency: r.currency, balance: m(r.balance), equity: m(r.equity), available_funds: m(r.available), reserved: m(r.initialMargin) };
}

function sortedPositions(ex: Exchange, user: User, currency: CurrencyCode | null): Position[] {
  const out: Position[] = [];
  for (const p of user.positions.values()) if (p.size !== 0 && (currency === null || p.inst.currency === currency)) out.push(p);
  return out.sort((a, b) => (a.inst.name < b.inst.name ? -1 : a.inst.name > b.inst.name ? 1 : 0));
}

/** Deribit `kind` filter: only options exist, so another kind selects nothing. */
function optionKind(kind: string | undefined): boolean {
  return kind === undefined || kind === 'option' || kind === 'any';
}

const Extended = Type.Boolean({ default: false });

export const accountMethods = [
  defineMethod({
    name: 'public/get_account_balance',
    aliases: ['private/get_account_balance'],
    scope: 'account:read',
    params: Type.Object({ currency: CurrencyParam }),
    handler(ctx, p) {
      return readMargins(ctx, () => balanceObject(ctx.services.ex.trading.risk.account(userOf(ctx), p.currency as CurrencyCode)));
    },
  }),
  defineMethod({
    name: 'public/get_account_collateral',
    aliases: ['private/get_account_collateral'],
    scope: 'account:read',
    params: Type.Object({ currency: CurrencyParam }),
    handler(ctx, p) {
      return readMargins(ctx, () => {
        const user = userOf(ctx);
        const currency = p.currency as CurrencyCode;
        const r = ctx.services.ex.trading.risk.account(user, currency);
        const acct = user.accounts[currency];
        const m = (x: number) => money(x, currency);
        // the share of equity maintenance margin takes; 0 with no exposure, null when equity is gone
        const ratio = r.maintenanceMargin === 0 ? 0 : r.equity > 0 ? Number((r.maintenanceMargin / r.equity).toFixed(8)) : null;
        return {
          currency,
          collateral: m(r.balance),
          deposited: m(acct.deposited),
          withdrawn: m(acct.withdrawn),
          locked_by_positions: m(r.positionsIM),
          locked_by_orders: m(r.ordersIM),
          free: m(r.available),
          maintenance_margin: m(r.maintenanceMargin),
          margin_ratio: ratio,
        };
      });
    },
  }),
  defineMethod({
    name: 'public/get_account_summary',
    aliases: ['private/get_account_summary'],
    scope: 'account:read',
    params: Type.Object({ currency: CurrencyParam, extended: Extended, subaccount_id: SubaccountId }),
    handler(ctx, p) {
      return readMargins(ctx, () => {
        const user = readFor(ctx, p.subaccount_id);
        const out = accountSummary(ctx.services.ex, user, p.currency as CurrencyCode, p.extended);
        // the figures of every currency and the rate limits: with `extended` only (they cost a read of each currency)
        return p.extended ? Object.assign(out, usdTotalsOf(ctx.services.ex, user), { limits: limitsOf(ctx.services, user.id) }) : out;
      });
    },
  }),
  defineMethod({
    name: 'public/get_all_account_balances',
    aliases: ['private/get_all_account_balances'],
    scope: 'account:read',
    params: Type.Object({}),
    handler(ctx) {
      return readMargins(ctx, () => {
        const user = userOf(ctx);
        return CURRENCY_CODES.map((c) => balanceObject(ctx.services.ex.trading.risk.account(user, c)));
      });
    },
  }),
  defineMethod({
    // the Deribit alias of get_all_account_balances, in Deribit's shape (ccxt fetchBalance)
    name: 'private/get_account_summaries',
    scope: 'account:read',
    params: Type.Object({ extended: Extended, subaccount_id: SubaccountId }),
    handler(ctx, p) {
      return readMargins(ctx, () => {
        const ex = ctx.services.ex;
        const user = readFor(ctx, p.subaccount_id);
        // with `extended`, the totals and limits, computed once for every summary
        const shared = p.extended ? { ...usdTotalsOf(ex, user), limits: limitsOf(ctx.services, user.id) } : {};
        const summaries = CURRENCY_CODES.map((c) => Object.assign(accountSummary(ex, user, c, p.extended), shared));
        // Deribit's block RFQ self-match setting, as text like self_trading_extended_to_subaccounts (no block RFQs yet: issue 34)
        return { ...identity(ex, user), ...accountSettings(ex, user), block_rfq_self_match_prevention: 'false', summaries };
      });
    },
  }),
  defineMethod({
    name: 'public/get_position',
    aliases: ['private/get_position'],
    scope: 'trade:read',
    params: Type.Object({ instrument_name: InstrumentName }),
    handler(ctx, p) {
      return readMargins(ctx, () => {
        const inst = ctx.services.ex.instruments.get(p.instrument_name);
        if (!inst) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
        return renderPosition(ctx.services.ex, userOf(ctx), inst);
      });
    },
  }),
  defineMethod({
    name: 'public/get_positions',
    aliases: ['private/get_positions'],
    scope: 'trade:read',
    params: Type.Object({ currency: Type.Optional(CurrencyOrAny), kind: KindParam, subaccount_id: SubaccountId }),
    handler(ctx, p) {
      return readMargins(ctx, () => {
        const ex = ctx.services.ex;
        const user = readFor(ctx, p.subaccount_id);
        if (!optionKind(p.kind)) return [];
        return sortedPositions(ex, user, currencyFilter(p.currency)).map((pos) => renderPosition(ex, user, pos.inst));
      });
    },
  }),
  defineMethod({
    name: 'public/get_positions_with_mints',
    aliases: ['private/get_positions_with_mints'],
    scope: 'trade:read',
    params: Type.Object({ currency: Type.Optional(CurrencyOrAny) }),
    handler(ctx, p) {
      return readMargins(ctx, () => {
        const ex = ctx.services.ex;
        const user = userOf(ctx);
        return sortedPositions(ex, user, currencyFilter(p.currency)).map((pos) => {
          const out = renderPosition(ex, user, pos.inst);
          out.mint = mint(pos.inst.name);
          out.minted_amount = pos.size < 0 ? lotsToAmount(pos.inst, -pos.size) : 0;
          out.collateral_locked = money(ex.trading.risk.positionIM(pos), pos.inst.currency);
          return out;
        });
      });
    },
  }),
  defineMethod({
    name: 'public/get_exercisable_options',
    aliases: ['private/get_exercisable_options'],
    scope: 'trade:read',
    params: Type.Object({ currency: Type.Optional(CurrencyOrAny) }),
    handler(ctx, p) {
      return readMargins(ctx, () => {
        const ex = ctx.services.ex;
        const user = userOf(ctx);
        const out: Record<string, unknown>[] = [];
        for (const pos of sortedPositions(ex, user, currencyFilter(p.currency))) {
          const inst = pos.inst;
          if (pos.size <= 0 || inst.state === 'delivered') continue;
          // past expiry the option is valued at its delivery price (index until that is fixed)
          const expired = inst.state !== 'open' || inst.expiry <= ex.now;
          const U = expired && inst.deliveryPrice !== null ? inst.deliveryPrice : ex.indexPrice(inst.currency);
          if (!(U > 0)) continue;
          const decimals = CURRENCIES[inst.currency].decimals;
          // payouts round down (API.md 5.1): per contract and in total
          const perContract = toMinorDown(intrinsicCoin(inst.optionType, U, inst.strike), decimals);
          if (perContract <= 0) continue;
          const total = toMinorDown(intrinsicCoin(inst.optionType, U, inst.strike) * contractsOf(inst, pos.size), decimals);
          out.push({
            instrument_name: inst.name,
            amount: lotsToAmount(inst, pos.size),
            option_type: inst.optionType,
            strike: inst.strike,
            expiration_timestamp: inst.expiry,
            underlying_price: U,
            intrinsic_value: money(perContract, inst.currency),
            total_value: money(total, inst.currency),
            state: expired ? 'expired' : 'open',
          });
        }
        return out;
      });
    },
  }),
];
