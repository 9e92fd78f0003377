// Open-order reads of the trading group (API.md 3.3): the get_open_orders_by_* methods, over resting
// orders, orders on combos (comboOrders.ts) and untriggered trigger orders (untriggeredOf, shared).
import { Type } from '@sinclair/typebox';
import { ERR, reject } from '../../domain/errors.ts';
import { lotsToAmount } from '../../domain/instrument.ts';
import { BUY, SELL } from '../../engine/orderBook.ts';
import { selectsType, type TriggerOrder } from '../../engine/triggers.ts';
import type { Order, User } from '../../engine/types.ts';
import { byId, kindSelects, openComboOrders } from './comboOrders.ts';
import { renderOrder } from '../render.ts';
import { defineMethod, type CallContext } from '../rpc/registry.ts';
import { CurrencyParam, InstrumentName, KindParam, OpenOrderTypeParam, caller } from './common.ts';

const Side = Type.Union([Type.Literal('buy'), Type.Literal('sell')]);

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

/** Deribit open-order `type` filters: `all` and `limit` select resting orders (a fired trigger's among them). */
function restingType(type: string | undefined): boolean {
  return type === undefined || type === 'all' || type === 'limit';
}

/** The caller's untriggered orders a Deribit `type` filter selects (none for `limit`), oldest first. */
export function untriggeredOf(ctx: CallContext, type: string | undefined, filter: (t: TriggerOrder) => boolean): TriggerOrder[] {
  if (type === 'limit') return [];
  return ctx.services.ex.triggers.openOf(caller(ctx).userId, (t) => selectsType(t, type ?? 'all') && filter(t));
}

export const openOrderReadMethods = [
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
];
