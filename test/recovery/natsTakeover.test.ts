// A leader SIGKILLed with events not yet on NATS (issue 18, docs/operations.md "Gateways and NATS"):
// the standby that takes over publishes what the stream lacks, with the old leader's dedupe ids, so
// a stream reader finds every acknowledged order and trade exactly once and every book chained on.
// A gateway given both servers follows the takeover: its clients reconnect, trade on the new leader
// through it (WebSocket and HTTP), and rebuild every book equal to get_order_book there.
// Needs the local PostgreSQL and /usr/sbin/nats-server (skips with the reason without them).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from '@nats-io/transport-node';
import { applyBook, bookOf, spawnGateway, until } from '../helpers/gateway.ts';
import { WsClient } from '../helpers/ws.ts';
import { OwnNats, readStream } from '../helpers/nats.ts';
import { freshSchema } from '../helpers/postgres.ts';
import { adminToken, freePort, ok, rawRequest, request, serverFleet, userToken, type ChildServer } from '../helpers/server.ts';
import { assertStreamHoldsLoad, orderLoad, threeMarkets, type OrderLoad } from '../helpers/streamLoad.ts';
import type { Market } from '../helpers/market.ts';

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = new RegExp(`\\n${name} (\\S+)\\n`).exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

interface Setup {
  nats: OwnNats;
  leader: ChildServer;
  standby: ChildServer;
  /** the two traders' tokens (the leader issued them; the standby knows them from the journal) */
  maker: string;
  taker: string;
  ms: Market[];
}

/** NATS of the test's own, a leader and a standby on one fresh schema, two traders and three
 *  markets; null when skipped. */
async function setup(t: TestContext): Promise<Setup | null> {
  if (!OwnNats.available(t)) return null;
  const db = await freshSchema(t);
  if (!db) return null;
  const nats = new OwnNats(await freePort());
  t.after(() => nats.dispose());
  await nats.start();
  const env = { DATABASE_URL: db.url, STRIKEBOOK_STANDBY_POLL_MS: '200', NATS_URL: nats.url, STRIKEBOOK_NATS_STREAM: 'SB', STRIKEBOOK_NATS_SUBJECT_PREFIX: 'sb' };
  const { spawn } = serverFleet(t, env);
  const leader = await spawn();
  const standby = await spawn();
  assert.equal((await request(standby.url, '/health')).body.role, 'standby');
  const admin = await adminToken(leader.url);
  const maker = await userToken(leader.url, admin, 'maker@example.com', { currency: 'BTC', amount: 100 });
  const taker = await userToken(leader.url, admin, 'taker@example.com', { currency: 'BTC', amount: 100 });
  return { nats, leader, standby, maker, taker, ms: await threeMarkets(leader.url) };
}

/** Kills the leader, waits for the standby to lead, and trades a little there too. */
async function takeOver(s: Setup): Promise<OrderLoad> {
  s.leader.proc.kill('SIGKILL');
  await s.leader.exited;
  await until('the standby leads', async () => (await request(s.standby.url, '/health')).body.role === 'leader', 60_000);
  const after = orderLoad(s.standby.url, s.maker, s.taker, s.ms);
  await until('orders on the new leader', () => after.orders.length >= 20 && after.trades.length > 0, 60_000);
  await after.stop();
  return after;
}

/** Once the new leader's backlog is empty: the stream holds both loads, each event once. */
async function assertStreamHoldsBoth(t: TestContext, s: Setup, before: OrderLoad, after: OrderLoad): Promise<number> {
  await until('the new leader published everything', async () => (await metric(s.standby.url, 'strikebook_nats_backlog')) === 0 && (await metric(s.standby.url, 'strikebook_nats_connected')) === 1, 60_000);
  const nc = await connect({ servers: s.nats.url });
  t.after(() => nc.close());
  const all = await readStream(nc, 'SB');
  await assertStreamHoldsLoad(all, 'sb', { orders: [...before.orders, ...after.orders], trades: [...before.trades, ...after.trades] }, s.ms, s.standby.url);
  return all.length;
}

test('leader SIGKILLed while NATS is down: the new leader publishes the events the old one left in its backlog, each once', { timeout: 240_000 }, async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { maker, taker, ms } = s;
  const before = orderLoad(s.leader.url, maker, taker, ms, true);
  await until('orders before NATS stops', () => before.orders.length >= 40, 60_000);
  await s.nats.stop();
  await until('the leader sees NATS gone', async () => (await metric(s.leader.url, 'strikebook_nats_connected')) === 0);
  const ackedWhileDown = before.orders.length;
  await until('orders acknowledged while NATS is down', () => before.orders.length >= ackedWhileDown + 40 && before.trades.length > 5, 60_000);
  assert.ok((await metric(s.leader.url, 'strikebook_nats_backlog')) > 0, 'the leader holds unpublished events');
  // the leader dies with its backlog; its load's last requests end unanswered
  const killed = takeOver(s);
  await before.stop();
  await s.nats.start();
  const after = await killed;
  const stored = await assertStreamHoldsBoth(t, s, before, after);
  const republished = await metric(s.standby.url, 'strikebook_nats_republished_total');
  assert.ok(republished > 0, `the old leader's unpublished events were published again (${republished})`);
  t.diagnostic(`${before.orders.length} orders before the kill (${before.orders.length - ackedWhileDown} while NATS was down), ${republished} messages republished, ${stored} on the stream`);
});

