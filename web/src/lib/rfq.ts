// Block RFQ shapes as the API sends them (docs/api-notes.md "Block RFQ") and the exact decimal sums
// the RFQ screens make before sending: a leg's amount (ratio x the structure's amount) and a quote's
// structure price (sum of ratio x leg price, bought legs added, sold legs subtracted). Both are worked
// in integer units of the API's grids (amounts 10^-8, prices 10^-4), never in binary floats, so
// 3 x 0.1 is 0.3 and not 0.30000000000000004. Pure functions: test/web/rfqMath.test.ts.

import { fixed } from './format.ts';

export const AMOUNT_DP = 8;
export const PRICE_DP = 4;
/** A bound on what a field may hold, so units stay safe integers (as the order ticket's 100,000). */
const MAX_UNITS = 1e15;

export type Dir = 'buy' | 'sell';

export interface RfqLegView {
  instrument_name: string;
  direction: Dir;
  ratio: number;
  price?: number;
}

export interface RfqLevel {
  price: number;
  amount: number;
  makers: string[];
  execution_instruction: string;
  expires_at: number;
}

export interface RfqTradeView {
  direction: Dir;
  price: number;
  amount: number;
  maker: string;
}

export interface RfqView {
  block_rfq_id: number;
  role: 'taker' | 'maker';
  state: 'open' | 'filled' | 'cancelled' | 'expired';
  creation_timestamp: number;
  expiration_timestamp: number;
  amount: number;
  min_trade_amount: number;
  legs: RfqLegView[];
  bids: RfqLevel[];
  asks: RfqLevel[];
  makers: string[];
  taker?: string;
  taker_rating: string;
  disclosed: boolean;
  mark_price: number;
  label: string;
  trades: RfqTradeView[];
}

export interface QuoteView {
  block_rfq_id: number;
  block_rfq_quote_id: number;
  quote_state: string;
  quote_state_reason: string | null;
  execution_instruction: string;
  direction: Dir;
  price: number;
  amount: number;
  filled_amount: number;
  legs: RfqLegView[];
  label: string;
  last_update_timestamp: number;
}

/** `text` as an exact count of 10^-dp units, or null: not a plain decimal, finer than the grid, or too large. */
export function toUnits(text: string, dp: number): number | null {
  const m = /^\s*(-?)(\d*)(?:\.(\d*))?\s*$/.exec(text);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return null;
  const frac = (m[3] ?? '').replace(/0+$/, '');
  if (frac.length > dp) return null;
  const units = Number(`${m[2] || '0'}${frac.padEnd(dp, '0')}`);
  if (!Number.isSafeInteger(units) || units > MAX_UNITS) return null;
  return m[1] === '-' ? -units : units;
}

/** Units of 10^-dp as the shortest decimal text (no trailing zeros). */
export function fromUnits(units: number, dp: number): string {
  const neg = units < 0;
  const digits = String(Math.abs(units)).padStart(dp + 1, '0');
  const int = digits.slice(0, digits.length - dp);
  const frac = digits.slice(digits.length - dp).replace(/0+$/, '');
  return `${neg ? '-' : ''}${int}${frac ? `.${frac}` : ''}`;
}

/** Each leg's amount for the RFQ (ratio x amount), or null when the amount is not a positive number on the grid. */
export function legAmounts(amount: string, ratios: number[]): string[] | null {
  const u = toUnits(amount, AMOUNT_DP);
  if (u === null || u <= 0) return null;
  if (ratios.some((r) => !Number.isInteger(r) || r < 1 || r > 1000)) return null;
  return ratios.map((r) => fromUnits(u * r, AMOUNT_DP));
}

/** The structure price of leg prices (the server's rule: bought legs added, sold legs subtracted), or null while a price is missing or off the 0.0001 grid. */
export function structurePrice(legs: { direction: Dir; ratio: number }[], prices: string[]): string | null {
  let sum = 0;
  for (let i = 0; i < legs.length; i++) {
    const u = toUnits(prices[i] ?? '', PRICE_DP);
    if (u === null) return null;
    sum += (legs[i]!.direction === 'buy' ? 1 : -1) * legs[i]!.ratio * u;
  }
  return fromUnits(sum, PRICE_DP);
}

/** The RFQ's best bid and ask as its taker sees them (levels come best first), and how many price levels quote it. */
export function bestOf(r: Pick<RfqView, 'bids' | 'asks'>): { bid: RfqLevel | null; ask: RfqLevel | null; levels: number } {
  return { bid: r.bids[0] ?? null, ask: r.asks[0] ?? null, levels: r.bids.length + r.asks.length };
}

/** The structure as words: `buy 1 BTC-...-C, sell 2 BTC-...-C`. */
export function legsText(legs: RfqLegView[]): string {
  return legs.map((l) => `${l.direction} ${l.ratio} ${l.instrument_name}`).join(', ');
}

/** Merges a channel's RFQ (or quote) into a list keyed by id, newest first. */
export function upsert<T>(list: T[], item: T, key: (x: T) => number): T[] {
  const k = key(item);
  const rest = list.filter((x) => key(x) !== k);
  return [item, ...rest].sort((a, b) => key(b) - key(a));
}

/** A structure price with its four decimals: 0 and negatives are prices here (a spread), not "no price". */
export const structureText = (x: number): string => fixed(x, 4);
