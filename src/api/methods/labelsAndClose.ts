// Deribit trading methods of issue 31 built on the existing commands: close_position (a reduce-only
// order for the whole position), the label methods, and the cancel-alls by kind or type and by
// currency pair. Each is a read plus the command buy/sell, edit or cancel_all already journal.
import { Type } from '@sinclair/typebox';
import { CURRENCY_CODES, type CurrencyCode } from '../../domain/currency.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { lotsToAmount } from '../../domain/instrument.ts';
import type { CancelTypeFilter, TriggerOrder } from '../../engine/triggers.ts';
import type { Order, User } from '../../engine/types.ts';
import { orderId, renderOrder } from '../render.ts';
import { defineMethod, type CallContext, type MethodDef } from '../rpc/registry.ts';
import { CurrencyParam, InstrumentName, SafeText, caller } from './common.ts';
import { EDIT_FIELDS, deribitExtraMethods } from './deribitExtras.ts';
import { tradingMethods } from './trading.ts';
import { untriggeredOf } from './openOrderReads.ts';
import { kindSelects } from './comboOrders.ts';

/** Most orders get_order_state_by_label answers with: the newest of that label. */
export const MAX_LABEL_STATES = 1000;

function methodOf(list: MethodDef[], name: string): MethodDef {
  return list.find((m) => m.name === name)!;
}
const BUY_DEF = methodOf(tradingMethods, 'private/buy');
const SELL_DEF = methodOf(tradingMethods, 'private/sell');
const EDIT_DEF = methodOf(deribitExtraMethods, 'private/edit');
const CANCEL_BY_CURRENCY_DEF = methodOf(tradingMethods, 'private/cancel_all_by_currency');
const CANCEL_ALL_DEF = methodOf(tradingMethods, 'private/cancel_all');

function userOf(ctx: CallContext): User {
  const u = ctx.services.ex.users.get(caller(ctx).userId);
  if (!u) throw reject(ERR.UNAUTHORIZED);
  return u;
}

/** Deribit's kinds: every value is valid; `option`, `option_combo`/`combo` and `any` select orders here. */
const DeribitKind = Type.Union(['future', 'option', 'spot', 'future_combo', 'option_combo', 'combo', 'any'].map((k) => Type.Literal(k)), { default: 'any' });
const CancelType = Type.Union(['all', 'limit', 'trigger_all', 'stop', 'take', 'trailing_stop'].map((k) => Type.Literal(k)), { default: 'all' });
const CurrencyOrAnyText = Type.Union([...CURRENCY_CODES.map((c) => Type.Literal(c)), Type.Literal('any')]);
/** The pairs of the currencies this venue lists options in (Deribit names them `{base}_{quote}`). */
const CURRENCY_PAIRS: Record<string, CurrencyCode> = { btc_usd: 'BTC', btc_usdc: 'BTC', btc_usdt: 'BTC', eth_usd: 'ETH', eth_usdc: 'ETH', eth_usdt: 'ETH' };
const Label = SafeText({ maxLength: 64, default: '' });

/** The caller's open orders (resting, then untriggered) of a currency with exactly `label`. */
function openByLabel(ctx: CallContext, currency: string, label: string): (Order | TriggerOrder)[] {
  const user = userOf(ctx);
  const resting: Order[] = [];
  for (const e of user.exposures.values()) for (const o of e.openOrders) if (o.label === label && o.inst.currency === currency) resting.push(o);
  resting.push(...ctx.services.ex.comboBooks.openOf(user.id).filter((o) => o.label === label && o.inst.currency === currency));
  resting.sort((a, b) => a.id - b.id);
  return [...resting, ...untriggeredOf(ctx, 'all', (t) => t.cmd.label === label && t.inst.currency === currency)];
}

/** One cancel_all_by_currency per currency (each one command), their counts summed or their reports joined. */
async function cancelCurrencies(ctx: CallContext, currencies: (CurrencyCode | 'any')[], kind: string, type: string, detailed: boolean): Promise<unknown> {
  // options and option combos are listed: another kind has nothing to cancel
  const k = kindSelects(kind);
  if (!k.options && !k.combos) return detailed ? [] : 0;
  let count = 0;
  const reports: unknown[] = [];
  for (const currency of new Set(currencies)) {
    const r =
      currency === 'any'
        ? type === 'all' && k.options && k.combos
          ? await CANCEL_ALL_DEF.handler(ctx, { detailed })
          : await Promise.all(CURRENCY_CODES.map((c) => CANCEL_BY_CURRENCY_DEF.handler(ctx, { currency: c, kind, type, detailed }))).then((rs) => (detailed ? rs.flat() : (rs as number[]).reduce((a, b) => a + b, 0)))
        : await CANCEL_BY_CURRENCY_DEF.handler(ctx, { currency, kind, type, detailed });
    if (detailed) reports.push(...(r as unknown[]));
    else count += r as number;
  }
  return detailed ? reports : count;
}

