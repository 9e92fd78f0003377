// The parameters of portfolio margin (issue 35): one typed object, defaults from Deribit's published
// method. The operator will set them through an admin method (a later slice); until then every
// account that asks for a simulation is stress-tested with these.

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
});

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

/** The relative vol shock of an option `days` from expiry. */
export function volShock(p: PortfolioMarginParams, base: number, days: number): number {
  return Math.pow(p.volShockRefDays / Math.max(days, p.minDaysToExpiry), p.volShockExponent) * base;
}
