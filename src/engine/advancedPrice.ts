// The price of an `advanced` limit order (API.md 3.3): given in USD or as implied volatility and
// converted to coin on the instrument's tick grid before order entry checks it (src/engine/trading.ts).
import { ERR, reject, type Reject } from '../domain/errors.ts';
import { PRICE_SCALE, roundToTick, type Instrument } from '../domain/instrument.ts';
import { black76Price, yearFraction } from '../domain/pricing.ts';
import type { Exchange } from './exchange.ts';
import { BUY, type Side } from './orderBook.ts';

const PRICE_UNIT = 10 ** PRICE_SCALE;

/** `advanced` orders give the price in USD or as implied vol (%); converted to coin on the grid. */
export function convertAdvancedPrice(ex: Exchange, inst: Instrument, advanced: 'usd' | 'implv', value: number, side: Side): number | Reject {
  if (!(value > 0) || !Number.isFinite(value)) return reject(ERR.INVALID_PRICE, 'price_not_positive', 'price');
  const F = ex.indexPrice(inst.currency);
  let coin: number;
  if (advanced === 'usd') coin = value / F;
  else {
    const T = yearFraction(ex.now, inst.expiry);
    coin = black76Price(inst.optionType, F, inst.strike, T, value / 100) / F;
  }
  const units = coin * PRICE_UNIT;
  if (!Number.isFinite(units) || units > 1e9) return reject(ERR.INVALID_PRICE, 'price_out_of_range', 'price');
  // round towards the passive side: never a worse price than the client asked for
  const rounded = roundToTick(inst, units, side === BUY ? 'down' : 'up');
  return rounded > 0 ? rounded : inst.tick;
}
