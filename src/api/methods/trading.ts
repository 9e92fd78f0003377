// Trading group (API.md 3.3): order placement (buy, sell) and collateral here; cancels (orderCancels.ts),
// open-order reads (openOrderReads.ts) and user-trade queries (userTrades.ts) join them in tradingMethods.
import { refuseRiskIfDiskLow } from '../../app/diskGuard.ts';
import { Type, type Static } from '@sinclair/typebox';
import { CURRENCIES, type CurrencyCode } from '../../domain/currency.ts';
import { parseScaled, pow10 } from '../../domain/decimal.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { AMOUNT_SCALE, PRICE_SCALE } from '../../domain/instrument.ts';
import { BUY, SELL } from '../../engine/orderBook.ts';
import type { Command } from '../../engine/commands.ts';
import type { PlaceResult } from '../../engine/trading.ts';
import type { TriggerOrderType, TriggerPlaceResult, TriggerSpec } from '../../engine/triggers.ts';
import type { DepositRecord } from '../../engine/types.ts';
import { placedJson, type PlacedJson } from '../orderJson.ts';
import { money } from '../render.ts';
import { defineMethod, type CallContext } from '../rpc/registry.ts';
import { CurrencyParam, InstrumentName, SafeText, caller, unwrap } from './common.ts';
import { orderCancelMethods } from './orderCancels.ts';
import { openOrderReadMethods } from './openOrderReads.ts';
import { userTradeMethods } from './userTrades.ts';

const OrderParams = Type.Object({
  instrument_name: InstrumentName,
  amount: Type.Optional(Type.Number()),
  contracts: Type.Optional(Type.Number()),
  type: Type.Union(
    ['limit', 'market', 'stop_limit', 'stop_market', 'take_limit', 'take_market', 'trailing_stop'].map((k) => Type.Literal(k)),
    { default: 'limit' },
  ),
  price: Type.Optional(Type.Number()),
  time_in_force: Type.Union(
    [Type.Literal('good_til_cancelled'), Type.Literal('good_til_day'), Type.Literal('fill_or_kill'), Type.Literal('immediate_or_cancel')],
    { default: 'good_til_cancelled' },
  ),
  post_only: Type.Boolean({ default: false }),
  reject_post_only: Type.Boolean({ default: false }),
  reduce_only: Type.Boolean({ default: false }),
  label: SafeText({ maxLength: 64, default: '' }),
  advanced: Type.Optional(Type.Union([Type.Literal('usd'), Type.Literal('implv')])),
  client_order_id: Type.Optional(SafeText({ minLength: 1, maxLength: 64 })),
  /** market-maker protection (private/set_mmp_config): limit orders only */
  mmp: Type.Optional(Type.Boolean()),
  // trigger orders (src/engine/triggers.ts; docs/api-notes.md "Trigger orders")
  trigger: Type.Optional(Type.Union([Type.Literal('mark_price'), Type.Literal('index_price'), Type.Literal('last_price')])),
  trigger_price: Type.Optional(Type.Number()),
  trigger_offset: Type.Optional(Type.Number()),
});

/** The answer of buy, sell and edit, `{order, trades}`, written straight to JSON text (orderJson.ts). */
export function renderPlaceResult(r: PlaceResult | TriggerPlaceResult, userId: number): PlacedJson {
  return placedJson(r.order, r.trades, userId);
}

/** Amount (or contracts: contract size is 1 for every option) as an exact integer at AMOUNT_SCALE. */
function parseAmount(p: Static<typeof OrderParams>): number {
  if (p.amount === undefined && p.contracts === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'amount');
  const a = p.amount !== undefined ? parseScaled(p.amount, AMOUNT_SCALE) : null;
  const c = p.contracts !== undefined ? parseScaled(p.contracts, AMOUNT_SCALE) : null;
  if (p.amount !== undefined && a === null) throw reject(ERR.INVALID_AMOUNT, 'invalid_amount', 'amount');
  if (p.contracts !== undefined && c === null) throw reject(ERR.INVALID_AMOUNT, 'invalid_amount', 'contracts');
  if (a !== null && c !== null && a !== c) throw reject(ERR.INVALID_ARGUMENTS, 'amount_contracts_mismatch', 'contracts');
  const v = (a ?? c)!;
  if (v <= 0) throw reject(ERR.INVALID_AMOUNT, 'amount_not_positive', 'amount');
  return v;
}

