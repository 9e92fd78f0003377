// The stream gateway (src/gateway/): the WebSocket stream behaviour of test/ws/ through a gateway
// fed by NATS JetStream, requests forwarded to the leader, private channels per user.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { startGateway, type RunningGateway } from '../../src/gateway/gateway.ts';
import { adminToken, login, ok, rawRequest, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { hmacSha256Hex } from '../../src/auth/crypto.ts';
import { atmCall, type Market } from '../helpers/market.ts';
import { freshStream } from '../helpers/nats.ts';
import { WsClient } from '../helpers/ws.ts';
import { applyBook, bookOf, until } from '../helpers/gateway.ts';

interface Pair {
  srv: TestServer;
  gw: RunningGateway;
  admin: string;
  m: Market;
}

async function pair(t: TestContext): Promise<Pair | null> {
  const ns = await freshStream(t);
  if (!ns) return null;
  const srv = await startServer(ns.env);
  t.after(() => srv.stop());
  const gw = await startGateway({ leaderUrl: srv.url, natsUrl: ns.url, stream: ns.stream, prefix: ns.prefix, port: 0, host: '127.0.0.1', log: pino({ level: 'silent' }), recheckMs: 300 });
  t.after(() => gw.close());
  const admin = await adminToken(srv.url);
  return { srv, gw, admin, m: await atmCall(srv.url) };
}

test('through a gateway: book snapshot + changes rebuild get_order_book, trades arrive, orders go to the leader', async (t) => {
  const p = await pair(t);
  if (!p) return;
  const { srv, gw, m } = p;
  await userToken(srv.url, p.admin, 'maker@example.com', { currency: 'BTC', amount: 10 });
  await userToken(srv.url, p.admin, 'taker@example.com', { currency: 'BTC', amount: 10 });
  const watcher = await WsClient.open(gw.url);
  const maker = await WsClient.open(gw.url);
  const taker = await WsClient.open(gw.url);
  t.after(() => [watcher, maker, taker].forEach((c) => c.ws.close()));
  const chans = [`book.${m.name}.raw`, `book.${m.name}.100ms`, `trades.${m.name}.raw`, `trades.option.BTC.100ms`, `book.${m.name}.none.10.100ms`];
  // raw channels need an authenticated connection, as on the leader
  assert.deepEqual(await watcher.ok('public/subscribe', { channels: chans }), chans.filter((c) => !c.endsWith('.raw')));
  await watcher.auth('admin@example.com', 'admin-password-1');
  assert.deepEqual(await watcher.ok('public/subscribe', { channels: chans }), chans);
  await maker.auth('maker@example.com');
  await taker.auth('taker@example.com');
  const hi = m.prices.length - 1;
  for (let i = 0; i < 5; i++) await maker.ok('private/sell', { instrument_name: m.name, amount: 0.2, price: m.prices[hi - i] });
  await maker.ok('private/buy', { instrument_name: m.name, amount: 0.3, price: m.prices[2] });
  const buy = await taker.ok('private/buy', { instrument_name: m.name, amount: 0.3, price: m.prices[hi - 3] });
  assert.ok(buy.trades.length > 0, 'the taker order traded (forwarded to the leader)');
  const cancel = await maker.ok('private/cancel_all', {});
  assert.ok(cancel > 0);

  const leader = await ok(srv.url, 'public/get_order_book', { instrument_name: m.name, depth: 100 });
  for (const cadence of ['raw', '100ms']) {
    const ch = `book.${m.name}.${cadence}`;
    await until(`${ch} reaches change ${leader.change_id}`, () => watcher.notes.some((n) => n.channel === ch && n.data.change_id === leader.change_id));
    const book = applyBook(watcher.notes.filter((n) => n.channel === ch).map((n) => n.data));
    assert.deepEqual(book, bookOf(leader), `${ch} equals get_order_book`);
  }
  const tradeIds = buy.trades.map((x: any) => x.trade_id).sort();
  await until('trades.raw', () => watcher.notes.filter((n) => n.channel === `trades.${m.name}.raw`).flatMap((n) => n.data).length === tradeIds.length);
  assert.deepEqual(watcher.notes.filter((n) => n.channel === `trades.${m.name}.raw`).flatMap((n) => n.data.map((x: any) => x.trade_id)).sort(), tradeIds);
  await until('trades.option.BTC.100ms', () => watcher.notes.filter((n) => n.channel === 'trades.option.BTC.100ms').flatMap((n) => n.data).length === tradeIds.length);
  const depth = watcher.notes.filter((n) => n.channel === `book.${m.name}.none.10.100ms`).pop()!.data;
  assert.deepEqual({ bids: depth.bids, asks: depth.asks }, { bids: leader.bids.slice(0, 10), asks: leader.asks.slice(0, 10) });
});

test('through a gateway: private channels carry only the authenticated user\'s orders and trades; without auth they are refused', async (t) => {
  const p = await pair(t);
  if (!p) return;
  const { srv, gw, m } = p;
  await userToken(srv.url, p.admin, 'alice@example.com', { currency: 'BTC', amount: 10 });
  await userToken(srv.url, p.admin, 'bob@example.com', { currency: 'BTC', amount: 10 });
  const alice = await WsClient.open(gw.url);
  const bob = await WsClient.open(gw.url);
  const anon = await WsClient.open(gw.url);
  t.after(() => [alice, bob, anon].forEach((c) => c.ws.close()));
  const refused = await anon.call('private/subscribe', { channels: [`user.orders.${m.name}.raw`] });
  assert.equal(refused.error.code, 10000, 'private/subscribe without auth: authorization_required');
  // a channel the venue does not serve is left out of the answer, as Deribit does (test/ws/channels.test.ts)
  const unknown = await anon.call('public/subscribe', { channels: ['book.NOPE-1JAN30-1-C.raw'] });
  assert.deepEqual(unknown.result, [], JSON.stringify(unknown));
  await alice.auth('alice@example.com');
  await bob.auth('bob@example.com');
  const chans = [`user.orders.${m.name}.raw`, 'user.trades.option.BTC.raw', `user.changes.${m.name}.raw`, 'user.orders.any.any.100ms'];
  assert.deepEqual(await alice.ok('private/subscribe', { channels: chans }), chans);
  assert.deepEqual(await bob.ok('private/subscribe', { channels: chans }), chans);
  const hi = m.prices.length - 1;
  const sell = await alice.ok('private/sell', { instrument_name: m.name, amount: 0.2, price: m.prices[hi] });
  const buy = await bob.ok('private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[hi] });
  assert.equal(buy.trades.length, 1);
  const aliceOrders = () => alice.notes.filter((n) => n.channel === `user.orders.${m.name}.raw`).map((n) => n.data);
  await until('alice sees her fill', () => aliceOrders().some((o) => o.order_id === sell.order.order_id && o.filled_amount === 0.1));
  await until("bob's trade", () => bob.notes.some((n) => n.channel === 'user.trades.option.BTC.raw'));
  await until('conflated orders', () => alice.notes.some((n) => n.channel === 'user.orders.any.any.100ms'));
  const aliceChange = await until('user.changes', async () => alice.notes.find((n) => n.channel === `user.changes.${m.name}.raw` && n.data.trades.length > 0));
  assert.equal(aliceChange.data.positions[0].size, -0.1, "alice's position after the fill");
  for (const n of alice.notes) {
    const orders = n.channel.startsWith('user.orders') ? [n.data].flat() : n.channel.startsWith('user.changes') ? n.data.orders : [];
    for (const o of orders) assert.notEqual(o.order_id, buy.order.order_id, "alice never sees bob's order");
  }
  for (const n of bob.notes.filter((x) => x.channel.startsWith('user.orders'))) for (const o of [n.data].flat()) assert.notEqual(o.order_id, sell.order.order_id, "bob never sees alice's order");
  const bobTrades = bob.notes.filter((n) => n.channel === 'user.trades.option.BTC.raw').flatMap((n) => n.data);
  assert.deepEqual(bobTrades.map((x: any) => [x.trade_id, x.direction]), [[buy.trades[0].trade_id, 'buy']]);

  // logout: the leader ends the session, the gateway drops the private subscriptions with it
  await alice.call('private/logout', {});
  await alice.closedP;
  const before = bob.notes.length;
  const bobHttp = await login(srv.url, 'bob@example.com', 'user-password-1');
  const late = await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[0] }, bobHttp);
  await until('bob still served', () => bob.notes.slice(before).some((n) => n.channel === `user.orders.${m.name}.raw` && n.data.order_id === late.order.order_id));
});

