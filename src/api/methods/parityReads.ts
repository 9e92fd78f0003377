// Deribit reads of issue 31 with no state of their own: the index chart, the last settlements of the
// market, and the caller's account locks.
import { Type } from '@sinclair/typebox';
import { CURRENCY_CODES, type CurrencyCode } from '../../domain/currency.ts';
import { ERR, reject } from '../../domain/errors.ts';
import type { Instrument } from '../../domain/instrument.ts';
import { intrinsicCoin } from '../../domain/pricing.ts';
import type { Exchange } from '../../engine/exchange.ts';
import { coin } from '../render.ts';
import { defineMethod } from '../rpc/registry.ts';
import { CurrencyParam, InstrumentName, Timestamp, caller } from './common.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Each range of get_index_chart_data: how far back, and the step of its points (at most ~600 points). */
const CHART_RANGES: Record<string, { back: number; step: number }> = {
  '1h': { back: HOUR, step: 60_000 },
  '1d': { back: DAY, step: 5 * 60_000 },
  '2d': { back: 2 * DAY, step: 5 * 60_000 },
  '1m': { back: 30 * DAY, step: HOUR },
  '1y': { back: 365 * DAY, step: 12 * HOUR },
  all: { back: Infinity, step: 12 * HOUR },
};
const INDEX_CURRENCIES: Record<string, CurrencyCode> = { btc_usd: 'BTC', eth_usd: 'ETH' };

const SettlementPaging = {
  type: Type.Optional(Type.Union([Type.Literal('settlement'), Type.Literal('delivery'), Type.Literal('bankruptcy')])),
  count: Type.Integer({ minimum: 1, maximum: 1000, default: 20 }),
  /** the previous page's `continuation`: settlements before that expiry */
  continuation: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$' })),
  search_start_timestamp: Type.Optional(Timestamp),
};

/**
 * Delivered instruments (options settle by delivery at expiry; futures' settlement and bankruptcy
 * events do not occur here), newest expiry first, paged by expiry. `position` is not kept after a
 * delivery, so the market-wide entry carries the prices, as Deribit's public list does for options.
 */
function lastSettlements(ex: Exchange, match: (i: Instrument) => boolean, p: { type?: string; count: number; continuation?: string; search_start_timestamp?: number }) {
  if (p.type !== undefined && p.type !== 'delivery') return { settlements: [], continuation: null };
  const before = p.continuation === undefined ? Infinity : Number(p.continuation);
  const latest = p.search_start_timestamp ?? Infinity;
  const found: Instrument[] = [];
  for (const inst of ex.instruments.values()) {
    if (inst.state !== 'delivered' || inst.deliveryPrice === null || !match(inst)) continue;
    if (inst.expiry >= before || inst.expiry > latest) continue;
    found.push(inst);
  }
  found.sort((a, b) => b.expiry - a.expiry || (a.name < b.name ? -1 : 1));
  // a page ends at a whole expiry, so `continuation` (an expiry) never splits one
  let end = Math.min(p.count, found.length);
  while (end < found.length && end > 0 && found[end]!.expiry === found[end - 1]!.expiry) end++;
  const page = found.slice(0, end);
  const settlements = page.map((inst) => {
    const S = inst.deliveryPrice!;
    return { type: 'delivery', timestamp: inst.expiry, instrument_name: inst.name, index_price: S, mark_price: coin(intrinsicCoin(inst.optionType, S, inst.strike)) };
  });
  return { settlements, continuation: end < found.length ? String(page[page.length - 1]!.expiry) : null };
}

export const parityReadMethods = [
  defineMethod({
    name: 'public/get_index_chart_data',
    scope: 'none',
    summary: 'The index over a range (1h, 1d, 2d, 1m, 1y, all) as [[timestamp, price]] ascending: minute closes for 1h, 5-minute points for 1d and 2d, hourly for 1m, 12-hourly beyond; the history kept is 16 days.',
    params: Type.Object({ index_name: Type.Union(Object.keys(INDEX_CURRENCIES).map((k) => Type.Literal(k))), range: Type.Union(Object.keys(CHART_RANGES).map((k) => Type.Literal(k))) }),
    handler(ctx, p) {
      const s = ctx.services;
      const r = CHART_RANGES[p.range]!;
      return s.seq.read(() => {
        const from = r.back === Infinity ? 0 : s.ex.now - r.back;
        const out: [number, number][] = [];
        // the last close of each step
        for (const [ts, price] of s.views.indexMinutes(INDEX_CURRENCIES[p.index_name]!, from)) {
          const tick = Math.floor(ts / r.step) * r.step;
          const last = out[out.length - 1];
          if (last && last[0] === tick) last[1] = price;
          else out.push([tick, price]);
        }
        return out;
      });
    },
  }),
  defineMethod({
    name: 'public/get_last_settlements_by_currency',
    scope: 'none',
    summary: 'The options of a currency delivered at expiry, newest first: {settlements: [{type:"delivery", timestamp, instrument_name, index_price, mark_price}], continuation}.',
    params: Type.Object({ currency: CurrencyParam, ...SettlementPaging }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => lastSettlements(ctx.services.ex, (i) => i.currency === p.currency, p));
    },
  }),
  defineMethod({
    name: 'public/get_last_settlements_by_instrument',
    scope: 'none',
    summary: 'The delivery of one option at its expiry, as get_last_settlements_by_currency (empty before it expires).',
    params: Type.Object({ instrument_name: InstrumentName, ...SettlementPaging }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => {
        if (!ctx.services.ex.instruments.has(p.instrument_name)) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
        return lastSettlements(ctx.services.ex, (i) => i.name === p.instrument_name, p);
      });
    },
  }),
  defineMethod({
    name: 'private/get_user_locks',
    scope: 'account:read',
    summary: "The caller's locks, one per currency: `enabled` while the account is in liquidation in that currency (only reducing orders are accepted then); no other lock exists here.",
    params: Type.Object({}),
    handler(ctx) {
      const userId = caller(ctx).userId;
      return ctx.services.seq.read(() =>
        CURRENCY_CODES.map((currency) => {
          const locked = ctx.services.ex.inLiquidation(userId, currency);
          return { currency, enabled: locked, message: locked ? 'account in liquidation: only orders that reduce positions are accepted' : '' };
        }),
      );
    },
  }),
];
