// Trading group (API.md 3.3): orders, cancels, collateral, open-order and user-trade queries.
import { refuseRiskIfDiskLow } from '../../app/diskGuard.ts';
import { Type, type Static } from '@sinclair/typebox';
import { CURRENCIES, type CurrencyCode } from '../../domain/currency.ts';
import { parseScaled } from '../../domain/decimal.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { AMOUNT_SCALE, PRICE_SCALE, lotsToAmount } from '../../domain/instrument.ts';
import { BUY, SELL } from '../../engine/orderBook.ts';
import type { Command } from '../../engine/commands.ts';
import type { PlaceResult } from '../../engine/trading.ts';
import { TriggerOrder, selectsType, type CancelTypeFilter, type TriggerOrderType, type TriggerPlaceResult, type TriggerSpec } from '../../engine/triggers.ts';
import type { DepositRecord, Order, Trade, User } from '../../engine/types.ts';
import { placedJson, type PlacedJson } from '../orderJson.ts';
import { byId, cancelKind, kindSelects, openComboOrders } from './comboOrders.ts';
import { money, parseOrderId, renderOrder, renderUserTrade } from '../render.ts';
import { SubaccountId, readFor } from './actingFor.ts';
import { defineMethod, type CallContext } from '../rpc/registry.ts';
import { Count, CurrencyParam, InstrumentName, KindParam, OpenOrderTypeParam, SafeText, Timestamp, caller, currencyFilter, unwrap } from './common.ts';

const Side = Type.Union([Type.Literal('buy'), Type.Literal('sell')]);
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

function userOf(ctx: CallContext): User {
  const u = ctx.services.ex.users.get(caller(ctx).userId);
  if (!u) throw reject(ERR.UNAUTHORIZED);
  return u;
}

function openOrders(user: User, filter: (o: Order) => boolean): Order[] {
  const out: Order[] = [];
  for (const e of user.exposures.values()) {
    if (e.openOrders.size === 0) continue;
    for (const o of e.openOrders) if (filter(o)) out.push(o);
  }
  return out.sort((a, b) => a.id - b.id);
}

/** Deribit `kind` filters: only options are listed here, so any other kind selects nothing. */
function optionKind(kind: string | undefined): boolean {
  return kind === undefined || kind === 'option' || kind === 'any';
}

/** Deribit open-order `type` filters: `all` and `limit` select resting orders (a fired trigger's among them). */
function restingType(type: string | undefined): boolean {
  return type === undefined || type === 'all' || type === 'limit';
}

/** The caller's untriggered orders a Deribit `type` filter selects (none for `limit`), oldest first. */
export function untriggeredOf(ctx: CallContext, type: string | undefined, filter: (t: TriggerOrder) => boolean): TriggerOrder[] {
  if (type === 'limit') return [];
  return ctx.services.ex.triggers.openOf(caller(ctx).userId, (t) => selectsType(t, type ?? 'all') && filter(t));
}

/** Deribit's cancel types: `limit` cancels resting orders only, the others trigger orders only (`all`: both). */
const CancelType = Type.Union(['all', 'limit', 'trigger_all', 'stop', 'take', 'trailing_stop'].map((k) => Type.Literal(k)), { default: 'all' });
/** Deribit's kinds: option and the combos' (option_combo, combo) select orders here, the others none. */
const Kind = Type.Union(['future', 'option', 'spot', 'future_combo', 'option_combo', 'combo', 'any'].map((k) => Type.Literal(k)), { default: 'any' });

function cancelReply(orders: (Order | TriggerOrder)[], detailed: boolean, currency: string | null, instrument: string | null) {
  if (!detailed) return orders.length;
  // Deribit's detailed report: one entry per kind, `limit` for resting orders and `trigger` for trigger orders
  const limit = orders.filter((o) => !isTrigger(o));
  const trigger = orders.filter(isTrigger);
  const out = [{ currency: currency ?? 'any', type: 'limit', instrument_name: instrument ?? undefined, result: limit.map(renderOrder) }];
  if (trigger.length > 0) out.push({ currency: currency ?? 'any', type: 'trigger', instrument_name: instrument ?? undefined, result: trigger.map(renderOrder) });
  return out;
}

