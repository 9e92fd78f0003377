// Deribit-only operations over HTTP (API.md 3.3 "Also, for Deribit clients" and 3.5): private/edit,
// get_order_state, order history with count/offset paging, cancel_by_label and get_expirations.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { methodGroups } from '../../src/api/methods/index.ts';
import { expiryCode } from '../../src/domain/instrument.ts';
import { assertError, assertOk } from '../helpers/envelope.ts';
import { atmCall, instruments, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('Deribit-only operations', () => {
  let server: TestServer;
  let url: string;
  let alice: string;
  let bob: string;
  let x: Market;
  let p: number;

  before(async () => {
    server = await startServer();
    url = server.url;
    const admin = await adminToken(url);
    alice = await userToken(url, admin, 'alice-x@example.com', { currency: 'BTC', amount: 20 });
    bob = await userToken(url, admin, 'bob-x@example.com', { currency: 'BTC', amount: 20 });
    x = await atmCall(url);
    p = nearMark(x);
  });
  after(() => server.stop());

  it('routes every new operation at the three prefixes; the private ones need credentials (10000)', async () => {
    for (const def of [...methodGroups.apiKeys, ...methodGroups.deribit]) {
      for (const prefix of ['/v1/', '/api/v1/', '/api/v2/']) {
        for (const get of [false, true]) {
          const r = await rpc(url, def.name, {}, undefined, { prefix, get });
          if (def.scope === 'none') assertOk(r, `${prefix}${def.name}`);
          else assertError(r, 10000, {}, `${get ? 'GET' : 'POST'} ${prefix}${def.name}`);
        }
      }
    }
  });

  it('private/edit answers {order, trades}, and refuses unknown orders and off-tick prices', async () => {
    const placed = await ok(url, 'private/sell', { instrument_name: x.name, amount: 0.3, price: p }, alice);
    const id = placed.order.order_id;
    const r = await ok(url, 'private/edit', { order_id: id, amount: 0.2, price: p }, alice);
    assert.deepEqual(Object.keys(r).sort(), ['order', 'trades']);
    assert.equal(r.order.order_id, id);
    assert.equal(r.order.amount, 0.2);
    assert.deepEqual(r.trades, []);
    // a buy edited into the ask trades at once
    const bid = await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.1, price: x.prices[0] }, bob);
    const crossed = await rpc(url, 'private/edit', { order_id: bid.order.order_id, amount: 0.1, price: p }, bob, { get: true, prefix: '/api/v2/' });
    const c = assertOk(crossed);
    assert.equal(c.order.order_state, 'filled');
    assert.equal(c.trades.length, 1);
    assert.equal(c.trades[0].price, p);
    assert.equal(c.trades[0].liquidity, 'T');
    assertError(await rpc(url, 'private/edit', { order_id: id, amount: 0.2, price: p + 0.0001 }, alice), 10043);
    assertError(await rpc(url, 'private/edit', { order_id: '99999', amount: 0.1, price: p }, alice), 10004);
    assertError(await rpc(url, 'private/edit', { order_id: id, amount: 0.1, price: p }, bob), 10004, {}, 'another user\'s order');
    assertError(await rpc(url, 'private/edit', { order_id: id, price: p }, alice), -32602);
    await ok(url, 'private/cancel_all', {}, alice);
  });

  it('private/get_order_state returns the caller\'s order in any state and hides others\' orders', async () => {
    const placed = await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.1, price: x.prices[0] }, alice);
    const id = placed.order.order_id;
    const open = await ok(url, 'private/get_order_state', { order_id: id }, alice);
    assert.equal(open.order_state, 'open');
    assert.deepEqual(open, placed.order);
    await ok(url, 'private/cancel', { order_id: id }, alice);
    const cancelled = await ok(url, 'private/get_order_state', { order_id: id }, alice);
    assert.equal(cancelled.order_state, 'cancelled');
    assert.equal(cancelled.cancel_reason, 'user_request');
    assertError(await rpc(url, 'private/get_order_state', { order_id: id }, bob), 10004);
    assertError(await rpc(url, 'private/get_order_state', { order_id: 'garbage!' }, alice), 10004);
  });

  it('order history pages filled orders newest first, count 20 by default, with offset', async () => {
    await ok(url, 'private/sell', { instrument_name: x.name, amount: 2.5, price: p }, alice);
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) ids.push((await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.1, price: p }, bob)).order.order_id);
    // one unfilled cancelled order, listed only with include_unfilled
    const idle = (await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.1, price: x.prices[0] }, bob)).order.order_id;
    await ok(url, 'private/cancel', { order_id: idle }, bob);

    const page1 = await ok(url, 'private/get_order_history_by_currency', { currency: 'BTC' }, bob);
    assert.equal(page1.length, 20);
    const all = [...ids].reverse();
    // bob's earlier filled buy from the edit test is the oldest entry
    assert.deepEqual(page1.map((o: any) => o.order_id), all.slice(0, 20));
    const page2 = await ok(url, 'private/get_order_history_by_currency', { currency: 'BTC', offset: 20, count: 10 }, bob);
    assert.deepEqual(page2.slice(0, 5).map((o: any) => o.order_id), all.slice(20));
    assert.equal(page2.length, 6);
    for (const o of [...page1, ...page2]) assert.equal(o.order_state, 'filled');
    const byInst = await ok(url, 'private/get_order_history_by_instrument', { instrument_name: x.name, count: 1000 }, bob);
    assert.deepEqual(byInst.map((o: any) => o.order_id), [...page1, ...page2].map((o: any) => o.order_id));
    const withUnfilled = await ok(url, 'private/get_order_history_by_instrument', { instrument_name: x.name, count: 1000, include_unfilled: true }, bob);
    assert.equal(withUnfilled[0].order_id, idle);
    assert.equal(withUnfilled.length, byInst.length + 1);
    // the maker side: alice's partly filled sell is listed while still open
    const aliceHist = await ok(url, 'private/get_order_history_by_currency', { currency: 'BTC', count: 1 }, alice);
    assert.equal(aliceHist[0].filled_amount, 2.5);
    assert.deepEqual(await ok(url, 'private/get_order_history_by_currency', { currency: 'ETH' }, bob), []);
    assertError(await rpc(url, 'private/get_order_history_by_instrument', { instrument_name: 'BTC-1JAN20-1-C' }, bob), 10020);
  });

  it('private/cancel_by_label cancels the caller\'s open orders with that label, optionally by currency', async () => {
    const mk = (label: string) => ok(url, 'private/buy', { instrument_name: x.name, amount: 0.1, price: x.prices[0], label }, alice);
    await mk('grid');
    await mk('grid');
    const keep = await mk('other');
    await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.1, price: x.prices[0], label: 'grid' }, bob);
    assert.equal(await ok(url, 'private/cancel_by_label', { label: 'grid', currency: 'ETH' }, alice), 0);
    assert.equal(await ok(url, 'private/cancel_by_label', { label: 'grid' }, alice), 2);
    const open = await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, alice);
    assert.deepEqual(open.map((o: any) => o.order_id), [keep.order.order_id]);
    assert.equal((await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, bob)).length, 1, 'bob\'s order is untouched');
    assertError(await rpc(url, 'private/cancel_by_label', {}, alice), -32602);
  });

  it('public/get_expirations answers the active expiries as Deribit codes', async () => {
    const codes = async (currency: string) => {
      const list = await instruments(url, currency);
      return [...new Set<number>(list.map((i: any) => i.expiration_timestamp))].sort((a, b) => a - b).map(expiryCode);
    };
    const btc = await codes('BTC');
    const eth = await codes('ETH');
    assert.ok(btc.length >= 4);
    for (const c of btc) assert.match(c, /^[1-9][0-9]?[A-Z]{3}[0-9]{2}$/);
    assert.deepEqual(await ok(url, 'public/get_expirations', { currency: 'BTC', kind: 'option' }), { option: btc });
    assert.deepEqual(await ok(url, 'public/get_expirations', { currency: 'BTC', kind: 'any' }), { future: [], option: btc });
    assert.deepEqual(await ok(url, 'public/get_expirations', { currency: 'BTC', kind: 'future' }), { future: [] });
    const both = [...(await instruments(url, 'BTC')), ...(await instruments(url, 'ETH'))];
    const union = [...new Set<number>(both.map((i: any) => i.expiration_timestamp))].sort((a, b) => a - b).map(expiryCode);
    assert.deepEqual(await ok(url, 'public/get_expirations', { currency: 'any', kind: 'option' }), { option: union });
    const grouped = await ok(url, 'public/get_expirations', { currency: 'grouped', kind: 'option' });
    assert.deepEqual(grouped.btc, { option: btc });
    assert.deepEqual(grouped.eth, { option: eth });
    const viaGet = await rpc(url, 'public/get_expirations', { currency: 'ETH', kind: 'option' }, undefined, { get: true, prefix: '/api/v2/' });
    assert.deepEqual(assertOk(viaGet), { option: eth });
    assertError(await rpc(url, 'public/get_expirations', { currency: 'XRP', kind: 'option' }), -32602);
  });
});
