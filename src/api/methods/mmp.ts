// Market-maker protection and mass quotes (issue 17; Deribit private/set_mmp_config, get_mmp_config,
// get_mmp_status, reset_mmp, mass_quote, cancel_quotes). The engine side is src/engine/mmp.ts and
// src/engine/massQuote.ts; decisions where Deribit leaves room are in docs/api-notes.md.
import { Type, type Static } from '@sinclair/typebox';
import type { CurrencyCode } from '../../domain/currency.ts';
import { parseScaled } from '../../domain/decimal.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { AMOUNT_SCALE, PRICE_SCALE } from '../../domain/instrument.ts';
import type { CancelQuotesType, Command, QuoteItem, QuoteSide } from '../../engine/commands.ts';
import { MAX_QUOTES_PER_MESSAGE, type MassQuoteResult } from '../../engine/massQuote.ts';
import { MMP_INDICES, type MmpGroup } from '../../engine/mmp.ts';
import type { Order } from '../../engine/types.ts';
import { renderOrder, renderUserTrade } from '../render.ts';
import { errorBody } from '../rpc/errors.ts';
import { defineMethod } from '../rpc/registry.ts';
import { CurrencyParam, InstrumentName, SafeText, caller, unwrap } from './common.ts';

const IndexName = Type.Union([Type.Literal('btc_usd'), Type.Literal('eth_usd')]);
/** Group names: short, and without the characters the engine's keys and logs use. */
const MmpGroupName = Type.String({ minLength: 1, maxLength: 32, pattern: '^[A-Za-z0-9_.-]+$' });
const Limit = Type.Number({ minimum: 0, maximum: 1e9 });

function amount8(x: number | undefined, param: string): number {
  if (x === undefined) return 0;
  const v = parseScaled(x, AMOUNT_SCALE);
  if (v === null || v < 0) throw reject(ERR.INVALID_PARAMS, 'at most 8 decimals, not negative', param);
  return v;
}

function shown(x: number): number {
  return x / 10 ** AMOUNT_SCALE;
}

export function renderMmpConfig(g: MmpGroup): Record<string, unknown> {
  const out: Record<string, unknown> = { id: g.id, index_name: g.indexName };
  if (g.group !== null) out.mmp_group = g.group;
  out.interval = g.interval;
  out.frozen_time = g.frozenTime;
  out.quantity_limit = shown(g.quantityLimit);
  out.delta_limit = g.deltaLimit;
  out.vega_limit = g.vegaLimit;
  out.trade_count_limit = g.tradeCountLimit;
  if (g.maxQuoteQuantity > 0) out.max_quote_quantity = shown(g.maxQuoteQuantity);
  return out;
}

const QuoteSideParam = Type.Object({
  price: Type.Number(),
  amount: Type.Number(),
  post_only: Type.Optional(Type.Boolean()),
  reject_post_only: Type.Optional(Type.Boolean()),
});

const MassQuoteParams = Type.Object({
  quote_id: SafeText({ minLength: 1, maxLength: 64 }),
  mmp_group: MmpGroupName,
  quotes: Type.Array(
    Type.Object({
      instrument_name: InstrumentName,
      quote_set_id: Type.Optional(SafeText({ minLength: 1, maxLength: 64 })),
      bid: Type.Optional(QuoteSideParam),
      ask: Type.Optional(QuoteSideParam),
    }),
    { minItems: 1, maxItems: MAX_QUOTES_PER_MESSAGE },
  ),
  detailed: Type.Boolean({ default: false }),
  /** accepted for Deribit clients: the answer always waits for every quote */
  wait_for_response: Type.Optional(Type.Boolean()),
  valid_until: Type.Optional(Type.Integer({ minimum: 0, maximum: 8.64e15 })),
});

function quoteSide(s: Static<typeof QuoteSideParam> | undefined, where: string): QuoteSide | null {
  if (s === undefined) return null;
  if (!(s.price > 0)) throw reject(ERR.INVALID_PRICE, 'price_not_positive', `${where}.price`);
  const price = parseScaled(s.price, PRICE_SCALE);
  if (price === null) throw reject(ERR.PRICE_WRONG_TICK, 'price_wrong_tick', `${where}.price`);
  const lots = parseScaled(s.amount, AMOUNT_SCALE);
  if (lots === null || lots < 0) throw reject(ERR.INVALID_AMOUNT, 'invalid_amount', `${where}.amount`);
  const postOnly = s.post_only ?? false;
  return { price, lots, postOnly, rejectPostOnly: postOnly && (s.reject_post_only ?? false) };
}

