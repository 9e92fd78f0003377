// Issue 14 findings 2 and 3: the read cache is an LRU bounded by bytes (a flood of distinct `depth`
// values on an idle market stays under STRIKEBOOK_READ_CACHE_BYTES), big answers are rendered once
// and shared until the state changes, and at most N expensive reads start per event-loop turn.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { readsOf } from '../../src/api/reads/sharedReads.ts';
import { TurnBudget } from '../../src/api/reads/turnBudget.ts';
import { ByteLru } from '../../src/api/reads/byteLru.ts';

const BOUND = 2 * 1024 * 1024;
let srv: TestServer;
let m: Market;
let tok: string;

before(async () => {
  srv = await startServer({ STRIKEBOOK_READ_CACHE_BYTES: String(BOUND), STRIKEBOOK_HEAVY_READS_PER_TURN: '2' });
  const admin = await adminToken(srv.url);
  tok = await userToken(srv.url, admin, 'mm@example.com', { currency: 'BTC', amount: 100 });
  m = await atmCall(srv.url);
  // a few levels on each side, then the market goes idle
  const mid = m.prices.indexOf(nearMark(m));
  for (let k = 1; k <= 8; k++) {
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[mid - 2 * k] }, tok);
    await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.1, price: m.prices[mid + 2 * k] }, tok);
  }
});

after(async () => {
  await srv.stop();
});

test('a flood of distinct depth values on an idle market keeps the read cache within its byte bound', async () => {
  const reads = readsOf(srv.app.services.ex);
  const seq0 = srv.app.services.ex.seq;
  let peak = 0;
  for (let depth = 1; depth <= 3000; depth += 50) {
    // 50 distinct depths at a time, in parallel, on the same idle book
    const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => rpc(srv.url, 'public/get_order_book', { instrument_name: m.name, depth: depth + i })));
    rs.forEach((r, i) => assert.equal(r.body.result.bids.length, Math.min(8, depth + i)));
    peak = Math.max(peak, reads.cache.bytes);
  }
  assert.equal(srv.app.services.ex.seq, seq0, 'the market stayed idle');
  assert.ok(peak <= BOUND, `the cache held ${peak} bytes, bound ${BOUND}`);
  assert.ok(reads.cache.size > 0);
  assert.ok(reads.renders >= 2900, 'the flood rendered more than the bound can hold (the bound was tested)');
  // answers are still right: depth 3 shows 3 levels a side, 5000 all 8
  const b3 = await ok(srv.url, 'public/get_order_book', { instrument_name: m.name, depth: 3 });
  assert.equal(b3.bids.length, 3);
  assert.equal(b3.asks.length, 3);
  const b5k = await ok(srv.url, 'public/get_order_book', { instrument_name: m.name, depth: 5000 });
  assert.equal(b5k.bids.length, 8);
  assert.equal(b5k.asks.length, 8);
});

test('sixteen requesters of every instrument share one rendering until the catalog changes', async () => {
  const reads = readsOf(srv.app.services.ex);
  const first = await rpc(srv.url, 'public/get_instruments', { currency: 'any' });
  const r0 = reads.renders;
  const rs = await Promise.all(Array.from({ length: 16 }, () => rpc(srv.url, 'public/get_instruments', { currency: 'any' })));
  assert.equal(reads.renders, r0, 'no new rendering while the catalog stands');
  for (const r of rs) assert.deepEqual(r.body.result, first.body.result);
  // an order changes the books but not the instrument list: still shared
  await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[1] }, tok);
  await rpc(srv.url, 'public/get_instruments', { currency: 'any' });
  assert.equal(reads.renders, r0);
  // all books: one rendering per state
  await Promise.all(Array.from({ length: 8 }, () => rpc(srv.url, 'public/get_all_order_books', { currency: 'any', depth: 1000 })));
  assert.equal(reads.renders, r0 + 1);
  await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[2] }, tok);
  const after = await ok(srv.url, 'public/get_all_order_books', { currency: 'any', depth: 1000 });
  assert.equal(reads.renders, r0 + 2, 'a new state renders anew');
  const book = after.find((b: any) => b.instrument_name === m.name);
  assert.ok(book.bids.some((l: number[]) => l[0] === m.prices[2]), 'and shows the new order');
});

test('at most N expensive reads start in one event-loop turn; the rest wait for later turns, in order', async () => {
  const budget = new TurnBudget(3);
  const started: number[] = [];
  const all = Array.from({ length: 10 }, (_, i) => budget.run(() => started.push(i)));
  await Promise.resolve();
  assert.deepEqual(started, [0, 1, 2], 'three in this turn');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(started, [0, 1, 2, 3, 4, 5], 'three more in the next');
  await Promise.all(all);
  assert.deepEqual(started, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.equal(budget.deferred, 7);
});

test('the byte LRU evicts the least recently used and never holds more than its bound', () => {
  const lru = new ByteLru<string>(100);
  lru.set('a', 'A', 40);
  lru.set('b', 'B', 40);
  assert.equal(lru.get('a'), 'A'); // a is now the most recent
  lru.set('c', 'C', 40);
  assert.equal(lru.get('b'), undefined, 'b went first');
  assert.equal(lru.get('a'), 'A');
  assert.equal(lru.bytes, 80);
  lru.set('huge', 'H', 101);
  assert.equal(lru.get('huge'), undefined, 'larger than the bound: not kept');
  assert.ok(lru.bytes <= 100);
});
