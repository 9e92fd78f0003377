// Acceptance (issue 5): live streams over the WebSocket rebuild the book exactly, match the REST
// queries, and private channels carry only the subscriber's own data.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { WsClient, type Notification } from '../helpers/ws.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';

function suite(spec: TargetSpec): void {
  let tg: Target;
  let srv: TestServer;
  let m: Market;
  let tokA: string;
  let tokB: string;
  let admin: string;

  before(async () => {
    tg = await startTarget(spec.kind);
    srv = tg.srv;
    admin = await adminToken(srv.url);
    tokA = await userToken(srv.url, admin, 'alice@example.com', { currency: 'BTC', amount: 10 });
    tokB = await userToken(srv.url, admin, 'bob@example.com', { currency: 'BTC', amount: 10 });
    await userToken(srv.url, admin, 'carol@example.com', { currency: 'BTC', amount: 10 });
    m = await atmCall(srv.url);
  });

  after(async () => {
    await tg.stop();
  });

  type Levels = Map<number, number>;

  /** Applies snapshot + changes, checking the change_id chain; returns the book and its change_id. */
  function rebuild(notes: Notification[], upTo = Infinity): { bids: Levels; asks: Levels; changeId: number } {
    assert.ok(notes.length > 0, 'no book notification');
    assert.equal(notes[0].data.type, 'snapshot', 'the first book notification is a snapshot');
    const bids: Levels = new Map();
    const asks: Levels = new Map();
    let changeId = -1;
    for (const n of notes) {
      const d = n.data;
      if (d.change_id > upTo) break;
      if (d.type === 'change') assert.equal(d.prev_change_id, changeId, `gap in change_id before ${d.change_id}`);
      else assert.equal(n, notes[0], 'only one snapshot');
      for (const [side, levels] of [[bids, d.bids], [asks, d.asks]] as const) {
        for (const [action, price, amount] of levels) {
          assert.ok(['new', 'change', 'delete'].includes(action));
          if (action === 'delete') {
            assert.ok(side.has(price), `delete of a missing level ${price}`);
            side.delete(price);
          } else side.set(price, amount);
        }
      }
      changeId = d.change_id;
    }
    return { bids, asks, changeId };
  }

  const levels = (arr: Array<[number, number]>): Levels => new Map(arr.map(([p, a]) => [p, a]));

  test('book, trade, ticker and user channels match REST at every step and stay private', async () => {
    const X = m.name;
    const i = m.prices.indexOf(nearMark(m));
    const px = (k: number) => m.prices[i + k];

    const sub = await WsClient.open(tg.ws);
    await sub.auth('alice@example.com');
    const channels = [`book.${X}.raw`, `book.${X}.100ms`, `trades.${X}.100ms`, `ticker.${X}.100ms`, `user.orders.${X}.raw`, 'user.trades.option.BTC.raw', 'user.portfolio.BTC'];
    assert.deepEqual(await sub.ok('private/subscribe', { channels }), channels);

    // a third user on the same private channels, and an anonymous client (raw needs authentication)
    const carol = await WsClient.open(tg.ws, '/v1/ws');
    await carol.auth('carol@example.com');
    const carolChannels = [`user.orders.${X}.raw`, 'user.trades.option.BTC.raw', 'user.portfolio.BTC', `user.orders.${X}.100ms`, 'user.changes.option.any.raw'];
    assert.deepEqual(await carol.ok('private/subscribe', { channels: carolChannels }), carolChannels);
    const anon = await WsClient.open(tg.ws);
    assert.deepEqual(await anon.ok('public/subscribe', { channels: [`book.${X}.raw`, `book.${X}.100ms`, 'user.portfolio.BTC'] }), [`book.${X}.100ms`]);
    assert.equal((await anon.call('private/subscribe', { channels: ['user.portfolio.BTC'] })).error.code, 10000);

    // orders come from other connections: alice over a second socket, bob over HTTP
    const alice2 = await WsClient.open(tg.ws);
    await alice2.auth('alice@example.com');

    const steps: Array<[string, () => Promise<unknown>]> = [
      ['alice sells at +2', () => alice2.ok('private/sell', { instrument_name: X, amount: 0.5, price: px(2) })],
      ['alice sells at +3', () => alice2.ok('private/sell', { instrument_name: X, amount: 0.3, price: px(3) })],
      ['alice buys at -3', () => alice2.ok('private/buy', { instrument_name: X, amount: 0.4, price: px(-3) })],
      ['bob bids at -2', () => ok(srv.url, 'private/buy', { instrument_name: X, amount: 0.2, price: px(-2) }, tokB)],
      ['bob takes part of +2', () => ok(srv.url, 'private/buy', { instrument_name: X, amount: 0.2, price: px(2) }, tokB)],
      ['alice adds to +3', () => alice2.ok('private/sell', { instrument_name: X, amount: 0.1, price: px(3) })],
      ['bob sweeps +2 and part of +3', () => ok(srv.url, 'private/buy', { instrument_name: X, amount: 0.5, price: px(3) }, tokB)],
      ['alice hits bob at -2', () => alice2.ok('private/sell', { instrument_name: X, amount: 0.2, price: px(-2) })],
    ];
    const aliceOrders = new Set<string>();
    const track = (r: any) => r?.order?.order_id && aliceOrders.add(r.order.order_id);

    const check = async (label: string) => {
      const ob = await ok(srv.url, 'public/get_order_book', { instrument_name: X, depth: 10000 });
      const raw = () => sub.on(`book.${X}.raw`);
      const agg = () => sub.on(`book.${X}.100ms`);
      await sub.until(() => raw().length > 0 && raw()[raw().length - 1].data.change_id >= ob.change_id, 5000, `raw book ${label}`);
      const r = rebuild(raw(), ob.change_id);
      assert.equal(r.changeId, ob.change_id, `raw change_id after ${label}`);
      assert.deepEqual(r.bids, levels(ob.bids), `raw bids after ${label}`);
      assert.deepEqual(r.asks, levels(ob.asks), `raw asks after ${label}`);
      await sub.until(() => agg().length > 0 && agg()[agg().length - 1].data.change_id >= ob.change_id, 5000, `100ms book ${label}`);
      const a = rebuild(agg(), ob.change_id);
      assert.deepEqual([a.bids, a.asks], [levels(ob.bids), levels(ob.asks)], `100ms book after ${label}`);
    };

    await check('subscribe');
    for (const [label, step] of steps) {
      const r = await step();
      if (label.startsWith('alice')) track(r);
      await check(label);
    }
    const open = await ok(srv.url, 'public/get_open_orders_by_instrument', { instrument_name: X }, tokA);
    for (const o of open) {
      track(await alice2.ok('private/cancel', { order_id: o.order_id }));
      await check(`cancel ${o.order_id}`);
    }
    const bobOpen = await ok(srv.url, 'public/get_open_orders_by_instrument', { instrument_name: X }, tokB);
    for (const o of bobOpen) await ok(srv.url, 'private/cancel', { order_id: o.order_id }, tokB);
    await check('bob cancels');

    // ---- trades: public (conflated) and alice's own ----
    const last = await ok(srv.url, 'public/get_last_trades_by_instrument', { instrument_name: X, count: 100, sorting: 'asc' });
    await sub.until(() => sub.on(`trades.${X}.100ms`).flatMap((n) => n.data).length >= last.trades.length, 5000, 'public trades');
    const pub = sub.on(`trades.${X}.100ms`).flatMap((n) => n.data);
    const pick = (t: any) => ({ trade_id: t.trade_id, trade_seq: t.trade_seq, price: t.price, amount: t.amount, direction: t.direction, timestamp: t.timestamp });
    assert.ok(last.trades.length >= 4, 'the steps traded');
    assert.deepEqual(pub.map(pick), last.trades.map(pick));

    const mine = await ok(srv.url, 'public/get_user_trades_by_currency', { currency: 'BTC', count: 100, sorting: 'asc' }, tokA);
    await sub.until(() => sub.on('user.trades.option.BTC.raw').flatMap((n) => n.data).length >= mine.trades.length, 5000, 'user trades');
    const ut = sub.on('user.trades.option.BTC.raw').flatMap((n) => n.data);
    assert.deepEqual(ut, mine.trades);
    for (const t of ut) assert.ok(aliceOrders.has(t.order_id), 'user trades carry only alice orders');

    // ---- orders: raw = one object per notification; the last one per order is its REST state ----
    const orderNotes = sub.on(`user.orders.${X}.raw`).map((n) => n.data);
    assert.ok(orderNotes.length >= aliceOrders.size);
    const lastState = new Map<string, any>();
    for (const o of orderNotes) {
      assert.ok(!Array.isArray(o) && typeof o === 'object', 'raw user.orders carry one object');
      assert.ok(aliceOrders.has(o.order_id), `order ${o.order_id} is alice's`);
      lastState.set(o.order_id, o);
    }
    assert.deepEqual([...lastState.keys()].sort(), [...aliceOrders].sort());
    for (const [id, o] of lastState) assert.deepEqual(o, await ok(srv.url, 'private/get_order_state', { order_id: id }, tokA), `order ${id}`);

    // ---- ticker and portfolio ----
    const ob = await ok(srv.url, 'public/get_order_book', { instrument_name: X });
    const tick = sub.on(`ticker.${X}.100ms`);
    assert.ok(tick.length > 0);
    const lt = tick[tick.length - 1].data;
    assert.equal(lt.instrument_name, X);
    assert.equal(lt.last_price, ob.last_price);
    assert.equal(lt.best_bid_price, ob.best_bid_price);
    const summary = await ok(srv.url, 'public/get_account_summary', { currency: 'BTC' }, tokA);
    await sub.until(() => sub.on('user.portfolio.BTC').some((n) => n.data.balance === summary.balance), 5000, 'portfolio balance');
    const pf = sub.on('user.portfolio.BTC');
    const lp = pf[pf.length - 1].data;
    assert.equal(lp.currency, 'BTC');
    assert.equal(lp.balance, summary.balance);
    assert.equal(lp.available_funds, summary.available_funds);
    assert.notEqual(lp.balance, 10, 'trading moved the balance');

    // ---- the third user saw nothing of the others ----
    // (her own portfolio is published once on subscribing: it is hers, untouched by the others' trades)
    await new Promise((r) => setTimeout(r, 250));
    assert.deepEqual(carol.notes.filter((n) => n.channel !== 'user.portfolio.BTC'), []);
    for (const n of carol.notes) assert.deepEqual([n.data.balance, n.data.equity, n.data.initial_margin], [10, 10, 0]);

    for (const c of [sub, carol, anon, alice2]) await c.close();
  });

  test('every registry operation answers over the socket with the HTTP result shape', async () => {
    const ws = await WsClient.open(tg.ws);
    const r = await ws.call('public/get_order_book', { instrument_name: m.name, depth: 5 });
    assert.equal(r.jsonrpc, '2.0');
    assert.equal(r.id, 1);
    assert.equal(typeof r.usIn, 'number');
    assert.equal(r.testnet, true);
    assert.deepEqual(r.result.bids, (await ok(srv.url, 'public/get_order_book', { instrument_name: m.name, depth: 5 })).bids);
    assert.equal((await ws.call('private/get_positions', { currency: 'BTC' })).error.code, 10000);
    assert.equal((await ws.call('public/no_such_method')).error.code, -32601);
    // access_token on a private call authenticates that call
    const pos = await ws.call('private/get_account_summary', { currency: 'BTC', access_token: tokA });
    assert.equal(pos.result.currency, 'BTC');
    assert.equal((await ws.call('private/get_account_summary', { currency: 'BTC' })).error.code, 10000, 'that call only: the connection is still anonymous');
    const bad = await new Promise<any>((resolve) => {
      ws.ws.once('message', (d) => resolve(JSON.parse(d.toString())));
      ws.ws.send('{not json');
    });
    assert.equal(bad.error.code, -32700);
    await ws.close();
  });

  test('depth books, user changes, index and mark price channels carry their Deribit payloads', async () => {
    const X = m.name;
    const i = m.prices.indexOf(nearMark(m));
    const ws = await WsClient.open(tg.ws);
    await ws.auth('bob@example.com');
    const chans = [`book.${X}.none.10.100ms`, 'deribit_price_index.btc_usd', 'markprice.options.btc_usd', 'user.changes.option.BTC.raw', `user.orders.${X}.100ms`];
    assert.deepEqual(await ws.ok('private/subscribe', { channels: chans }), chans);

    const r = await ok(srv.url, 'private/buy', { instrument_name: X, amount: 0.3, price: m.prices[i - 4] }, tokB);
    const ob = await ok(srv.url, 'public/get_order_book', { instrument_name: X, depth: 10 });
    await ws.until(() => ws.on(`book.${X}.none.10.100ms`).some((n) => n.data.change_id === ob.change_id), 3000, 'depth book');
    const d = ws.on(`book.${X}.none.10.100ms`).find((n) => n.data.change_id === ob.change_id)!.data;
    assert.deepEqual([d.instrument_name, d.bids, d.asks, d.type, d.prev_change_id], [X, ob.bids, ob.asks, undefined, undefined]);

    await ws.until(() => ws.on('user.changes.option.BTC.raw').length > 0, 3000, 'user changes');
    const ch = ws.on('user.changes.option.BTC.raw')[0].data;
    assert.equal(ch.instrument_name, X);
    assert.deepEqual(ch.orders, [await ok(srv.url, 'private/get_order_state', { order_id: r.order.order_id }, tokB)]);
    assert.deepEqual([ch.trades, ch.positions], [[], []]);
    await ws.until(() => ws.on(`user.orders.${X}.100ms`).length > 0, 3000, 'conflated user orders');
    const agg = ws.on(`user.orders.${X}.100ms`)[0].data;
    assert.ok(Array.isArray(agg), 'conflated user.orders carry an array');
    assert.equal(agg[0].order_id, r.order.order_id);

    const before = (await ok(srv.url, 'public/get_index_price', { index_name: 'btc_usd' })).index_price;
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: before + 100 }, admin);
    await ws.until(() => ws.on('deribit_price_index.btc_usd').length > 0 && ws.on('markprice.options.btc_usd').length > 0, 3000, 'index and marks');
    const idx = ws.on('deribit_price_index.btc_usd')[0].data;
    assert.deepEqual([idx.index_name, idx.price, typeof idx.timestamp], ['btc_usd', before + 100, 'number']);
    const marks = ws.on('markprice.options.btc_usd')[0].data;
    const mine = marks.find((x: any) => x.instrument_name === X);
    assert.equal(mine.mark_price, (await ok(srv.url, 'public/get_order_book', { instrument_name: X })).mark_price);
    assert.ok(marks.every((x: any) => x.instrument_name.startsWith('BTC-') && typeof x.iv === 'number'));
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: before }, admin);
    await ws.close();
  });

  test('a connection holds a bounded number of subscriptions and unsubscribes what it asks', async () => {
    const ws = await WsClient.open(tg.ws);
    const many = Array.from({ length: 600 }, (_, k) => `book.${m.name}.none.${[1, 10, 20][k % 3]}.${k % 2 ? '100ms' : 'agg2'}`);
    // the same few channels repeated are one subscription each
    assert.equal((await ws.ok('public/subscribe', { channels: many })).length, 600);
    assert.deepEqual((await ws.ok('public/unsubscribe', { channels: [`book.${m.name}.none.1.agg2`, 'x.y'] })), [`book.${m.name}.none.1.agg2`]);
    const insts = (await ok(srv.url, 'public/get_instruments', { currency: 'any' })).map((x: any) => x.instrument_name);
    const distinct = insts.flatMap((n: string) => [`book.${n}.100ms`, `ticker.${n}.100ms`, `trades.${n}.agg2`]).slice(0, 600);
    assert.ok(distinct.length > 500, 'enough instruments listed');
    const res = await ws.ok('public/subscribe', { channels: distinct });
    assert.equal(res.length, 500 - 5, 'capped at 500 per connection');
    assert.equal(await ws.ok('public/unsubscribe_all'), 'ok');
    assert.equal((await ws.ok('public/subscribe', { channels: [`ticker.${m.name}.100ms`] })).length, 1);
    await ws.close();
  });
}

for (const spec of await wsTargets()) describe(spec.name, { skip: spec.skip }, () => suite(spec));
