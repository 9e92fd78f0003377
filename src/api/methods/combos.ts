// Combos as instruments (issue 34, first slice; docs/api-notes.md "Combos"): create_combo makes (or
// finds) the combo of a set of legs; get_combos, get_combo_ids and get_combo_details list them. No
// combo book yet: orders on combos are not accepted.
import { Type } from '@sinclair/typebox';
import { ERR, reject } from '../../domain/errors.ts';
import type { Exchange } from '../../engine/exchange.ts';
import { MAX_COMBO_LEGS, type ComboRecord } from '../../combos/combos.ts';
import { defineMethod } from '../rpc/registry.ts';
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

export const comboMethods = [
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
      return s.seq.submit({ t: 'create_combo', userId: c.userId, legs }, (r) => renderCombo(s.ex, unwrap(r) as ComboRecord));
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
