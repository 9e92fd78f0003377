// Per-instrument market state derived from index, vol smile and time: mark IV, mark price and the
// order price band (API.md 7.2). Pure functions over the engine's InstrumentMarket records.
import { PRICE_SCALE, type Instrument } from '../domain/instrument.ts';
import { yearFraction } from '../domain/pricing.ts';
import type { InstrumentMarket, VolState } from '../domain/market.ts';
import { bandTicks, markIv, markPriceCoin } from './smile.ts';

const UNIT = 10 ** PRICE_SCALE;

export function computeMarket<T = never>(inst: Instrument, index: number, vol: VolState, now: number): InstrumentMarket<T> {
  const m: InstrumentMarket<T> = {
    inst,
    markCoin: NaN,
    markIv: NaN,
    minPrice: 0,
    maxPrice: 0,
    lastPrice: null,
    tradeSeq: 0,
    trades: [],
    changeId: 0,
    imCache: emptyImCache(),
  };
  refreshMarket(m, index, vol, now);
  return m;
}

/** An IM cache that matches no index (NaN equals nothing), so the first use computes it. */
export function emptyImCache(): InstrumentMarket['imCache'] {
  return { index: NaN, mark: NaN, perContract: NaN };
}

export function refreshMarket(m: InstrumentMarket, index: number, vol: VolState, now: number): void {
  const inst = m.inst;
  if (!(index > 0)) {
    m.markCoin = NaN;
    m.markIv = NaN;
    m.minPrice = 0;
    m.maxPrice = 0;
    return;
  }
  const T = Math.max(yearFraction(now, inst.expiry), 0);
  const iv = markIv(vol, index, inst.strike);
  const mark = markPriceCoin(inst.optionType, index, inst.strike, T, iv);
  m.markIv = iv;
  m.markCoin = mark;
  const band = bandTicks(mark, inst.tick / UNIT);
  m.minPrice = Math.max(inst.tick, band.minTicks * inst.tick);
  m.maxPrice = band.maxTicks * inst.tick;
}
