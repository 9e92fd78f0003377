// private/edit over the API runs the checks private/sell runs (issue 29 item 6): an amount increase
// of an mmp order past the index's max_quote_quantity is refused with 11029
// max_quote_quantity_exceeded, as a new order of that size is, and the order stays as it was.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

let srv: TestServer;
let mm: string;
let m: Market;

before(async () => {
  srv = await startServer();
  const admin = await adminToken(srv.url);
  mm = await userToken(srv.url, admin, 'edit-mm@example.com', { currency: 'BTC', amount: 100 });
  m = await atmCall(srv.url);
});

after(async () => {
  await srv.stop();
});

describe('private/edit over the API', () => {
  it("refuses an amount increase past MMP's max_quote_quantity with 11029, leaving the order as it was", async () => {
    await ok(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', interval: 60, frozen_time: 0, quantity_limit: 10, max_quote_quantity: 1 }, mm);
    const price = m.prices[m.prices.length - 1];
    const placed = await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.6, price, mmp: true }, mm);
    const id = placed.order.order_id;
    // a new order of 0.5 would be refused: so is growing this one by as much
    const fresh = await rpc(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.5, price, mmp: true }, mm);
    assert.equal(fresh.body.error?.data?.reason, 'max_quote_quantity_exceeded', JSON.stringify(fresh.body));
    const grown = await rpc(srv.url, 'private/edit', { order_id: id, amount: 1.1, price }, mm);
    assert.equal(grown.body.error?.code, 11029, JSON.stringify(grown.body));
    assert.equal(grown.body.error?.data?.reason, 'max_quote_quantity_exceeded');
    const state = await ok(srv.url, 'private/get_order_state', { order_id: id }, mm);
    assert.equal(state.amount, 0.6);
    // within the limit the edit goes through
    const within = await ok(srv.url, 'private/edit', { order_id: id, amount: 1, price }, mm);
    assert.equal(within.order.amount, 1);
    await ok(srv.url, 'private/cancel_all', {}, mm);
  });
});
