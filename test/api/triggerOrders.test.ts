// Trigger orders over HTTP and the WebSocket (issue 17; docs/api-notes.md "Trigger orders"): placed
// `untriggered`, listed by the open-order type filters, holding no margin, fired by an index move
// into an ordinary order (user.orders shows untriggered -> triggered -> filled), recorded in
// private/get_trigger_order_history; and the refusals, including an order that cannot be paid for
// when it fires (`rejected`).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, login, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { market, nearDatedAtmCall, nearMark, type Market } from '../helpers/market.ts';
import { prepareExpiry } from '../helpers/expiry.ts';
import { WsClient } from '../helpers/ws.ts';

/** Calls `method` over HTTP and over an authenticated socket; asserts both answer alike. */
async function both(url: string, ws: WsClient, method: string, params: Record<string, unknown>, token: string): Promise<any> {
  const http = await ok(url, method, params, token);
  assert.deepEqual(await ws.ok(method, params), http, `${method} answers alike over HTTP and WebSocket`);
  return http;
}

const sat = (x: number) => Math.round(x * 1e8);

describe('trigger orders over HTTP and WebSocket', () => {
  let srv: TestServer;
  let url: string;
  let admin: string;
  let alice: string;
  let bob: string;
  let ws: WsClient;
  let x: Market;
  let index: number;

  const setIndex = async (price: number) => {
    await ok(url, 'private/set_index_price', { index_name: 'btc_usd', price }, admin);
    index = price;
  };

  before(async () => {
    srv = await startServer();
    url = srv.url;
    admin = await adminToken(url);
    alice = await userToken(url, admin, 'alice@example.com', { currency: 'BTC', amount: 10 });
    bob = await userToken(url, admin, 'bob@example.com', { currency: 'BTC', amount: 10 });
    ws = await WsClient.open(url);
    await ws.auth('alice@example.com');
    x = await nearDatedAtmCall(url);
    index = (await ok(url, 'public/get_index_price', { index_name: 'btc_usd' })).index_price;
  });
  after(async () => {
    await ws.close();
    await srv.stop();
  });

  it('a stop_limit sell on the index waits untriggered, holds no margin, fires into a filled order, and the stream and history show each step', async () => {
    const channel = `user.orders.${x.name}.raw`;
    await ws.ok('private/subscribe', { channels: [channel] });
    const bobWs = await WsClient.open(url);
    await bobWs.auth('bob@example.com');
    await bobWs.ok('private/subscribe', { channels: [channel, 'user.orders.any.any.raw'] });
    const p = x.prices[x.prices.indexOf(nearMark(x)) - 6];
    const bid = await ok(url, 'private/buy', { instrument_name: x.name, amount: 1, price: p }, bob);
    const level = Math.round(index - 1000);

    const placed = await ws.ok('private/sell', { instrument_name: x.name, amount: 0.5, type: 'stop_limit', price: p, trigger: 'index_price', trigger_price: level, label: 'protect' });
    const t = placed.order;
    assert.deepEqual(placed.trades, []);
    assert.equal(t.order_state, 'untriggered');
    assert.equal(t.order_type, 'stop_limit');
    assert.equal(t.trigger, 'index_price');
    assert.equal(t.trigger_price, level);
    assert.equal(t.triggered, false);
    assert.equal(t.price, p);
    assert.equal(t.amount, 0.5);
    assert.equal(t.direction, 'sell');
    assert.equal(t.label, 'protect');
    assert.deepEqual(await both(url, ws, 'private/get_order_state', { order_id: t.order_id }, alice), t);

    // listed by the trigger filters only, and in the book of nobody
    assert.deepEqual(await both(url, ws, 'private/get_open_orders', { type: 'trigger_all' }, alice), [t]);
    assert.deepEqual(await both(url, ws, 'private/get_open_orders', { type: 'stop_all' }, alice), [t]);
    assert.deepEqual(await both(url, ws, 'private/get_open_orders', { type: 'stop_limit' }, alice), [t]);
    assert.deepEqual(await both(url, ws, 'private/get_open_orders', { type: 'take_all' }, alice), []);
    assert.deepEqual(await both(url, ws, 'private/get_open_orders', { type: 'limit' }, alice), []);
    assert.deepEqual(await both(url, ws, 'private/get_open_orders_by_instrument', { instrument_name: x.name, type: 'stop_limit' }, alice), [t]);
    assert.deepEqual(await both(url, ws, 'private/get_open_orders_by_currency', { currency: 'BTC' }, alice), [t]);
    const book = await ok(url, 'public/get_order_book', { instrument_name: x.name });
    assert.deepEqual(book.asks, []);
    // no margin until it fires
    assert.deepEqual(await both(url, ws, 'private/get_order_margin_by_ids', { ids: [t.order_id] }, alice), [{ order_id: t.order_id, initial_margin: 0, initial_margin_currency: 'BTC' }]);
    const summary = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, alice);
    assert.equal(summary.initial_margin, 0);

    await setIndex(level + 1);
    assert.equal((await ok(url, 'private/get_order_state', { order_id: t.order_id }, alice)).order_state, 'untriggered');
    await setIndex(level);

    const fired = await ok(url, 'private/get_order_state', { order_id: t.order_id }, alice);
    assert.equal(fired.order_state, 'triggered');
    assert.equal(fired.triggered, true);
    const history = await both(url, ws, 'private/get_trigger_order_history', { currency: 'BTC' }, alice);
    assert.equal(history.continuation, null);
    assert.deepEqual(
      history.entries.map((e: any) => [e.request, e.order_state, e.trigger_order_id, e.trigger_price, e.amount, e.price, e.direction, e.order_type]),
      [
        ['trigger:order', 'triggered', t.order_id, level, 0.5, p, 'sell', 'stop_limit'],
        ['order', 'untriggered', t.order_id, level, 0.5, p, 'sell', 'stop_limit'],
      ],
    );
    const childId = history.entries[0].order_id;
    assert.equal(fired.triggered_order_id, childId);
    const child = await both(url, ws, 'private/get_order_state', { order_id: childId }, alice);
    assert.equal(child.order_state, 'filled');
    assert.equal(child.order_type, 'stop_limit');
    assert.equal(child.triggered, true);
    assert.equal(child.trigger_order_id, t.order_id);
    assert.equal(child.filled_amount, 0.5);
    assert.equal(child.average_price, p);
    const pos = await ok(url, 'private/get_position', { instrument_name: x.name }, alice);
    assert.equal(pos.size, -0.5);
    const bobOrder = await ok(url, 'private/get_order_state', { order_id: bid.order.order_id }, bob);
    assert.equal(bobOrder.filled_amount, 0.5);
    const trades = await ok(url, 'private/get_user_trades_by_order', { order_id: childId }, alice);
    assert.deepEqual(trades.map((tr: any) => [tr.price, tr.amount, tr.liquidity]), [[p, 0.5, 'T']]);

    // the stream: untriggered, then (one batch) the trigger triggered and the order it became filled
    await ws.until(() => ws.on(channel).some((n) => n.data.order_id === childId), 5000, 'the fired order on user.orders');
    const seen = ws.on(channel).map((n) => [n.data.order_id, n.data.order_state]);
    assert.deepEqual(seen, [[t.order_id, 'untriggered'], [t.order_id, 'triggered'], [childId, 'filled']]);
    // bob, the other side of the fill, sees only his own order on his private streams
    await bobWs.until(() => bobWs.notes.some((n) => n.data.filled_amount === 0.5), 5000, 'bob\'s fill');
    assert.ok(bobWs.notes.length > 0);
    for (const n of bobWs.notes) assert.equal(n.data.order_id, bid.order.order_id, `bob sees only his order (${n.channel})`);
    await bobWs.close();
  });

  it('refuses bad trigger input with section-4 codes, never touching anything', async () => {
    const p = nearMark(x);
    const base = { instrument_name: x.name, amount: 0.1 };
    const cases: [Record<string, unknown>, number, string][] = [
      [{ type: 'stop_market', trigger: 'index_price', trigger_price: index + 10 }, 11029, 'trigger_price_too_high'],
      [{ type: 'take_market', trigger: 'index_price', trigger_price: index - 10 }, 11029, 'trigger_price_too_low'],
      [{ type: 'stop_market', trigger_price: index - 10 }, -32602, 'trigger'],
      [{ type: 'stop_market', trigger: 'index_price' }, -32602, 'trigger_price'],
      [{ type: 'stop_limit', trigger: 'index_price', trigger_price: index - 10 }, 10023, 'price_required'],
      [{ type: 'limit', price: p, trigger_price: index - 10 }, 11029, 'trigger_needs_trigger_order_type'],
      [{ type: 'trailing_stop', trigger: 'index_price', trigger_price: index - 10, trigger_offset: 10 }, 11029, 'trailing_stop_has_no_trigger_price'],
      [{ type: 'trailing_stop', trigger: 'index_price', trigger_offset: -5 }, 11029, 'invalid_trigger_offset'],
      [{ type: 'stop_market', trigger: 'mark_price', trigger_price: 0.00001 }, 10043, 'trigger_price_wrong_tick'],
      [{ type: 'stop_market', trigger: 'mark_price', trigger_price: 0.00051 }, 10043, 'trigger_price_wrong_tick'],
      [{ type: 'stop_market', trigger: 'bogus_price', trigger_price: index - 10 }, -32602, ''],
      [{ type: 'stop_limit', price: p, trigger: 'index_price', trigger_price: index - 10, mmp: true }, 11029, 'mmp_not_supported_for_trigger_orders'],
    ];
    const seqBefore = (await ok(url, 'private/get_state_hash', {}, admin)).seq;
    for (const [params, code, reason] of cases) {
      const r = await rpc(url, 'private/sell', { ...base, ...params }, alice);
      assert.equal(r.body.error?.code, code, `${JSON.stringify(params)}: ${JSON.stringify(r.body)}`);
      if (reason && code !== -32602) assert.equal(r.body.error.data.reason, reason, JSON.stringify(params));
      if (code === -32602 && reason) assert.equal(r.body.error.data.param, reason);
      assert.ok(r.status < 500);
    }
    assert.deepEqual(await ok(url, 'private/get_open_orders', { type: 'trigger_all' }, alice), []);
    // refused before they are sequenced: nothing was journaled
    assert.equal((await ok(url, 'private/get_state_hash', {}, admin)).seq, seqBefore);
  });

  it('client_order_id makes a trigger placement safe to retry: the same request gets the first order, another one is refused', async () => {
    const req = { instrument_name: x.name, amount: 0.1, type: 'stop_market', trigger: 'index_price', trigger_price: index - 4000, client_order_id: 'stop-1' };
    const first = (await ok(url, 'private/sell', req, alice)).order;
    assert.equal(first.client_order_id, 'stop-1');
    const again = (await ws.ok('private/sell', req)).order;
    assert.deepEqual(again, first, 'the retry answers the first order');
    assert.equal((await rpc(url, 'private/sell', { ...req, trigger_price: index - 4100 }, alice)).body.error.data.reason, 'client_order_id_reused');
    assert.equal((await rpc(url, 'private/sell', { instrument_name: x.name, amount: 0.1, price: nearMark(x), client_order_id: 'stop-1' }, alice)).body.error.data.reason, 'client_order_id_in_use');
    assert.deepEqual((await ok(url, 'private/get_open_orders', { type: 'trigger_all' }, alice)).map((o: any) => o.order_id), [first.order_id]);
    await ok(url, 'private/cancel', { order_id: first.order_id }, alice);
  });

  it('another user\'s trigger id is not found; cancel by type and the detailed report; edit of the trigger price', async () => {
    const s1 = (await ok(url, 'private/sell', { instrument_name: x.name, amount: 0.1, type: 'stop_market', trigger: 'index_price', trigger_price: index - 3000 }, alice)).order;
    const s2 = (await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.1, type: 'take_market', trigger: 'index_price', trigger_price: index - 3000 }, alice)).order;
    const s3 = (await ok(url, 'private/sell', { instrument_name: x.name, amount: 0.1, type: 'trailing_stop', trigger: 'index_price', trigger_offset: 2500 }, alice)).order;
    assert.equal(s3.trigger_price, index - 2500);
    assert.equal(s3.trigger_offset, 2500);
    assert.equal((await rpc(url, 'private/cancel', { order_id: s1.order_id }, bob)).body.error.code, 10004);
    assert.equal((await rpc(url, 'private/get_order_state', { order_id: s1.order_id }, bob)).body.error.code, 10004);
    assert.equal((await rpc(url, 'private/edit', { order_id: s1.order_id, amount: 0.2, trigger_price: index - 2000 }, bob)).body.error.code, 10004);

    const edited = await ok(url, 'private/edit', { order_id: s1.order_id, amount: 0.2, trigger_price: index - 2000 }, alice);
    assert.equal(edited.order.trigger_price, index - 2000);
    assert.equal(edited.order.amount, 0.2);
    assert.equal(edited.order.order_state, 'untriggered');
    const tooHigh = await rpc(url, 'private/edit', { order_id: s1.order_id, amount: 0.2, trigger_price: index + 1 }, alice);
    assert.equal(tooHigh.body.error.data.reason, 'trigger_price_too_high');

    const byType = await ok(url, 'private/cancel_all_by_currency', { currency: 'BTC', type: 'take', detailed: true }, alice);
    assert.deepEqual(byType.map((r: any) => [r.type, r.result.map((o: any) => [o.order_id, o.order_state, o.cancel_reason])]), [['limit', []], ['trigger', [[s2.order_id, 'cancelled', 'user_request']]]]);
    assert.equal(await ok(url, 'private/cancel_all_by_instrument', { instrument_name: x.name, type: 'limit' }, alice), 0);
    const ids = (await ok(url, 'private/get_open_orders', { type: 'trigger_all' }, alice)).map((o: any) => o.order_id);
    assert.deepEqual(ids, [s1.order_id, s3.order_id]);
    assert.equal(await ok(url, 'private/cancel', { order_id: s1.order_id }, alice).then((o) => o.order_state), 'cancelled');
    assert.equal((await rpc(url, 'private/cancel', { order_id: s1.order_id }, alice)).body.error.code, 10010);
    assert.equal(await ok(url, 'private/cancel_all', {}, alice), 1, 'cancel_all takes the trailing stop too');

    // the history pages newest first through `continuation`
    const page1 = await ok(url, 'private/get_trigger_order_history', { currency: 'BTC', count: 2 }, alice);
    assert.equal(page1.entries.length, 2);
    assert.deepEqual(page1.entries.map((e: any) => [e.request, e.trigger_order_id]), [['cancel', s3.order_id], ['cancel', s1.order_id]]);
    assert.notEqual(page1.continuation, null);
    const page2 = await ok(url, 'private/get_trigger_order_history', { currency: 'BTC', count: 2, continuation: page1.continuation }, alice);
    assert.deepEqual(page2.entries.map((e: any) => e.request), ['cancel', 'edit']);
    assert.equal((await ok(url, 'private/get_trigger_order_history', { currency: 'ETH' }, alice)).entries.length, 0);
    assert.equal((await rpc(url, 'private/get_trigger_order_history', { currency: 'BTC', continuation: 'abc' }, alice)).body.error.code, -32602);
    assert.equal((await rpc(url, 'private/get_trigger_order_history', { currency: 'BTC', count: 1001 }, alice)).body.error.code, -32602);
  });

  it('a trigger the account cannot pay for when it fires ends `rejected` and moves no money', async () => {
    const carol = await userToken(url, admin, 'carol@example.com', { currency: 'BTC', amount: 0.01 });
    const ask = x.prices[x.prices.indexOf(nearMark(x)) + 4];
    await ok(url, 'private/sell', { instrument_name: x.name, amount: 1, price: ask }, bob);
    const t = (await ok(url, 'private/buy', { instrument_name: x.name, amount: 1, type: 'stop_limit', price: ask, trigger: 'index_price', trigger_price: index + 500 }, carol)).order;
    assert.equal(t.order_state, 'untriggered', 'accepted: an untriggered order needs no funds');
    const before = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, carol);
    await setIndex(index + 500);
    const after = await ok(url, 'private/get_order_state', { order_id: t.order_id }, carol);
    assert.equal(after.order_state, 'rejected');
    assert.equal(after.reject_reason, 'not_enough_funds');
    const h = await ok(url, 'private/get_trigger_order_history', { currency: 'BTC', count: 1 }, carol);
    assert.deepEqual(h.entries.map((e: any) => [e.request, e.order_state, e.order_id, e.reason]), [['trigger:order', 'rejected', null, 'not_enough_funds']]);
    const now = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, carol);
    assert.equal(sat(now.balance), sat(before.balance));
    assert.equal((await ok(url, 'private/get_position', { instrument_name: x.name }, carol)).size, 0);
    await setIndex(index - 500);
  });

  it('a reduce-only stop whose position was closed by hand before it fires is rejected and opens nothing', async () => {
    // bob is long 0.5 from the first test: a reduce-only stop protects it, then bob closes by hand
    assert.equal((await ok(url, 'private/get_position', { instrument_name: x.name }, bob)).size, 0.5);
    await ok(url, 'private/cancel_all', {}, bob);
    const t = (await ok(url, 'private/sell', { instrument_name: x.name, amount: 0.5, type: 'stop_market', trigger: 'index_price', trigger_price: index - 800, reduce_only: true }, bob)).order;
    assert.equal(t.reduce_only, true);
    const m = await market(url, x.inst);
    const q = nearMark(m);
    await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.5, price: q }, alice);
    await ok(url, 'private/sell', { instrument_name: x.name, amount: 0.5, price: q }, bob);
    assert.equal((await ok(url, 'private/get_position', { instrument_name: x.name }, bob)).size, 0);
    await ok(url, 'private/buy', { instrument_name: x.name, amount: 1, price: m.prices[m.prices.indexOf(q) - 6] }, alice); // a bid it could hit
    await setIndex(index - 800);
    const after = await ok(url, 'private/get_order_state', { order_id: t.order_id }, bob);
    assert.deepEqual([after.order_state, after.reject_reason], ['rejected', 'reduce_only']);
    assert.equal((await ok(url, 'private/get_position', { instrument_name: x.name }, bob)).size, 0);
  });
});

