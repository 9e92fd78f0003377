// Settlement history of the caller (Deribit private/get_settlement_history_by_instrument and
// _by_currency), read from the account log's `delivery` entries (src/engine/ledger.ts): Strikebook
// lists options only, which are delivered (cash-settled at expiry); futures' daily `settlement` and
// `bankruptcy` events do not occur, so those types select nothing.
import { Type } from '@sinclair/typebox';
import { ERR, reject } from '../../domain/errors.ts';
import { intrinsicCoin } from '../../domain/pricing.ts';
import { lotsToAmount } from '../../domain/instrument.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { LedgerEntry } from '../../engine/ledger.ts';
import { coin, money } from '../render.ts';
import { defineMethod, type CallContext } from '../rpc/registry.ts';
import { CurrencyParam, InstrumentName, Timestamp, caller } from './common.ts';

const SettlementType = Type.Union([Type.Literal('settlement'), Type.Literal('delivery'), Type.Literal('bankruptcy')]);
const Paging = {
  type: Type.Optional(SettlementType),
  count: Type.Integer({ minimum: 1, maximum: 1000, default: 20 }),
  /** the previous page's `continuation`: entries older than it */
  continuation: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$' })),
  /** the latest timestamp to list from, going back */
  search_start_timestamp: Type.Optional(Timestamp),
};

function render(ex: Exchange, e: LedgerEntry): Record<string, unknown> {
  const inst = ex.instruments.get(e.instrument!)!;
  const S = inst.deliveryPrice ?? NaN;
  const pnl = money(e.amount, e.currency);
  return {
    type: 'delivery',
    timestamp: e.ts,
    instrument_name: inst.name,
    position: e.size === null ? null : lotsToAmount(inst, e.size),
    // the settlement price per contract (coin intrinsic value at the delivery price) and the index
    mark_price: Number.isFinite(S) ? coin(intrinsicCoin(inst.optionType, S, inst.strike)) : null,
    index_price: Number.isFinite(S) ? S : null,
    profit_loss: pnl,
    session_profit_loss: pnl,
  };
}

function history(ctx: CallContext, match: (e: LedgerEntry) => boolean, p: { type?: string; count: number; continuation?: string; search_start_timestamp?: number }) {
  const s = ctx.services;
  return s.seq.read(() => {
    const user = s.ex.users.get(caller(ctx).userId);
    if (!user) throw reject(ERR.UNAUTHORIZED);
    const before = p.continuation === undefined ? Infinity : Number(p.continuation);
    const latest = p.search_start_timestamp ?? Infinity;
    const out: LedgerEntry[] = [];
    if (p.type === undefined || p.type === 'delivery') {
      for (let i = user.log.length - 1; i >= 0 && out.length <= p.count; i--) {
        if (user.log.typeAt(i) !== 'delivery') continue;
        const e = user.log.at(i);
        if (e.id >= before || e.ts > latest || !match(e)) continue;
        out.push(e);
      }
    }
    const more = out.length > p.count;
    if (more) out.pop();
    return { settlements: out.map((e) => render(s.ex, e)), continuation: more ? String(out[out.length - 1].id) : null };
  });
}

export const settlementMethods = [
  defineMethod({
    name: 'private/get_settlement_history_by_instrument',
    scope: 'trade:read',
    summary: 'The caller\'s positions settled at expiry in one instrument, newest first: {settlements: [{type:"delivery", timestamp, instrument_name, position, mark_price, index_price, profit_loss, session_profit_loss}], continuation}.',
    params: Type.Object({ instrument_name: InstrumentName, ...Paging }),
    handler(ctx, p) {
      if (!ctx.services.ex.instruments.has(p.instrument_name)) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
      return history(ctx, (e) => e.instrument === p.instrument_name, p);
    },
  }),
  defineMethod({
    name: 'private/get_settlement_history_by_currency',
    scope: 'trade:read',
    summary: 'The caller\'s positions settled at expiry in one currency, newest first (as _by_instrument).',
    params: Type.Object({ currency: CurrencyParam, ...Paging }),
    handler(ctx, p) {
      return history(ctx, (e) => e.currency === p.currency, p);
    },
  }),
];
