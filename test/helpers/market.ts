// Instruments and valid prices as a client finds them: get_instruments for the grid, get_order_book
// for the band [min_price, max_price]. Prices are worked in integer units of 0.0001 coin.
import { ok } from './server.ts';

export const PRICE_UNIT = 1e4;

export interface Market {
  inst: any;
  book: any;
  name: string;
  /** Every price on the instrument's tick grid inside the band, ascending (coin). */
  prices: number[];
}

function tickAt(inst: any, units: number): number {
  let tick = Math.round(inst.tick_size * PRICE_UNIT);
  for (const s of inst.tick_size_steps ?? []) if (units >= Math.round(s.above_price * PRICE_UNIT)) tick = Math.round(s.tick_size * PRICE_UNIT);
  return tick;
}

/** Whether a price (coin) lies on the instrument's tick grid. */
export function onGrid(inst: any, price: number): boolean {
  const units = Math.round(price * PRICE_UNIT);
  return Math.abs(units - price * PRICE_UNIT) < 1e-6 && units % tickAt(inst, units) === 0;
}

export async function market(url: string, inst: any): Promise<Market> {
  const book = await ok(url, 'public/get_order_book', { instrument_name: inst.instrument_name });
  const lo = Math.ceil(book.min_price * PRICE_UNIT - 1e-6);
  const hi = Math.floor(book.max_price * PRICE_UNIT + 1e-6);
  const prices: number[] = [];
  for (let u = Math.max(lo, 1); u <= hi; u++) if (u % tickAt(inst, u) === 0) prices.push(u / PRICE_UNIT);
  return { inst, book, name: inst.instrument_name, prices };
}

/** The grid price inside the band nearest to the mark. */
export function nearMark(m: Market): number {
  let best = m.prices[0];
  for (const p of m.prices) if (Math.abs(p - m.book.mark_price) < Math.abs(best - m.book.mark_price)) best = p;
  return best;
}

/** Open instruments of a currency, as get_instruments lists them. */
export async function instruments(url: string, currency = 'BTC'): Promise<any[]> {
  const all = await ok(url, 'public/get_instruments', { currency, kind: 'option' });
  return all.filter((i: any) => i.is_active && i.state === 'open');
}

/**
 * The BTC call nearest the money of the latest expiry: a wide band strictly above one tick, so
 * prices below and above the band exist, and the 0.0005 tick applies.
 */
export async function atmCall(url: string, currency = 'BTC'): Promise<Market> {
  const list = (await instruments(url, currency)).filter((i) => i.option_type === 'call');
  const index = (await ok(url, 'public/get_index_price', { index_name: `${currency.toLowerCase()}_usd` })).index_price;
  const lastExpiry = Math.max(...list.map((i) => i.expiration_timestamp));
  const series = list.filter((i) => i.expiration_timestamp === lastExpiry);
  series.sort((a, b) => Math.abs(a.strike - index) - Math.abs(b.strike - index));
  return market(url, series[0]);
}

/**
 * The BTC call nearest the money of the nearest expiry at least `minDays` away: its mark, and so the
 * margin a short holds, stays within a narrow range at any hour the test runs (the latest expiry is
 * 3 to 6 months out depending on the date).
 */
export async function nearDatedAtmCall(url: string, minDays = 7, currency = 'BTC'): Promise<Market> {
  const now = await ok(url, 'public/get_time');
  const list = (await instruments(url, currency)).filter((i) => i.option_type === 'call' && i.expiration_timestamp >= now + minDays * 86_400_000);
  const index = (await ok(url, 'public/get_index_price', { index_name: `${currency.toLowerCase()}_usd` })).index_price;
  const expiry = Math.min(...list.map((i) => i.expiration_timestamp));
  const series = list.filter((i) => i.expiration_timestamp === expiry);
  series.sort((a, b) => Math.abs(a.strike - index) - Math.abs(b.strike - index));
  return market(url, series[0]);
}

/**
 * A far out-of-the-money call of the nearest expiry at least a day away (so it cannot expire while a
 * test runs): cheap, so prices below 0.0024 exist and the 12.5% fee cap applies.
 */
export async function cheapCall(url: string, currency = 'BTC'): Promise<Market> {
  const now = await ok(url, 'public/get_time');
  const list = (await instruments(url, currency)).filter((i) => i.option_type === 'call' && i.expiration_timestamp > now + 86_400_000);
  const firstExpiry = Math.min(...list.map((i) => i.expiration_timestamp));
  const series = list.filter((i) => i.expiration_timestamp === firstExpiry).sort((a, b) => b.strike - a.strike);
  return market(url, series[0]);
}

/** The put of the same series and strike as a call. */
export async function twinPut(url: string, call: Market): Promise<Market> {
  const list = await instruments(url, call.inst.base_currency);
  const put = list.find((i) => i.option_type === 'put' && i.strike === call.inst.strike && i.expiration_timestamp === call.inst.expiration_timestamp);
  return market(url, put);
}