function isTrigger(o: Order | TriggerOrder): o is TriggerOrder {
  return o instanceof TriggerOrder;
}

// ---- user trades --------------------------------------------------------------------------------

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
  defineMethod({
    name: 'private/cancel',
    scope: 'trade:read_write',
    params: Type.Object({ order_id: Type.String({ minLength: 1, maxLength: 32 }) }),
    handler(ctx, p) {
      const c = caller(ctx);
      const id = parseOrderId(p.order_id);
      if (id === null) throw reject(ERR.ORDER_NOT_FOUND, undefined, 'order_id');
      return ctx.services.seq.submit({ t: 'cancel', userId: c.userId, orderId: id }, (r) => renderOrder(unwrap(r) as Order));
    },
  }),
  defineMethod({
    name: 'private/cancel_all',
    scope: 'trade:read_write',
    params: Type.Object({ detailed: Type.Boolean({ default: false }) }),
    handler(ctx, p) {
      const c = caller(ctx);
      return ctx.services.seq.submit({ t: 'cancel_all', userId: c.userId, currency: null, instrument: null, side: null, label: null }, (r) =>
        cancelReply(r as (Order | TriggerOrder)[], p.detailed, null, null),
      );
    },
  }),
  defineMethod({
    name: 'private/cancel_all_by_currency',
    scope: 'trade:read_write',
    params: Type.Object({ currency: CurrencyParam, kind: Kind, type: CancelType, detailed: Type.Boolean({ default: false }) }),
    handler(ctx, p) {
      const c = caller(ctx);
      // a kind that selects nothing here (future, spot, future_combo) cancels nothing
      const k = kindSelects(p.kind);
      if (!k.options && !k.combos) return p.detailed ? [] : 0;
      return ctx.services.seq.submit(
        { t: 'cancel_all', userId: c.userId, currency: p.currency as CurrencyCode, instrument: null, side: null, label: null, ...(p.type !== 'all' ? { types: p.type as CancelTypeFilter } : {}), ...cancelKind(p.kind) },
        (r) => cancelReply(r as (Order | TriggerOrder)[], p.detailed, p.currency, null),
      );
    },
  }),
  defineMethod({
    name: 'private/cancel_all_by_instrument',
    scope: 'trade:read_write',
    params: Type.Object({ instrument_name: InstrumentName, type: CancelType, detailed: Type.Boolean({ default: false }) }),
    handler(ctx, p) {
      const c = caller(ctx);
      if (!ctx.services.ex.instruments.has(p.instrument_name) && !ctx.services.ex.combos.byId.has(p.instrument_name)) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
      return ctx.services.seq.submit(
        { t: 'cancel_all', userId: c.userId, currency: null, instrument: p.instrument_name, side: null, label: null, ...(p.type !== 'all' ? { types: p.type as CancelTypeFilter } : {}) },
        (r) => cancelReply(r as (Order | TriggerOrder)[], p.detailed, null, p.instrument_name),
      );
    },
  }),
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
      if (!isAdmin && amount > cur.sandboxDepositLimit) throw reject(ERR.INVALID_PARAMS, `sandbox deposits are limited to ${cur.sandboxDepositLimit / 10 ** cur.decimals} per call`, 'amount');
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
  // ---- open orders ----
  defineMethod({
    name: 'public/get_open_orders_by_currency',
    aliases: ['private/get_open_orders_by_currency'],
    scope: 'trade:read',
    params: Type.Object({ currency: CurrencyParam, kind: KindParam, type: OpenOrderTypeParam }),
    handler(ctx, p) {
      const k = kindSelects(p.kind);
      return ctx.services.seq.read(() => {
        const user = userOf(ctx);
        const mine = (o: Order) => o.inst.currency === p.currency;
        const resting = restingType(p.type) ? byId(k.options ? openOrders(user, mine) : [], k.combos ? openComboOrders(ctx.services.ex, user.id, mine) : []) : [];
        return [...resting, ...(k.options ? untriggeredOf(ctx, p.type, (t) => t.inst.currency === p.currency) : [])].map(renderOrder);
      });
    },
  }),
  defineMethod({
    name: 'public/get_open_orders_by_instrument',
    aliases: ['private/get_open_orders_by_instrument'],
    scope: 'trade:read',
    params: Type.Object({ instrument_name: InstrumentName, type: OpenOrderTypeParam }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => {
        const user = userOf(ctx);
        // a combo's name: its open combo orders (no trigger orders on combos)
        if (ctx.services.ex.combos.byId.has(p.instrument_name)) return restingType(p.type) ? openComboOrders(ctx.services.ex, user.id, (o) => o.inst.name === p.instrument_name).map(renderOrder) : [];
        const inst = ctx.services.ex.instruments.get(p.instrument_name);
        if (!inst) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
        const e = user.exposures.get(inst.id);
        const resting = e && restingType(p.type) ? [...e.openOrders].sort((a, b) => a.id - b.id) : [];
        return [...resting, ...untriggeredOf(ctx, p.type, (t) => t.inst === inst)].map(renderOrder);
      });
    },
  }),
  defineMethod({
    name: 'public/get_open_orders_by_side',
    aliases: ['private/get_open_orders_by_side'],
    scope: 'trade:read',
    params: Type.Object({ side: Side, currency: Type.Optional(CurrencyParam), instrument_name: Type.Optional(InstrumentName) }),
    handler(ctx, p) {
      const side = p.side === 'buy' ? BUY : SELL;
      const wanted = (o: Order) => o.side === side && (p.currency === undefined || o.inst.currency === p.currency) && (p.instrument_name === undefined || o.inst.name === p.instrument_name);
      return ctx.services.seq.read(() => {
        const user = userOf(ctx);
        return byId(openOrders(user, wanted), openComboOrders(ctx.services.ex, user.id, wanted)).map(renderOrder);
      });
    },
  }),
  defineMethod({
    name: 'public/get_open_orders_instrument_by_currency',
    aliases: ['private/get_open_orders_instrument_by_currency'],
    scope: 'trade:read',
    params: Type.Object({ currency: CurrencyParam }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => {
        const user = userOf(ctx);
        const rows: Record<string, unknown>[] = [];
        for (const e of user.exposures.values()) {
          if (e.inst.currency !== p.currency || e.openOrders.size === 0) continue;
          const orders = [...e.openOrders].sort((a, b) => a.id - b.id);
          let buyOrders = 0;
          let sellOrders = 0;
          for (const o of orders) {
            if (o.side === BUY) buyOrders++;
            else sellOrders++;
          }
          rows.push({
            instrument_name: e.inst.name,
            buy_orders: buyOrders,
            sell_orders: sellOrders,
            buy_amount: lotsToAmount(e.inst, e.buyOpenLots),
            sell_amount: lotsToAmount(e.inst, e.sellOpenLots),
            orders: orders.map(renderOrder),
          });
        }
        // orders on combos, one row per combo (src/combos/book.ts)
        const byCombo = new Map<string, Order[]>();
        for (const o of openComboOrders(ctx.services.ex, user.id, (x) => x.inst.currency === p.currency)) {
          const list = byCombo.get(o.inst.name);
          if (list === undefined) byCombo.set(o.inst.name, [o]);
          else list.push(o);
        }
        for (const [name, orders] of byCombo) {
          const buys = orders.filter((o) => o.side === BUY);
          const sells = orders.filter((o) => o.side !== BUY);
          const open = (list: Order[]) => lotsToAmount(orders[0]!.inst, list.reduce((s, o) => s + o.remaining, 0));
          rows.push({ instrument_name: name, buy_orders: buys.length, sell_orders: sells.length, buy_amount: open(buys), sell_amount: open(sells), orders: orders.map(renderOrder) });
        }
        return rows.sort((a, b) => ((a.instrument_name as string) < (b.instrument_name as string) ? -1 : 1));
      });
    },
  }),
  // ---- user trades ----
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
        const ids = new Set(order.tradeIds);
        const trades = user.trades.filter((t) => ids.has(t.id));
        if (p.sorting !== 'asc') trades.reverse();
        return trades.map((t) => renderUserTrade(t, user.id));
      });
    },
  }),
];
