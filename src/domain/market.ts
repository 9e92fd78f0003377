// Per-instrument market records (marks, price band, public trades) and the vol smile they are
// derived from: plain data the engine owns and src/market/ computes.
import type { Instrument } from './instrument.ts';

export interface VolState {
  atmVol: number;
  skew: number;
  curvature: number;
}

/**
 * The market state of one instrument. `T` is the engine's trade record (src/engine/types.ts
 * `Trade`, which links the orders it filled); src/market/ never reads the trades, so it takes the
 * record as `InstrumentMarket` with trades left opaque.
 */
export interface InstrumentMarket<T = unknown> {
  inst: Instrument;
  /** Mark price in coin (float, pricing model output) and in price units rounded to the grid. */
  markCoin: number;
  markIv: number;
  /** Order price band in price units. */
  minPrice: number;
  maxPrice: number;
  lastPrice: number | null;
  tradeSeq: number;
  /** public trades, most recent last */
  trades: T[];
  changeId: number;
  /** Cache of the initial margin per short contract (coin) and the index and mark it was computed
   *  for: order entry needs it for every exposure of the account. Derived, never serialized. */
  imCache: { index: number; mark: number; perContract: number };
}
