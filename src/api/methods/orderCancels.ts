// Cancels of the trading group (API.md 3.3): one order by id, all of the caller's orders, or those of
// a currency (with Deribit's kind and type filters) or an instrument; trigger orders among them.
import { Type } from '@sinclair/typebox';
import type { CurrencyCode } from '../../domain/currency.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { TriggerOrder, type CancelTypeFilter } from '../../engine/triggers.ts';
import type { Order } from '../../engine/types.ts';
import { cancelKind, kindSelects } from './comboOrders.ts';
import { parseOrderId, renderOrder } from '../render.ts';
import { defineMethod } from '../rpc/registry.ts';
import { CurrencyParam, InstrumentName, caller, unwrap } from './common.ts';

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

export const orderCancelMethods = [
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
];
