// Candles of public trades: `get_tradingview_chart_data` (marketHistory.ts), the `chart.trades`
// channel (src/api/ws) and the stream events' running candles (src/api/ws/streamEvents.ts) fold
// trades the same way, here.
import { lotsToAmount, priceToNumber, type Instrument } from '../../domain/instrument.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { Trade } from '../../engine/types.ts';
import { coin } from '../render.ts';

/** TradingView resolutions in minutes (`1D` is a day); also the `chart.trades` channel's. */
export const RESOLUTIONS: Record<string, number> = { '1': 1, '3': 3, '5': 5, '10': 10, '15': 15, '30': 30, '60': 60, '120': 120, '180': 180, '360': 360, '720': 720, '1D': 1440 };

/** One candle of trades (Deribit `chart.trades` data; a column of `get_tradingview_chart_data`). */
export interface Candle {
  tick: number;
  open: number;
  high: number;
  low: number;
  close: number;
  /** contracts */
  volume: number;
  /** USD value of the volume at each trade's index */
  cost: number;
}

/** Candles of `width` ms from trades in time order, one per bucket that holds trades. */
export function foldCandles(inst: Instrument, trades: Iterable<Trade>, width: number): Candle[] {
  const out: Candle[] = [];
  let c: Candle | null = null;
  for (const t of trades) {
    const bucket = Math.floor(t.ts / width) * width;
    const price = priceToNumber(t.price);
    const amount = lotsToAmount(inst, t.lots);
    const usd = Number.isFinite(t.indexPrice) ? amount * price * t.indexPrice : 0;
    if (c === null || bucket !== c.tick) {
      c = { tick: bucket, open: price, high: price, low: price, close: price, volume: amount, cost: coin(usd, 2) ?? 0 };
      out.push(c);
    } else extendCandle(c, price, amount, usd);
  }
  return out;
}

function extendCandle(c: Candle, price: number, amount: number, usd: number): void {
  c.high = Math.max(c.high, price);
  c.low = Math.min(c.low, price);
  c.close = price;
  c.volume = coin(c.volume + amount) ?? 0;
  c.cost = coin(c.cost + usd, 2) ?? 0;
}

/** Folds one more trade of `c`'s bucket into it, exactly as foldCandles does (the NATS events keep
 * each instrument's latest candles this way instead of scanning the bucket's trades per batch). */
export function foldTradeInto(inst: Instrument, c: Candle, t: Trade): void {
  const price = priceToNumber(t.price);
  const amount = lotsToAmount(inst, t.lots);
  extendCandle(c, price, amount, Number.isFinite(t.indexPrice) ? amount * price * t.indexPrice : 0);
}

/** The candle of the bucket starting at `tick` (null without trades in it): scans back from the
 * newest trade, so it costs the trades of that bucket and those after it, not the whole history. */
export function candleAt(ex: Exchange, inst: Instrument, tick: number, width: number): Candle | null {
  const trades = ex.markets.get(inst.id)!.trades;
  let k = trades.length;
  while (k > 0 && trades[k - 1].ts >= tick) k--;
  const inBucket: Trade[] = [];
  for (let j = k; j < trades.length && trades[j].ts < tick + width; j++) inBucket.push(trades[j]);
  return foldCandles(inst, inBucket, width)[0] ?? null;
}
