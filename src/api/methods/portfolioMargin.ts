// Portfolio margin (issue 35): `private/simulate_portfolio` and `private/pme/simulate` stress-test
// the caller's book in one settlement currency (positions, open orders and resting combo orders, as
// the engine margins them), with what-if positions added, through the scenario engine
// (src/risk/portfolio/), read-only; `private/change_margin_model` moves an account between
// standard and portfolio margin (a journaled command, src/risk/portfolio/switch.ts); the operator
// reads and sets the parameters (`private/get_portfolio_margin_params`,
// `private/set_portfolio_margin_params`, admin, journaled).
import { Type } from '@sinclair/typebox';
import type { CurrencyCode } from '../../domain/currency.ts';
import { parseScaled } from '../../domain/decimal.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { AMOUNT_SCALE, type Instrument } from '../../domain/instrument.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { User } from '../../engine/types.ts';
import { bookOf } from '../../risk/portfolio/book.ts';
import { MAX_EXTENDED_MOVES, PM_PARAM_BOUNDS, type PortfolioMarginParams } from '../../risk/portfolio/params.ts';
import { portfolioMargin } from '../../risk/portfolio/scenarios.ts';
import { MARGIN_MODELS, type MarginModel } from '../../risk/portfolio/state.ts';
import { preview, switchRefusal, type SwitchResult } from '../../risk/portfolio/switch.ts';
import { pmWarmup } from '../../risk/portfolio/warmup.ts';
import type { AccountRisk } from '../../risk/accountRisk.ts';
import type { PortfolioMargin, ScenarioPnl } from '../../risk/portfolio/types.ts';
import { money } from '../render.ts';
import { defineMethod, type CallContext } from '../rpc/registry.ts';
import { accountSummary, usdTotalsOf } from './account.ts';
import { CurrencyParam, caller, unwrap, readMargins } from './common.ts';
import { crossJson, crossView, type CrossView } from './crossView.ts';

/** At most this many what-if positions per call: each costs a revaluation in every scenario. */
export const MAX_SIMULATED_POSITIONS = 100;
/** At most this many contracts per what-if position: 100 of them losing the most any scenario can
 * (a few coin per contract) stay far inside exact integer minor units. */
export const MAX_SIMULATED_CONTRACTS = 10_000;

const SimulatedPositions = Type.Union([
  // GET clients send the object as JSON text (Deribit documents it so)
  Type.String({ maxLength: 8192 }),
  Type.Record(Type.String({ maxLength: 64 }), Type.Number(), { maxProperties: MAX_SIMULATED_POSITIONS }),
]);

const Params = Type.Object({
  currency: CurrencyParam,
  add_positions: Type.Boolean({ default: true }),
  simulated_positions: Type.Optional(SimulatedPositions),
});

