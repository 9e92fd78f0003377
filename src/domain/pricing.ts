// Option pricing maths: the standard normal distribution, Black-76 prices and greeks, implied vol.
//
// Floats are fine here (DESIGN rule 6): these results feed marks, IVs and greeks, and are rounded
// onto the price grid before they touch money. Everything is pure: time and rates are parameters.
//
// Conventions (reference/options-mechanics.md section 3.2): F forward (the index, USD), K strike
// (USD), T years to expiry, sigma decimal vol, r continuously compounded rate, D = e^{-rT}.
// Prices are in USD per contract of 1 coin; coin prices divide by F.

import type { OptionType } from './instrument.ts';

export type { OptionType };

export interface Greeks {
  /** dV/dF (dimensionless; for a 1-coin contract also the delta in coin). */
  delta: number;
  /** d2V/dF2 (per USD). */
  gamma: number;
  /** dV/dsigma per 1 vol point (USD per 0.01 of sigma). */
  vega: number;
  /** dV/dt per calendar day (USD, negative for a long option when r = 0), F held fixed. */
  theta: number;
  /** dV/dr per 1% of rate (USD), F held fixed. */
  rho: number;
}

export const MS_PER_YEAR = 365 * 24 * 3600 * 1000;

/** Time in years between two instants given in ms (negative when `toMs` is before `fromMs`). */
export function yearFraction(fromMs: number, toMs: number): number {
  return (toMs - fromMs) / MS_PER_YEAR;
}

// ---------------------------------------------------------------------------------------------
// Standard normal distribution

const SQRT2 = Math.SQRT2;
const INV_SQRT_2PI = 0.3989422804014327; // 1/sqrt(2 pi)

// W. J. Cody, "Rational Chebyshev approximations for the error function", Math. Comp. 23 (1969),
// as in Netlib SPECFUN CALERF (relative error ~1e-16 in double precision). The published 18-digit
// coefficients are written as the shortest decimals that round to the same doubles (the lint rule
// no-loss-of-precision rejects the originals); the values are bit-for-bit the same.
const CODY_A = [3.1611237438705655, 113.86415415105016, 377.485237685302, 3209.3775891384694, 0.18577770618460315];
const CODY_B = [23.601290952344122, 244.02463793444417, 1282.6165260773723, 2844.236833439171];
const CODY_C = [
  0.5641884969886701, 8.883149794388377, 66.11919063714163, 298.6351381974001, 881.952221241769,
  1712.0476126340707, 2051.0783778260716, 1230.3393547979972, 2.1531153547440383e-8,
];
const CODY_D = [
  15.744926110709835, 117.6939508913125, 537.1811018620099, 1621.3895745666903, 3290.7992357334597,
  4362.619090143247, 3439.3676741437216, 1230.3393548037495,
];
const CODY_P = [
  0.30532663496123236, 0.36034489994980445, 0.12578172611122926, 0.016083785148742275,
  0.0006587491615298378, 0.016315387137302097,
];
const CODY_Q = [2.568520192289822, 1.8729528499234604, 0.5279051029514285, 0.06051834131244132, 0.0023352049762686918];
const SQRPI = 0.5641895835477563; // 1/sqrt(pi)
const THRESH = 0.46875;
const XSMALL = 1.11e-16;
/** erfc(x) underflows to 0 at and beyond this argument. */
const XBIG = 26.543;

/** exp(-y^2) computed as exp(-ysq^2) * exp(-del) with ysq = y truncated to 1/16: Cody's trick
 * against the cancellation error of squaring a large y. */
function expMinusSquare(y: number): number {
  const ysq = Math.trunc(y * 16) / 16;
  const del = (y - ysq) * (y + ysq);
  return Math.exp(-ysq * ysq) * Math.exp(-del);
}

