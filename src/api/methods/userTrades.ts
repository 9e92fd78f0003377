// User-trade queries of the trading group (API.md 3.3): the get_user_trades_by_* methods, the caller's
// or a subaccount's (actingFor.ts) own trades by currency, instrument, time or order, paged.
import { Type } from '@sinclair/typebox';
import type { CurrencyCode } from '../../domain/currency.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { tradeIdsOf, type Trade, type User } from '../../engine/types.ts';
import { parseOrderId, renderUserTrade } from '../render.ts';
import { SubaccountId, readFor } from './actingFor.ts';
import { defineMethod } from '../rpc/registry.ts';
import { Count, CurrencyParam, InstrumentName, KindParam, Timestamp, currencyFilter } from './common.ts';

/** Deribit `kind` filters: only options are listed here, so any other kind selects nothing. */
function optionKind(kind: string | undefined): boolean {
  return kind === undefined || kind === 'option' || kind === 'any';
}

const Sorting = Type.Union([Type.Literal('asc'), Type.Literal('desc'), Type.Literal('default')], { default: 'default' });

interface TradeQuery {
  currency?: CurrencyCode | null;
  instrument?: string;
  start_timestamp?: number;
  end_timestamp?: number;
  start_id?: number;
  end_id?: number;
  start_seq?: number;
  end_seq?: number;
  count: number;
  sorting: 'asc' | 'desc' | 'default';
}

function queryTrades(user: User, q: TradeQuery) {
  const matches: Trade[] = [];
  for (const t of user.trades) {
    if (q.currency && t.inst.currency !== q.currency) continue;
    if (q.instrument !== undefined && t.inst.name !== q.instrument) continue;
    if (q.start_timestamp !== undefined && t.ts < q.start_timestamp) continue;
    if (q.end_timestamp !== undefined && t.ts > q.end_timestamp) continue;
    if (q.start_id !== undefined && t.id < q.start_id) continue;
    if (q.end_id !== undefined && t.id > q.end_id) continue;
    if (q.start_seq !== undefined && t.seq < q.start_seq) continue;
    if (q.end_seq !== undefined && t.seq > q.end_seq) continue;
    matches.push(t);
  }
  const asc = q.sorting === 'asc';
  if (!asc) matches.reverse();
  const page = matches.slice(0, q.count);
  return { trades: page.map((t) => renderUserTrade(t, user.id)), has_more: matches.length > q.count };
}

const TradeIdParam = Type.String({ pattern: '^[0-9]{1,15}$' });
function tradeId(s: string | undefined): number | undefined {
  return s === undefined ? undefined : Number(s);
}

export const userTradeMethods = [
  defineMethod({
    name: 'public/get_user_trades_by_currency',
    aliases: ['private/get_user_trades_by_currency'],
    scope: 'trade:read',
    params: Type.Object({
      currency: CurrencyParam,
      kind: KindParam,
      start_id: Type.Optional(TradeIdParam),
      end_id: Type.Optional(TradeIdParam),
      start_timestamp: Type.Optional(Timestamp),
      end_timestamp: Type.Optional(Timestamp),
      count: Count(10),
      sorting: Sorting,
      subaccount_id: SubaccountId,
    }),
    handler(ctx, p) {
      if (!optionKind(p.kind)) return { trades: [], has_more: false };
      return ctx.services.seq.read(() =>
        queryTrades(readFor(ctx, p.subaccount_id), { ...p, currency: currencyFilter(p.currency), start_id: tradeId(p.start_id), end_id: tradeId(p.end_id) }),
      );
    },
  }),
  defineMethod({
    name: 'public/get_user_trades_by_currency_and_time',
    aliases: ['private/get_user_trades_by_currency_and_time'],
    scope: 'trade:read',
    params: Type.Object({
      currency: CurrencyParam,
      kind: KindParam,
      start_timestamp: Timestamp,
      end_timestamp: Type.Optional(Timestamp),
      count: Count(10),
      sorting: Sorting,
      subaccount_id: SubaccountId,
    }),
    handler(ctx, p) {
      if (!optionKind(p.kind)) return { trades: [], has_more: false };
      return ctx.services.seq.read(() =>
        queryTrades(readFor(ctx, p.subaccount_id), { ...p, currency: currencyFilter(p.currency), end_timestamp: p.end_timestamp ?? ctx.services.clock.now() }),
      );
    },
  }),
  defineMethod({
    name: 'public/get_user_trades_by_instrument',
    aliases: ['private/get_user_trades_by_instrument'],
    scope: 'trade:read',
    params: Type.Object({
      instrument_name: InstrumentName,
      start_seq: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 52 })),
      end_seq: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 52 })),
      start_timestamp: Type.Optional(Timestamp),
      end_timestamp: Type.Optional(Timestamp),
      count: Count(10),
      sorting: Sorting,
      subaccount_id: SubaccountId,
    }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => {
        if (!ctx.services.ex.instruments.has(p.instrument_name)) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
        return queryTrades(readFor(ctx, p.subaccount_id), { ...p, instrument: p.instrument_name });
      });
    },
  }),
  defineMethod({
    name: 'public/get_user_trades_by_instrument_and_time',
    aliases: ['private/get_user_trades_by_instrument_and_time'],
    scope: 'trade:read',
    params: Type.Object({
      instrument_name: InstrumentName,
      start_timestamp: Timestamp,
      end_timestamp: Type.Optional(Timestamp),
      count: Count(10),
      sorting: Sorting,
      subaccount_id: SubaccountId,
    }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => {
        if (!ctx.services.ex.instruments.has(p.instrument_name)) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
        return queryTrades(readFor(ctx, p.subaccount_id), { ...p, instrument: p.instrument_name, end_timestamp: p.end_timestamp ?? ctx.services.clock.now() });
      });
    },
  }),
  defineMethod({
    name: 'public/get_user_trades_by_order',
    aliases: ['private/get_user_trades_by_order'],
    scope: 'trade:read',
    params: Type.Object({ order_id: Type.String({ minLength: 1, maxLength: 32 }), sorting: Sorting, subaccount_id: SubaccountId }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => {
        const user = readFor(ctx, p.subaccount_id);
        const id = parseOrderId(p.order_id);
        const order = id === null ? undefined : user.orders.get(id);
        if (!order) throw reject(ERR.ORDER_NOT_FOUND, undefined, 'order_id');
        const ids = new Set(tradeIdsOf(order));
        const trades = user.trades.filter((t) => ids.has(t.id));
        if (p.sorting !== 'asc') trades.reverse();
        return trades.map((t) => renderUserTrade(t, user.id));
      });
    },
  }),
];