function renderMassQuote(r: MassQuoteResult, userId: number, detailed: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = { orders: r.orders.map(renderOrder), trades: r.trades.map((t) => renderUserTrade(t, userId)) };
  if (detailed) out.errors = r.errors.map((e) => ({ instrument_name: e.instrument, side: e.side, error: errorBody(e.error) }));
  else out.errors_count = r.errors.length;
  return out;
}

const CancelQuotesParams = Type.Object({
  cancel_type: Type.Union(['all', 'quote_set_id', 'instrument', 'instrument_kind', 'currency', 'currency_pair', 'delta'].map((t) => Type.Literal(t))),
  detailed: Type.Boolean({ default: false }),
  freeze_quotes: Type.Optional(Type.Boolean()),
  quote_set_id: Type.Optional(SafeText({ minLength: 1, maxLength: 64 })),
  instrument_name: Type.Optional(InstrumentName),
  kind: Type.Optional(Type.String({ maxLength: 32 })),
  currency: Type.Optional(CurrencyParam),
  currency_pair: Type.Optional(IndexName),
  min_delta: Type.Optional(Type.Number({ minimum: -1, maximum: 1 })),
  max_delta: Type.Optional(Type.Number({ minimum: -1, maximum: 1 })),
});

function cancelQuotesReply(orders: Order[], detailed: boolean): unknown {
  if (!detailed) return orders.length;
  return [{ currency: 'any', type: 'quote', result: orders.map(renderOrder) }];
}