/** Complementary error function, double precision (Cody). Defined for every non-NaN x. */
export function erfc(x: number): number {
  const y = Math.abs(x);
  let result: number;
  if (y <= THRESH) {
    const ysq = y > XSMALL ? y * y : 0;
    let xnum = CODY_A[4] * ysq;
    let xden = ysq;
    for (let i = 0; i < 3; i++) {
      xnum = (xnum + CODY_A[i]) * ysq;
      xden = (xden + CODY_B[i]) * ysq;
    }
    return 1 - (x * (xnum + CODY_A[3])) / (xden + CODY_B[3]);
  } else if (y <= 4) {
    let xnum = CODY_C[8] * y;
    let xden = y;
    for (let i = 0; i < 7; i++) {
      xnum = (xnum + CODY_C[i]) * y;
      xden = (xden + CODY_D[i]) * y;
    }
    result = ((xnum + CODY_C[7]) / (xden + CODY_D[7])) * expMinusSquare(y);
  } else if (y >= XBIG) {
    result = 0; // also covers y = Infinity, where the formulas below would produce NaN
  } else {
    const ysq = 1 / (y * y);
    let xnum = CODY_P[5] * ysq;
    let xden = ysq;
    for (let i = 0; i < 4; i++) {
      xnum = (xnum + CODY_P[i]) * ysq;
      xden = (xden + CODY_Q[i]) * ysq;
    }
    result = (ysq * (xnum + CODY_P[4])) / (xden + CODY_Q[4]);
    result = ((SQRPI - result) / y) * expMinusSquare(y);
  }
  return x < 0 ? 2 - result : result;
}

/** Standard normal cumulative distribution N(x), relative accuracy ~1e-15 (~1e-13 deep in the tail). */
export function normCdf(x: number): number {
  return 0.5 * erfc(-x / SQRT2);
}

/** Standard normal density n(x) = e^{-x^2/2} / sqrt(2 pi). */
export function normPdf(x: number): number {
  return INV_SQRT_2PI * Math.exp(-0.5 * x * x);
}

// ---------------------------------------------------------------------------------------------
// Black-76

function assertInputs(F: number, K: number, T: number, sigma: number, r: number): void {
  if (!(Number.isFinite(F) && F > 0)) throw new RangeError(`forward must be a finite positive number: ${F}`);
  if (!(Number.isFinite(K) && K > 0)) throw new RangeError(`strike must be a finite positive number: ${K}`);
  if (!Number.isFinite(T)) throw new RangeError(`time to expiry must be finite: ${T}`);
  if (!Number.isFinite(sigma)) throw new RangeError(`volatility must be finite: ${sigma}`);
  if (!Number.isFinite(r)) throw new RangeError(`rate must be finite: ${r}`);
}

/** The d1/d2 pair, or null when the total vol sigma*sqrt(T) is zero (the option is at intrinsic). */
function d1d2(F: number, K: number, T: number, sigma: number): { d1: number; d2: number; s: number } | null {
  if (T <= 0 || sigma <= 0) return null;
  const s = sigma * Math.sqrt(T);
  if (s === 0) return null; // underflow: as good as expired
  if (s === Infinity) return { d1: Infinity, d2: -Infinity, s };
  // ln F - ln K rather than ln(F/K): the ratio can overflow or underflow for extreme inputs.
  const lnFK = Math.log(F) - Math.log(K);
  const d1 = lnFK / s + s / 2;
  return { d1, d2: d1 - s, s };
}

/**
 * Undiscounted Black price of the out-of-the-money (or at-the-money) side, never negative.
 * The OTM side is computed directly and the ITM side by put-call parity, so that the time value
 * keeps its relative precision and the ITM price never falls below intrinsic through rounding.
 */
/** Takes d1 and d2 as numbers, not their pair: implied vol calls it for every step of its iteration. */
function undiscountedPrice(type: OptionType, F: number, K: number, d1: number, d2: number): number {
  if (type === 'call') {
    if (F >= K) return F - K + undiscountedPrice('put', F, K, d1, d2);
    return Math.max(0, F * normCdf(d1) - K * normCdf(d2));
  }
  if (K > F) return K - F + undiscountedPrice('call', F, K, d1, d2);
  return Math.max(0, K * normCdf(-d2) - F * normCdf(-d1));
}

function intrinsic(type: OptionType, F: number, K: number): number {
  return type === 'call' ? Math.max(F - K, 0) : Math.max(K - F, 0);
}

function discount(T: number, r: number): number {
  return T > 0 && r !== 0 ? Math.exp(-r * T) : 1;
}

