// Deribit-only operations that existing clients call (API.md 3.3 "Also, for Deribit clients" and
// 3.5 get_expirations): edit, order state and history, cancel by label, expiration codes.
import { Type } from '@sinclair/typebox';
import type { CurrencyCode } from '../../domain/currency.ts';
import { parseScaled } from '../../domain/decimal.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { AMOUNT_SCALE, PRICE_SCALE, expiryCode } from '../../domain/instrument.ts';
import type { PlaceResult } from '../../engine/trading.ts';
import type { TriggerPlaceResult } from '../../engine/triggers.ts';
import type { Order, User } from '../../engine/types.ts';
import type { Services } from '../../app/services.ts';
import { refuseRiskIfDiskLow } from '../../app/diskGuard.ts';
import { placedJson } from '../orderJson.ts';
import { parseOrderId, renderOrder } from '../render.ts';
import { defineMethod, type CallContext } from '../rpc/registry.ts';
import { Count, CurrencyParam, InstrumentName, KindParam, SafeText, caller, unwrap } from './common.ts';
import { keptComboOrders, kindSelects } from './comboOrders.ts';

const OrderId = Type.String({ minLength: 1, maxLength: 32 });

function userOf(ctx: CallContext): User {
  const u = ctx.services.ex.users.get(caller(ctx).userId);
  if (!u) throw reject(ERR.UNAUTHORIZED);
  return u;
}

function orderIdOrReject(s: string): number {
  const id = parseOrderId(s);
  if (id === null) throw reject(ERR.ORDER_NOT_FOUND, undefined, 'order_id');
  return id;
}

function exactAmount(v: number | undefined, param: string): number | null {
  if (v === undefined) return null;
  const a = parseScaled(v, AMOUNT_SCALE);
  if (a === null) throw reject(ERR.INVALID_AMOUNT, 'invalid_amount', param);
  return a;
}

const HistoryPaging = {
  count: Count(20),
  offset: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 }),
  include_old: Type.Boolean({ default: false }),
  include_unfilled: Type.Boolean({ default: false }),
  /** answer `{orders, continuation}` instead of the list (Deribit's continuation paging) */
  with_continuation: Type.Boolean({ default: false }),
  /** the `continuation` of the previous page: the orders after it (offset is not used with it) */
  continuation: Type.Optional(Type.String({ maxLength: 64 })),
};

interface HistoryPage {
  include_unfilled: boolean;
  offset: number;
  count: number;
  with_continuation: boolean;
  continuation?: string;
}

/** A continuation names the last order of a page by its place in the order (`<last update>.<id>`). */
function continuationOf(o: Order): string {
  return `${o.lastUpdate}.${o.id}`;
}

function parseContinuation(s: string): { ts: number; id: number } {
  const m = /^(\d{1,15})\.(\d{1,15})$/.exec(s);
  if (!m) throw reject(ERR.INVALID_PARAMS, 'continuation is not one this server gave', 'continuation');
  return { ts: Number(m[1]), id: Number(m[2]) };
}

/**
 * Order history (Deribit): the caller's orders that were partly or fully filled, newest first;
 * with include_unfilled also those closed without a fill. Paged by offset and count, or by
 * continuation: with `with_continuation` the answer is `{orders, continuation}`, the continuation
 * (null on the last page) giving the next page when passed back.
 */
function orderHistory(user: User, filter: (o: Order) => boolean, p: HistoryPage, combos: Order[] = []): unknown {
  const out: Order[] = [];
  for (const o of combos.length === 0 ? user.orders.values() : [...user.orders.values(), ...combos]) {
    if (!filter(o)) continue;
    if (o.filled === 0 && (o.state === 'open' || !p.include_unfilled)) continue;
    out.push(o);
  }
  out.sort((a, b) => b.lastUpdate - a.lastUpdate || b.id - a.id);
  let from = p.offset;
  if (p.continuation !== undefined) {
    const after = parseContinuation(p.continuation);
    from = out.findIndex((o) => o.lastUpdate < after.ts || (o.lastUpdate === after.ts && o.id < after.id));
    if (from < 0) from = out.length;
  }
  const page = out.slice(from, from + p.count);
  if (!p.with_continuation) return page.map(renderOrder);
  const more = from + p.count < out.length;
  return { orders: page.map(renderOrder), continuation: more && page.length > 0 ? continuationOf(page[page.length - 1]!) : null };
}

