// Deribit methods of issue 31 item 3 with no new subsystem: close_position, the label methods
// (get_open_orders_by_label, get_order_state_by_label, edit_by_label) and the cancel-alls by kind or
// type and by currency pair.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../helpers/envelope.ts';
import { atmCall, cheapCall, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('close_position, label methods and cancel-alls', () => {
  let srv: TestServer;
  let url: string;
  let trader: string;
  let other: string;
  let m: Market;
  let atm: Market;

  before(async () => {
    srv = await startServer();
    url = srv.url;
    const admin = await adminToken(url);
    trader = await userToken(url, admin, 'trader@example.com', { currency: 'BTC', amount: 100 });
    other = await userToken(url, admin, 'other@example.com', { currency: 'BTC', amount: 100 });
    m = await cheapCall(url);
    atm = await atmCall(url);
  });
  after(() => srv.stop());

  it('close_position with a limit price places a reduce-only order for the whole position, which closes it', async () => {
    await ok(url, 'private/sell', { instrument_name: m.name, amount: 0.3, price: m.prices[5] }, trader);
    await ok(url, 'private/buy', { instrument_name: m.name, amount: 0.3, price: m.prices[5] }, other);
    assert.equal((await ok(url, 'private/get_position', { instrument_name: m.name }, trader)).size, -0.3);
    await ok(url, 'private/sell', { instrument_name: m.name, amount: 1, price: m.prices[6] }, other);
    const r = await ok(url, 'private/close_position', { instrument_name: m.name, type: 'limit', price: m.prices[6] }, trader);
    assert.equal(r.order.direction, 'buy');
    assert.equal(r.order.amount, 0.3);
    assert.equal(r.order.reduce_only, true);
    assert.equal(r.order.order_state, 'filled');
    assert.equal(r.trades.length, 1);
    assert.equal((await ok(url, 'private/get_position', { instrument_name: m.name }, trader)).size, 0);
    await ok(url, 'private/cancel_all', {}, other);
  });

  it('close_position at market closes a long; without a position, or a limit without a price, it is refused', async () => {
    await ok(url, 'private/sell', { instrument_name: m.name, amount: 0.2, price: m.prices[5] }, other);
    await ok(url, 'private/buy', { instrument_name: m.name, amount: 0.2, price: m.prices[5] }, trader);
    await ok(url, 'private/buy', { instrument_name: m.name, amount: 1, price: m.prices[4] }, other);
    const r = await ok(url, 'private/close_position', { instrument_name: m.name, type: 'market' }, trader);
    assert.equal(r.order.direction, 'sell');
    assert.equal(r.order.order_type, 'market');
    assert.equal(r.order.filled_amount, 0.2);
    assert.equal((await ok(url, 'private/get_position', { instrument_name: m.name }, trader)).size, 0);
    assertError(await rpc(url, 'private/close_position', { instrument_name: m.name, type: 'market' }, trader), 11029, { reason: 'no_position', param: 'instrument_name' });
    await ok(url, 'private/sell', { instrument_name: m.name, amount: 0.1, price: m.prices[4] }, trader);
    assertError(await rpc(url, 'private/close_position', { instrument_name: m.name, type: 'limit' }, trader), 10023, { param: 'price' });
    assertError(await rpc(url, 'private/close_position', { instrument_name: m.name, type: 'stop_limit' }, trader), -32602);
    assertError(await rpc(url, 'private/close_position', { instrument_name: 'NOPE-1JAN30-1-C', type: 'market' }, trader), 10020);
    await ok(url, 'private/close_position', { instrument_name: m.name, type: 'market' }, trader);
    await ok(url, 'private/cancel_all', {}, other);
    await ok(url, 'private/cancel_all', {}, trader);
  });

  it('get_open_orders_by_label lists the open orders of a currency with that label; get_order_state_by_label closed ones too', async () => {
    const a1 = await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0], label: 'alpha' }, trader);
    const a2 = await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[1], label: 'alpha' }, trader);
    await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[2], label: 'beta' }, trader);
    await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0], label: 'alpha' }, other);
    const open = await ok(url, 'private/get_open_orders_by_label', { currency: 'BTC', label: 'alpha' }, trader);
    assert.deepEqual(open.map((o: any) => o.order_id), [a1.order.order_id, a2.order.order_id], "only the caller's, with that label");
    assert.deepEqual(await ok(url, 'private/get_open_orders_by_label', { currency: 'ETH', label: 'alpha' }, trader), []);
    await ok(url, 'private/cancel', { order_id: a1.order.order_id }, trader);
    assert.deepEqual((await ok(url, 'private/get_open_orders_by_label', { currency: 'BTC', label: 'alpha' }, trader)).map((o: any) => o.order_id), [a2.order.order_id]);
    const states = await ok(url, 'private/get_order_state_by_label', { currency: 'BTC', label: 'alpha' }, trader);
    assert.deepEqual(states.map((o: any) => [o.order_id, o.order_state]), [[a1.order.order_id, 'cancelled'], [a2.order.order_id, 'open']]);
    assertError(await rpc(url, 'private/get_open_orders_by_label', { currency: 'DOGE', label: 'alpha' }, trader), -32602);
    await ok(url, 'private/cancel_all', {}, trader);
    await ok(url, 'private/cancel_all', {}, other);
  });

  it('edit_by_label edits the one open order with that label on the instrument; none is 10004 and two are refused', async () => {
    const o = await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0], label: 'gamma' }, trader);
    const e = await ok(url, 'private/edit_by_label', { label: 'gamma', instrument_name: atm.name, amount: 0.3, price: atm.prices[1] }, trader);
    assert.equal(e.order.order_id, o.order.order_id);
    assert.equal(e.order.amount, 0.3);
    assert.equal(e.order.price, atm.prices[1]);
    assertError(await rpc(url, 'private/edit_by_label', { label: 'nobody', instrument_name: atm.name, amount: 0.3, price: atm.prices[1] }, trader), 10004);
    assertError(await rpc(url, 'private/edit_by_label', { label: 'gamma', instrument_name: atm.name, amount: 0.3, price: atm.prices[1] }, other), 10004, {}, "another user's label is not found");
    await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0], label: 'gamma' }, trader);
    assertError(await rpc(url, 'private/edit_by_label', { label: 'gamma', instrument_name: atm.name, amount: 0.2, price: atm.prices[1] }, trader), 11029, { reason: 'label_not_unique', param: 'label' });
    await ok(url, 'private/cancel_all', {}, trader);
  });

  it('cancel_all_by_kind_or_type cancels the orders of the currencies, kinds and types named', async () => {
    for (let i = 0; i < 3; i++) await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[i] }, trader);
    assert.equal(await ok(url, 'private/cancel_all_by_kind_or_type', { currency: ['BTC'], kind: 'future' }, trader), 0, 'no futures are listed');
    assert.equal(await ok(url, 'private/cancel_all_by_kind_or_type', { currency: 'ETH', kind: 'option' }, trader), 0);
    assert.equal(await ok(url, 'private/cancel_all_by_kind_or_type', { currency: ['BTC', 'ETH'], kind: 'option', type: 'trigger_all' }, trader), 0, 'no trigger orders');
    assert.equal(await ok(url, 'private/cancel_all_by_kind_or_type', { currency: ['BTC', 'ETH'], kind: 'option', type: 'limit' }, trader), 3);
    await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0] }, trader);
    const detailed = await ok(url, 'private/cancel_all_by_kind_or_type', { currency: 'any', detailed: true }, trader);
    assert.equal(detailed[0].result.length, 1);
    assertError(await rpc(url, 'private/cancel_all_by_kind_or_type', { currency: 'BTC', kind: 'foo' }, trader), -32602);
    assertError(await rpc(url, 'private/cancel_all_by_kind_or_type', { currency: ['BTC', 'DOGE'] }, trader), -32602);
  });

  it('cancel_all_by_currency_pair cancels the orders of the pair\'s currency', async () => {
    for (let i = 0; i < 2; i++) await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[i] }, trader);
    assert.equal(await ok(url, 'private/cancel_all_by_currency_pair', { currency_pair: 'eth_usd' }, trader), 0);
    assert.equal(await ok(url, 'private/cancel_all_by_currency_pair', { currency_pair: 'btc_usd', kind: 'option', type: 'all' }, trader), 2);
    assertError(await rpc(url, 'private/cancel_all_by_currency_pair', { currency_pair: 'foo_bar' }, trader), -32602);
  });
});
