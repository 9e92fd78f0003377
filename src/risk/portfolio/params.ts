// The parameters of portfolio margin (issue 35): one typed object, defaults from Deribit's published
// method. The operator sets them with private/set_portfolio_margin_params (a journaled command,
// src/risk/portfolio/state.ts); the engine and the simulations use the ones in force.

export interface PortfolioMarginParams {
  /** Largest relative move of the forward in the standard table (0.16 = +/-16%). */
  priceRange: number;
  /** Evenly spaced moves over [-priceRange, +priceRange]; odd, so that 0 is one of them. */
  priceBuckets: number;
  /** Relative vol shock at `volShockRefDays` to expiry (0.38 = the vol moves by 38% of itself). */
  volShockUp: number;
  volShockDown: number;
  /** The shock scales as (volShockRefDays / days_to_expiry) ^ volShockExponent. */
  volShockRefDays: number;
  volShockExponent: number;
  /** Days to expiry never count as fewer than this: the shock of an option about to expire stays finite. */
  minDaysToExpiry: number;
  /** A shocked-down vol never goes below this (decimal), nor below the option's own vol if that is lower. */
  minVol: number;
  /** Moves of the extended table (vol up only), relative. */
  extendedMoves: readonly number[];
  /** The share of an extended scenario's loss that counts, in whole percent (the damping; docs/api-notes.md says why). */
  extendedLossPercent: number;
  /** Coin per contract of net short option per (expiry, strike). */
  shortOptionContingency: number;
  /** Share of the absolute net delta (coin) per currency. */
  deltaContingency: number;
  /** Initial margin = maintenance margin x imFactorPercent / 100, rounded up. */
  imFactorPercent: number;
  /** The equity (all currencies at index, in BTC) an account needs to switch onto portfolio margin. */
  minSwitchEquityBtc: number;
}

export const DEFAULT_PM_PARAMS: Readonly<PortfolioMarginParams> = Object.freeze({
  priceRange: 0.16,
  priceBuckets: 9,
  volShockUp: 0.38,
  volShockDown: 0.38,
  volShockRefDays: 30,
  volShockExponent: 0.3,
  minDaysToExpiry: 1,
  minVol: 0.05,
  extendedMoves: Object.freeze([-0.66, -0.33, 0.5, 1, 2, 3, 4, 5]),
  extendedLossPercent: 25,
  shortOptionContingency: 0.01,
  deltaContingency: 0.01,
  imFactorPercent: 130,
  minSwitchEquityBtc: 0.5,
});

/** Bounds of every parameter the operator may set: [min, max, integer]. */
export const PM_PARAM_BOUNDS: Readonly<Record<Exclude<keyof PortfolioMarginParams, 'extendedMoves'>, readonly [number, number, boolean]>> = Object.freeze({
  priceRange: [0.01, 0.9, false],
  priceBuckets: [1, 41, true],
  volShockUp: [0, 5, false],
  volShockDown: [0, 0.99, false],
  volShockRefDays: [1, 365, false],
  volShockExponent: [0, 2, false],
  minDaysToExpiry: [0.01, 30, false],
  minVol: [0, 1, false],
  extendedLossPercent: [0, 100, true],
  shortOptionContingency: [0, 1, false],
  deltaContingency: [0, 1, false],
  imFactorPercent: [100, 1000, true],
  minSwitchEquityBtc: [0, 1e6, false],
});
export const MAX_EXTENDED_MOVES = 16;

/** The reason a parameter set is refused (the field named), or null when every value is in bounds. */
export function paramsRefusal(p: PortfolioMarginParams): string | null {
  for (const [k, [min, max, int]] of Object.entries(PM_PARAM_BOUNDS)) {
    const v = p[k as keyof typeof PM_PARAM_BOUNDS];
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max || (int && !Number.isInteger(v))) return k;
  }
  if (p.priceBuckets % 2 === 0) return 'priceBuckets';
  const m = p.extendedMoves;
  if (!Array.isArray(m) || m.length > MAX_EXTENDED_MOVES || !m.every((x) => typeof x === 'number' && Number.isFinite(x) && x > -1 && x <= 10)) return 'extendedMoves';
  return null;
}

/** The standard table's price moves, from -priceRange to +priceRange; the middle one is exactly 0. */
export function priceMoves(p: Pick<PortfolioMarginParams, 'priceRange' | 'priceBuckets'>): number[] {
  const n = p.priceBuckets;
  if (!Number.isInteger(n) || n < 1 || n % 2 === 0) throw new RangeError(`priceBuckets must be a positive odd integer: ${n}`);
  const half = (n - 1) / 2;
  const moves: number[] = [];
  // i / half rather than a running step: every move is computed the same way, and the middle is 0 exactly
  for (let i = -half; i <= half; i++) moves.push(half === 0 ? 0 : (p.priceRange * i) / half);
  return moves;
}

/** The relative vol shock of an option `days` from expiry: base * (refDays / days) ^ exponent.
 * The power is exp(exponent * ln(ratio)), not `Math.pow`: margin must be the same on every
 * runtime that may replay the journal, and `Math.pow` differs in the last bit between Node 20 and
 * Node 24 for ~10% of inputs, while `Math.exp` and `Math.log` (V8's fdlibm port on both) agree
 * (test/domain/pricingBits.test.ts). */
export function volShock(p: PortfolioMarginParams, base: number, days: number): number {
  const ratio = p.volShockRefDays / Math.max(days, p.minDaysToExpiry);
  return Math.exp(p.volShockExponent * Math.log(ratio)) * base;
}