test('through a gateway: forwarded requests keep the client ids and the leader answers, errors and envelope', async (t) => {
  const p = await pair(t);
  if (!p) return;
  const { srv, gw, m } = p;
  const ws = await WsClient.open(gw.url);
  t.after(() => ws.ws.close());
  const r = await ws.call('public/get_order_book', { instrument_name: m.name, depth: 5 });
  assert.equal(r.jsonrpc, '2.0');
  assert.equal(r.id, 1, 'the client id, not the gateway id upstream');
  assert.equal(typeof r.usIn, 'number');
  assert.equal(r.testnet, true);
  assert.deepEqual(r.result.bids, (await ok(srv.url, 'public/get_order_book', { instrument_name: m.name, depth: 5 })).bids);
  assert.equal((await ws.call('private/get_positions', { currency: 'BTC' })).error.code, 10000);
  assert.equal((await ws.call('public/no_such_method')).error.code, -32601);
  // a string id and a burst of pipelined requests: each answer carries its own request's id
  const ids = await new Promise<unknown[]>((resolve) => {
    const got: unknown[] = [];
    ws.ws.on('message', (d) => {
      const msg = JSON.parse(d.toString());
      if (typeof msg.id === 'string') got.push(msg.id);
      if (got.length === 5) resolve(got);
    });
    for (let k = 0; k < 5; k++) ws.ws.send(JSON.stringify({ jsonrpc: '2.0', id: `req-${k}`, method: 'public/get_time', params: {} }));
  });
  assert.deepEqual(ids, ['req-0', 'req-1', 'req-2', 'req-3', 'req-4'], 'answers in request order, ids kept');
  const bad = await new Promise<any>((resolve) => {
    ws.ws.once('message', (d) => resolve(JSON.parse(d.toString())));
    ws.ws.send('{not json');
  });
  assert.equal(bad.error.code, -32700);
  const badParams = await new Promise<any>((resolve) => {
    ws.ws.once('message', (d) => resolve(JSON.parse(d.toString())));
    ws.ws.send(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'public/subscribe', params: { channels: 'book' } }));
  });
  assert.equal(badParams.error.code, -32602, 'a malformed subscribe is answered, never dropped');
  assert.equal(badParams.id, 9);

  // a burst past 100 waiting requests: the rest are refused at once (10028), every frame answered
  const answers = await new Promise<any[]>((resolve) => {
    const got: any[] = [];
    ws.ws.on('message', (d) => {
      const msg = JSON.parse(d.toString());
      if (typeof msg.id === 'string' && msg.id.startsWith('burst-')) got.push(msg);
      if (got.length === 300) resolve(got);
    });
    const frames = Array.from({ length: 300 }, (_, k) => JSON.stringify({ jsonrpc: '2.0', id: `burst-${k}`, method: 'public/get_time', params: {} }));
    for (const f of frames) ws.ws.send(f);
  });
  const refused = answers.filter((a) => a.error?.code === 10028).length;
  assert.ok(refused > 0, 'past the bound, refused');
  assert.ok(answers.filter((a) => typeof a.result === 'number').length >= 100, 'the first hundred answered');
});