/** Black-76 price in USD: D [F N(d1) - K N(d2)] for a call, D [K N(-d2) - F N(-d1)] for a put.
 * T <= 0 or sigma <= 0 gives the (discounted) intrinsic value. */
export function black76Price(type: OptionType, F: number, K: number, T: number, sigma: number, r = 0): number {
  assertInputs(F, K, T, sigma, r);
  const D = discount(T, r);
  const d = d1d2(F, K, T, sigma);
  if (d === null) return D * intrinsic(type, F, K);
  return D * undiscountedPrice(type, F, K, d.d1, d.d2);
}

/** Black-76 greeks (see `Greeks` for units). T <= 0 or sigma <= 0: delta is the step D (1) for an
 * ITM call, -D (-1) for an ITM put, 0 otherwise (at the money counts as not ITM); others are 0. */
export function black76Greeks(type: OptionType, F: number, K: number, T: number, sigma: number, r = 0): Greeks {
  assertInputs(F, K, T, sigma, r);
  const D = discount(T, r);
  const d = d1d2(F, K, T, sigma);
  if (d === null) {
    const delta = type === 'call' ? (F > K ? D : 0) : K > F ? -D : 0;
    return { delta, gamma: 0, vega: 0, theta: 0, rho: 0 };
  }
  const pdf = normPdf(d.d1);
  const V = D * undiscountedPrice(type, F, K, d.d1, d.d2);
  const sqrtT = Math.sqrt(T);
  // Products are ordered so that a zero density is applied before any factor that might overflow:
  // 0 * large stays 0 where large * 0 could be Infinity * 0 = NaN.
  const delta = type === 'call' ? D * normCdf(d.d1) : -D * normCdf(-d.d1);
  const gamma = (D * pdf) / F / d.s;
  const vegaPerUnit = D * pdf * F * sqrtT;
  const decay = (((D * pdf * F) / 2) * sigma) / sqrtT;
  const thetaPerYear = r === 0 ? -decay : r * V - decay;
  const rhoPerUnit = -T * V;
  return {
    delta,
    gamma,
    vega: vegaPerUnit / 100,
    theta: thetaPerYear / 365,
    rho: rhoPerUnit / 100,
  };
}

// ---------------------------------------------------------------------------------------------
// Implied volatility

const IV_LOW = 1e-6;
const IV_HIGH = 5;
const IV_HIGH_WIDE = 10;
const IV_MAX_ITER = 100;
const IV_TOL = 1e-12;
/** Relative tolerance (of max(F, K)) under which a price counts as exactly intrinsic. */
const AT_INTRINSIC_TOL = 1e-13;

/**
 * One inversion's inputs and the last step's vega. One record for the module, not a closure and a
 * result object per step: the trade renderings invert a price for every trade (`iv`), and the
 * closure and its two small objects per step were a third of a kilobyte allocated per order.
 * Nothing here runs concurrently (JavaScript), and `impliedVol` reads it back before it returns.
 */
const IV_STEP = { otm: 'call' as OptionType, F: 0, K: 0, tv: 0, lnFK: 0, sqrtT: 0, vega: 0 };

/** price(sigma) - tv of the OTM side, undiscounted; the vega at sigma goes into `step.vega`. */
function evaluateStep(step: typeof IV_STEP, sigma: number): number {
  const s = sigma * step.sqrtT;
  if (s === 0) {
    step.vega = 0;
    return -step.tv;
  }
  const d1 = step.lnFK / s + s / 2;
  step.vega = step.F * normPdf(d1) * step.sqrtT;
  return undiscountedPrice(step.otm, step.F, step.K, d1, d1 - s) - step.tv;
}

/**
 * Black-76 implied volatility of a USD price, or null when there is none: T <= 0, a non-finite or
 * negative price, a price below the discounted intrinsic value, at or above the upper bound (D*F for a
 * call, D*K for a put), or a vol above 10 (1000%). A price at intrinsic (within 1e-13 of max(F, K))
 * gives 0.
 *
 * Method (reference section 3.3): the price is reduced to the time value of the out-of-the-money side
 * by put-call parity (the ITM price adds only rounding noise), then a safeguarded Newton iteration
 * (Numerical Recipes' rtsafe) runs on the bracket [0, 5], widened to [0, 10] when price(5) is below
 * the target. It starts from the Manaster-Koehler point sqrt(2|ln(F/K)|/T), where vega is maximal and
 * from which Newton converges monotonically, or from Brenner-Subrahmanyam near the money. Any Newton
 * step that leaves the bracket or does not halve the step falls back to bisection.
 */