describe('trigger orders at expiry (HTTP)', () => {
  it('the settlement of a series cancels its untriggered orders with cancel_reason settlement', async () => {
    const srv = await startServer({ STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000' });
    try {
      const admin = await adminToken(srv.url);
      const sc = await prepareExpiry(srv.url, admin);
      // the buyer protects its long call with a reduce-only stop that the index never reaches
      const t = (await ok(srv.url, 'private/sell', { instrument_name: sc.instrument, amount: 1, type: 'stop_market', trigger: 'index_price', trigger_price: 90_000, reduce_only: true }, sc.buyer)).order;
      assert.equal(t.order_state, 'untriggered');
      await ok(srv.url, 'private/set_test_time', { timestamp: sc.expiry + 1_000 }, admin);
      const deadline = Date.now() + 10_000;
      while ((await ok(srv.url, 'public/get_instrument', { instrument_name: sc.instrument })).state !== 'delivered') {
        assert.ok(Date.now() < deadline, 'the series was delivered');
        await new Promise((r) => setTimeout(r, 100));
      }
      const after = await ok(srv.url, 'private/get_order_state', { order_id: t.order_id }, sc.buyer);
      assert.deepEqual([after.order_state, after.cancel_reason], ['cancelled', 'settlement']);
      const h = await ok(srv.url, 'private/get_trigger_order_history', { currency: 'BTC', count: 1 }, sc.buyer);
      assert.deepEqual(h.entries.map((e: any) => [e.request, e.order_state, e.reason]), [['cancel', 'cancelled', 'settlement']]);
      assert.deepEqual(await ok(srv.url, 'private/get_open_orders', { type: 'trigger_all' }, sc.buyer), []);
    } finally {
      await srv.stop();
    }
  });
});

describe('trigger order history access', () => {
  it('needs credentials, and is empty for a user without trigger orders', async () => {
    const srv = await startServer();
    try {
      assert.equal((await rpc(srv.url, 'private/get_trigger_order_history', { currency: 'BTC' })).body.error.code, 10000);
      await adminToken(srv.url);
      const tok = await login(srv.url, 'admin@example.com', 'admin-password-1');
      assert.deepEqual(await ok(srv.url, 'private/get_trigger_order_history', { currency: 'BTC' }, tok), { entries: [], continuation: null });
    } finally {
      await srv.stop();
    }
  });
});
