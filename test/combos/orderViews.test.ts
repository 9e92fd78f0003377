// Combo orders in the account views over HTTP and WebSocket (issue 34; docs/api-notes.md "Combo
// orders"): listed by get_open_orders* with Deribit's order fields and `kind` (option, option_combo,
// combo, any), found by get_order_state and the order histories, holding margin in
// get_order_margin_by_ids, published on user.orders.option_combo.*, and cancelled by kind.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, twinPut, type Market } from '../helpers/market.ts';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

describe('combo orders in the account views', () => {
  let server: TestServer;
  let user: string;
  let call: Market;
  let put: Market;
  let comboId: string;

  before(async () => {
    server = await startServer();
    const admin = await adminToken(server.url);
    user = await userToken(server.url, admin, 'combo-views@example.com', { currency: 'BTC', amount: 10 });
    call = await atmCall(server.url);
    put = await twinPut(server.url, call);
    const c = await ok(server.url, 'private/create_combo', { trades: [{ instrument_name: call.name, direction: 'buy', amount: 1 }, { instrument_name: put.name, direction: 'buy', amount: 1 }] }, user);
    comboId = c.id;
  });

  after(async () => {
    await server?.stop();
  });

  it('lists, finds, publishes and cancels combo orders by kind with Deribit\'s fields', async () => {
    const url = server.url;
    const ws = await WsClient.open(url);
    await ws.auth('combo-views@example.com');
    await ws.ok('private/subscribe', { channels: ['user.orders.option_combo.BTC.raw', 'user.orders.option.BTC.raw', `user.orders.${comboId}.raw`] });
    // a straddle bid below its net mark: it rests
    const net = Math.round((call.book.mark_price + put.book.mark_price) * 1e4) - 50;
    const placed = await ok(url, 'private/buy', { instrument_name: comboId, amount: 1, price: net / 1e4, label: 'strd' }, user);
    const combo = placed.order;
    assert.equal(combo.order_state, 'open');
    const plain = (await ok(url, 'private/buy', { instrument_name: call.name, amount: 0.1, price: call.prices[0] }, user)).order;

    const ids = (list: any[]) => list.map((o) => o.order_id);
    assert.deepEqual(ids(await ok(url, 'private/get_open_orders', {}, user)), [combo.order_id, plain.order_id]);
    assert.deepEqual(ids(await ok(url, 'private/get_open_orders', { kind: 'option' }, user)), [plain.order_id]);
    const listed = await ok(url, 'private/get_open_orders', { kind: 'option_combo' }, user);
    assert.deepEqual(ids(listed), [combo.order_id]);
    assert.deepEqual(ids(await ok(url, 'private/get_open_orders', { kind: 'combo' }, user)), [combo.order_id]);
    assert.deepEqual(await ok(url, 'private/get_open_orders', { kind: 'future' }, user), []);
    // Deribit's order object: the same fields as an option order's
    const o = listed[0];
    for (const k of Object.keys(plain)) assert.ok(k in o, `combo order has ${k}`);
    assert.equal(o.instrument_name, comboId);
    assert.equal(o.direction, 'buy');
    assert.equal(o.order_type, 'limit');
    assert.equal(o.time_in_force, 'good_til_cancelled');
    assert.equal(o.amount, 1);
    assert.equal(o.filled_amount, 0);
    assert.equal(o.price, net / 1e4);
    assert.equal(o.label, 'strd');
    assert.deepEqual(ids(await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC', kind: 'option_combo' }, user)), [combo.order_id]);
    assert.deepEqual(ids(await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, user)), [combo.order_id, plain.order_id]);
    assert.deepEqual(await ok(url, 'private/get_open_orders_by_currency', { currency: 'ETH' }, user), []);
    assert.deepEqual(ids(await ok(url, 'private/get_open_orders_by_instrument', { instrument_name: comboId }, user)), [combo.order_id]);
    assert.deepEqual(ids(await ok(url, 'private/get_open_orders_by_label', { currency: 'BTC', label: 'strd' }, user)), [combo.order_id]);
    assert.equal((await ok(url, 'private/get_order_state', { order_id: combo.order_id }, user)).order_state, 'open');
    const rows = await ok(url, 'private/get_open_orders_instrument_by_currency', { currency: 'BTC' }, user);
    const row = rows.find((r: any) => r.instrument_name === comboId);
    assert.deepEqual({ ...row, orders: ids(row.orders) }, { instrument_name: comboId, buy_orders: 1, sell_orders: 0, buy_amount: 1, sell_amount: 0, orders: [combo.order_id] });
    const [margin] = await ok(url, 'private/get_order_margin_by_ids', { ids: [combo.order_id] }, user);
    assert.ok(margin.initial_margin > 0, 'the resting combo order holds margin');
    const summary = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, user);
    assert.ok(summary.initial_margin >= margin.initial_margin, 'and the account counts it');

    // the user.orders channels: option_combo and the combo's name carry it, option does not
    await ws.until(() => ws.on('user.orders.option_combo.BTC.raw').length > 0 && ws.on(`user.orders.${comboId}.raw`).length > 0, 5000, 'combo order notifications');
    assert.equal(ws.on('user.orders.option_combo.BTC.raw')[0]!.data.order_id, combo.order_id);
    await ws.until(() => ws.on('user.orders.option.BTC.raw').length > 0, 5000, 'option order notification');
    assert.ok(ws.on('user.orders.option.BTC.raw').every((n) => n.data.instrument_name !== comboId), 'kind option leaves combo orders out');

    // cancels by kind: option spares the combo order, option_combo cancels it alone
    assert.equal(await ok(url, 'private/cancel_all_by_currency', { currency: 'BTC', kind: 'option' }, user), 1);
    assert.equal((await ok(url, 'private/get_order_state', { order_id: combo.order_id }, user)).order_state, 'open');
    assert.equal(await ok(url, 'private/cancel_all_by_currency', { currency: 'BTC', kind: 'future' }, user), 0);
    assert.equal(await ok(url, 'private/cancel_all_by_kind_or_type', { currency: 'any', kind: 'option_combo' }, user), 1);
    const closed = await ok(url, 'private/get_order_state', { order_id: combo.order_id }, user);
    assert.equal(closed.order_state, 'cancelled');
    assert.equal(closed.cancel_reason, 'user_request');
    assert.deepEqual(await ok(url, 'private/get_open_orders', {}, user), []);
    assert.deepEqual(ids(await ok(url, 'private/get_order_history_by_instrument', { instrument_name: comboId, include_unfilled: true }, user)), [combo.order_id]);
    assert.deepEqual(ids(await ok(url, 'private/get_order_history_by_currency', { currency: 'BTC', kind: 'option_combo', include_unfilled: true }, user)), [combo.order_id]);
    assert.ok(!ids(await ok(url, 'private/get_order_history_by_currency', { currency: 'BTC', kind: 'option', include_unfilled: true }, user)).includes(combo.order_id));
    // cancel_all cancels a combo order too
    const again = (await ok(url, 'private/buy', { instrument_name: comboId, amount: 1, price: net / 1e4 }, user)).order;
    assert.equal(await ok(url, 'private/cancel_all', {}, user), 1);
    assert.equal((await ok(url, 'private/get_order_state', { order_id: again.order_id }, user)).order_state, 'cancelled');
    await ws.close();
  });
});
