// Market history (API.md 3.5): mark price history, trade volumes and TradingView candles.
import { Type } from '@sinclair/typebox';
import { ERR, reject } from '../../domain/errors.ts';
import { defineMethod } from '../rpc/registry.ts';
import { InstrumentName, Timestamp } from './common.ts';
import { RESOLUTIONS, foldCandles } from './candles.ts';
import { DAY_MS, fin, instrumentOrReject } from './bookReads.ts';
import { optionCurrencies } from './instrumentListing.ts';

const MAX_MARK_HISTORY_RANGE_MS = 7 * DAY_MS;

const contracts = (scaled: number) => Number((scaled / 1e8).toFixed(8));

export const markPriceHistoryMethod = defineMethod({
  name: 'public/get_mark_price_history',
  scope: 'none',
  params: Type.Object({ instrument_name: InstrumentName, start_timestamp: Timestamp, end_timestamp: Timestamp }),
  handler(ctx, p) {
    const s = ctx.services;
    if (p.end_timestamp < p.start_timestamp) throw reject(ERR.INVALID_ARGUMENTS, 'end_before_start', 'end_timestamp');
    if (p.end_timestamp - p.start_timestamp > MAX_MARK_HISTORY_RANGE_MS) throw reject(ERR.INVALID_ARGUMENTS, 'range_over_7_days', 'end_timestamp');
    return s.seq.read(() => {
      const inst = instrumentOrReject(s.ex, p.instrument_name);
      return s.views.markHistory(inst.id, p.start_timestamp, p.end_timestamp).map(([ts, mark]) => [ts, fin(mark)]);
    });
  },
});

export const tradeVolumesMethod = defineMethod({
  name: 'public/get_trade_volumes',
  scope: 'none',
  params: Type.Object({ extended: Type.Boolean({ default: false }) }),
  handler(ctx, p) {
    const s = ctx.services;
    return s.seq.read(() =>
      optionCurrencies(s, null).map((c) => {
        const v = s.views.tradeVolumes(c, s.ex.now);
        const out: Record<string, unknown> = { currency: c, calls_volume: contracts(v.calls[0]), puts_volume: contracts(v.puts[0]), futures_volume: 0, spot_volume: 0 };
        if (p.extended) {
          Object.assign(out, {
            calls_volume_7d: contracts(v.calls[1]),
            puts_volume_7d: contracts(v.puts[1]),
            futures_volume_7d: 0,
            spot_volume_7d: 0,
            calls_volume_30d: contracts(v.calls[2]),
            puts_volume_30d: contracts(v.puts[2]),
            futures_volume_30d: 0,
            spot_volume_30d: 0,
          });
        }
        return out;
      }),
    );
  },
});

export const tradingviewChartDataMethod = defineMethod({
  name: 'public/get_tradingview_chart_data',
  scope: 'none',
  params: Type.Object({
    instrument_name: InstrumentName,
    start_timestamp: Timestamp,
    end_timestamp: Timestamp,
    resolution: Type.Union([Type.Integer({ minimum: 1, maximum: 1440 }), Type.String({ maxLength: 4 })]),
  }),
  handler(ctx, p) {
    const ex = ctx.services.ex;
    const minutes = RESOLUTIONS[String(p.resolution)];
    if (minutes === undefined) throw reject(ERR.INVALID_PARAMS, 'resolution_invalid', 'resolution');
    const width = minutes * 60_000;
    return ctx.services.seq.read(() => {
      const inst = instrumentOrReject(ex, p.instrument_name);
      const out = { ticks: [] as number[], open: [] as number[], high: [] as number[], low: [] as number[], close: [] as number[], volume: [] as number[], cost: [] as number[], status: 'ok' };
      const trades = ex.markets.get(inst.id)!.trades.filter((t) => t.ts >= p.start_timestamp && t.ts <= p.end_timestamp);
      for (const c of foldCandles(inst, trades, width)) {
        out.ticks.push(c.tick);
        out.open.push(c.open);
        out.high.push(c.high);
        out.low.push(c.low);
        out.close.push(c.close);
        out.volume.push(c.volume);
        out.cost.push(c.cost);
      }
      if (out.ticks.length === 0) out.status = 'no_data';
      return out;
    });
  },
});