export function impliedVol(type: OptionType, price: number, F: number, K: number, T: number, r = 0): number | null {
  assertInputs(F, K, T, 0, r);
  if (!(T > 0) || !Number.isFinite(price) || price < 0) return null;
  const D = discount(T, r);
  const target = price / D; // undiscounted
  const upper = type === 'call' ? F : K;
  if (!(target < upper)) return null;
  const tol = AT_INTRINSIC_TOL * Math.max(F, K);
  const intr = intrinsic(type, F, K);
  if (target < intr - tol) return null;
  // time value = price of the OTM side (parity: C - P = F - K undiscounted)
  const otm: OptionType = F >= K ? 'put' : 'call';
  const tv = target - intr;
  if (tv <= tol) return 0;
  const sqrtT = Math.sqrt(T);
  const lnFK = Math.log(F) - Math.log(K);

  const step = IV_STEP;
  step.otm = otm;
  step.F = F;
  step.K = K;
  step.tv = tv;
  step.lnFK = lnFK;
  step.sqrtT = sqrtT;

  let lo = 0;
  let hi = IV_HIGH;
  if (evaluateStep(step, hi) < 0) {
    hi = IV_HIGH_WIDE;
    if (evaluateStep(step, hi) < 0) return null;
  }
  const mk = Math.sqrt((2 * Math.abs(lnFK)) / T);
  const bs = (Math.sqrt((2 * Math.PI) / T) * tv) / F;
  let sigma = Math.abs(lnFK) > 1e-3 ? mk : bs;
  if (!(sigma > IV_LOW && sigma < hi)) sigma = Math.min(Math.max(sigma, IV_LOW), hi / 2);

  let f = evaluateStep(step, sigma);
  let v = step.vega;
  let dxOld = hi - lo;
  let dx = dxOld;
  for (let i = 0; i < IV_MAX_ITER; i++) {
    if (f === 0) return sigma;
    if (f > 0) hi = sigma;
    else lo = sigma;
    const newtonOut = ((sigma - hi) * v - f) * ((sigma - lo) * v - f) > 0;
    if (!(v > 0) || newtonOut || Math.abs(2 * f) > Math.abs(dxOld * v)) {
      dxOld = dx;
      dx = (hi - lo) / 2;
      sigma = lo + dx;
    } else {
      dxOld = dx;
      dx = f / v;
      sigma -= dx;
    }
    if (Math.abs(dx) < IV_TOL || hi - lo < IV_TOL) return sigma;
    f = evaluateStep(step, sigma);
    v = step.vega;
  }
  return sigma;
}

// ---------------------------------------------------------------------------------------------
// Inverse (coin) helpers

/** Intrinsic value in coin per contract: call max(0, 1 - K/F), put max(0, K/F - 1). */
export function intrinsicCoin(type: OptionType, F: number, K: number): number {
  return type === 'call' ? Math.max(0, 1 - K / F) : Math.max(0, K / F - 1);
}

/**
 * Coin price of an inverse option (r = 0): the Black-76 USD price divided by F, clamped into
 * [intrinsic, max(1, intrinsic)].
 *
 * API.md 7.2 says "clamped into [intrinsic, 1]". A call's coin price never exceeds 1 (C <= F), but a
 * put's can: its coin payoff (K - S)/S is unbounded as S -> 0. When the strike is more than twice the
 * forward the intrinsic value itself exceeds 1 coin, and a mark of 1 would sit below intrinsic (free
 * money for whoever buys at the mark); there the intrinsic wins, so the upper bound is
 * max(1, intrinsic).
 */
export function coinPrice(type: OptionType, F: number, K: number, T: number, sigma: number): number {
  const usd = black76Price(type, F, K, T, sigma, 0);
  const floor = intrinsicCoin(type, F, K);
  return Math.min(Math.max(usd / F, floor), Math.max(1, floor));
}
