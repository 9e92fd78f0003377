// Issue 14 finding 5: below the free-disk floor new risk is refused with a clear error and
// `strikebook_disk_low` is 1, before the journal write could fail; cancels and reduce-only orders
// still work. The floor is tested by configuring one larger than the free space.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, request, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';

let srv: TestServer;
let m: Market;
let a: string;
let b: string;

before(async () => {
  srv = await startServer({ STRIKEBOOK_DISK_CHECK_MS: '50' });
  const admin = await adminToken(srv.url);
  a = await userToken(srv.url, admin, 'a@example.com', { currency: 'BTC', amount: 10 });
  b = await userToken(srv.url, admin, 'b@example.com', { currency: 'BTC', amount: 10 });
  m = await atmCall(srv.url);
});

after(async () => {
  await srv.stop();
});

async function diskLowMetric(): Promise<number> {
  const r = await request(srv.url, '/metrics');
  const line = r.text.split('\n').find((l) => l.startsWith('strikebook_disk_low '));
  return Number(line?.split(' ')[1]);
}

test('below the free-disk floor orders that add risk are refused; cancels and reduce-only orders work', async () => {
  const mid = m.prices.indexOf(nearMark(m));
  // a position to reduce later (a buys 0.2 from b), and a resting order to cancel later
  await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.2, price: m.prices[mid] }, b);
  await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.2, price: m.prices[mid] }, a);
  const resting = await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[mid - 5] }, a);
  assert.equal(await diskLowMetric(), 0);

  // the floor goes above the free space of the data directory's disk
  const disk = srv.app.services.disk!;
  assert.ok(disk, 'the guard runs on the SQLite data directory');
  disk.floorBytes = Number.MAX_SAFE_INTEGER;
  const deadline = Date.now() + 5000;
  while (!disk.low && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.equal(disk.low, true, 'the periodic check noticed');
  assert.equal(await diskLowMetric(), 1);

  const seq0 = srv.app.services.ex.seq;
  const refused = await rpc(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[mid - 4] }, a);
  assert.equal(refused.body.error.code, 11030);
  assert.equal(refused.body.error.data.reason, 'disk_space_low');
  const sell = await rpc(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.1, price: m.prices[mid + 4] }, b);
  assert.equal(sell.body.error.code, 11030);
  const edit = await rpc(srv.url, 'private/edit', { order_id: resting.order.order_id, amount: 0.5, price: m.prices[mid - 5] }, a);
  assert.equal(edit.body.error.code, 11030);
  assert.equal(srv.app.services.ex.seq, seq0, 'nothing was written for them');

  // a reduce-only sell of a's long and a cancel go through
  const reduce = await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.1, price: m.prices[mid + 3], reduce_only: true }, a);
  assert.equal(reduce.order.order_state, 'open');
  const cancelled = await ok(srv.url, 'private/cancel', { order_id: resting.order.order_id }, a);
  assert.equal(cancelled.order_state, 'cancelled');

  // space back: orders are accepted again
  disk.floorBytes = 1;
  const back = Date.now() + 5000;
  while (disk.low && Date.now() < back) await new Promise((r) => setTimeout(r, 20));
  assert.equal(await diskLowMetric(), 0);
  await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[mid - 4] }, a);
});
