// private/set_disabled_trading_products (issue 31): with `options` disabled an account places no
// option order that adds risk (orders, trigger orders, mass quotes); reduce-only orders still close
// positions. An account sets its own; an administrator any account's. Journaled.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stateHash } from '../../src/engine/snapshot.ts';
import { assertError } from '../helpers/envelope.ts';
import { atmCall, type Market } from '../helpers/market.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('set_disabled_trading_products', () => {
  let srv: TestServer;
  let url: string;
  let admin: string;
  let a: string;
  let aId: number;
  let bId: number;
  let m: Market;

  before(async () => {
    srv = await startServer();
    url = srv.url;
    admin = await adminToken(url);
    a = await userToken(url, admin, 'dis-a@example.com', { currency: 'BTC', amount: 10 });
    const b = await userToken(url, admin, 'dis-b@example.com', { currency: 'BTC', amount: 10 });
    aId = (await ok(url, 'private/get_account_summary', { currency: 'BTC', extended: true }, a)).id;
    bId = (await ok(url, 'private/get_account_summary', { currency: 'BTC', extended: true }, b)).id;
    m = await atmCall(url);
  });
  after(() => srv.stop());

  it('with options disabled an account places no option order that adds risk; reduce-only still closes', async () => {
    assert.equal(await ok(url, 'private/set_disabled_trading_products', { user_id: aId, trading_products: ['options', 'futures'] }, a), 'ok');
    assertError(await rpc(url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[0] }, a), 11029, { reason: 'trading_product_disabled' });
    assertError(await rpc(url, 'private/buy', { instrument_name: m.name, amount: 0.1, type: 'stop_limit', price: m.prices[0], trigger: 'mark_price', trigger_price: m.prices.at(-1) }, a), 11029, { reason: 'trading_product_disabled' });
    const red = await rpc(url, 'private/sell', { instrument_name: m.name, amount: 0.1, price: m.prices.at(-1), reduce_only: true }, a);
    assert.notEqual(red.body.error?.data?.reason, 'trading_product_disabled', 'a reduce-only order is not refused for the product');
    assert.equal(await ok(url, 'private/set_disabled_trading_products', { user_id: aId, trading_products: [] }, a), 'ok');
    assert.equal((await ok(url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[0] }, a)).order.order_state, 'open');
    await ok(url, 'private/cancel_all', {}, a);
  });

  it("only an administrator sets another account's; unknown products are -32602", async () => {
    assertError(await rpc(url, 'private/set_disabled_trading_products', { user_id: bId, trading_products: ['options'] }, a), 13021);
    assert.equal(await ok(url, 'private/set_disabled_trading_products', { user_id: bId, trading_products: ['options'] }, admin), 'ok');
    assertError(await rpc(url, 'private/set_disabled_trading_products', { user_id: aId, trading_products: ['bonds'] }, a), -32602);
    assertError(await rpc(url, 'private/set_disabled_trading_products', { user_id: 999999, trading_products: [] }, admin), 13020);
  });

  it('a clean replay of the journal reproduces the state', () => {
    const r = cleanReplay(srv.dataDir);
    assert.deepEqual(r.errors, []);
    assert.equal(r.hash, stateHash(srv.app.services.ex));
  });
});
