// Combos as instruments (issue 34, first slice; docs/api-notes.md "Combos"): create_combo makes (or
// finds) the combo of a set of legs; get_combos, get_combo_ids and get_combo_details list them. No
// combo book yet: orders on combos are not accepted.
import { Type } from '@sinclair/typebox';
import { ERR, reject } from '../../domain/errors.ts';
import type { Exchange } from '../../engine/exchange.ts';
import { DEFAULT_MAX_ACTIVE_COMBOS, MAX_COMBOS, MAX_COMBO_LEGS, type ComboRecord } from '../../combos/combos.ts';
import { defineMethod } from '../rpc/registry.ts';
import { parseScaled } from '../../domain/decimal.ts';
import { AMOUNT_SCALE, PRICE_SCALE, priceToNumber } from '../../domain/instrument.ts';
import { comboBand, legQuotes, splitPrice } from '../../combos/legPrices.ts';
import { CurrencyOrAny, CurrencyParam, InstrumentName, caller, unwrap } from './common.ts';

const ComboId = Type.String({ minLength: 1, maxLength: 64 });

function renderCombo(ex: Exchange, r: ComboRecord): Record<string, unknown> {
  return {
    id: r.id,
    instrument_id: r.instrumentId,
    state: ex.combos.isActive(r) ? 'active' : 'inactive',
    state_timestamp: ex.combos.stateTimestamp(r),
    creation_timestamp: r.created,
    legs: r.legs.map((l) => ({ instrument_name: l.instrument, amount: l.ratio })),
  };
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

export const comboMethods = [
  defineMethod({
    name: 'private/get_leg_prices',
    scope: 'trade:read',
    summary: 'The leg prices a combo fill at `price` (the net premium per unit of `amount`, may be negative) would trade at: every leg starts at its mark and the difference is spread in proportion to |ratio| x mark, each leg inside its band, summing exactly (docs/api-notes.md "Combo books"). `amount` is the common divisor of the legs\' amounts, `ratio` each leg\'s amount over it.',
    params: Type.Object({
      legs: Type.Array(Type.Object({ instrument_name: InstrumentName, amount: Type.Number({ exclusiveMinimum: 0 }), direction: Type.Union([Type.Literal('buy'), Type.Literal('sell')]) }), { minItems: 1, maxItems: MAX_COMBO_LEGS }),
      price: Type.Number(),
    }),
    handler(ctx, p) {
      const s = ctx.services;
      const amounts = p.legs.map((l) => parseScaled(l.amount, AMOUNT_SCALE));
      if (amounts.some((a) => a === null || a <= 0)) throw reject(ERR.INVALID_AMOUNT, 'invalid_amount', 'amount');
      const price = parseScaled(p.price, PRICE_SCALE);
      if (price === null) throw reject(ERR.PRICE_WRONG_TICK, 'price_wrong_tick', 'price');
      const unit = (amounts as number[]).reduce((g, a) => gcd(g, a), 0);
      const ratios = p.legs.map((l, i) => (amounts[i]! / unit) * (l.direction === 'buy' ? 1 : -1));
      if (new Set(p.legs.map((l) => l.instrument_name)).size !== p.legs.length) throw reject(ERR.INVALID_ARGUMENTS, 'instrument_repeated', 'legs');
      return s.seq.read(() => {
        for (const l of p.legs) if (!s.ex.instruments.has(l.instrument_name)) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
        const q = legQuotes(s.ex, p.legs.map((l, i) => ({ instrument: l.instrument_name, ratio: ratios[i]! })));
        if (q === null) throw reject(ERR.BOOK_CLOSED, 'no_mark_price');
        const band = comboBand(q);
        if (price < band.min) throw reject(ERR.PRICE_TOO_LOW, undefined, 'price', String(priceToNumber(band.min)));
        if (price > band.max) throw reject(ERR.PRICE_TOO_HIGH, undefined, 'price', String(priceToNumber(band.max)));
        const legs = splitPrice(q, price);
        if (legs === null) throw reject(ERR.INVALID_PRICE, 'combo_price_not_splittable', 'price');
        return {
          legs: p.legs.map((l, i) => ({ ratio: Math.abs(ratios[i]!), instrument_name: l.instrument_name, direction: l.direction, price: priceToNumber(legs[i]!) })),
          amount: unit / 10 ** AMOUNT_SCALE,
        };
      });
    },
  }),
  defineMethod({
    name: 'private/create_combo',
    scope: 'trade:read_write',
    summary: `The combo of 2-${MAX_COMBO_LEGS} option legs of one currency (each \`amount\` a whole ratio, \`direction\` its sign; ratios are reduced by their common divisor), made when it does not exist yet, else the existing one.`,
    params: Type.Object({
      trades: Type.Array(
        Type.Object({ instrument_name: InstrumentName, direction: Type.Union([Type.Literal('buy'), Type.Literal('sell')]), amount: Type.Integer({ minimum: 1, maximum: 1000 }) }),
        { minItems: 2, maxItems: MAX_COMBO_LEGS },
      ),
    }),
    handler(ctx, p) {
      const c = caller(ctx);
      const s = ctx.services;
      const legs = p.trades.map((t) => ({ instrument: t.instrument_name, ratio: t.direction === 'buy' ? t.amount : -t.amount }));
      return s.seq.submit({ t: 'create_combo', userId: c.userId, legs, max: s.config.maxCombos ?? MAX_COMBOS, maxActive: s.config.maxActiveCombos ?? DEFAULT_MAX_ACTIVE_COMBOS }, (r) => renderCombo(s.ex, unwrap(r) as ComboRecord));
    },
  }),
  defineMethod({
    name: 'public/get_combo_details',
    scope: 'none',
    params: Type.Object({ combo_id: ComboId }),
    handler(ctx, p) {
      const s = ctx.services;
      return s.seq.read(() => {
        const r = s.ex.combos.byId.get(p.combo_id);
        if (r === undefined) throw reject(ERR.INVALID_INSTRUMENT, 'combo_not_found', 'combo_id');
        return renderCombo(s.ex, r);
      });
    },
  }),
  defineMethod({
    name: 'public/get_combo_ids',
    scope: 'none',
    params: Type.Object({ currency: CurrencyParam, state: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('inactive')])) }),
    handler(ctx, p) {
      const s = ctx.services;
      return s.seq.read(() => {
        const out: string[] = [];
        for (const r of s.ex.combos.byId.values()) {
          if (s.ex.combos.currencyOf(r) !== p.currency) continue;
          if (p.state !== undefined && (s.ex.combos.isActive(r) ? 'active' : 'inactive') !== p.state) continue;
          out.push(r.id);
        }
        return out;
      });
    },
  }),
  defineMethod({
    name: 'public/get_combos',
    scope: 'none',
    params: Type.Object({ currency: CurrencyOrAny }),
    handler(ctx, p) {
      const s = ctx.services;
      return s.seq.read(() => [...s.ex.combos.byId.values()].filter((r) => p.currency === 'any' || s.ex.combos.currencyOf(r) === p.currency).map((r) => renderCombo(s.ex, r)));
    },
  }),
];
