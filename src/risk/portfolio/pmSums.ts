// The running sums of the portfolio-margin engine (src/risk/portfolio/pmRisk.ts): one series' vector
// over the scenarios, one account leg as added, and an account's sums in one currency. Shared by the
// engine and its combo part (pmCombos.ts).
import type { CurrencyCode } from '../../domain/currency.ts';
import type { Instrument } from '../../domain/instrument.ts';
import type { SideLots } from '../../combos/openOrders.ts';

/** Per-contract coin P&L of one series in every scenario, valid for the inputs it was made from. */
export interface SeriesVector {
  index: number;
  ts: number;
  iv: number;
  generation: number;
  /** Standard scenarios, then the extended ones (all 0 unless the series is far out of the money). */
  du: Float64Array;
  /** Coin delta per contract (Black-76 delta less the coin price: inverse options). */
  delta: number;
  /** (expiry, strike): the short-option contingency nets calls and puts of one strike. */
  strikeKey: string;
}

/** One leg as it was added to an account's sums: its lots then (its share is recomputed from them). */
export interface Leg {
  inst: Instrument;
  /** Signed position, open buys and open sells, in lots. */
  pos: number;
  buy: number;
  sell: number;
}

/** An account's running sums in one currency (PmRisk): per scenario, the strikes, the deltas, the legs and combos added. */
export interface Sums {
  currency: CurrencyCode;
  marginVersion: number;
  generation: number;
  /** Per scenario, integer minor units: the positions' P&L, and the open orders' extra (the worse side). */
  pos: Float64Array;
  ord: Float64Array;
  /** Net contracts per (expiry, strike), x 10^AMOUNT_SCALE (integers): positions, and with open sells. */
  strikes: Map<string, { pos: number; withSells: number }>;
  /** Sum over strikes of net short contracts (x 10^AMOUNT_SCALE). */
  shortPos: number;
  shortWithSells: number;
  /** Coin delta in minor units (rounded per leg): of the positions, of all buys filled, of all sells filled. */
  dPos: number;
  dBuys: number;
  dSells: number;
  legs: Map<number, Leg>;
  /** Open combo lots per combo as added to the sums (copies), and their delta: sum of max(bid, ask) x |delta| (minor units). */
  combos: Map<string, SideLots>;
  dCombo: number;
  /** Legs without a value (no index or mark): every figure is NaN, as standard margin's. */
  unpriced: number;
  /** A rebuild in progress (`refresh`): the instruments to add, in order, from `next`, and their ids
   *  (a leg that changes while waiting is read when reached). null once complete. */
  pending: { queue: Instrument[]; next: number; waiting: Set<number> } | null;
}

/** Moves one (expiry, strike)'s net contracts (positions; with open sells), and the sums of net shorts. */
export function moveStrike(s: Sums, key: string, dPos: number, dWithSells: number): void {
  let k = s.strikes.get(key);
  if (k === undefined) {
    k = { pos: 0, withSells: 0 };
    s.strikes.set(key, k);
  }
  s.shortPos -= Math.max(0, -k.pos);
  s.shortWithSells -= Math.max(0, -k.withSells);
  k.pos += dPos;
  k.withSells += dWithSells;
  s.shortPos += Math.max(0, -k.pos);
  s.shortWithSells += Math.max(0, -k.withSells);
  if (k.pos === 0 && k.withSells === 0) s.strikes.delete(key);
}
