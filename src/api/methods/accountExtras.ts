// Deribit's account-summary fields beyond balances and greeks (issue 31, field fidelity): the greeks
// per index, the USD totals over every currency, the user's rate limits, fees and account settings.
// Real values where the venue has them; where a Deribit feature does not exist here (fee groups,
// affiliates, security keys, on-chain deposits, cross collateral), the constant that says so
// (docs/api-notes.md "Account summary").
import { CURRENCIES, type CurrencyCode } from '../../domain/currency.ts';
import { parseScaled } from '../../domain/decimal.ts';
import type { Exchange } from '../../engine/exchange.ts';
import { TRADING_PRODUCTS } from '../../engine/disabledProducts.ts';
import type { User } from '../../engine/types.ts';
import { QUOTE_COST, REQUEST_COST, type PoolLimits } from '../../app/credits.ts';
import type { Services } from '../../app/services.ts';
import type { AccountRisk } from '../../risk/accountRisk.ts';

/** One currency's figures the USD totals add up: money in minor units, delta a model figure in the coin. */
export interface CurrencyFigures {
  currency: CurrencyCode;
  risk: AccountRisk;
  delta: number;
}

/** Scale of an index price as an integer here: 10^-8 USD. */
const INDEX_SCALE = 8;
/** The USD totals are rendered to 10^-6 USD. */
const USD_DECIMALS = 6;

/**
 * A currency's index as an integer of 10^-8 USD, or null without an index. A coin without an index
 * of its own (USDC) is a dollar. An index with more decimals (a venue median) is rounded onto the
 * grid first: it is a price, a model input, until it meets money here.
 */
function indexUnits(ex: Exchange, c: CurrencyCode): bigint | null {
  if (CURRENCIES[c].indexName === null) return 10n ** BigInt(INDEX_SCALE);
  const x = ex.indexPrice(c);
  if (!(x > 0) || !Number.isFinite(x)) return null;
  return BigInt(parseScaled(x, INDEX_SCALE) ?? Math.round(x * 10 ** INDEX_SCALE));
}

/** An exact amount of 10^-(scale) USD rounded half away from zero to USD_DECIMALS, as a JSON number. */
function usd(exact: bigint, scale: number): number {
  const drop = 10n ** BigInt(scale - USD_DECIMALS);
  const neg = exact < 0n;
  const abs = neg ? -exact : exact;
  const q = (abs + drop / 2n) / drop;
  const p = 10n ** BigInt(USD_DECIMALS);
  const text = `${neg && q !== 0n ? '-' : ''}${q / p}.${(q % p).toString().padStart(USD_DECIMALS, '0')}`;
  return Number(text);
}

/**
 * Deribit's total_*_usd: equity, margins and delta of every currency valued at its index and added.
 * Money is summed exactly (minor units x index units, as BigInt) and rounded once; a currency whose
 * index is not known yet adds nothing. Margin is per currency here, so the margin balance is the equity.
 */
export function usdTotals(ex: Exchange, parts: CurrencyFigures[]): Record<string, number> {
  // every product at 10^-(8 + 8) USD: minor units of 10^-decimals coin, scaled up to 10^-8
  const scale = 8 + INDEX_SCALE;
  let equity = 0n;
  let im = 0n;
  let mm = 0n;
  let delta = 0;
  for (const p of parts) {
    const idx = indexUnits(ex, p.currency);
    if (idx === null) continue;
    const up = idx * 10n ** BigInt(8 - CURRENCIES[p.currency].decimals);
    equity += BigInt(p.risk.equity) * up;
    im += BigInt(p.risk.initialMargin) * up;
    mm += BigInt(p.risk.maintenanceMargin) * up;
    delta += p.delta * (Number(idx) / 10 ** INDEX_SCALE);
  }
  const total = usd(equity, scale);
  return {
    total_equity_usd: total,
    total_margin_balance_usd: total,
    total_initial_margin_usd: usd(im, scale),
    total_maintenance_margin_usd: usd(mm, scale),
    total_delta_total_usd: Math.round(delta * 1e6) / 1e6 + 0,
  };
}

