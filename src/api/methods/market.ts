// Market data basics that clients need from day one: instruments, books, index, time, status.
// (The full Market data group, tickers and history build on these.)
import { Type } from '@sinclair/typebox';
import { CURRENCIES, CURRENCY_CODES, type CurrencyCode } from '../../domain/currency.ts';
import { ERR, reject } from '../../domain/errors.ts';
import type { Instrument } from '../../domain/instrument.ts';
import type { Services } from '../../app/services.ts';
import type { Exchange } from '../../engine/exchange.ts';
import { TWAP_WINDOW_MS, twap } from '../../engine/settlement.ts';
import { renderInstrument } from '../render.ts';
import { defineMethod } from '../rpc/registry.ts';
import { marketDataMethods, orderBookOf, orderBookRead } from './marketData.ts';
import { catalogVersion, sharedRead } from '../reads/sharedReads.ts';
import { CurrencyOrAny, InstrumentName, KindParam, currencyFilter } from './common.ts';
import { comboInstruments, comboOf, renderComboInstrument } from './comboMarketData.ts';

export { SERVER_VERSION } from '../../app/version.ts';
import { SERVER_VERSION } from '../../app/version.ts';
import { pow10 } from '../../domain/decimal.ts';

function instrumentOrReject(s: Services, name: string): Instrument {
  const inst = s.ex.instruments.get(name);
  if (!inst) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
  return inst;
}

/** The Deribit order book object (see bookReads.ts, which also makes the ticker); a fresh copy
 * of the cached one, so a caller may change it. */
export function renderOrderBook(s: Services, inst: Instrument, depth: number): Record<string, unknown> {
  return { ...orderBookOf(s.ex, inst, depth) };
}

/**
 * The version of a list with the combos: the catalog's, the combos' count and which are active (a
 * leg's expiry, the soft limit and create_combo change that; O(combos x legs), at most a few thousand).
 */
function catalogAndCombosVersion(ex: Exchange): string {
  const active: number[] = [];
  for (const r of ex.combos.byId.values()) if (ex.combos.isActive(r)) active.push(r.instrumentId);
  return `${catalogVersion(ex)}:${ex.combos.byId.size}:${active.join(',')}`;
}

const INDEX_NAMES: Array<[string, CurrencyCode]> = [['btc_usd', 'BTC'], ['eth_usd', 'ETH']];

/** Indices orders are refused for (no print yet, or an automatic feed silent past its bound):
 * the engine's own test (trading.ts), at the engine's time. */
export function lockedIndices(ex: Exchange): string[] {
  const out: string[] = [];
  for (const [name, c] of INDEX_NAMES) {
    const idx = ex.index[c];
    if (!idx || (!idx.manual && ex.now - idx.ts > ex.limits.indexStaleMs)) out.push(name);
  }
  return out;
}

/**
 * Deribit's estimated expiration price of an index: inside the 30-minute window before the nearest
 * unsettled expiry, the time-weighted average of the index so far (what settlement will compute,
 * src/engine/settlement.ts) with `is_estimated: true`; before it, the index itself. `seconds` runs
 * to that expiry (0 once passed and not yet settled); null without an expiry to settle.
 */
export function expirationEstimate(ex: Exchange, currency: CurrencyCode): { seconds: number; price: number | null; is_estimated: boolean } | null {
  let expiry = Infinity;
  for (const inst of ex.instruments.values()) if (inst.currency === currency && inst.state !== 'delivered' && inst.expiry < expiry) expiry = inst.expiry;
  if (expiry === Infinity) return null;
  const now = ex.now;
  const seconds = Math.max(0, Math.floor((expiry - now) / 1000));
  const index = ex.indexPrice(currency);
  if (now < expiry - TWAP_WINDOW_MS) return { seconds, price: Number.isFinite(index) ? index : null, is_estimated: false };
  const avg = twap(ex.indexHistory[currency] ?? [], expiry - TWAP_WINDOW_MS, Math.min(now, expiry));
  return { seconds, price: Number.isFinite(avg) ? Math.round(avg * 100) / 100 : null, is_estimated: true };
}

