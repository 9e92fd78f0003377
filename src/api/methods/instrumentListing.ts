// Instrument listing (API.md 3.5): all instruments, expiration timestamps and past delivery prices.
import { Type } from '@sinclair/typebox';
import type { CurrencyCode } from '../../domain/currency.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { Services } from '../../app/services.ts';
import { renderInstrument } from '../render.ts';
import { defineMethod } from '../rpc/registry.ts';
import { catalogVersion, sharedRead } from '../reads/sharedReads.ts';
import { Count, CurrencyOrAny, currencyFilter } from './common.ts';

const INDEX_CURRENCY: Record<string, CurrencyCode> = { btc_usd: 'BTC', eth_usd: 'ETH' };
const IndexName = Type.Union([Type.Literal('btc_usd'), Type.Literal('eth_usd')]);
/** The kinds a book summary or the expirations filter by: only options are listed, so the others select none. */
export const Kind = Type.Union([Type.Literal('option'), Type.Literal('future'), Type.Literal('spot'), Type.Literal('future_combo'), Type.Literal('option_combo'), Type.Literal('any')]);

/** The currencies options are listed in: all, or the one asked for. */
export function optionCurrencies(s: Services, currency: CurrencyCode | null): CurrencyCode[] {
  const listed = s.catalog.currencies.map((c) => c.currency);
  return currency === null ? listed : [currency];
}

function activeExpiries(ex: Exchange, currency: CurrencyCode): number[] {
  const set = new Set<number>();
  for (const inst of ex.instruments.values()) if (inst.currency === currency && inst.state !== 'delivered' && inst.expiry > ex.now) set.add(inst.expiry);
  return [...set].sort((a, b) => a - b);
}

function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export const allInstrumentsMethod = defineMethod({
  name: 'public/get_all_instruments',
  scope: 'none',
  params: Type.Object({ expired: Type.Boolean({ default: false }) }),
  handler(ctx, p) {
    const s = ctx.services;
    return sharedRead(s, `all_instruments:${p.expired}`, catalogVersion, () => {
      const out: Record<string, unknown>[] = [];
      for (const inst of s.ex.instruments.values()) if ((inst.state === 'delivered') === p.expired) out.push(renderInstrument(inst));
      return out;
    });
  },
});

export const expirationTimestampsMethod = defineMethod({
  name: 'public/get_expiration_timestamps',
  scope: 'none',
  params: Type.Object({ currency: Type.Union([CurrencyOrAny], { default: 'any' }), kind: Type.Optional(Kind) }),
  handler(ctx, p) {
    const s = ctx.services;
    return s.seq.read(() => {
      const out: Record<string, number[]> = {};
      const optionsWanted = p.kind === undefined || p.kind === 'option' || p.kind === 'any';
      for (const c of optionCurrencies(s, currencyFilter(p.currency))) out[c] = optionsWanted ? activeExpiries(s.ex, c) : [];
      return out;
    });
  },
});

export const deliveryPricesMethod = defineMethod({
  name: 'public/get_delivery_prices',
  scope: 'none',
  params: Type.Object({ index_name: IndexName, offset: Type.Integer({ minimum: 0, maximum: 1e6, default: 0 }), count: Count(10) }),
  handler(ctx, p) {
    const ex = ctx.services.ex;
    const currency = INDEX_CURRENCY[p.index_name];
    return ctx.services.seq.read(() => {
      const all = ex.deliveries.filter((d) => d.currency === currency).sort((a, b) => b.expiry - a.expiry);
      return { data: all.slice(p.offset, p.offset + p.count).map((d) => ({ date: utcDate(d.expiry), delivery_price: d.price })), records_total: all.length };
    });
  },
});