test('a gateway caps the WebSocket connections from one address (429 past it), as the leader does', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const srv = await startServer(ns.env);
  t.after(() => srv.stop());
  const gw = await startGateway({ leaderUrl: srv.url, natsUrl: ns.url, stream: ns.stream, prefix: ns.prefix, port: 0, host: '127.0.0.1', log: pino({ level: 'silent' }), maxConnectionsPerIp: 2 });
  t.after(() => gw.close());
  const a = await WsClient.open(gw.url);
  const b = await WsClient.open(gw.url);
  t.after(() => [a, b].forEach((c) => c.ws.close()));
  await assert.rejects(WsClient.open(gw.url), /429/);
  assert.equal(gw.connections, 2);
});

test('through a gateway: user.mmp_trigger reaches its owner only, and user.portfolio is each user\'s own get_account_summary', async (t) => {
  const p = await pair(t);
  if (!p) return;
  const { srv, gw, m } = p;
  await userToken(srv.url, p.admin, 'mm@example.com', { currency: 'BTC', amount: 10 });
  const takerTok = await userToken(srv.url, p.admin, 'taker@example.com', { currency: 'BTC', amount: 10 });
  const mm = await WsClient.open(gw.url);
  const spy = await WsClient.open(gw.url);
  t.after(() => [mm, spy].forEach((c) => c.ws.close()));
  await mm.auth('mm@example.com');
  await spy.auth('taker@example.com');
  const chans = ['user.mmp_trigger.btc_usd', 'user.portfolio.BTC'];
  assert.deepEqual(await mm.ok('private/subscribe', { channels: chans }), chans);
  assert.deepEqual(await spy.ok('private/subscribe', { channels: chans }), chans);
  // a summary on subscribe, each user's own
  await until('first summaries', () => mm.on('user.portfolio.BTC').length > 0 && spy.on('user.portfolio.BTC').length > 0);
  await mm.ok('private/set_mmp_config', { index_name: 'btc_usd', interval: 60, frozen_time: 0, quantity_limit: 0.5 });
  const hi = m.prices.length - 1;
  await mm.ok('private/sell', { instrument_name: m.name, amount: 1, price: m.prices[hi], mmp: true });
  await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.5, price: m.prices[hi] }, takerTok);
  await until('the trigger', () => mm.on('user.mmp_trigger.btc_usd').length > 0);
  assert.deepEqual(mm.on('user.mmp_trigger.btc_usd')[0].data, { index_name: 'btc_usd', frozen_until: 0 });
  // after the fill each one's last summary is what the leader answers that user
  for (const [who, c] of [['mm', mm], ['taker', spy]] as const) {
    const want = await c.ok('private/get_account_summary', { currency: 'BTC' });
    await until(`${who}'s summary after the fill`, () => c.on('user.portfolio.BTC').some((n) => n.data.balance === want.balance && n.data.initial_margin === want.initial_margin));
    assert.deepEqual(c.on('user.portfolio.BTC').at(-1)!.data, want, `${who}'s portfolio`);
  }
  // the maker received the premium the taker paid: a summary sent to the wrong user would differ
  assert.notEqual(mm.on('user.portfolio.BTC').at(-1)!.data.balance, spy.on('user.portfolio.BTC').at(-1)!.data.balance);
  assert.equal(spy.on('user.mmp_trigger.btc_usd').length, 0, "the taker sees nothing of the maker's trigger");
});

