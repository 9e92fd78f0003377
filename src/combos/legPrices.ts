// The split of a combo price into leg prices (issue 34; docs/api-notes.md "Combo books"), shared by
// the combo fills and private/get_leg_prices. Integer price units (10^-4 coin) throughout:
//   1. every leg starts at its mark, rounded to a price unit and put inside its own band;
//   2. the difference D = combo price - sum(ratio x leg price) is spread over the legs in proportion
//      to |ratio| x mark (each leg moves in the direction that moves the combo price towards D);
//      a leg the spread would take out of its band stops at the edge and the rest is spread again
//      over the others;
//   3. what rounding leaves (a few units) goes to the largest legs first, one unit at a time (when
//      no single leg can take it, two legs together: a leg of ratio 1 at its band's edge).
// The result sums exactly: sum(ratio_i x price_i) = combo price, every leg inside its band; a price
// outside the combo band (the net of the legs' bands) has no such split and is refused.
import { PRICE_SCALE } from '../domain/instrument.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { ComboLeg } from './combos.ts';

export interface LegQuote {
  ratio: number;
  /** the leg's mark in price units (float) */
  mark: number;
  /** the leg's band, price units */
  min: number;
  max: number;
}

/** The leg quotes of a combo now, or null when a leg has no market (unknown, or no mark). */
export function legQuotes(ex: Exchange, legs: readonly ComboLeg[]): LegQuote[] | null {
  const out: LegQuote[] = [];
  for (const l of legs) {
    const inst = ex.instruments.get(l.instrument);
    const m = inst === undefined ? undefined : ex.markets.get(inst.id);
    if (m === undefined || !(m.markCoin >= 0) || !(m.maxPrice >= m.minPrice)) return null;
    out.push({ ratio: l.ratio, mark: m.markCoin * 10 ** PRICE_SCALE, min: m.minPrice, max: m.maxPrice });
  }
  return out;
}

/** The combo band: the lowest and highest net price the legs' bands allow. */
export function comboBand(q: readonly LegQuote[]): { min: number; max: number } {
  let min = 0;
  let max = 0;
  for (const l of q) {
    min += l.ratio > 0 ? l.ratio * l.min : l.ratio * l.max;
    max += l.ratio > 0 ? l.ratio * l.max : l.ratio * l.min;
  }
  return { min, max };
}

/** The combo's net mark in price units (float; for the ticker). */
export function comboMark(q: readonly LegQuote[]): number {
  let s = 0;
  for (const l of q) s += l.ratio * l.mark;
  return s;
}

/** The leg prices of `price` (see the header), or null when none exists inside the bands. */
export function splitPrice(q: readonly LegQuote[], price: number): number[] | null {
  const band = comboBand(q);
  if (!Number.isSafeInteger(price) || price < band.min || price > band.max) return null;
  const n = q.length;
  const p = q.map((l) => Math.min(l.max, Math.max(l.min, Math.round(l.mark))));
  // |ratio| x mark, at least 1 per unit of ratio so that legs marked at zero take a share too
  const weight = q.map((l) => Math.abs(l.ratio) * Math.max(1, Math.round(l.mark)));
  const fixed = new Array<boolean>(n).fill(false);
  for (let round = 0; round <= n; round++) {
    const d = price - netOf(q, p);
    if (d === 0) break;
    let w = 0;
    for (let i = 0; i < n; i++) if (!fixed[i]) w += weight[i]!;
    if (w === 0) break;
    let clamped = false;
    for (let i = 0; i < n; i++) {
      if (fixed[i]) continue;
      const l = q[i]!;
      // the leg's share of d, in units of the leg's price (sign: the way that moves the net by d)
      const move = Math.sign(l.ratio) * Math.trunc((d * weight[i]!) / Math.abs(l.ratio) / w);
      const next = p[i]! + move;
      if (next < l.min || next > l.max) {
        p[i] = Math.min(l.max, Math.max(l.min, next));
        fixed[i] = true;
        clamped = true;
      } else p[i] = next;
    }
    if (!clamped) break;
  }
  // the remainder, one unit at a time, to the largest legs first (most splits have none: sorted only then)
  if (netOf(q, p) === price) return p;
  const order = [...q.keys()].sort((a, b) => weight[b]! - weight[a]! || a - b);
  for (let guard = 0; guard < 100_000; guard++) {
    const r = price - netOf(q, p);
    if (r === 0) return p;
    let moved = false;
    for (const i of order) {
      const l = q[i]!;
      if (Math.abs(l.ratio) > Math.abs(r)) continue;
      const step = Math.sign(r) * Math.sign(l.ratio);
      const next = p[i]! + step;
      if (next < l.min || next > l.max) continue;
      p[i] = next;
      moved = true;
      break;
    }
    if (!moved) return pairFix(q, p, r) ? p : null;
  }
  return null;
}

/** sum(ratio x leg price): the net price of leg prices `p`. */
function netOf(q: readonly LegQuote[], p: readonly number[]): number {
  let s = 0;
  for (let i = 0; i < p.length; i++) s += q[i]!.ratio * p[i]!;
  return s;
}

/** Pairs of legs to search for a remainder no single leg can take (a leg of ratio 1 at its band's edge). */
const PAIR_SEARCH = 2_000;

/** Moves two legs i, j by a, b with ratio_i a + ratio_j b = r, both inside their bands (smallest |a| first). */
function pairFix(q: readonly LegQuote[], p: number[], r: number): boolean {
  for (let i = 0; i < q.length; i++) {
    for (let j = 0; j < q.length; j++) {
      if (i === j) continue;
      const ri = q[i]!.ratio;
      const rj = q[j]!.ratio;
      for (let k = 0; k <= PAIR_SEARCH; k++) {
        for (const a of k === 0 ? [0] : [k, -k]) {
          const rest = r - ri * a;
          if (rest % rj !== 0) continue;
          const b = rest / rj;
          const pi = p[i]! + a;
          const pj = p[j]! + b;
          if (pi < q[i]!.min || pi > q[i]!.max || pj < q[j]!.min || pj > q[j]!.max) continue;
          p[i] = pi;
          p[j] = pj;
          return true;
        }
      }
    }
  }
  return false;
}
