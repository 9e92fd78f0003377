// Volatility reads (Deribit): realized volatility of the index (`public/get_historical_volatility`)
// and a DVOL-like implied-volatility index computed from Strikebook's own marks
// (`public/get_volatility_index_data`, src/market/volIndex.ts). Both are read models
// (src/views/marketViews.ts) rebuilt by replay; docs/api-notes.md says how each is computed.
import { Type } from '@sinclair/typebox';
import { ERR, reject } from '../../domain/errors.ts';
import type { CurrencyCode } from '../../domain/currency.ts';
import { defineMethod } from '../rpc/registry.ts';
import { Timestamp } from './common.ts';

const OptionCurrency = Type.Union([Type.Literal('BTC'), Type.Literal('ETH')]);
/** Deribit's resolutions, in seconds; the index is sampled per minute, so `1` gives minute candles. */
const RESOLUTION_MS: Record<string, number> = { '1': 60_000, '60': 60_000, '3600': 3_600_000, '43200': 43_200_000, '1D': 86_400_000 };
/** Candles per call; `continuation` pages further back. */
export const MAX_VOL_CANDLES = 1000;

const round = (x: number, d: number) => Number(x.toFixed(d));

export const volatilityMethods = [
  defineMethod({
    name: 'public/get_historical_volatility',
    scope: 'none',
    summary: 'Realized volatility of the currency\'s index in percent a year, [[timestamp, value]] ascending, one point per full hour of the last 15 days: the root mean square of the hour\'s 60 minute log returns, annualised over 365 days.',
    params: Type.Object({ currency: OptionCurrency }),
    handler(ctx, p) {
      const s = ctx.services;
      return s.seq.read(() => s.views.historicalVolatility(p.currency as CurrencyCode, s.ex.now).map(([t, v]) => [t, round(v, 4)]));
    },
  }),
  defineMethod({
    name: 'public/get_volatility_index_data',
    scope: 'none',
    summary: `A 30-day implied-volatility index (like Deribit's DVOL) from Strikebook's marks by the VIX method, in percent: {data: [[timestamp, open, high, low, close]], continuation}. resolution in seconds (1, 60, 3600, 43200, 1D; sampled per minute). At most ${MAX_VOL_CANDLES} candles, the latest in the range; continuation (when more) is the end_timestamp of the next page.`,
    params: Type.Object({
      currency: OptionCurrency,
      start_timestamp: Timestamp,
      end_timestamp: Timestamp,
      resolution: Type.Union([Type.Literal('1'), Type.Literal('60'), Type.Literal('3600'), Type.Literal('43200'), Type.Literal('1D')]),
    }),
    handler(ctx, p) {
      const s = ctx.services;
      if (p.end_timestamp < p.start_timestamp) throw reject(ERR.INVALID_ARGUMENTS, 'end_before_start', 'end_timestamp');
      const width = RESOLUTION_MS[p.resolution];
      return s.seq.read(() => {
        const candles: number[][] = [];
        for (const [ts, o, h, l, c] of s.views.volIndexMinutes(p.currency as CurrencyCode, p.start_timestamp, p.end_timestamp)) {
          const tick = Math.floor(ts / width) * width;
          const last = candles[candles.length - 1];
          if (last && last[0] === tick) {
            last[2] = Math.max(last[2], h);
            last[3] = Math.min(last[3], l);
            last[4] = c;
          } else candles.push([tick, o, h, l, c]);
        }
        const more = candles.length > MAX_VOL_CANDLES;
        const page = more ? candles.slice(-MAX_VOL_CANDLES) : candles;
        return { data: page.map(([t, ...v]) => [t, ...v.map((x) => round(x, 2))]), continuation: more ? page[0][0] - 1 : null };
      });
    },
  }),
];
