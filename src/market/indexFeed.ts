// The simulated index feed (API.md 7.2): a seeded geometric Brownian motion without drift, so the
// same seed and the same sequence of time steps always give the same prices. Randomness comes from
// the seed only (mulberry32), never from Math.random().

import { MS_PER_YEAR } from '../domain/pricing.ts';

/** mulberry32: a small, fast 32-bit PRNG; returns a generator of uniforms in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Smallest price the feed will report (one cent): rounding must never produce a zero index. */
const MIN_PRICE = 0.01;

export class SimulatedIndex {
  private readonly uniform: () => number;
  /** Unrounded level: rounding is for display, so it must not feed back into the walk. */
  private level: number;
  /** Box-Muller makes normals in pairs; the second one waits here. */
  private spare: number | null = null;
  private lastPrice: number;
  private readonly annualVol: number;

  constructor(seed: number, start: number, annualVol: number) {
    if (!Number.isFinite(seed)) throw new RangeError(`seed must be a finite number: ${seed}`);
    if (!(Number.isFinite(start) && start > 0)) throw new RangeError(`start must be finite and > 0: ${start}`);
    if (!(Number.isFinite(annualVol) && annualVol >= 0)) throw new RangeError(`annual vol must be finite and >= 0: ${annualVol}`);
    this.annualVol = annualVol;
    this.uniform = mulberry32(seed);
    this.level = start;
    this.lastPrice = roundCents(start);
  }

  /** The last price reported (the rounded start before the first step). */
  get price(): number {
    return this.lastPrice;
  }

  /**
   * Advances the walk by `dtMs` milliseconds and returns the new price rounded to cents:
   * S <- S * exp(-sigma^2 dt / 2 + sigma sqrt(dt) Z), dt in years, so E[S] stays constant.
   * A zero step returns the current price without consuming randomness.
   */
  next(dtMs: number): number {
    if (!(Number.isFinite(dtMs) && dtMs >= 0)) throw new RangeError(`time step must be finite and >= 0: ${dtMs}`);
    if (dtMs === 0) return this.lastPrice;
    const dt = dtMs / MS_PER_YEAR;
    const sigma = this.annualVol;
    this.level *= Math.exp(-0.5 * sigma * sigma * dt + sigma * Math.sqrt(dt) * this.gaussian());
    this.lastPrice = roundCents(this.level);
    return this.lastPrice;
  }

  private gaussian(): number {
    if (this.spare !== null) {
      const z = this.spare;
      this.spare = null;
      return z;
    }
    // 1 - u maps [0, 1) onto (0, 1], keeping log() finite
    const u1 = 1 - this.uniform();
    const u2 = this.uniform();
    const radius = Math.sqrt(-2 * Math.log(u1));
    const angle = 2 * Math.PI * u2;
    this.spare = radius * Math.sin(angle);
    return radius * Math.cos(angle);
  }
}

function roundCents(x: number): number {
  return Math.max(MIN_PRICE, Math.round(x * 100) / 100);
}

/**
 * Whether an index update is within the jump bound: |next - prev| <= maxFraction * prev.
 * Anything that is not a finite positive price (either side) or a finite non-negative bound is
 * rejected: an index of 0, NaN or Infinity must never reach the marks.
 */
export function maxJumpOk(prev: number, next: number, maxFraction: number): boolean {
  if (!(Number.isFinite(next) && next > 0 && Number.isFinite(prev) && prev > 0)) return false;
  if (!(Number.isFinite(maxFraction) && maxFraction >= 0)) return false;
  return Math.abs(next - prev) <= maxFraction * prev;
}
