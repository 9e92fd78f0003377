// private/get_margins over HTTP: the figures equal what an order placed right after holds in the
// account summary, so the web app's order ticket shows the margin the engine will really take.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../helpers/envelope.ts';
import { nearDatedAtmCall, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('private/get_margins', () => {
  let srv: TestServer;
  let trader: string;
  let m: Market;
  before(async () => {
    srv = await startServer();
    const admin = await adminToken(srv.url);
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100000 }, admin);
    trader = await userToken(srv.url, admin, 'margins@example.com', { currency: 'BTC', amount: 10 });
    m = await nearDatedAtmCall(srv.url);
  });
  after(() => srv.stop());

  const initialMargin = async () => (await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, trader)).initial_margin;

  it('answers the margin a buy and a sell would hold, and the price band', async () => {
    const price = nearMark(m);
    const r = await ok(srv.url, 'private/get_margins', { instrument_name: m.name, amount: 1, price }, trader);
    assert.equal(r.min_price, m.book.min_price);
    assert.equal(r.max_price, m.book.max_price);
    // a buy holds premium plus at most the taker fee of 0.0003 per contract
    assert.ok(r.buy >= price && r.buy <= price + 0.0003 + 1e-12, `buy ${r.buy} at price ${price}`);
    // a short call holds at least 0.1 coin plus its mark per contract
    assert.ok(r.sell > 0.1, `sell ${r.sell}`);

    const before = await initialMargin();
    const placed = await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 1, price: m.prices[m.prices.length - 1] }, trader);
    assert.ok(Math.abs((await initialMargin()) - before - r.sell) < 1e-8, 'a sell holds what get_margins said');
    await ok(srv.url, 'private/cancel', { order_id: placed.order.order_id }, trader);

    const placedBuy = await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 1, price: m.prices[0] }, trader);
    const atLow = await ok(srv.url, 'private/get_margins', { instrument_name: m.name, amount: 1, price: m.prices[0] }, trader);
    assert.ok(Math.abs((await initialMargin()) - before - atLow.buy) < 1e-8, 'a buy holds what get_margins said');
    await ok(srv.url, 'private/cancel', { order_id: placedBuy.order.order_id }, trader);
  });

  it('answers over GET too (Deribit clients send query strings)', async () => {
    const r = await rpc(srv.url, 'private/get_margins', { instrument_name: m.name, amount: 0.5, price: nearMark(m) }, trader, { get: true });
    assert.equal(r.status, 200);
    assert.equal(typeof r.body.result.sell, 'number');
  });

  it('refuses bad input with the API codes, and needs a login', async () => {
    assertError(await rpc(srv.url, 'private/get_margins', { instrument_name: 'BTC-1JAN20-1-C', amount: 1, price: 0.01 }, trader), 10020);
    assertError(await rpc(srv.url, 'private/get_margins', { instrument_name: m.name, amount: 0.05, price: 0.01 }, trader), 10021);
    assertError(await rpc(srv.url, 'private/get_margins', { instrument_name: m.name, amount: 1, price: 0 }, trader), 10023);
    assertError(await rpc(srv.url, 'private/get_margins', { instrument_name: m.name, amount: 1, price: 0.01 }), 10000);
  });
});