export const labelAndCloseMethods = [
  defineMethod({
    name: 'private/close_position',
    scope: 'trade:read_write',
    summary: 'Closes the whole position in an instrument with one reduce-only order: a limit order at `price`, or a market order. The answer is that of buy/sell, `{order, trades}`. No position is 11029 `no_position`.',
    params: Type.Object({ instrument_name: InstrumentName, type: Type.Union([Type.Literal('limit'), Type.Literal('market')]), price: Type.Optional(Type.Number()) }),
    async handler(ctx, p) {
      const s = ctx.services;
      const size = await s.seq.read(() => {
        const inst = s.ex.instruments.get(p.instrument_name);
        if (!inst) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
        const lots = userOf(ctx).positions.get(inst.id)?.size ?? 0;
        return lots === 0 ? 0 : Math.sign(lots) * lotsToAmount(inst, Math.abs(lots));
      });
      if (size === 0) throw reject(ERR.INVALID_ARGUMENTS, 'no_position', 'instrument_name');
      // reduce-only: the order can only shrink the position, whatever fills between this read and it
      const order = { instrument_name: p.instrument_name, amount: Math.abs(size), type: p.type, price: p.price, time_in_force: 'good_til_cancelled', post_only: false, reject_post_only: false, reduce_only: true, label: '' };
      return (size > 0 ? SELL_DEF : BUY_DEF).handler(ctx, order);
    },
  }),
  defineMethod({
    name: 'private/get_open_orders_by_label',
    scope: 'trade:read',
    summary: "The caller's open orders of a currency whose label is `label` (no label: those without one), oldest first, then untriggered trigger orders.",
    params: Type.Object({ currency: CurrencyParam, label: Label }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => openByLabel(ctx, p.currency, p.label).map(renderOrder));
    },
  }),
  defineMethod({
    name: 'private/get_order_state_by_label',
    scope: 'trade:read',
    summary: `Every order of the caller in a currency with that label, open or closed (the newest ${MAX_LABEL_STATES}), oldest first.`,
    params: Type.Object({ currency: CurrencyParam, label: Label }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => {
        const user = userOf(ctx);
        const found: (Order | TriggerOrder)[] = [];
        for (const o of user.orders.values()) if (o.label === p.label && o.inst.currency === p.currency) found.push(o);
        for (const o of ctx.services.ex.comboBooks.orders.values()) if (o.userId === user.id && o.label === p.label && o.inst.currency === p.currency) found.push(o);
        found.push(...ctx.services.ex.triggers.openOf(user.id, (t) => t.cmd.label === p.label && t.inst.currency === p.currency));
        found.sort((a, b) => a.id - b.id);
        return found.slice(-MAX_LABEL_STATES).map(renderOrder);
      });
    },
  }),
  defineMethod({
    name: 'private/edit_by_label',
    scope: 'trade:read_write',
    summary: 'private/edit of the one open order of the caller on `instrument_name` with that label. None is 10004; more than one is 11029 `label_not_unique`.',
    params: Type.Object({ label: Label, instrument_name: InstrumentName, ...EDIT_FIELDS }),
    async handler(ctx, p) {
      const s = ctx.services;
      const ids = await s.seq.read(() => {
        const inst = s.ex.instruments.get(p.instrument_name);
        if (!inst) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
        return openByLabel(ctx, inst.currency, p.label)
          .filter((o) => o.inst === inst)
          .map((o) => orderId(o));
      });
      if (ids.length === 0) throw reject(ERR.ORDER_NOT_FOUND, 'no open order with this label', 'label');
      if (ids.length > 1) throw reject(ERR.INVALID_ARGUMENTS, 'label_not_unique', 'label');
      const { label: _label, instrument_name: _inst, ...edit } = p;
      return EDIT_DEF.handler(ctx, { ...edit, order_id: ids[0] });
    },
  }),
  defineMethod({
    name: 'private/cancel_all_by_kind_or_type',
    scope: 'trade:read_write',
    summary: 'Cancels the caller\'s orders in the currencies named (one, a list, or `any`), of a kind (only options are listed: other kinds cancel nothing) and type; the count, or with `detailed` the reports of cancel_all_by_currency.',
    params: Type.Object({
      currency: Type.Union([CurrencyOrAnyText, Type.Array(CurrencyOrAnyText, { minItems: 1, maxItems: 16 })]),
      kind: DeribitKind,
      type: CancelType,
      detailed: Type.Boolean({ default: false }),
    }),
    handler(ctx, p) {
      const currencies = (Array.isArray(p.currency) ? p.currency : [p.currency]) as (CurrencyCode | 'any')[];
      return cancelCurrencies(ctx, currencies, p.kind, p.type as CancelTypeFilter, p.detailed);
    },
  }),
  defineMethod({
    name: 'private/cancel_all_by_currency_pair',
    scope: 'trade:read_write',
    summary: `Cancels the caller's orders in the currency of a pair (${Object.keys(CURRENCY_PAIRS).join(', ')}), of a kind and type, as cancel_all_by_currency.`,
    params: Type.Object({
      currency_pair: Type.Union(Object.keys(CURRENCY_PAIRS).map((k) => Type.Literal(k))),
      kind: DeribitKind,
      type: CancelType,
      detailed: Type.Boolean({ default: false }),
    }),
    handler(ctx, p) {
      return cancelCurrencies(ctx, [CURRENCY_PAIRS[p.currency_pair]!], p.kind, p.type, p.detailed);
    },
  }),
];