// Not async: it returns submit's promise, and an async wrapper added a generator and a promise that
// lived as long as the order's batch took to be durable (call() catches a synchronous throw alike).
function placeOrder(ctx: CallContext, p: Static<typeof OrderParams>, side: 0 | 1) {
  const c = caller(ctx);
  if (!p.reduce_only) refuseRiskIfDiskLow(ctx.services.disk);
  const lots = parseAmount(p);
  const trig = triggerSpec(p);
  const type = p.type === 'limit' || p.type === 'stop_limit' || p.type === 'take_limit' ? 'limit' : 'market';
  let price: number | null = null;
  let advPrice: number | null = null;
  if (type === 'limit') {
    if (p.price === undefined) throw reject(ERR.INVALID_PRICE, 'price_required', 'price');
    // a combo's price is a net premium: zero or negative is a price (src/combos/book.ts)
    if (p.price <= 0 && !ctx.services.ex.combos.byId.has(p.instrument_name)) throw reject(ERR.INVALID_PRICE, 'price_not_positive', 'price');
    if (p.advanced !== undefined) advPrice = p.price;
    else {
      price = parseScaled(p.price, PRICE_SCALE);
      if (price === null) throw reject(ERR.PRICE_WRONG_TICK, 'price_wrong_tick', 'price');
    }
  }
  if (p.post_only && (p.time_in_force === 'fill_or_kill' || p.time_in_force === 'immediate_or_cancel')) {
    throw reject(ERR.INVALID_ARGUMENTS, 'post_only_requires_resting_order', 'post_only');
  }
  const cmd: Extract<Command, { t: 'place' }> = {
    t: 'place',
    userId: c.userId,
    side,
    instrument: p.instrument_name,
    price,
    advanced: type === 'limit' ? (p.advanced ?? null) : null,
    advPrice,
    lots,
    type,
    tif: p.time_in_force,
    postOnly: p.post_only,
    rejectPostOnly: p.reject_post_only,
    reduceOnly: p.reduce_only,
    label: p.label,
    clientOrderId: p.client_order_id ?? null,
  };
  // only when set: journal records of ordinary orders stay as they were (added after the literal,
  // in this order, rather than spread into it: a spread made two objects and a slow copy per order)
  if (p.mmp === true) cmd.mmp = true;
  if (trig !== null) cmd.trig = trig;
  if (ctx.cod === true) cmd.cod = true;
  // A transport that takes the answer by a call (a WebSocket) gets it so, without a promise. The
  // renderers are written in place, not as a named const: under tsx (npm start) a named function
  // expression goes through esbuild's __name, a defineProperty per order (~3% of the engine thread).
  const userId = c.userId;
  // `cmd` is this call's own (fresh): the sequencer adds ts and seq to it instead of copying it
  if (ctx.sink !== undefined) return ctx.services.seq.submitThen(cmd, (r) => renderPlaceResult(unwrap(r) as PlaceResult | TriggerPlaceResult, userId), ctx.sink, true);
  return ctx.services.seq.submit(cmd, (r) => renderPlaceResult(unwrap(r) as PlaceResult | TriggerPlaceResult, userId), true);
}

/** A trigger price or offset as exact units of 10^-PRICE_SCALE (coin, or USD for the index). */
function triggerUnits(v: number, param: string): number {
  if (!(v > 0)) throw reject(ERR.INVALID_ARGUMENTS, param === 'trigger_price' ? 'invalid_trigger_price' : 'invalid_trigger_offset', param);
  const u = parseScaled(v, PRICE_SCALE);
  if (u === null) throw reject(ERR.PRICE_WRONG_TICK, `${param}_wrong_tick`, param);
  return u;
}

