// Market data basics that clients need from day one: instruments, books, index, time, status.
// (The full Market data group, tickers and history build on these.)
import { Type } from '@sinclair/typebox';
import { CURRENCIES, CURRENCY_CODES, type CurrencyCode } from '../../domain/currency.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { priceToNumber, type Instrument } from '../../domain/instrument.ts';
import { BUY, SELL } from '../../engine/orderBook.ts';
import type { Services } from '../../app/services.ts';
import { coin, renderInstrument } from '../render.ts';
import { defineMethod } from '../rpc/registry.ts';
import { CurrencyOrAny, InstrumentName, currencyFilter } from './common.ts';

export const SERVER_VERSION = '0.1.0';

function instrumentOrReject(s: Services, name: string): Instrument {
  const inst = s.ex.instruments.get(name);
  if (!inst) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
  return inst;
}

export function renderOrderBook(s: Services, inst: Instrument, depth: number) {
  const book = s.ex.books.get(inst.id)!;
  const m = s.ex.markets.get(inst.id)!;
  const bids = book.depth(BUY, depth).map(([p, q]) => [priceToNumber(p), lotsAmount(inst, q)]);
  const asks = book.depth(SELL, depth).map(([p, q]) => [priceToNumber(p), lotsAmount(inst, q)]);
  const index = s.ex.indexPrice(inst.currency);
  return {
    instrument_name: inst.name,
    timestamp: s.ex.now,
    state: inst.state,
    change_id: m.changeId,
    bids,
    asks,
    best_bid_price: bids.length ? bids[0][0] : 0,
    best_bid_amount: bids.length ? bids[0][1] : 0,
    best_ask_price: asks.length ? asks[0][0] : 0,
    best_ask_amount: asks.length ? asks[0][1] : 0,
    last_price: m.lastPrice === null ? null : priceToNumber(m.lastPrice),
    mark_price: coin(m.markCoin),
    mark_iv: Number.isFinite(m.markIv) ? Number((m.markIv * 100).toFixed(2)) : null,
    index_price: Number.isFinite(index) ? index : null,
    underlying_price: Number.isFinite(index) ? index : null,
    underlying_index: 'index_price',
    interest_rate: 0,
    min_price: priceToNumber(m.minPrice),
    max_price: priceToNumber(m.maxPrice),
    settlement_price: null,
  };
}

function lotsAmount(inst: Instrument, lots: number): number {
  return Number(((lots * inst.lotScaled) / 1e8).toFixed(8));
}

export const marketMethods = [
  defineMethod({
    name: 'public/get_instruments',
    scope: 'none',
    params: Type.Object({
      currency: Type.Union([CurrencyOrAny], { default: 'any' }),
      kind: Type.Optional(Type.String({ maxLength: 32 })),
      expired: Type.Boolean({ default: false }),
    }),
    handler(ctx, p) {
      const s = ctx.services;
      const cur = currencyFilter(p.currency);
      return s.seq.read(() => {
        if (p.kind !== undefined && p.kind !== 'option' && p.kind !== 'any') return [];
        const out: Record<string, unknown>[] = [];
        for (const inst of s.ex.instruments.values()) {
          if (cur && inst.currency !== cur) continue;
          if ((inst.state === 'delivered') !== p.expired) continue;
          out.push(renderInstrument(inst));
        }
        return out;
      });
    },
  }),
  defineMethod({
    name: 'public/get_instrument',
    scope: 'none',
    pathParam: 'instrument_name',
    params: Type.Object({ instrument_name: InstrumentName }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => renderInstrument(instrumentOrReject(ctx.services, p.instrument_name)));
    },
  }),
  defineMethod({
    name: 'public/get_order_book',
    scope: 'none',
    pathParam: 'instrument_name',
    params: Type.Object({ instrument_name: InstrumentName, depth: Type.Integer({ minimum: 1, maximum: 10000, default: 20 }) }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => renderOrderBook(ctx.services, instrumentOrReject(ctx.services, p.instrument_name), p.depth));
    },
  }),
  defineMethod({
    name: 'public/get_index_price',
    scope: 'none',
    params: Type.Object({ index_name: Type.Union([Type.Literal('btc_usd'), Type.Literal('eth_usd')]) }),
    handler(ctx, p) {
      const s = ctx.services;
      const c: CurrencyCode = p.index_name === 'btc_usd' ? 'BTC' : 'ETH';
      return s.seq.read(() => {
        const price = s.ex.indexPrice(c);
        return { index_price: Number.isFinite(price) ? price : null, estimated_delivery_price: Number.isFinite(price) ? price : null };
      });
    },
  }),
  defineMethod({
    name: 'public/get_currencies',
    scope: 'none',
    params: Type.Object({}),
    handler() {
      return CURRENCY_CODES.map((c) => ({
        currency: c,
        currency_long: CURRENCIES[c].name,
        decimals: CURRENCIES[c].decimals,
        fee_precision: CURRENCIES[c].decimals,
        min_deposit_amount: 10 ** -CURRENCIES[c].decimals,
        coin_type: CURRENCIES[c].coinType,
        withdrawal_fee: 0,
        min_confirmations: 0,
        withdrawal_priorities: [],
      }));
    },
  }),
  defineMethod({
    name: 'public/get_time',
    scope: 'none',
    params: Type.Object({}),
    handler: (ctx) => ctx.services.clock.now(),
  }),
  defineMethod({
    name: 'public/test',
    scope: 'none',
    params: Type.Object({ expected_result: Type.Optional(Type.String({ maxLength: 32 })) }),
    handler(_ctx, p) {
      if (p.expected_result === 'exception') throw reject(ERR.INTERNAL, 'requested_exception');
      return { version: SERVER_VERSION };
    },
  }),
  defineMethod({
    name: 'public/status',
    scope: 'none',
    params: Type.Object({}),
    handler: () => ({ locked: 'false', locked_indices: [] }),
  }),
];