/** `{instrument_name: amount}` (amount in contracts, negative for a short) -> lots per instrument. */
function parseSimulated(ex: Exchange, currency: CurrencyCode, raw: string | Record<string, number> | undefined): Map<Instrument, number> {
  const out = new Map<Instrument, number>();
  if (raw === undefined) return out;
  let obj: unknown = raw;
  if (typeof raw === 'string') {
    try {
      obj = JSON.parse(raw);
    } catch {
      throw reject(ERR.INVALID_ARGUMENTS, 'invalid_json', 'simulated_positions');
    }
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw reject(ERR.INVALID_ARGUMENTS, 'not_an_object', 'simulated_positions');
  const entries = Object.entries(obj as Record<string, unknown>);
  if (entries.length > MAX_SIMULATED_POSITIONS) throw reject(ERR.INVALID_ARGUMENTS, 'too_many_positions', 'simulated_positions');
  for (const [name, amount] of entries) {
    const inst = ex.instruments.get(name);
    if (!inst || inst.currency !== currency || inst.state !== 'open') throw reject(ERR.INVALID_INSTRUMENT, undefined, 'simulated_positions');
    const scaled = typeof amount === 'number' || typeof amount === 'string' ? parseScaled(amount, AMOUNT_SCALE) : null;
    if (scaled === null || scaled % inst.lotScaled !== 0 || Math.abs(scaled) > MAX_SIMULATED_CONTRACTS * 10 ** AMOUNT_SCALE) {
      throw reject(ERR.INVALID_AMOUNT, 'invalid_amount', 'simulated_positions');
    }
    out.set(inst, (out.get(inst) ?? 0) + scaled / inst.lotScaled);
  }
  return out;
}

interface Simulation {
  user: User;
  currency: CurrencyCode;
  index: number;
  pm: PortfolioMargin;
  /** What the account's resting combo orders hold outside the scenarios (their fills' loss at mark
   *  and fees, src/combos/orderMargin.ts), as the engine adds it to the initial margin; 0 without add_positions. */
  comboHeld: number;
}

function simulate(ctx: CallContext, p: { currency: string; add_positions: boolean; simulated_positions?: string | Record<string, number> }): Simulation {
  const ex = ctx.services.ex;
  const user = ex.users.get(caller(ctx).userId);
  if (!user) throw reject(ERR.UNAUTHORIZED);
  const currency = p.currency as CurrencyCode;
  const simulated = parseSimulated(ex, currency, p.simulated_positions);
  const book = bookOf(ex, user, currency, { includeAccount: p.add_positions, simulated });
  if (book === null) throw reject(ERR.OTHER_REJECT, 'index_price_unavailable', 'currency');
  const comboHeld = p.add_positions ? ex.comboBooks.heldBy(user.id, currency).pmIm : 0;
  return { user, currency, index: ex.indexPrice(currency), pm: portfolioMargin(book, ex.pm.params), comboHeld };
}

/**
 * The pooled cross-currency figures with the simulated book standing for its currency; null off the
 * cross models. The projection is under portfolio margin in every currency: on cross_pm the other
 * currencies' figures as they stand, on cross_sm as they would be on cross_pm (their scenario
 * figures, not their standard ones: a pool of one currency's scenario margin and the others'
 * standard margin is no model's requirement).
 */
function crossOf(ex: Exchange, s: Simulation): CrossView | null {
  const risk = ex.trading.risk;
  if (!risk.isCross(s.user)) return null;
  const f = { maintenanceMargin: s.pm.maintenanceMargin, initialMargin: s.pm.initialMargin, initialMarginWithOrders: s.pm.initialMargin + s.comboHeld };
  return risk.asIf(s.user, 'cross_pm', () => crossView(ex, s.user, s.currency, { currency: s.currency, figures: f }));
}

/** pme/simulate on a cross model: `cross` (crossView.ts) and the pooled initial and maintenance margin. */
function crossFields(ex: Exchange, s: Simulation): Record<string, unknown> {
  const x = crossOf(ex, s);
  if (x === null) return {};
  return { cross: crossJson(x), cross_initial_margin: money(x.initialMargin, s.currency), cross_maintenance_margin: money(x.maintenanceMargin, s.currency) };
}

function scenarioJson(s: ScenarioPnl, currency: CurrencyCode): Record<string, unknown> {
  return { table: s.table, price_move: s.move, vol_move: s.vol, pnl: money(s.pnl, currency), counted_loss: money(s.counted, currency) };
}

export const portfolioMarginMethods: ReturnType<typeof defineMethod>[] = [
  defineMethod({
    name: 'private/simulate_portfolio',
    scope: 'account:read',
    summary:
      "The account summary with projected_initial_margin and projected_maintenance_margin under portfolio margin for the caller's book in `currency` (add_positions, default true: positions, open orders and resting combo orders, as the engine margins them) plus `simulated_positions` ({instrument_name: amount}, negative for shorts, at most 100); on the cross models (cross_pm, cross_sm) the projection is pooled across currencies (every currency under portfolio margin, in `currency`). Read-only: the account keeps its margin model.",
    params: Params,
    handler(ctx, p) {
      return readMargins(ctx, () => {
        const s = simulate(ctx, p);
        // the account as it stands (its own model); the projection is under portfolio margin
        const summary = accountSummary(ctx.services.ex, s.user, s.currency, false);
        // cross models: the projection is the pooled requirement with this currency's book simulated
        const x = crossOf(ctx.services.ex, s);
        return {
          ...summary,
          projected_initial_margin: money(x?.initialMargin ?? s.pm.initialMargin + s.comboHeld, s.currency),
          projected_maintenance_margin: money(x?.maintenanceMargin ?? s.pm.maintenanceMargin, s.currency),
          available_subaccount_transfer_funds: summary.available_withdrawal_funds,
          locked_balance: 0,
          // the account's own totals over every currency (the simulation changes one currency's margin only)
          ...usdTotalsOf(ctx.services.ex, s.user),
        };
      });
    },
  }),
  defineMethod({
    name: 'private/pme/simulate',
    scope: 'account:read',
    summary:
      "The full portfolio-margin scenario table of the caller's book in `currency` (positions, open orders and resting combo orders, the orders as if filled, the worse side, as the engine margins them) plus `simulated_positions`: every scenario's P&L (price move x vol move, then the extended table), the worst one, the contingencies, the resulting initial and maintenance margin (the initial margin with combo_orders_hold: the resting combo orders' fill loss at mark and fees, held outside the scenarios), and the parameters used; on the cross models (cross_pm, cross_sm) also `cross` (every currency's part of the pooled requirement under portfolio margin, in `currency`) and cross_initial_margin / cross_maintenance_margin. Read-only.",
    params: Params,
    handler(ctx, p) {
      return readMargins(ctx, () => {
        const s = simulate(ctx, p);
        const { user, currency, index, pm } = s;
        const m = (x: number) => money(x, currency);
        const params = ctx.services.ex.pm.params;
        return {
          currency,
          margin_model: ctx.services.ex.pm.model(user.id),
          index_price: Number.isFinite(index) ? index : null,
          // the engine's initial margin: the scenario figure plus the combo orders' hold outside it
          initial_margin: m(pm.initialMargin + s.comboHeld),
          combo_orders_hold: m(s.comboHeld),
          maintenance_margin: m(pm.maintenanceMargin),
          worst_loss: m(pm.worstLoss),
          worst_scenario: scenarioJson(pm.worst, currency),
          contingencies: { short_option: m(pm.contingencies.shortOption), delta: m(pm.contingencies.delta), total: m(pm.contingencies.total) },
          scenarios: pm.scenarios.map((s) => scenarioJson(s, currency)),
          parameters: paramsJson(params),
          ...crossFields(ctx.services.ex, s),
        };
      });
    },
  }),
];

/** The operator's parameters on the wire (snake_case; percents as fractions). */
function paramsJson(p: Readonly<PortfolioMarginParams>): Record<string, unknown> {
  return {
    price_range: p.priceRange,
    price_buckets: p.priceBuckets,
    vol_shock_up: p.volShockUp,
    vol_shock_down: p.volShockDown,
    vol_shock_ref_days: p.volShockRefDays,
    vol_shock_exponent: p.volShockExponent,
    min_days_to_expiry: p.minDaysToExpiry,
    min_vol: p.minVol,
    extended_moves: [...p.extendedMoves],
    extended_loss_fraction: p.extendedLossPercent / 100,
    short_option_contingency: p.shortOptionContingency,
    delta_contingency: p.deltaContingency,
    im_factor: p.imFactorPercent / 100,
    min_switch_equity_btc: p.minSwitchEquityBtc,
  };
}

const num = (k: keyof typeof PM_PARAM_BOUNDS, scale = 1) => Type.Optional(Type.Number({ minimum: PM_PARAM_BOUNDS[k][0] / scale, maximum: PM_PARAM_BOUNDS[k][1] / scale }));

const SetParams = Type.Object({
  price_range: num('priceRange'),
  price_buckets: Type.Optional(Type.Integer({ minimum: 1, maximum: PM_PARAM_BOUNDS.priceBuckets[1] })),
  vol_shock_up: num('volShockUp'),
  vol_shock_down: num('volShockDown'),
  vol_shock_ref_days: num('volShockRefDays'),
  vol_shock_exponent: num('volShockExponent'),
  min_days_to_expiry: num('minDaysToExpiry'),
  min_vol: num('minVol'),
  extended_moves: Type.Optional(Type.Array(Type.Number({ exclusiveMinimum: -1, maximum: 10 }), { maxItems: MAX_EXTENDED_MOVES })),
  extended_loss_fraction: num('extendedLossPercent', 100),
  short_option_contingency: num('shortOptionContingency'),
  delta_contingency: num('deltaContingency'),
  im_factor: num('imFactorPercent', 100),
  min_switch_equity_btc: num('minSwitchEquityBtc'),
});

/** Wire parameters -> the engine's (only those given); fractions become whole percents exactly or are refused. */
function paramsChange(p: Record<string, unknown>): Partial<PortfolioMarginParams> {
  const out: Partial<PortfolioMarginParams> = {};
  const percent = (v: number, field: string) => {
    const x = Math.round(v * 100);
    if (Math.abs(x - v * 100) > 1e-9) throw reject(ERR.INVALID_ARGUMENTS, 'whole_percent_required', field);
    return x;
  };
  const map: [string, keyof PortfolioMarginParams][] = [
    ['price_range', 'priceRange'],
    ['price_buckets', 'priceBuckets'],
    ['vol_shock_up', 'volShockUp'],
    ['vol_shock_down', 'volShockDown'],
    ['vol_shock_ref_days', 'volShockRefDays'],
    ['vol_shock_exponent', 'volShockExponent'],
    ['min_days_to_expiry', 'minDaysToExpiry'],
    ['min_vol', 'minVol'],
    ['short_option_contingency', 'shortOptionContingency'],
    ['delta_contingency', 'deltaContingency'],
    ['min_switch_equity_btc', 'minSwitchEquityBtc'],
  ];
  for (const [wire, key] of map) if (p[wire] !== undefined) (out as Record<string, unknown>)[key] = p[wire];
  if (p.price_buckets !== undefined && (p.price_buckets as number) % 2 === 0) throw reject(ERR.INVALID_ARGUMENTS, 'odd_number_required', 'price_buckets');
  if (p.extended_moves !== undefined) out.extendedMoves = [...(p.extended_moves as number[])];
  if (p.extended_loss_fraction !== undefined) out.extendedLossPercent = percent(p.extended_loss_fraction as number, 'extended_loss_fraction');
  if (p.im_factor !== undefined) out.imFactorPercent = percent(p.im_factor as number, 'im_factor');
  return out;
}

/** Deribit's state of one currency: margin rates (margin / equity) and the funds available. */
function stateJson(r: AccountRisk): Record<string, number> {
  const rate = (x: number) => (r.equity > 0 && Number.isFinite(x) ? Math.round((x / r.equity) * 1e8) / 1e8 : 0);
  return { maintenance_margin_rate: rate(r.maintenanceMargin), initial_margin_rate: rate(r.initialMargin), available_balance: money(r.available, r.currency) };
}

function switchJson(r: SwitchResult): Record<string, unknown>[] {
  return r.states.map((s) => ({ currency: s.currency, old_state: stateJson(s.old), new_state: stateJson(s.new) }));
}

portfolioMarginMethods.push(
  defineMethod({
    name: 'private/change_margin_model',
    scope: 'account:read_write',
    summary:
      "Moves the account (`user_id`: the caller's own or one of its subaccounts; default the caller) to `margin_model` (cross_sm, cross_pm, segregated_sm, segregated_pm). Answers per currency the old and new state (margin rates and available balance); `dry_run` answers without changing anything. Refused (10009) while the account is in liquidation or owes cash, when moving onto portfolio margin with less equity than the operator's minimum (min_switch_equity_btc, all currencies at index), or when the new model would put it below maintenance margin in any currency. cross_pm pools the currencies' portfolio-margin surpluses at index with a haircut (no offset of risk across currencies, docs/api-notes.md); cross_sm pools their standard-margin surpluses the same way.",
    params: Type.Object({
      user_id: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 31 })),
      margin_model: Type.Union(MARGIN_MODELS.map((m) => Type.Literal(m))),
      dry_run: Type.Boolean({ default: false }),
    }),
    async handler(ctx, p) {
      const ex = ctx.services.ex;
      const me = caller(ctx).userId;
      const id = p.user_id ?? me;
      if (id !== me && ex.subaccounts.subs.get(id)?.mainId !== me) throw reject(ERR.NOT_FOUND, 'subaccount_not_found', 'user_id');
      const model = p.margin_model as MarginModel;
      // the switch reads the account's scenario sums whatever its model now: built in slices
      // first, not in the command's turn (src/risk/portfolio/warmup.ts)
      await pmWarmup(ex).readyAll([id], true);
      if (p.dry_run) {
        return ctx.services.seq.read(() => {
          const user = ex.users.get(id);
          if (!user) throw reject(ERR.UNAUTHORIZED);
          const r = preview(ex, user, model);
          const refusal = switchRefusal(ex, user, r);
          if (refusal !== null) throw refusal;
          return switchJson(r);
        });
      }
      return ctx.services.seq.submit({ t: 'change_margin_model', userId: id, model }, (r) => switchJson(unwrap(r as SwitchResult | ReturnType<typeof reject>)));
    },
  }),
  defineMethod({
    name: 'private/get_portfolio_margin_params',
    scope: 'admin',
    summary: 'The portfolio-margin parameters in force (defaults: Deribit\'s published values; docs/api-notes.md "Portfolio margin") and how many accounts are on each margin model.',
    params: Type.Object({}),
    handler(ctx) {
      return ctx.services.seq.read(() => {
        const ex = ctx.services.ex;
        const counts: Record<string, number> = {};
        for (const m of ex.pm.models.values()) counts[m] = (counts[m] ?? 0) + 1;
        return { ...paramsJson(ex.pm.params), accounts_by_model: counts };
      });
    },
  }),
  defineMethod({
    name: 'private/set_portfolio_margin_params',
    scope: 'admin',
    summary:
      'Sets portfolio-margin parameters (only those given change; journaled): price_range and price_buckets (odd) of the standard table, vol_shock_up/down at vol_shock_ref_days scaled by (ref/days)^vol_shock_exponent, min_days_to_expiry, min_vol, extended_moves and extended_loss_fraction (whole percent), short_option_contingency (coin per contract), delta_contingency, im_factor (IM = MM x im_factor, whole percent, >= 1) and min_switch_equity_btc. Every account on portfolio margin is margined under the new values at once. Answers the parameters in force.',
    params: SetParams,
    handler(ctx, p) {
      const change = paramsChange(p as Record<string, unknown>);
      return ctx.services.seq.submit({ t: 'set_pm_params', params: change, by: caller(ctx).userId }, (r) => paramsJson(unwrap(r as PortfolioMarginParams | ReturnType<typeof reject>)));
    },
  }),
);