export const marketMethods = [
  defineMethod({
    name: 'public/get_instruments',
    scope: 'none',
    params: Type.Object({
      currency: Type.Union([CurrencyOrAny], { default: 'any' }),
      kind: KindParam,
      expired: Type.Boolean({ default: false }),
    }),
    handler(ctx, p) {
      const s = ctx.services;
      const cur = currencyFilter(p.currency);
      // the combos (comboMarketData.ts): a few, rendered per request
      if (p.kind === 'option_combo' || p.kind === 'combo') return s.seq.read(() => comboInstruments(s.ex, cur, p.expired));
      if (p.kind !== undefined && p.kind !== 'option' && p.kind !== 'any') return [];
      // kind left out (or any): every kind, as Deribit, so the options and then the combos
      const withCombos = p.kind !== 'option';
      // every instrument (currency=any) is about 1 MB: rendered once per catalog change and shared
      return sharedRead(s, `instruments:${p.currency}:${p.expired}:${withCombos}`, withCombos ? catalogAndCombosVersion : catalogVersion, () => {
        const out: Record<string, unknown>[] = [];
        for (const inst of s.ex.instruments.values()) {
          if (cur && inst.currency !== cur) continue;
          if ((inst.state === 'delivered') !== p.expired) continue;
          out.push(renderInstrument(inst));
        }
        if (withCombos) out.push(...comboInstruments(s.ex, cur, p.expired));
        return out;
      });
    },
  }),
  defineMethod({
    name: 'public/get_instrument',
    scope: 'none',
    pathParam: 'instrument_name',
    params: Type.Object({ instrument_name: InstrumentName }),
    handler(ctx, p) {
      return ctx.services.seq.read(() => {
        const r = comboOf(ctx.services.ex, p.instrument_name);
        return r !== undefined ? renderComboInstrument(ctx.services.ex, r) : renderInstrument(instrumentOrReject(ctx.services, p.instrument_name));
      });
    },
  }),
  defineMethod({
    name: 'public/get_order_book',
    scope: 'none',
    pathParam: 'instrument_name',
    params: Type.Object({ instrument_name: InstrumentName, depth: Type.Integer({ minimum: 1, maximum: 10000, default: 20 }) }),
    handler(ctx, p) {
      return orderBookRead(ctx.services, p.instrument_name, p.depth);
    },
  }),
  defineMethod({
    name: 'public/get_index_price',
    scope: 'none',
    params: Type.Object({ index_name: Type.Union([Type.Literal('btc_usd'), Type.Literal('eth_usd')]) }),
    handler(ctx, p) {
      const s = ctx.services;
      const c: CurrencyCode = p.index_name === 'btc_usd' ? 'BTC' : 'ETH';
      return s.seq.read(() => {
        const price = s.ex.indexPrice(c);
        const est = expirationEstimate(s.ex, c);
        const delivery = est ? est.price : Number.isFinite(price) ? price : null;
        return { index_price: Number.isFinite(price) ? price : null, estimated_delivery_price: delivery };
      });
    },
  }),
  defineMethod({
    name: 'public/get_index_price_names',
    scope: 'none',
    summary: 'The price indices: [{name}] (`extended`: with `future_combo_creation_enabled` and `option_combo_creation_enabled`, false: no combos).',
    params: Type.Object({ extended: Type.Boolean({ default: false }) }),
    handler(_ctx, p) {
      return INDEX_NAMES.map(([name]) => (p.extended ? { name, future_combo_creation_enabled: false, option_combo_creation_enabled: false } : { name }));
    },
  }),
  defineMethod({
    name: 'public/get_supported_index_names',
    scope: 'none',
    summary: 'The price indices as Deribit lists them, [{name, future_combo_creation_enabled, option_combo_creation_enabled}] (`type` all/spot/derivative: every index is a spot index, so derivative lists none; no combos are created here).',
    params: Type.Object({ type: Type.Union([Type.Literal('all'), Type.Literal('spot'), Type.Literal('derivative')], { default: 'all' }) }),
    handler(_ctx, p) {
      return p.type === 'derivative' ? [] : INDEX_NAMES.map(([name]) => ({ name, future_combo_creation_enabled: false, option_combo_creation_enabled: false }));
    },
  }),
  defineMethod({
    name: 'public/get_currencies',
    scope: 'none',
    params: Type.Object({}),
    handler() {
      return CURRENCY_CODES.map((c) => ({
        currency: c,
        currency_long: CURRENCIES[c].name,
        decimals: CURRENCIES[c].decimals,
        fee_precision: CURRENCIES[c].decimals,
        min_deposit_amount: pow10(-CURRENCIES[c].decimals),
        coin_type: CURRENCIES[c].coinType,
        network_currency: CURRENCIES[c].networkCurrency,
        // a withdrawal (withdraw_collateral) charges no fee here and sends nothing over a network
        withdrawal_fee: 0,
        min_withdrawal_fee: 0,
        network_fee: 0,
        // no yield-bearing coin and no cross-collateral pool (margin is per currency)
        apr: 0,
        in_cross_collateral_pool: false,
        min_confirmations: 0,
        withdrawal_priorities: [],
      }));
    },
  }),
  defineMethod({
    name: 'public/get_time',
    scope: 'none',
    params: Type.Object({}),
    handler: (ctx) => ctx.services.clock.now(),
  }),
  defineMethod({
    name: 'public/test',
    scope: 'none',
    params: Type.Object({ expected_result: Type.Optional(Type.String({ maxLength: 32 })) }),
    handler(_ctx, p) {
      if (p.expected_result === 'exception') throw reject(ERR.INTERNAL, 'requested_exception');
      return { version: SERVER_VERSION };
    },
  }),
  defineMethod({
    name: 'public/status',
    scope: 'none',
    params: Type.Object({}),
    handler(ctx) {
      const ex = ctx.services.ex;
      return ctx.services.seq.read(() => {
        const locked = lockedIndices(ex);
        // Deribit's `locked` is a string: "true" when every index is locked, "partial" for some
        return { locked: locked.length === 0 ? 'false' : locked.length === INDEX_NAMES.length ? 'true' : 'partial', locked_indices: locked };
      });
    },
  }),
  ...marketDataMethods,
];
