// Public trade history (API.md 3.5): the get_last_trades_by_* methods, by instrument or currency,
// a combo's own trades among them (comboMarketData.ts).
import { Type } from '@sinclair/typebox';
import type { CurrencyCode } from '../../domain/currency.ts';
import { ERR, reject } from '../../domain/errors.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { Trade } from '../../engine/types.ts';
import { renderPublicTrade } from '../render.ts';
import { defineMethod } from '../rpc/registry.ts';
import { Count, CurrencyParam, InstrumentName, KindParam, Timestamp } from './common.ts';
import { comboOf, comboTradeRows, currencyComboTrades, renderComboTrade, type ComboTradeRow } from './comboMarketData.ts';
import { instrumentOrReject } from './bookReads.ts';

const Sorting = Type.Union([Type.Literal('asc'), Type.Literal('desc'), Type.Literal('default')], { default: 'default' });
/** The params every trade query ends with, in this order (the docs page and OpenAPI list them so). */
const TRADE_PAGE = { end_timestamp: Type.Optional(Timestamp), count: Count(10), sorting: Sorting, include_old: Type.Optional(Type.Boolean()) };

interface TradeQuery {
  startTs?: number;
  endTs?: number;
  startSeq?: number;
  endSeq?: number;
  startId?: number;
  endId?: number;
  count: number;
  sorting: 'asc' | 'desc' | 'default';
}

/** Deribit's public trade selection: the latest `count` matches (the earliest with `asc`); `render`
 * makes each picked one's public object (a combo trade's differs from a leg trade's). */
function selectTrades<T extends { ts: number; seq: number; id: number }>(trades: T[], q: TradeQuery, render: (t: T) => Record<string, unknown>): { trades: Record<string, unknown>[]; has_more: boolean } {
  const match = trades.filter(
    (t) =>
      (q.startTs === undefined || t.ts >= q.startTs) &&
      (q.endTs === undefined || t.ts <= q.endTs) &&
      (q.startSeq === undefined || t.seq >= q.startSeq) &&
      (q.endSeq === undefined || t.seq <= q.endSeq) &&
      (q.startId === undefined || t.id >= q.startId) &&
      (q.endId === undefined || t.id <= q.endId),
  );
  const asc = q.sorting === 'asc';
  const picked = asc ? match.slice(0, q.count) : match.slice(-q.count).reverse();
  return { trades: picked.map(render), has_more: match.length > q.count };
}

/**
 * The public trades of a currency a `kind` selects: option (or any, or none given) the leg trades, a
 * combo fill's legs among them; option_combo (or combo) the combo trades themselves; other kinds none.
 */
function currencyTradesSelected(ex: Exchange, currency: CurrencyCode, kind: string | undefined, q: TradeQuery): { trades: Record<string, unknown>[]; has_more: boolean } {
  if (kind === 'option_combo' || kind === 'combo') return selectTrades(currencyComboTrades(ex, currency), q, (row) => renderComboTrade(ex, row));
  return selectTrades(currencyTrades(ex, currency, kind), q, renderPublicTrade);
}

/** The trades of an instrument or a combo (its combo trades); unknown: 10020. */
function instrumentTradesSelected(ex: Exchange, name: string, q: TradeQuery): { trades: Record<string, unknown>[]; has_more: boolean } {
  const r = comboOf(ex, name);
  if (r !== undefined) return selectTrades<ComboTradeRow>(comboTradeRows(ex, r), q, (row) => renderComboTrade(ex, row));
  const inst = instrumentOrReject(ex, name);
  return selectTrades(ex.markets.get(inst.id)!.trades, q, renderPublicTrade);
}

function currencyTrades(ex: Exchange, currency: CurrencyCode, kind: string | undefined): Trade[] {
  if (kind !== undefined && kind !== 'option' && kind !== 'any') return [];
  const all: Trade[] = [];
  for (const m of ex.markets.values()) if (m.inst.currency === currency) all.push(...m.trades);
  return all.sort((a, b) => a.id - b.id);
}

function tradeIdParam(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const m = /^(?:[A-Z]+-)?(\d{1,15})$/.exec(v);
  if (!m) throw reject(ERR.INVALID_PARAMS, 'trade_id_invalid', 'start_id');
  return Number(m[1]);
}

export const lastTradesByInstrumentMethod = defineMethod({
  name: 'public/get_last_trades_by_instrument',
  scope: 'none',
  params: Type.Object({
    instrument_name: InstrumentName,
    start_seq: Type.Optional(Type.Integer({ minimum: 0 })),
    end_seq: Type.Optional(Type.Integer({ minimum: 0 })),
    start_timestamp: Type.Optional(Timestamp),
    ...TRADE_PAGE,
  }),
  handler(ctx, p) {
    const ex = ctx.services.ex;
    return ctx.services.seq.read(() =>
      instrumentTradesSelected(ex, p.instrument_name, { startSeq: p.start_seq, endSeq: p.end_seq, startTs: p.start_timestamp, endTs: p.end_timestamp, count: p.count, sorting: p.sorting }),
    );
  },
});

export const lastTradesByInstrumentAndTimeMethod = defineMethod({
  name: 'public/get_last_trades_by_instrument_and_time',
  scope: 'none',
  params: Type.Object({
    instrument_name: InstrumentName,
    start_timestamp: Timestamp,
    ...TRADE_PAGE,
  }),
  handler(ctx, p) {
    const ex = ctx.services.ex;
    return ctx.services.seq.read(() => instrumentTradesSelected(ex, p.instrument_name, { startTs: p.start_timestamp, endTs: p.end_timestamp ?? ex.now, count: p.count, sorting: p.sorting }));
  },
});

export const lastTradesByCurrencyMethod = defineMethod({
  name: 'public/get_last_trades_by_currency',
  scope: 'none',
  params: Type.Object({
    currency: CurrencyParam,
    kind: KindParam,
    start_id: Type.Optional(Type.String({ maxLength: 32 })),
    end_id: Type.Optional(Type.String({ maxLength: 32 })),
    start_timestamp: Type.Optional(Timestamp),
    ...TRADE_PAGE,
  }),
  handler(ctx, p) {
    const ex = ctx.services.ex;
    const startId = tradeIdParam(p.start_id);
    const endId = tradeIdParam(p.end_id);
    return ctx.services.seq.read(() =>
      currencyTradesSelected(ex, p.currency as CurrencyCode, p.kind, { startId, endId, startTs: p.start_timestamp, endTs: p.end_timestamp, count: p.count, sorting: p.sorting }),
    );
  },
});

export const lastTradesByCurrencyAndTimeMethod = defineMethod({
  name: 'public/get_last_trades_by_currency_and_time',
  scope: 'none',
  params: Type.Object({
    currency: CurrencyParam,
    kind: KindParam,
    start_timestamp: Timestamp,
    ...TRADE_PAGE,
  }),
  handler(ctx, p) {
    const ex = ctx.services.ex;
    return ctx.services.seq.read(() =>
      currencyTradesSelected(ex, p.currency as CurrencyCode, p.kind, { startTs: p.start_timestamp, endTs: p.end_timestamp ?? ex.now, count: p.count, sorting: p.sorting }),
    );
  },
});