test('leader SIGKILLed under load with NATS up: nothing lost, nothing stored twice, only what was missing republished', { timeout: 240_000 }, async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { maker, taker, ms } = s;
  const before = orderLoad(s.leader.url, maker, taker, ms, true);
  await until('orders before the kill', () => before.orders.length >= 150 && before.trades.length > 10, 60_000);
  const published = await metric(s.leader.url, 'strikebook_nats_published_total');
  const killed = takeOver(s);
  await before.stop();
  const after = await killed;
  await assertStreamHoldsBoth(t, s, before, after);
  const republished = await metric(s.standby.url, 'strikebook_nats_republished_total');
  // what the stream held already was not sent again: at most the old leader's last windows in flight
  assert.ok(republished <= 512, `republished ${republished} of the ${published}+ messages the old leader published`);
  t.diagnostic(`${before.orders.length} orders before the kill, ${published}+ messages published by the old leader, ${republished} republished`);
});

test('a gateway given the leader and the standby follows the takeover: its clients trade on the new leader through it and rebuild every book', { timeout: 240_000 }, async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { maker, taker, ms } = s;
  const gw = await spawnGateway({ STRIKEBOOK_LEADER_URL: `${s.leader.url},${s.standby.url}`, NATS_URL: s.nats.url, STRIKEBOOK_NATS_STREAM: 'SB', STRIKEBOOK_NATS_SUBJECT_PREFIX: 'sb' });
  t.after(() => {
    gw.proc.kill('SIGKILL');
  });
  const channels = ms.map((m) => `book.${m.name}.raw`);
  const before = await WsClient.open(gw.url);
  await before.auth('maker@example.com');
  const first = await before.ok('private/buy', { instrument_name: ms[0]!.name, amount: 0.1, price: ms[0]!.prices[0] });
  const load = orderLoad(s.leader.url, maker, taker, ms, true);
  await until('orders before the kill', () => load.orders.length >= 30, 60_000);
  const killed = takeOver(s);
  await load.stop();
  // the leader's end closes the client's connection through the gateway, as the leader's own would
  await before.closedP;

  // the client comes back to the same gateway: its login and orders reach the new leader
  const after = await WsClient.open(gw.url);
  t.after(() => after.close());
  await until('a login through the gateway after the takeover', async () => (await after.call('public/auth', { grant_type: 'password', username: 'maker@example.com', password: 'user-password-1' })).result !== undefined, 30_000);
  const placed = await after.ok('private/buy', { instrument_name: ms[1]!.name, amount: 0.1, price: ms[1]!.prices[0] });
  const onLeader = await ok(s.standby.url, 'private/get_order_state', { order_id: placed.order.order_id }, maker);
  assert.equal(onLeader.order_id, placed.order.order_id, 'the order placed through the gateway is on the new leader');
  assert.equal((await ok(s.standby.url, 'private/get_order_state', { order_id: first.order.order_id }, maker)).order_id, first.order.order_id);
  assert.equal((await request(gw.url, '/health')).body.leader, s.standby.url, 'the gateway names the new leader');
  // and so does the HTTP API through the gateway
  const body = JSON.stringify({ instrument_name: ms[2]!.name, amount: 0.1, price: ms[2]!.prices[0] });
  const viaHttp = await rawRequest(gw.url, 'POST', '/api/v2/private/buy', { headers: { authorization: `Bearer ${maker}`, 'content-type': 'application/json' }, body });
  assert.equal(viaHttp.status, 200, viaHttp.text);
  assert.equal((await ok(s.standby.url, 'private/get_order_state', { order_id: viaHttp.body.result.order.order_id }, maker)).order_state, 'open');
  assert.deepEqual(await after.ok('public/subscribe', { channels, access_token: maker }), channels);
  await killed;
  for (const m of ms) {
    const book = await ok(s.standby.url, 'public/get_order_book', { instrument_name: m.name, depth: 1000 });
    const ch = `book.${m.name}.raw`;
    await until(`${ch} at change ${book.change_id}`, () => after.notes.some((n) => n.channel === ch && n.data.change_id === book.change_id), 30_000);
    assert.deepEqual(applyBook(after.on(ch).map((n) => n.data)), bookOf(book), ch);
  }
});