function activeExpiries(s: Services, currency: CurrencyCode | null): string[] {
  const now = s.ex.now;
  const set = new Set<number>();
  for (const inst of s.ex.instruments.values()) {
    if (currency !== null && inst.currency !== currency) continue;
    if (inst.state !== 'open' || inst.expiry <= now) continue;
    set.add(inst.expiry);
  }
  return [...set].sort((a, b) => a - b).map(expiryCode);
}

function expirationsByKind(s: Services, currency: CurrencyCode | null, kind: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  // futures are not listed: the key is there (empty) for kinds that ask for them
  if (kind === 'future' || kind === 'any') out.future = [];
  if (kind === 'option' || kind === 'any') out.option = activeExpiries(s, currency);
  return out;
}

/** What an edit may change: private/edit and private/edit_by_label take the same fields. */
export const EDIT_FIELDS = {
  amount: Type.Optional(Type.Number()),
  contracts: Type.Optional(Type.Number()),
  price: Type.Optional(Type.Number()),
  post_only: Type.Optional(Type.Boolean()),
  reject_post_only: Type.Optional(Type.Boolean()),
  reduce_only: Type.Optional(Type.Boolean()),
  /** flags (true) or unflags (false) an ordinary order for market-maker protection */
  mmp: Type.Optional(Type.Boolean()),
  // untriggered trigger orders: a new trigger price, or a trailing stop's offset
  trigger_price: Type.Optional(Type.Number()),
  trigger_offset: Type.Optional(Type.Number()),
};

