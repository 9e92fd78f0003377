// Mark IV, mark price, price band and ticker greeks of an inverse option (API.md 7.2).
//
// The mark is model-based: a quadratic smile in log-moneyness gives the IV, Black-76 with F = index
// and r = 0 gives the USD price, which divided by F is the coin mark. Floats end here: callers round
// marks and bands onto the price grid before they touch money.

import type { OptionType } from '../domain/instrument.ts';
import { black76Greeks, coinPrice, impliedVol, normCdf } from '../domain/pricing.ts';
import type { Greeks } from '../domain/pricing.ts';
import { pow10 } from '../domain/decimal.ts';

export interface SmileParams {
  /** At-the-money vol, decimal (0.6 = 60%). */
  atmVol: number;
  /** Slope in k = ln(K/F); negative puts more vol on low strikes. */
  skew: number;
  /** Convexity in k. */
  curvature: number;
}

export const DEFAULT_SMILE: Readonly<SmileParams> = Object.freeze({ atmVol: 0.6, skew: -0.1, curvature: 0.5 });

/** No mark IV is ever below 5%. */
export const MIN_MARK_IV = 0.05;

/** Mark IV (decimal): atm + skew*k + curvature*k^2 with k = ln(K/F), floored at 5%. */
export function markIv(params: SmileParams, F: number, K: number): number {
  const k = Math.log(K) - Math.log(F);
  const iv = params.atmVol + params.skew * k + params.curvature * k * k;
  // a NaN smile (bad parameters) must not slip through Math.max as NaN
  if (Number.isNaN(iv)) throw new RangeError(`mark IV is not a number for F=${F} K=${K}`);
  return Math.max(MIN_MARK_IV, iv);
}

/** Mark price in coin: Black-76 USD price / F, clamped into [intrinsic, max(1, intrinsic)]
 * (see `coinPrice` for why the upper bound is not always 1). `T` in years, `iv` decimal. */
export function markPriceCoin(type: OptionType, F: number, K: number, T: number, iv: number): number {
  return coinPrice(type, F, K, T, iv);
}

/** Implied vol (decimal) of a coin price, for `bid_iv`/`ask_iv`: the coin price times F is the USD
 * Black-76 price (r = 0). Null where `impliedVol` finds none (see there). */
export function ivFromCoinPrice(type: OptionType, priceCoin: number, F: number, K: number, T: number): number | null {
  return impliedVol(type, priceCoin * F, F, K, T, 0);
}

/**
 * Order price band around a coin mark m: min = max(tick, m - 0.25m - 0.01), max = m + 0.25m + 0.01.
 * The bounds are then snapped onto the base tick grid (min up, max down). Every valid order price is
 * a multiple of the base tick, so this admits exactly the same prices as the raw formula; it only
 * removes float noise such as 0.07250000000000001 from what the ticker shows.
 */
export function priceBandCoin(markCoin: number, tickCoin = 0.0001): { min: number; max: number } {
  const { minTicks, maxTicks } = bandTicks(markCoin, tickCoin);
  const decimals = decimalsOf(tickCoin);
  return {
    min: Number((minTicks * tickCoin).toFixed(decimals)),
    max: Number((maxTicks * tickCoin).toFixed(decimals)),
  };
}

/**
 * The band as whole ticks: what `priceBandCoin` writes as decimals, without the text round trip
 * (half the cost of a mark refresh, which runs for every instrument of a currency at each index
 * update). test/market/smile.test.ts checks the two agree.
 */
export function bandTicks(markCoin: number, tickCoin: number): { minTicks: number; maxTicks: number } {
  if (!(Number.isFinite(markCoin) && markCoin >= 0)) throw new RangeError(`mark must be finite and >= 0: ${markCoin}`);
  if (!(Number.isFinite(tickCoin) && tickCoin > 0)) throw new RangeError(`tick must be finite and > 0: ${tickCoin}`);
  const rawMin = Math.max(tickCoin, markCoin - 0.25 * markCoin - 0.01);
  const rawMax = markCoin + 0.25 * markCoin + 0.01;
  // 1e-9 of a tick absorbs the binary rounding of the formula (0.0299 computed as 0.029900000000000003)
  return { minTicks: Math.ceil(rawMin / tickCoin - 1e-9), maxTicks: Math.floor(rawMax / tickCoin + 1e-9) };
}

/** Number of decimals needed to write the tick exactly (0.0001 -> 4, 0.0005 -> 4, 1 -> 0). */
function decimalsOf(tick: number): number {
  for (let d = 0; d <= 15; d++) {
    const scaled = tick * pow10(d);
    if (Math.abs(scaled - Math.round(scaled)) < 1e-9 * Math.max(1, scaled)) return d;
  }
  return 15;
}

function round5(x: number): number {
  const r = Math.round(x * 1e5) / 1e5;
  return r === 0 ? 0 : r; // no -0 in JSON-facing values
}

/**
 * Per-contract greeks as a Deribit ticker shows them, rounded to 5 decimals: delta (Black-76 dV/dF,
 * which for a 1-coin contract is the delta in coin), gamma (per USD), vega (USD per vol point),
 * theta (USD per day), rho (USD per 1% of rate; r = 0). `T` in years, `iv` decimal.
 *
 * Rho is Deribit's (Black-Scholes on the index as spot: K T N(d2) for a call, -K T N(-d2) for a
 * put, per 1%), not Black-76's -T V, which with the forward held fixed is negative for calls too
 * and read as a wrong sign (issue 33).
 */
export function optionGreeksCoin(type: OptionType, F: number, K: number, T: number, iv: number): Greeks {
  const g = black76Greeks(type, F, K, T, iv, 0);
  return { delta: round5(g.delta), gamma: round5(g.gamma), vega: round5(g.vega), theta: round5(g.theta), rho: round5(spotRho(type, F, K, T, iv)) };
}

function spotRho(type: OptionType, F: number, K: number, T: number, iv: number): number {
  if (!(T > 0) || !(iv > 0) || !(F > 0) || !(K > 0)) return 0;
  const d2 = (Math.log(F / K) - (iv * iv * T) / 2) / (iv * Math.sqrt(T));
  return type === 'call' ? (K * T * normCdf(d2)) / 100 : (-K * T * normCdf(-d2)) / 100;
}
