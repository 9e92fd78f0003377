// Issue 14 finding 5: commands the engine refuses without changing anything (cancels of unknown or
// already closed orders) are not journaled. A stream with hundreds of them adds no records, the
// clients still get the refusal (10004 / 10010), and a clean replay of the journal reaches the
// live state hash.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { cleanReplay } from '../helpers/replay.ts';

let srv: TestServer;
let admin: string;
let tok: string;
let m: Market;

before(async () => {
  srv = await startServer();
  admin = await adminToken(srv.url);
  tok = await userToken(srv.url, admin, 'u@example.com', { currency: 'BTC', amount: 10 });
  m = await atmCall(srv.url);
});

after(async () => {
  await srv.stop();
});

test('refused cancels are answered but not journaled, and a clean replay matches the live state', async () => {
  const mid = m.prices.indexOf(nearMark(m));
  const placed = await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[mid - 5] }, tok);
  const closed = await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[mid - 6] }, tok);
  await ok(srv.url, 'private/cancel', { order_id: closed.order.order_id }, tok);
  const seq0 = (await ok(srv.url, 'private/get_state_hash', {}, admin)).seq;

  // 400 refusals, in parallel bursts, interleaved with two commands that do change the state
  const refusals = [];
  for (let i = 0; i < 200; i++) refusals.push(rpc(srv.url, 'private/cancel', { order_id: String(900_000 + i) }, tok));
  for (let i = 0; i < 200; i++) refusals.push(rpc(srv.url, 'private/cancel', { order_id: closed.order.order_id }, tok));
  const second = ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[mid - 7] }, tok);
  const rs = await Promise.all(refusals);
  for (const r of rs.slice(0, 200)) assert.equal(r.body.error.code, 10004);
  for (const r of rs.slice(200)) assert.equal(r.body.error.code, 10010);
  await second;
  await ok(srv.url, 'private/cancel', { order_id: placed.order.order_id }, tok);

  const live = await ok(srv.url, 'private/get_state_hash', {}, admin);
  assert.equal(live.seq, seq0 + 2, 'only the order and the cancel that worked were sequenced');
  const replay = cleanReplay(srv.dataDir);
  assert.equal(replay.seq, live.seq, 'the journal holds exactly the sequenced commands');
  assert.deepEqual(replay.errors, []);
  assert.equal(replay.hash, live.state_hash, 'a clean replay reaches the live state');
});