export const deribitExtraMethods = [
  defineMethod({
    name: 'private/edit',
    scope: 'trade:read_write',
    params: Type.Object({ order_id: OrderId, ...EDIT_FIELDS }),
    async handler(ctx, p) {
      const c = caller(ctx);
      // an edit may raise an order's amount or move it into the book: new risk
      refuseRiskIfDiskLow(ctx.services.disk);
      const id = orderIdOrReject(p.order_id);
      if (p.reduce_only !== undefined) {
        // an order's reduce-only flag is fixed when it is placed (it decides how the order is cut
        // as the position shrinks); an edit that asks for the other value is refused, not ignored
        const current = await ctx.services.seq.read(() => userOf(ctx).orders.get(id)?.reduceOnly ?? ctx.services.ex.triggers.get(c.userId, id)?.cmd.reduceOnly);
        if (current !== undefined && current !== p.reduce_only) throw reject(ERR.INVALID_ARGUMENTS, 'reduce_only_not_editable', 'reduce_only');
      }
      const a = exactAmount(p.amount, 'amount');
      const k = exactAmount(p.contracts, 'contracts');
      if (a === null && k === null) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'amount');
      if (a !== null && k !== null && a !== k) throw reject(ERR.INVALID_ARGUMENTS, 'amount_contracts_mismatch', 'contracts');
      const lots = (a ?? k)!;
      if (lots <= 0) throw reject(ERR.INVALID_AMOUNT, 'amount_not_positive', 'amount');
      let price: number | null = null;
      if (p.price !== undefined) {
        if (p.price <= 0) throw reject(ERR.INVALID_PRICE, 'price_not_positive', 'price');
        price = parseScaled(p.price, PRICE_SCALE);
        if (price === null) throw reject(ERR.PRICE_WRONG_TICK, 'price_wrong_tick', 'price');
      }
      const trig: { triggerPrice?: number; triggerOffset?: number } = {};
      for (const [k, param] of [['triggerPrice', 'trigger_price'], ['triggerOffset', 'trigger_offset']] as const) {
        const v = p[param];
        if (v === undefined) continue;
        if (!(v > 0)) throw reject(ERR.INVALID_ARGUMENTS, param === 'trigger_price' ? 'invalid_trigger_price' : 'invalid_trigger_offset', param);
        const u = parseScaled(v, PRICE_SCALE);
        if (u === null) throw reject(ERR.PRICE_WRONG_TICK, `${param}_wrong_tick`, param);
        trig[k] = u;
      }
      return ctx.services.seq.submit(
        { t: 'edit', userId: c.userId, orderId: id, lots, price, postOnly: p.post_only ?? null, rejectPostOnly: p.reject_post_only ?? null, ...trig, ...(p.mmp !== undefined ? { mmp: p.mmp } : {}), ...(ctx.cod === true ? { cod: true as const } : {}) },
        (r) => {
          const res = unwrap(r) as PlaceResult | TriggerPlaceResult;
          return placedJson(res.order, res.trades, c.userId);
        },
      );
    },
  }),
  defineMethod({
    name: 'private/get_order_state',
    scope: 'trade:read',
    params: Type.Object({ order_id: OrderId }),
    handler(ctx, p) {
      const id = orderIdOrReject(p.order_id);
      return ctx.services.seq.read(() => {
        const uid = caller(ctx).userId;
        const o = userOf(ctx).orders.get(id) ?? ctx.services.ex.triggers.get(uid, id) ?? ctx.services.ex.comboBooks.orderOf(uid, id);
        if (!o) throw reject(ERR.ORDER_NOT_FOUND, undefined, 'order_id');
        return renderOrder(o);
      });
    },
  }),
  defineMethod({
    name: 'private/get_order_history_by_currency',
    scope: 'trade:read',
    params: Type.Object({ currency: CurrencyParam, kind: KindParam, ...HistoryPaging }),
    handler(ctx, p) {
      const k = kindSelects(p.kind);
      if (!k.options && !k.combos) return p.with_continuation ? { orders: [], continuation: null } : [];
      return ctx.services.seq.read(() => {
        const user = userOf(ctx);
        // combo orders are kept by their books (src/combos/book.ts); kind option leaves them out, option_combo keeps only them
        const combos = k.combos ? keptComboOrders(ctx.services.ex, user.id) : [];
        const isCombo = (o: Order) => ctx.services.ex.combos.byId.has(o.inst.name);
        return orderHistory(user, (o) => o.inst.currency === p.currency && (isCombo(o) ? k.combos : k.options), p, combos);
      });
    },
  }),
  defineMethod({
    name: 'private/get_order_history_by_instrument',
    scope: 'trade:read',
    params: Type.Object({ instrument_name: InstrumentName, ...HistoryPaging }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => {
        const user = userOf(ctx);
        if (ctx.services.ex.combos.byId.has(p.instrument_name)) return orderHistory(user, (o) => o.inst.name === p.instrument_name, p, keptComboOrders(ctx.services.ex, user.id));
        if (!ctx.services.ex.instruments.has(p.instrument_name)) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
        return orderHistory(user, (o) => o.inst.name === p.instrument_name, p);
      });
    },
  }),
  defineMethod({
    name: 'private/cancel_by_label',
    scope: 'trade:read_write',
    params: Type.Object({ label: SafeText({ minLength: 1, maxLength: 64 }), currency: Type.Optional(CurrencyParam) }),
    handler(ctx, p) {
      const c = caller(ctx);
      return ctx.services.seq.submit(
        { t: 'cancel_all', userId: c.userId, currency: (p.currency as CurrencyCode | undefined) ?? null, instrument: null, side: null, label: p.label },
        (r) => (r as Order[]).length,
      );
    },
  }),
  defineMethod({
    name: 'public/get_expirations',
    scope: 'none',
    params: Type.Object({
      currency: Type.Union([CurrencyParam, Type.Literal('any'), Type.Literal('grouped')], { default: 'any' }),
      kind: Type.Union([Type.Literal('future'), Type.Literal('option'), Type.Literal('any')], { default: 'any' }),
      currency_pair: Type.Optional(Type.String({ maxLength: 32 })),
    }),
    handler(ctx, p) {
      const s = ctx.services;
      return s.seq.read(() => {
        if (p.currency !== 'grouped') return expirationsByKind(s, p.currency === 'any' ? null : (p.currency as CurrencyCode), p.kind);
        const out: Record<string, Record<string, string[]>> = {};
        for (const cc of s.catalog.currencies) out[cc.currency.toLowerCase()] = expirationsByKind(s, cc.currency, p.kind);
        return out;
      });
    },
  }),
];
