// Order reads Deribit bots call beyond the seed's inventory (issue 17): every open order of the
// user (`private/get_open_orders`) and the initial margin each order holds
// (`private/get_order_margin_by_ids`).
import { Type } from '@sinclair/typebox';
import { CURRENCIES } from '../../domain/currency.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { BUY, SELL } from '../../engine/orderBook.ts';
import type { Order, User } from '../../engine/types.ts';
import { TriggerOrder } from '../../engine/triggers.ts';
import { contractsOf } from '../../risk/accountRisk.ts';
import { toMinorUp } from '../../risk/margin.ts';
import type { Services } from '../../app/services.ts';
import { money, orderId, parseOrderId, renderOrder } from '../render.ts';
import { defineMethod, type CallContext } from '../rpc/registry.ts';
import { caller } from './common.ts';
import { untriggeredOf } from './openOrderReads.ts';
import { byId, kindSelects, openComboOrders } from './comboOrders.ts';

/** Most ids one get_order_margin_by_ids call takes. */
export const MAX_MARGIN_IDS = 1000;

const OpenKind = Type.Union(['future', 'option', 'spot', 'future_combo', 'option_combo', 'combo', 'any'].map((k) => Type.Literal(k)), { default: 'any' });
const OpenType = Type.Union(
  ['all', 'limit', 'trigger_all', 'stop_all', 'stop_limit', 'stop_market', 'take_all', 'take_limit', 'take_market', 'trailing_all', 'trailing_stop'].map((k) => Type.Literal(k)),
  { default: 'all' },
);

function userOf(ctx: CallContext): User {
  const u = ctx.services.ex.users.get(caller(ctx).userId);
  if (!u) throw reject(ERR.UNAUTHORIZED);
  return u;
}

function allOpen(user: User): Order[] {
  const out: Order[] = [];
  for (const e of user.exposures.values()) for (const o of e.openOrders) out.push(o);
  return out.sort((a, b) => a.id - b.id);
}

/**
 * Initial margin an open order holds, minor units. A buy: the premium and fee it reserves. A sell:
 * the initial margin of the short it would open, the long position covering the oldest sells of the
 * instrument first; each order's margin rounds up on its own, so their sum may pass the account's
 * figure (one rounding per instrument) by a minor unit per order.
 */
function orderMargins(s: Services, user: User, orders: Order[]): Map<Order, number> {
  const out = new Map<Order, number>();
  const risk = s.ex.trading.risk;
    const sellInsts = new Set<number>();
  for (const o of orders) {
    if (o.state !== 'open') out.set(o, 0);
    else if (o.side === BUY) out.set(o, o.reserved);
    else sellInsts.add(o.inst.id);
  }
  const wanted = new Set(orders);
  for (const instId of sellInsts) {
    const e = user.exposures.get(instId)!;
    let cover = Math.max(0, user.positions.get(instId)?.size ?? 0);
    const sells = [...e.openOrders].filter((o) => o.side === SELL).sort((a, b) => a.id - b.id);
    for (const o of sells) {
      const covered = Math.min(cover, o.remaining);
      cover -= covered;
      const short = o.remaining - covered;
      if (!wanted.has(o)) continue;
      out.set(o, short > 0 ? toMinorUp(risk.imPerContract(o.inst) * contractsOf(o.inst, short), CURRENCIES[o.inst.currency].decimals) : 0);
    }
  }
  return out;
}

export const orderMethods = [
  defineMethod({
    name: 'private/get_open_orders',
    scope: 'trade:read',
    summary: 'Every open order of the caller, all currencies, oldest first, then the untriggered trigger orders. `kind` option selects option orders, option_combo/combo the orders on combos, any both (other kinds: none listed); `type` all selects both, limit the resting orders, trigger_all/stop_all/take_all/trailing_all or one trigger type the untriggered orders of that type.',
    params: Type.Object({ kind: OpenKind, type: OpenType }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => {
        const user = userOf(ctx);
        const k = kindSelects(p.kind);
        const limit = p.type === 'all' || p.type === 'limit';
        const resting = byId(limit && k.options ? allOpen(user) : [], limit && k.combos ? openComboOrders(ctx.services.ex, user.id) : []);
        return [...resting, ...(k.options ? untriggeredOf(ctx, p.type, () => true) : [])].map(renderOrder);
      });
    },
  }),
  defineMethod({
    name: 'private/get_order_margin_by_ids',
    scope: 'trade:read',
    summary: `Initial margin each of the caller's orders holds: [{order_id, initial_margin, initial_margin_currency}] (0 for a closed order). At most ${MAX_MARGIN_IDS} ids; an unknown or another user's id is 10004.`,
    // an array (JSON, or a repeated query parameter), or one string: a query string's single id, or
    // ids separated by commas
    params: Type.Object({
      ids: Type.Union([Type.Array(Type.String({ minLength: 1, maxLength: 32 }), { minItems: 1, maxItems: MAX_MARGIN_IDS }), Type.String({ minLength: 1, maxLength: 33 * MAX_MARGIN_IDS })]),
    }),
    handler(ctx, p) {
      const s = ctx.services;
      const ids = typeof p.ids === 'string' ? p.ids.split(',') : p.ids;
      if (ids.length > MAX_MARGIN_IDS) throw reject(ERR.INVALID_PARAMS, `at most ${MAX_MARGIN_IDS} ids`, 'ids');
      return s.seq.read(() => {
        const user = userOf(ctx);
        const orders = ids.map((text) => {
          const id = parseOrderId(text);
          const o = id === null ? undefined : (user.orders.get(id) ?? s.ex.triggers.get(user.id, id) ?? s.ex.comboBooks.orderOf(user.id, id));
          if (!o) throw reject(ERR.ORDER_NOT_FOUND, text, 'ids');
          return o;
        });
        // a trigger order holds no margin until it fires (docs/api-notes.md "Trigger orders")
        const margins = orderMargins(s, user, orders.filter((o): o is Order => !(o instanceof TriggerOrder) && !s.ex.combos.byId.has(o.inst.name)));
        // a combo order: what src/combos/orderMargin.ts holds for it, or on portfolio margin what it adds to the scenario figure (0 once closed)
        for (const o of orders) if (!(o instanceof TriggerOrder) && s.ex.combos.byId.has(o.inst.name)) margins.set(o, o.state === 'open' ? s.ex.trading.risk.comboOrderIM(user, o as Order) : 0);
        return orders.map((o) => ({ order_id: orderId(o), initial_margin: money(margins.get(o as Order) ?? 0, o.inst.currency), initial_margin_currency: o.inst.currency }));
      });
    },
  }),
];