/** The trigger part of buy/sell params, or null for a limit or market order. */
function triggerSpec(p: Static<typeof OrderParams>): TriggerSpec | null {
  if (p.type === 'limit' || p.type === 'market') {
    // a trigger price on an ordinary order would be silently ignored: a client that sends one meant a stop
    for (const k of ['trigger', 'trigger_price', 'trigger_offset'] as const) {
      if (p[k] !== undefined) throw reject(ERR.INVALID_ARGUMENTS, 'trigger_needs_trigger_order_type', k);
    }
    return null;
  }
  if (p.trigger === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'trigger');
  const type = p.type as TriggerOrderType;
  if (type === 'trailing_stop') {
    if (p.trigger_price !== undefined) throw reject(ERR.INVALID_ARGUMENTS, 'trailing_stop_has_no_trigger_price', 'trigger_price');
    if (p.trigger_offset === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'trigger_offset');
    return { type, source: p.trigger, price: null, offset: triggerUnits(p.trigger_offset, 'trigger_offset') };
  }
  if (p.trigger_offset !== undefined) throw reject(ERR.INVALID_ARGUMENTS, 'trigger_offset_only_for_trailing_stop', 'trigger_offset');
  if (p.trigger_price === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'trigger_price');
  return { type, source: p.trigger, price: triggerUnits(p.trigger_price, 'trigger_price'), offset: null };
}

/** The whole group, in the order the registry has always listed it (index.ts, labelsAndClose.ts). */
export const tradingMethods = [
  defineMethod({
    name: 'private/buy',
    scope: 'trade:read_write',
    params: OrderParams,
    handler: (ctx, p) => placeOrder(ctx, p, BUY),
  }),
  defineMethod({
    name: 'private/sell',
    scope: 'trade:read_write',
    params: OrderParams,
    handler: (ctx, p) => placeOrder(ctx, p, SELL),
  }),
  ...orderCancelMethods,
  defineMethod({
    name: 'private/deposit_collateral',
    scope: 'account:read_write',
    params: Type.Object({
      currency: CurrencyParam,
      amount: Type.Number(),
      deposit_id: Type.Optional(SafeText({ minLength: 1, maxLength: 64 })),
      user_id: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 31 })),
    }),
    handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      const cur = CURRENCIES[p.currency as CurrencyCode];
      const amount = parseScaled(p.amount, cur.decimals);
      if (amount === null) throw reject(ERR.INVALID_PARAMS, `at most ${cur.decimals} decimals`, 'amount');
      if (amount <= 0) throw reject(ERR.INVALID_PARAMS, 'must be positive', 'amount');
      const isAdmin = c.role === 'admin' && c.scopes.has('admin');
      if (p.user_id !== undefined && p.user_id !== c.userId && !isAdmin) throw reject(ERR.FORBIDDEN, 'admin_required', 'user_id');
      if (s.config.mode === 'production' && !isAdmin) throw reject(ERR.FORBIDDEN, 'deposits_by_administrators_only: self-service deposits exist in sandbox mode only; in production an administrator credits deposits (private/deposit_collateral with user_id)');
      if (!isAdmin && amount > cur.sandboxDepositLimit) throw reject(ERR.INVALID_PARAMS, `sandbox deposits are limited to ${cur.sandboxDepositLimit / pow10(cur.decimals)} per call`, 'amount');
      return s.seq.submit(
        { t: 'deposit', userId: p.user_id ?? c.userId, currency: cur.code, amount, depositId: p.deposit_id ?? null, by: c.userId },
        (r) => {
          const d = unwrap(r) as DepositRecord;
          return { deposit_id: d.depositId, user_id: d.userId, currency: d.currency, amount: money(d.amount, d.currency), balance: money(d.balance, d.currency), timestamp: d.timestamp };
        },
      );
    },
  }),
  defineMethod({
    name: 'private/withdraw_collateral',
    scope: 'account:read_write',
    params: Type.Object({ currency: CurrencyParam, amount: Type.Number() }),
    handler(ctx, p) {
      const c = caller(ctx);
      const cur = CURRENCIES[p.currency as CurrencyCode];
      const amount = parseScaled(p.amount, cur.decimals);
      if (amount === null) throw reject(ERR.INVALID_PARAMS, `at most ${cur.decimals} decimals`, 'amount');
      if (amount <= 0) throw reject(ERR.INVALID_PARAMS, 'must be positive', 'amount');
      return ctx.services.seq.submit({ t: 'withdraw', userId: c.userId, currency: cur.code, amount }, (r) => {
        const w = unwrap(r) as { balance: number; amount: number };
        return { currency: cur.code, amount: money(w.amount, cur.code), balance: money(w.balance, cur.code) };
      });
    },
  }),
  ...openOrderReadMethods,
  ...userTradeMethods,
];
