// The Market data methods that read books (API.md 3.5): ticker, order books, book summaries and
// contract size; what they compute is in bookReads.ts, cached per engine seq.
import { Type } from '@sinclair/typebox';
import type { CurrencyCode } from '../../domain/currency.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { defineMethod } from '../rpc/registry.ts';
import { seqVersion, sharedRead } from '../reads/sharedReads.ts';
import { CurrencyOrAny, CurrencyParam, InstrumentName, currencyFilter } from './common.ts';
import { activeCombos, comboOf, comboOrderBook, comboSummary, comboTicker } from './comboMarketData.ts';
import { activeInstruments, bookHeader, fin, instrumentOrReject, orderBookOf, summaryOf, tickerOf } from './bookReads.ts';
import { Kind } from './instrumentListing.ts';

export const tickerMethod = defineMethod({
  name: 'public/ticker',
  scope: 'none',
  params: Type.Object({ instrument_name: InstrumentName }),
  handler(ctx, p) {
    const ex = ctx.services.ex;
    return ctx.services.seq.read(() => {
      const r = comboOf(ex, p.instrument_name);
      return r !== undefined ? comboTicker(ex, r, tickerOf) : bookHeader(ex, instrumentOrReject(ex, p.instrument_name));
    });
  },
});

export const allOrderBooksMethod = defineMethod({
  name: 'public/get_all_order_books',
  scope: 'none',
  params: Type.Object({ currency: Type.Union([CurrencyOrAny], { default: 'any' }), depth: Type.Integer({ minimum: 1, maximum: 1000, default: 5 }) }),
  handler(ctx, p) {
    const ex = ctx.services.ex;
    return sharedRead(ctx.services, `all_books:${p.currency}:${p.depth}`, seqVersion, () => activeInstruments(ex, currencyFilter(p.currency)).map((inst) => orderBookOf(ex, inst, p.depth)));
  },
});

export const bookSummaryPerCurrencyMethod = defineMethod({
  name: 'public/get_book_summary_per_currency',
  aliases: ['public/get_book_summary_by_currency'],
  scope: 'none',
  pathParam: 'currency',
  params: Type.Object({ currency: CurrencyParam, kind: Type.Optional(Kind) }),
  handler(ctx, p) {
    const ex = ctx.services.ex;
    const cur = p.currency as CurrencyCode;
    // kind left out: every kind, as Deribit (the options, then the active combos)
    if (p.kind === 'option_combo') return ctx.services.seq.read(() => activeCombos(ex, cur).map((r) => comboSummary(ex, r, tickerOf)));
    if (p.kind !== undefined && p.kind !== 'option' && p.kind !== 'any') return [];
    const withCombos = p.kind === undefined || p.kind === 'any';
    return sharedRead(ctx.services, `summaries:${p.currency}:${withCombos}`, seqVersion, () => {
      const out = activeInstruments(ex, cur).map((inst) => summaryOf(ex, inst));
      if (withCombos) for (const r of activeCombos(ex, cur)) out.push(comboSummary(ex, r, tickerOf));
      return out;
    });
  },
});

export const bookSummaryPerInstrumentMethod = defineMethod({
  name: 'public/get_book_summary_per_instrument',
  aliases: ['public/get_book_summary_by_instrument'],
  scope: 'none',
  pathParam: 'instrument_name',
  params: Type.Object({ instrument_name: InstrumentName }),
  handler(ctx, p) {
    const ex = ctx.services.ex;
    return ctx.services.seq.read(() => {
      const r = comboOf(ex, p.instrument_name);
      return [r !== undefined ? comboSummary(ex, r, tickerOf) : summaryOf(ex, instrumentOrReject(ex, p.instrument_name))];
    });
  },
});

export const contractSizeMethod = defineMethod({
  name: 'public/get_contract_size',
  scope: 'none',
  pathParam: 'instrument_name',
  params: Type.Object({ instrument_name: InstrumentName }),
  handler(ctx, p) {
    const ex = ctx.services.ex;
    return ctx.services.seq.read(() => {
      const r = comboOf(ex, p.instrument_name);
      return { contract_size: r !== undefined ? ex.comboBooks.inst(r).contractSize : instrumentOrReject(ex, p.instrument_name).contractSize };
    });
  },
});

export const orderBookByInstrumentIdMethod = defineMethod({
  name: 'public/get_order_book_by_instrument_id',
  scope: 'none',
  pathParam: 'instrument_id',
  params: Type.Object({ instrument_id: Type.Integer({ minimum: 1, maximum: 2 ** 31 }), depth: Type.Integer({ minimum: 1, maximum: 10000, default: 20 }) }),
  handler(ctx, p) {
    const ex = ctx.services.ex;
    return ctx.services.seq.read(() => {
      const inst = ex.instrumentsById.get(p.instrument_id);
      if (!inst) {
        // a combo takes its instrument id from the same counter
        for (const r of ex.combos.byId.values()) if (r.instrumentId === p.instrument_id) return comboOrderBook(ex, r, p.depth, tickerOf);
        throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_id');
      }
      return orderBookOf(ex, inst, p.depth);
    });
  },
});

export const simplifiedOrderBookMethod = defineMethod({
  name: 'public/get_simplified_order_book',
  scope: 'none',
  pathParam: 'instrument_name',
  params: Type.Object({ instrument_name: InstrumentName, depth: Type.Integer({ minimum: 1, maximum: 10000, default: 10 }) }),
  handler(ctx, p) {
    const ex = ctx.services.ex;
    return ctx.services.seq.read(() => {
      const inst = instrumentOrReject(ex, p.instrument_name);
      const b = orderBookOf(ex, inst, p.depth);
      const bids = b.bids as number[][];
      const asks = b.asks as number[][];
      const bid = bids.length ? bids[0][0] : null;
      const ask = asks.length ? asks[0][0] : null;
      return {
        instrument_name: inst.name,
        timestamp: ex.now,
        bids,
        asks,
        best_bid_price: bid,
        best_ask_price: ask,
        mid_price: bid !== null && ask !== null ? fin((bid + ask) / 2) : null,
        spread: bid !== null && ask !== null ? fin(ask - bid) : null,
        mark_price: b.mark_price,
      };
    });
  },
});
