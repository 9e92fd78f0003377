// Portfolio margin, read-only (issue 35, first slice): `private/simulate_portfolio` and
// `private/pme/simulate` stress-test the caller's book in one settlement currency, with what-if
// positions added, through the scenario engine (src/risk/portfolio/). Nothing changes: every
// account stays on standard margin until change_margin_model exists (a later slice).
import { Type } from '@sinclair/typebox';
import type { CurrencyCode } from '../../domain/currency.ts';
import { parseScaled } from '../../domain/decimal.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { AMOUNT_SCALE, type Instrument } from '../../domain/instrument.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { User } from '../../engine/types.ts';
import { bookOf } from '../../risk/portfolio/book.ts';
import { DEFAULT_PM_PARAMS } from '../../risk/portfolio/params.ts';
import { portfolioMargin } from '../../risk/portfolio/scenarios.ts';
import type { PortfolioMargin, ScenarioPnl } from '../../risk/portfolio/types.ts';
import { money } from '../render.ts';
import { defineMethod, type CallContext } from '../rpc/registry.ts';
import { accountSummary, usdTotalsOf } from './account.ts';
import { CurrencyParam, caller } from './common.ts';

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
}

function simulate(ctx: CallContext, p: { currency: string; add_positions: boolean; simulated_positions?: string | Record<string, number> }): Simulation {
  const ex = ctx.services.ex;
  const user = ex.users.get(caller(ctx).userId);
  if (!user) throw reject(ERR.UNAUTHORIZED);
  const currency = p.currency as CurrencyCode;
  const simulated = parseSimulated(ex, currency, p.simulated_positions);
  const book = bookOf(ex, user, currency, { includeAccount: p.add_positions, simulated });
  if (book === null) throw reject(ERR.OTHER_REJECT, 'index_price_unavailable', 'currency');
  return { user, currency, index: ex.indexPrice(currency), pm: portfolioMargin(book) };
}

function scenarioJson(s: ScenarioPnl, currency: CurrencyCode): Record<string, unknown> {
  return { table: s.table, price_move: s.move, vol_move: s.vol, pnl: money(s.pnl, currency), counted_loss: money(s.counted, currency) };
}

export const portfolioMarginMethods = [
  defineMethod({
    name: 'private/simulate_portfolio',
    scope: 'account:read',
    summary:
      "The account summary with projected_initial_margin and projected_maintenance_margin under portfolio margin for the caller's book in `currency` (add_positions, default true) plus `simulated_positions` ({instrument_name: amount}, negative for shorts, at most 100). Read-only: the account stays on standard margin.",
    params: Params,
    handler(ctx, p) {
      return ctx.services.seq.read(() => {
        const s = simulate(ctx, p);
        const summary = accountSummary(ctx.services.ex, s.user, s.currency, false);
        return {
          ...summary,
          projected_initial_margin: money(s.pm.initialMargin, s.currency),
          projected_maintenance_margin: money(s.pm.maintenanceMargin, s.currency),
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
      "The full portfolio-margin scenario table of the caller's book in `currency` plus `simulated_positions`: every scenario's P&L (price move x vol move, then the extended table), the worst one, the contingencies, the resulting initial and maintenance margin, and the parameters used. Read-only.",
    params: Params,
    handler(ctx, p) {
      return ctx.services.seq.read(() => {
        const { currency, index, pm } = simulate(ctx, p);
        const m = (x: number) => money(x, currency);
        const params = DEFAULT_PM_PARAMS;
        return {
          currency,
          margin_model: 'segregated_pm',
          index_price: Number.isFinite(index) ? index : null,
          initial_margin: m(pm.initialMargin),
          maintenance_margin: m(pm.maintenanceMargin),
          worst_loss: m(pm.worstLoss),
          worst_scenario: scenarioJson(pm.worst, currency),
          contingencies: { short_option: m(pm.contingencies.shortOption), delta: m(pm.contingencies.delta), total: m(pm.contingencies.total) },
          scenarios: pm.scenarios.map((s) => scenarioJson(s, currency)),
          parameters: {
            price_range: params.priceRange,
            price_buckets: params.priceBuckets,
            vol_shock_up: params.volShockUp,
            vol_shock_down: params.volShockDown,
            vol_shock_ref_days: params.volShockRefDays,
            vol_shock_exponent: params.volShockExponent,
            min_days_to_expiry: params.minDaysToExpiry,
            extended_moves: [...params.extendedMoves],
            extended_loss_fraction: params.extendedLossPercent / 100,
            short_option_contingency: params.shortOptionContingency,
            delta_contingency: params.deltaContingency,
            im_factor: params.imFactorPercent / 100,
          },
        };
      });
    },
  }),
];
