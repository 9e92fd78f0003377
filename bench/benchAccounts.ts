// Accounts and order plans the load benchmarks share: the bench administrator, funded users, the
// BTC series with room in their price band, and the crossing users' orders (issue 16).
import type { LeanStep } from './leanLoad.ts';
import { BOOTSTRAP, call } from './support.ts';

/** Connections of the crossing workload (as in the HTTP section). */
export const CONNECTIONS = 100;
const CROSSING_USERS = 10;

export interface Book {
  instrument_name: string;
  min_price: number;
  max_price: number;
  mark_price: number;
}

/** A price on the 0.0005 grid (valid at every tick step) inside the book's band, nearest `want`. */
export function gridPrice(b: Book, want: number): number {
  const low = Math.ceil(b.min_price / 0.0005) * 0.0005;
  const high = Math.floor(b.max_price / 0.0005) * 0.0005;
  return Number(Math.min(high, Math.max(low, Math.round(want / 0.0005) * 0.0005)).toFixed(4));
}

/** Runs `jobs` with at most `width` in flight. */
export async function pool(width: number, jobs: Array<() => Promise<unknown>>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < jobs.length) await jobs[next++]!();
  }));
}

export async function account(base: string, admin: string, email: string): Promise<{ token: string; headers: Record<string, string> }> {
  const user = await call(base, 'private/create_user', { email, password: 'bench-password' }, admin);
  const token = (await call(base, 'public/auth', { grant_type: 'password', username: email, password: 'bench-password' })).access_token;
  await call(base, 'private/deposit_collateral', { currency: 'BTC', amount: 100000, user_id: user.user_id }, admin);
  return { token, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` } };
}

/**
 * Order plans of the crossing users, one per connection: in each of `near`'s series, buyers and
 * sellers at one price in the middle of the band (a user on one side only: self-trade prevention
 * would refuse its own cross), so about one order in two meets a resting one.
 */
export async function crossingPlans(base: string, admin: string, near: Book[]): Promise<LeanStep[][]> {
  const crossing = await Promise.all(Array.from({ length: CROSSING_USERS }, (_, i) => account(base, admin, `bench-crossing-${i}@example.com`)));
  return Array.from({ length: CONNECTIONS }, (_, c) => {
    const b = near[c % near.length]!;
    const price = gridPrice(b, (b.min_price + b.max_price) / 2);
    const buyer = Math.floor(c / near.length) % 2 === 0;
    const user = crossing[((c % near.length) * 2 + (buyer ? 0 : 1)) % crossing.length]!;
    const body = JSON.stringify({ instrument_name: b.instrument_name, amount: 0.1, price, type: 'limit' });
    return [{ path: buyer ? '/v1/private/buy' : '/v1/private/sell', headers: user.headers, body }];
  });
}

/** The bench administrator's token on a fresh server. */
export async function benchAdmin(base: string): Promise<string> {
  await call(base, 'private/create_admin', { email: 'bench-admin@example.com', password: 'bench-password', bootstrap_token: BOOTSTRAP });
  return (await call(base, 'public/auth', { grant_type: 'password', username: 'bench-admin@example.com', password: 'bench-password' })).access_token;
}

/** Order books (depth 1) of the BTC series with room in their band, by name. */
export async function tradableBooks(base: string): Promise<Book[]> {
  const btc = ((await call(base, 'public/get_instruments', { currency: 'BTC' })) as Array<{ instrument_name: string }>).map((i) => i.instrument_name);
  const books: Book[] = [];
  await pool(32, btc.map((name) => async () => books.push(await call(base, 'public/get_order_book', { instrument_name: name, depth: 1 }))));
  return books.filter((b) => b.max_price - b.min_price >= 0.002).sort((a, b) => a.instrument_name.localeCompare(b.instrument_name));
}

