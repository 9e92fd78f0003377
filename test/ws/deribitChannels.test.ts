// Subscriptions as Deribit does them (issue 31 item 2): unserved channels are left out and the rest
// subscribe; grouped books for every Deribit group; deribit_volatility_index, incremental_ticker and
// platform_state.public_methods_state, announcements and user.access_log. Against the engine and
// through a stream gateway (test/helpers/targets.ts), with the same assertions.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, login, ok, userToken, type TestServer } from '../helpers/server.ts';
import { cheapCall, PRICE_UNIT, type Market } from '../helpers/market.ts';
import { WsClient } from '../helpers/ws.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';

function suite(spec: TargetSpec): void {
  let tg: Target;
  let srv: TestServer;
  let admin: string;
  let maker: string;
  let m: Market;

  before(async () => {
    tg = await startTarget(spec.kind);
    srv = tg.srv;
    admin = await adminToken(srv.url);
    maker = await userToken(srv.url, admin, 'maker@example.com', { currency: 'BTC', amount: 100 });
    m = await cheapCall(srv.url);
  });
  after(() => tg.stop());

  it('subscribes the served channels of a batch that names unserved ones, and answers with those it subscribed', async () => {
    const ws = await WsClient.open(tg.ws);
    try {
      const ticker = `ticker.${m.name}.100ms`;
      const r = await ws.call('public/subscribe', { channels: [ticker, 'no.such.channel', `book.${m.name}.3.10.100ms`] });
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      assert.deepEqual(r.result, [ticker]);
      await ws.until(() => ws.on(ticker).length > 0, 5000, 'the ticker');
    } finally {
      await ws.close();
    }
  });

  it('groups a book into buckets of group x the base tick for every Deribit group: bids down, asks up, amounts summed', async () => {
    const tick = Math.round(m.inst.tick_size * PRICE_UNIT);
    const units = m.prices.map((p) => Math.round(p * PRICE_UNIT));
    const group = 5;
    const width = group * tick;
    // two bids in one bucket, the lowest prices of the band; one ask at the top
    const lo = units.find((u, i) => i + 1 < units.length && Math.floor(u / width) === Math.floor(units[i + 1]! / width))!;
    const lo2 = units[units.indexOf(lo) + 1]!;
    const hi = units.at(-1)!;
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: lo / PRICE_UNIT }, maker);
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.2, price: lo2 / PRICE_UNIT }, maker);
    await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.3, price: hi / PRICE_UNIT }, maker);
    const ws = await WsClient.open(tg.ws);
    try {
      const chans = ['none', '1', '2', '5', '10', '25', '100', '250'].map((g) => `book.${m.name}.${g}.10.100ms`);
      assert.deepEqual(await ws.ok('public/subscribe', { channels: chans }), chans);
      await ws.until(() => chans.every((c) => ws.on(c).length > 0), 5000, 'every grouped snapshot');
      const grouped = ws.on(`book.${m.name}.5.10.100ms`)[0]!.data;
      assert.deepEqual(grouped.bids, [[(Math.floor(lo / width) * width) / PRICE_UNIT, 0.3]]);
      assert.deepEqual(grouped.asks, [[(Math.ceil(hi / width) * width) / PRICE_UNIT, 0.3]]);
      const none = ws.on(`book.${m.name}.none.10.100ms`)[0]!.data;
      assert.deepEqual(none.bids, [[lo2 / PRICE_UNIT, 0.2], [lo / PRICE_UNIT, 0.1]], 'none is the book as it is');
      // a change reaches the grouped channel, grouped
      await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.4, price: lo / PRICE_UNIT }, maker);
      await ws.until(() => ws.on(`book.${m.name}.5.10.100ms`).some((n) => n.data.bids[0]?.[1] === 0.7), 5000, 'the grouped change');
    } finally {
      await ws.close();
      await ok(srv.url, 'private/cancel_all', {}, maker);
    }
  });

  it('sends platform_state.public_methods_state on subscribe', async () => {
    const ws = await WsClient.open(tg.ws);
    try {
      assert.deepEqual(await ws.ok('public/subscribe', { channels: ['platform_state.public_methods_state'] }), ['platform_state.public_methods_state']);
      await ws.until(() => ws.on('platform_state.public_methods_state').length > 0, 5000, 'the state');
      assert.deepEqual(ws.on('platform_state.public_methods_state')[0]!.data, { allow_unauthenticated_public_requests: true });
    } finally {
      await ws.close();
    }
  });

  it('sends deribit_volatility_index.{index} on subscribe and when the index moves it', async () => {
    const ws = await WsClient.open(tg.ws);
    const ch = 'deribit_volatility_index.btc_usd';
    try {
      assert.deepEqual(await ws.ok('public/subscribe', { channels: [ch, 'deribit_volatility_index.sol_usd'] }), [ch]);
      await ws.until(() => ws.on(ch).length > 0, 5000, 'the index');
      const first = ws.on(ch)[0]!.data;
      assert.equal(first.index_name, 'btc_usd');
      assert.ok(typeof first.volatility === 'number' && first.volatility > 0, JSON.stringify(first));
      assert.ok(Number.isInteger(first.timestamp) && first.timestamp <= (await ok(srv.url, 'public/get_time')));
      const index = (await ok(srv.url, 'public/get_index_price', { index_name: 'btc_usd' })).index_price;
      await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: index * 1.2 }, admin);
      await ws.until(() => ws.on(ch).length > 1, 5000, 'a second value');
      assert.notEqual(ws.on(ch)[1]!.data.volatility, first.volatility);
      await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: index }, admin);
    } finally {
      await ws.close();
    }
  });

  it('sends incremental_ticker.{instrument} as a snapshot, then only the fields that changed', async () => {
    const ws = await WsClient.open(tg.ws);
    const ch = `incremental_ticker.${m.name}`;
    try {
      assert.deepEqual(await ws.ok('public/subscribe', { channels: [ch, 'incremental_ticker.NOPE-1JAN30-1-C'] }), [ch]);
      await ws.until(() => ws.on(ch).length > 0, 5000, 'the snapshot');
      const snap = ws.on(ch)[0]!.data;
      const ticker = await ok(srv.url, 'public/ticker', { instrument_name: m.name });
      assert.equal(snap.type, 'snapshot');
      for (const k of Object.keys(ticker)) assert.ok(k in snap, `the snapshot carries ${k}`);
      const price = m.prices[2]!;
      await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.5, price }, maker);
      await ws.until(() => ws.on(ch).some((n) => n.data.type === 'change' && n.data.best_bid_price === price), 5000, 'the change');
      const change = ws.on(ch).find((n) => n.data.type === 'change' && n.data.best_bid_price === price)!.data;
      assert.equal(change.instrument_name, m.name);
      assert.equal(change.best_bid_amount, 0.5);
      assert.equal(typeof change.timestamp, 'number');
      assert.equal('strike' in change || 'underlying_index' in change, false, 'fields that did not change are left out');
    } finally {
      await ws.close();
      await ok(srv.url, 'private/cancel_all', {}, maker);
    }
  });

  it('sends announcements as an admin publishes them', async () => {
    const ws = await WsClient.open(tg.ws);
    try {
      assert.deepEqual(await ws.ok('public/subscribe', { channels: ['announcements', 'no.such.channel'] }), ['announcements']);
      const a = await ok(srv.url, 'private/publish_announcement', { title: 'Through the stream', body: 'hello', important: true }, admin);
      await ws.until(() => ws.on('announcements').length > 0, 10_000, 'the announcement');
      const got = ws.on('announcements')[0]!.data;
      assert.equal(got.action, 'new');
      assert.equal(got.id, a.id);
      assert.equal(got.title, 'Through the stream');
      assert.equal(got.important, true);
      assert.equal(ws.on('announcements').length, 1, 'once');
    } finally {
      await ws.close();
    }
  });

  it('sends user.access_log to the account that logged in, and to no one else', async () => {
    await userToken(srv.url, admin, 'logger@example.com', { currency: 'BTC', amount: 1 });
    await userToken(srv.url, admin, 'other@example.com', { currency: 'BTC', amount: 1 });
    const ws = await WsClient.open(tg.ws);
    const other = await WsClient.open(tg.ws);
    try {
      await ws.auth('logger@example.com');
      await other.auth('other@example.com');
      assert.deepEqual(await ws.ok('private/subscribe', { channels: ['user.access_log'] }), ['user.access_log']);
      assert.deepEqual(await other.ok('private/subscribe', { channels: ['user.access_log'] }), ['user.access_log']);
      // a new login of the account, over HTTP
      const token = await login(srv.url, 'logger@example.com', 'user-password-1');
      await ws.until(() => ws.on('user.access_log').length > 0, 10_000, 'the login');
      const e = ws.on('user.access_log')[0]!.data;
      assert.equal(e.log, 'success');
      assert.equal(typeof e.id, 'number');
      const log = await ok(srv.url, 'private/get_access_log', { count: 1 }, token);
      assert.ok(log[0].id >= e.id, 'the entry is in get_access_log');
      // The other account's own logins (its socket's auth above, one more now) reach it too, and a
      // gateway may deliver the first after its subscribe answer. Its next login is a barrier: the
      // stream is in journal order, so a misrouted copy of the logger's entry would arrive before it.
      const otherToken = await login(srv.url, 'other@example.com', 'user-password-1');
      const [otherLast] = await ok(srv.url, 'private/get_access_log', { count: 1 }, otherToken);
      await other.until(() => other.on('user.access_log').some((m) => m.data.id === otherLast.id), 10_000, "the other account's own login");
      const otherIds = new Set((await ok(srv.url, 'private/get_access_log', { count: 100 }, otherToken)).map((x: { id: number }) => x.id));
      const heard = other.on('user.access_log').map((m) => m.data.id as number);
      assert.equal(heard.includes(e.id), false, "another account hears nothing of the logger's login");
      assert.deepEqual(heard.filter((id) => !otherIds.has(id)), [], 'another account hears only its own logins');
    } finally {
      await ws.close();
      await other.close();
    }
  });
}

for (const spec of await wsTargets()) describe(`Deribit channels ${spec.name}`, { skip: spec.skip }, () => suite(spec));
