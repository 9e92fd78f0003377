// Index prices and new instruments: the `index` command (a feed's bad-tick bound, the TWAP history,
// marks) and `list` (each new series with its order book and first mark).
import type { CurrencyCode } from '../domain/currency.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Instrument } from '../domain/instrument.ts';
import { computeMarket } from '../market/marks.ts';
import type { InstrumentSpec } from './commands.ts';
import type { Exchange } from './exchange.ts';
import { OrderBook } from './orderBook.ts';
import { recordIndex } from './settlement.ts';
import type { IndexState } from './types.ts';

export function setIndex(ex: Exchange, currency: CurrencyCode, price: number, manual: boolean): IndexState | Reject {
  if (!(price > 0) || !Number.isFinite(price)) return reject(ERR.INVALID_ARGUMENTS, 'index_price_invalid', 'price');
  const prev = ex.index[currency];
  // a feed's jump beyond the bound is a bad print, not a market move; admins may set anything
  if (!manual && prev && !prev.manual && Math.abs(price - prev.price) > ex.limits.maxIndexJump * prev.price) {
    return reject(ERR.INVALID_ARGUMENTS, 'index_jump_too_large', 'price');
  }
  ex.index[currency] = { price, ts: ex.now, manual };
  recordIndex(ex, currency, ex.now, price);
  ex.triggers.indexMoved(currency);
  if (!ex.vol[currency]) ex.vol[currency] = { atmVol: 0.6, skew: -0.1, curvature: 0.5 };
  ex.refreshMarks(currency);
  return ex.index[currency];
}

export function listInstruments(ex: Exchange, specs: InstrumentSpec[]): Instrument[] {
  const out: Instrument[] = [];
  for (const s of specs) {
    if (ex.instruments.has(s.name)) continue;
    const inst: Instrument = {
      id: ex.nextInstrumentId++,
      name: s.name,
      currency: s.currency,
      optionType: s.optionType,
      strike: s.strike,
      expiry: s.expiry,
      created: ex.now,
      settlementPeriod: s.settlementPeriod,
      contractSize: s.contractSize,
      tick: s.tick,
      tickSteps: s.tickSteps,
      lotScaled: s.lotScaled,
      makerCommission: s.makerCommission,
      takerCommission: s.takerCommission,
      state: 'open',
      halted: false,
      deliveryPrice: null,
    };
    ex.instruments.set(inst.name, inst);
    ex.instrumentsById.set(inst.id, inst);
    ex.books.set(inst.id, new OrderBook());
    const idx = ex.index[inst.currency];
    const vol = ex.vol[inst.currency] ?? { atmVol: 0.6, skew: -0.1, curvature: 0.5 };
    ex.markets.set(inst.id, computeMarket(inst, idx ? idx.price : NaN, vol, ex.now));
    out.push(inst);
  }
  return out;
}