test('through a gateway: the HTTP API is the leader\'s (reads, orders, errors, a signed request verifies unchanged)', async (t) => {
  const p = await pair(t);
  if (!p) return;
  const { srv, gw, m } = p;
  const token = await userToken(srv.url, p.admin, 'http@example.com', { currency: 'BTC', amount: 10 });
  const book = `/api/v2/public/get_order_book?instrument_name=${m.name}&depth=5`;
  const direct = await rawRequest(srv.url, 'GET', book);
  const through = await rawRequest(gw.url, 'GET', book);
  assert.equal(through.status, 200);
  assert.deepEqual(through.body.result, direct.body.result);
  // an order posted through the gateway is the leader's
  const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'private/buy', params: { instrument_name: m.name, amount: 0.1, price: m.prices[0] } });
  const placed = await rawRequest(gw.url, 'POST', '/api/v2/private/buy', { headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
  assert.equal(placed.status, 200, placed.text);
  assert.equal(placed.body.id, 7);
  const state = await ok(srv.url, 'private/get_order_state', { order_id: placed.body.result.order.order_id }, token);
  assert.equal(state.order_state, 'open');
  // the leader's errors and statuses come back as they are
  const unknown = await rawRequest(gw.url, 'GET', '/api/v2/public/get_order_book?instrument_name=NOPE-1');
  const unknownDirect = await rawRequest(srv.url, 'GET', '/api/v2/public/get_order_book?instrument_name=NOPE-1');
  assert.deepEqual([unknown.status, unknown.body.error.code], [unknownDirect.status, unknownDirect.body.error.code]);
  assert.equal((await rawRequest(gw.url, 'GET', '/api/v2/private/get_positions?currency=BTC')).body.error.code, 10000, 'no credentials: the leader refuses (10000 authorization_required)');
  // a deri-hmac-sha256 signature covers the method, target and body: forwarded as they are, it verifies
  const key = await ok(srv.url, 'private/create_api_key', { scope: 'account:read trade:read_write' }, token);
  const target = '/api/v2/private/get_account_summary?currency=BTC';
  const ts = Date.now();
  const sig = hmacSha256Hex(key.client_secret, `${ts}\nn${ts}\nGET\n${target}\n\n`);
  const signed = await rawRequest(gw.url, 'GET', target, { headers: { authorization: `deri-hmac-sha256 id=${key.client_id},ts=${ts},sig=${sig},nonce=n${ts}` } });
  assert.equal(signed.status, 200, signed.text);
  assert.equal(signed.body.result.currency, 'BTC');
  // the gateway's own endpoints stay its own
  assert.equal((await rawRequest(gw.url, 'GET', '/health')).body.role, 'gateway');
});