function required<T>(v: T | undefined, param: string): T {
  if (v === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', param);
  return v;
}

export const mmpMethods = [
  defineMethod({
    name: 'private/set_mmp_config',
    scope: 'trade:read_write',
    summary: 'Market-maker protection for an index (and a mass-quote `mmp_group`): fills of MMP orders over `interval` s reaching `quantity_limit`, `delta_limit`, `vega_limit` (absolute net) or `trade_count_limit` (fills) cancel the group\'s orders and freeze it for `frozen_time` s (0: until reset_mmp). `interval` 0 removes the config.',
    params: Type.Object({
      index_name: IndexName,
      mmp_group: Type.Optional(MmpGroupName),
      interval: Type.Integer({ minimum: 0, maximum: 3600 }),
      frozen_time: Type.Integer({ minimum: 0, maximum: 3600 }),
      quantity_limit: Type.Optional(Limit),
      delta_limit: Type.Optional(Limit),
      max_quote_quantity: Type.Optional(Limit),
      vega_limit: Type.Optional(Limit),
      trade_count_limit: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
    }),
    handler(ctx, p) {
      const c = caller(ctx);
      const cmd = {
        t: 'set_mmp_config' as const,
        userId: c.userId,
        indexName: p.index_name,
        group: p.mmp_group ?? null,
        interval: p.interval,
        frozenTime: p.frozen_time,
        quantityLimit: amount8(p.quantity_limit, 'quantity_limit'),
        deltaLimit: p.delta_limit ?? 0,
        maxQuoteQuantity: amount8(p.max_quote_quantity, 'max_quote_quantity'),
        vegaLimit: p.vega_limit ?? 0,
        tradeCountLimit: p.trade_count_limit ?? 0,
      };
      // Deribit answers with an array of the configs set (one here)
      return ctx.services.seq.submit(cmd, (r) => {
        const g = unwrap(r);
        if (g === 'removed') return [{ index_name: cmd.indexName, ...(cmd.group !== null ? { mmp_group: cmd.group } : {}), interval: 0, frozen_time: cmd.frozenTime, quantity_limit: 0, delta_limit: 0, vega_limit: 0, trade_count_limit: 0 }];
        return [renderMmpConfig(g as MmpGroup)];
      });
    },
  }),
  defineMethod({
    name: 'private/get_mmp_config',
    scope: 'trade:read',
    params: Type.Object({
      index_name: Type.Optional(Type.Union([IndexName, Type.Literal('all')])),
      mmp_group: Type.Optional(MmpGroupName),
    }),
    handler(ctx, p) {
      const c = caller(ctx);
      const index = p.index_name === undefined || p.index_name === 'all' ? null : p.index_name;
      return ctx.services.seq.read(() => ctx.services.ex.mmp.list(c.userId, index, p.mmp_group).map(renderMmpConfig));
    },
  }),
  defineMethod({
    name: 'private/get_mmp_status',
    scope: 'trade:read',
    summary: 'The caller\'s frozen MMP groups: [{index_name, mmp_group?, frozen_until}] (frozen_until 0: until reset_mmp).',
    params: Type.Object({
      index_name: Type.Optional(Type.Union([IndexName, Type.Literal('all')])),
      mmp_group: Type.Optional(MmpGroupName),
    }),
    handler(ctx, p) {
      const c = caller(ctx);
      const index = p.index_name === undefined || p.index_name === 'all' ? null : p.index_name;
      return ctx.services.seq.read(() => {
        const mmp = ctx.services.ex.mmp;
        return mmp
          .list(c.userId, index, p.mmp_group)
          .filter((g) => mmp.isFrozen(g))
          .map((g) => ({ index_name: g.indexName, ...(g.group !== null ? { mmp_group: g.group } : {}), frozen_until: g.frozenUntil }));
      });
    },
  }),
  defineMethod({
    name: 'private/reset_mmp',
    scope: 'trade:read_write',
    params: Type.Object({ index_name: IndexName, mmp_group: Type.Optional(MmpGroupName) }),
    handler(ctx, p) {
      const c = caller(ctx);
      return ctx.services.seq.submit({ t: 'reset_mmp', userId: c.userId, indexName: p.index_name, group: p.mmp_group ?? null }, (r) => {
        unwrap(r);
        return 'ok';
      });
    },
  }),
  defineMethod({
    name: 'private/mass_quote',
    scope: 'trade:read_write',
    summary: `Up to ${MAX_QUOTES_PER_MESSAGE} two-sided quotes in one command (one journal record): each replaces the caller's open quote of its mmp_group, instrument and side; amount 0 removes a side. Per-side refusals in \`errors\` (detailed) or \`errors_count\`.`,
    params: MassQuoteParams,
    handler(ctx, p) {
      const c = caller(ctx);
      if (p.valid_until !== undefined && p.valid_until < ctx.services.clock.now()) throw reject(ERR.INVALID_ARGUMENTS, 'valid_until_passed', 'valid_until');
      const quotes: QuoteItem[] = p.quotes.map((q, i) => {
        if (q.bid === undefined && q.ask === undefined) throw reject(ERR.INVALID_PARAMS, 'bid or ask required', `quotes[${i}]`);
        return { instrument: q.instrument_name, quoteSetId: q.quote_set_id ?? null, bid: quoteSide(q.bid, `quotes[${i}].bid`), ask: quoteSide(q.ask, `quotes[${i}].ask`) };
      });
      const cmd: Extract<Command, { t: 'mass_quote' }> = { t: 'mass_quote', userId: c.userId, quoteId: p.quote_id, group: p.mmp_group, quotes };
      if (ctx.cod === true) cmd.cod = true;
      return ctx.services.seq.submit(cmd, (r) =>
        renderMassQuote(unwrap(r) as MassQuoteResult, c.userId, p.detailed),
      );
    },
  }),
  defineMethod({
    name: 'private/cancel_quotes',
    scope: 'trade:read_write',
    summary: 'Cancels the caller\'s mass quotes by cancel_type: all, quote_set_id, instrument, instrument_kind, currency, currency_pair or delta (min_delta..max_delta of the instrument at the mark).',
    params: CancelQuotesParams,
    handler(ctx, p) {
      const c = caller(ctx);
      if (p.freeze_quotes === true) throw reject(ERR.INVALID_ARGUMENTS, 'freeze_quotes_not_supported', 'freeze_quotes');
      let cancelType: CancelQuotesType;
      let instrument: string | null = null;
      let currency: CurrencyCode | null = null;
      let quoteSetId: string | null = null;
      let minDelta: number | null = null;
      let maxDelta: number | null = null;
      switch (p.cancel_type) {
        case 'quote_set_id':
          cancelType = 'quote_set_id';
          quoteSetId = required(p.quote_set_id, 'quote_set_id');
          break;
        case 'instrument':
          cancelType = 'instrument';
          instrument = required(p.instrument_name, 'instrument_name');
          break;
        case 'currency':
          cancelType = 'currency';
          currency = required(p.currency, 'currency') as CurrencyCode;
          break;
        case 'currency_pair':
          cancelType = 'currency';
          currency = MMP_INDICES[required(p.currency_pair, 'currency_pair')];
          break;
        case 'instrument_kind': {
          const kind = required(p.kind, 'kind');
          // only options are listed: another kind selects nothing
          if (kind !== 'option' && kind !== 'any') return p.detailed ? cancelQuotesReply([], true) : 0;
          cancelType = 'kind';
          break;
        }
        case 'delta':
          cancelType = 'delta';
          minDelta = required(p.min_delta, 'min_delta');
          maxDelta = required(p.max_delta, 'max_delta');
          if (minDelta > maxDelta) throw reject(ERR.INVALID_ARGUMENTS, 'min_delta_above_max_delta', 'min_delta');
          break;
        default:
          cancelType = 'all';
      }
      return ctx.services.seq.submit({ t: 'cancel_quotes', userId: c.userId, cancelType, instrument, currency, quoteSetId, minDelta, maxDelta }, (r) =>
        cancelQuotesReply(r as Order[], p.detailed),
      );
    },
  }),
];
