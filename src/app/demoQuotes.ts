// The demo market's prices (src/app/demoMaker.ts), as pure functions: a ladder of bids and asks
// around the smile's implied vol for one series, and the gaps of a Poisson stream of takers. Floats
// are fine here: these are pricing-model outputs, rounded onto the tick grid before they become
// orders, exactly as a client's bot would send them.
import { AMOUNT_SCALE, PRICE_SCALE, roundToTick, stepTick, type Instrument } from '../domain/instrument.ts';
import { coinPrice } from '../domain/pricing.ts';

const UNIT = 10 ** PRICE_SCALE;

export interface Level {
  /** Price units (10^-4 coin). */
  price: number;
  /** Amount at 10^-AMOUNT_SCALE (a multiple of the instrument's lot). */
  lots: number;
}

export interface Ladder {
  bids: Level[];
  asks: Level[];
}

export interface LadderInput {
  inst: Instrument;
  /** Index (USD), years to expiry and the smile's vol (decimal) for this strike. */
  F: number;
  T: number;
  iv: number;
  /** The order band in price units. */
  minPrice: number;
  maxPrice: number;
  levels: number;
  /** A number in [0, 1): jitters the sizes so the books do not look machine-made. */
  jitter: () => number;
}

/**
 * Vol points between levels: one point at the money, wider away from it (|ln K/F|) and further out
 * in time, so spreads widen in the wings and in the long expiries as a real maker's do.
 */
export function volStep(F: number, K: number, T: number): number {
  return 0.01 + 0.04 * Math.abs(Math.log(K / F)) + 0.01 * Math.sqrt(Math.max(T, 0));
}

/**
 * The ladder of one series: level i bids at iv - i*step and asks at iv + i*step, priced with
 * Black-76 and rounded outward onto the tick grid; each level at least a tick beyond the one
 * before, bids at least a tick below asks, and all inside the band (a cheap wing whose bids would
 * fall below the band is laddered up from its floor, and asks past its ceiling down from it). Sizes grow with the level and away
 * from the money, and shrink with time to expiry.
 */
export function quoteLadder(q: LadderInput): Ladder {
  const { inst, F, T, iv } = q;
  const K = inst.strike;
  const step = volStep(F, K, T);
  const price = (vol: number) => coinPrice(inst.optionType, F, K, T, Math.max(vol, 0.05)) * UNIT;
  const bidPrices: number[] = [];
  const askPrices: number[] = [];
  for (let i = 1; i <= q.levels; i++) {
    let bid = roundToTick(inst, price(iv - i * step), 'down');
    let ask = roundToTick(inst, price(iv + i * step), 'up');
    if (i > 1) bid = Math.min(bid, stepTick(inst, bidPrices[i - 2], -1));
    if (i > 1) ask = Math.max(ask, stepTick(inst, askPrices[i - 2], 1));
    bidPrices.push(bid);
    askPrices.push(ask);
  }
  // the cheap wings: a ladder that falls below the band climbs from the band's floor
  const floor = roundToTick(inst, Math.max(q.minPrice, inst.tick), 'up');
  if (bidPrices[q.levels - 1] < floor) {
    bidPrices[q.levels - 1] = floor;
    for (let i = q.levels - 2; i >= 0; i--) bidPrices[i] = Math.max(bidPrices[i], stepTick(inst, bidPrices[i + 1], 1));
  }
  // asks strictly above the best bid, each a tick beyond the one before
  askPrices[0] = Math.max(askPrices[0], stepTick(inst, bidPrices[0], 1));
  for (let i = 1; i < q.levels; i++) askPrices[i] = Math.max(askPrices[i], stepTick(inst, askPrices[i - 1], 1));
  // and a ladder that climbs past the band's ceiling (a long-dated wing) comes down from it
  const ceiling = roundToTick(inst, q.maxPrice, 'down');
  if (askPrices[q.levels - 1] > ceiling) {
    askPrices[q.levels - 1] = ceiling;
    for (let i = q.levels - 2; i >= 0; i--) askPrices[i] = Math.min(askPrices[i], stepTick(inst, askPrices[i + 1], -1));
  }
  const moneyness = Math.abs(Math.log(K / F));
  const size = (i: number) => {
    // contracts: a few at the money, more in the wings and deeper in the book, fewer far out in time
    const contracts = (1 + i) * (1 + 3 * moneyness) * (0.6 + 0.8 * q.jitter()) / (1 + T);
    const minLots = inst.lotScaled / 10 ** AMOUNT_SCALE;
    return Math.max(1, Math.round(contracts / minLots)) * inst.lotScaled;
  };
  const bids: Level[] = [];
  const asks: Level[] = [];
  for (let i = 0; i < q.levels; i++) {
    if (bidPrices[i] >= floor && bidPrices[i] <= q.maxPrice) bids.push({ price: bidPrices[i], lots: size(i + 1) });
    if (askPrices[i] <= q.maxPrice && askPrices[i] >= q.minPrice) asks.push({ price: askPrices[i], lots: size(i + 1) });
  }
  return { bids, asks };
}

/** The wait (ms) before the next taker of a Poisson stream of `perSecond` arrivals: exponential. */
export function poissonGapMs(rnd: () => number, perSecond: number): number {
  return (-Math.log(1 - rnd()) / perSecond) * 1000;
}