/** Deribit's greeks maps, keyed by index name: one entry, the currency's index (none for USDC). */
export function greekMaps(currency: CurrencyCode, g: { delta: number; gamma: number; vega: number; theta: number }): Record<string, Record<string, number>> {
  const index = CURRENCIES[currency].indexName;
  const one = (x: number) => (index === null ? {} : { [index]: x });
  return { options_gamma_map: one(g.gamma), options_theta_map: one(g.theta), options_vega_map: one(g.vega), delta_total_map: one(g.delta) };
}

/** A credit pool as Deribit states a limit: `burst` calls at once, `rate` calls a second (at `cost` credits a call). */
function pool(l: PoolLimits, cost: number): { burst: number; rate: number } {
  return { burst: Math.floor(l.maxCredits / cost), rate: l.refillPerSec / cost };
}

/**
 * The user's rate limits (src/app/credits.ts) in Deribit's `limits` shape: the matching-engine pool
 * (order entry and cancels share it), the non-matching pool, and mass_quote's pool counted in quote
 * sides. The same for every currency.
 */
export function limitsOf(s: Services, userId: number): Record<string, unknown> {
  const l = s.credits.limitsOf(userId);
  const matching = pool(l.matching, REQUEST_COST);
  return {
    limits_per_currency: false,
    non_matching_engine: pool(l.nonMatching, REQUEST_COST),
    matching_engine: { trading: { total: matching }, cancel_all: matching, mass_quote: pool(s.credits.poolLimits(userId, 'quotes'), QUOTE_COST) },
  };
}

/**
 * Deribit's `fees`: per index, per instrument type, the fee every account pays here (the instrument's
 * commission per contract, in the coin; there are no per-user discounts, so it is `fixed`).
 */
export function feesOf(ex: Exchange, currency: CurrencyCode, money: (minor: number) => number): Record<string, unknown> {
  const index = CURRENCIES[currency].indexName;
  let inst = null;
  for (const i of ex.instruments.values()) {
    if (i.currency === currency) {
      inst = i;
      break;
    }
  }
  if (index === null || inst === null) return {};
  return { [index]: { option: { default: { type: 'fixed', maker: money(inst.makerCommission), taker: money(inst.takerCommission) } } } };
}

/** Which products the account may trade (private/set_disabled_trading_products sets them). */
function tradingProducts(ex: Exchange, userId: number): Record<string, { enabled: boolean; overwriteable: boolean }> {
  const off = ex.disabledProducts.get(userId) ?? [];
  const out: Record<string, { enabled: boolean; overwriteable: boolean }> = {};
  for (const p of TRADING_PRODUCTS) out[p] = { enabled: !off.includes(p), overwriteable: true };
  return out;
}

/** The account's settings, as get_account_summaries shows them beside its summaries. */
export function accountSettings(ex: Exchange, user: User): Record<string, unknown> {
  return {
    login_enabled: ex.subaccounts.loginAllowed(user.id),
    // any account may configure market-maker protection
    mmp_enabled: true,
    // no security keys or two-factor authentication, no affiliate program, no e-mail notices here
    security_keys_enabled: false,
    referrer_id: '',
    affiliate_promotion_fee: 0,
    receive_notifications: false,
    // transfers go between a main account and its subaccounts only (submit_transfer_to_user: issue 32)
    interuser_transfers_enabled: false,
    is_direct_access_allowed: false,
    trading_products_details: tradingProducts(ex, user.id),
  };
}

/** The per-currency fields of an extended summary that no balance figure gives. */
export function currencySettings(): Record<string, unknown> {
  return {
    // every account pays the instruments' fees: one schedule, no volume-based groups
    fee_group: 'default',
    // deposits are credited by the venue (an administrator, or the sandbox), never sent on chain
    deposit_address: '',
    has_non_block_chain_equity: false,
  };
}
