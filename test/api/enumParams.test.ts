// Issue 31 item 4: a value outside Deribit's enumeration is -32602 with a reason a person reads
// (`kind=foo` used to answer []), while every Deribit value is accepted (kinds this venue does not
// list select nothing).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../helpers/envelope.ts';
import { atmCall } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('enumerated params', () => {
  let srv: TestServer;
  let user: string;
  let inst: string;

  before(async () => {
    srv = await startServer();
    const admin = await adminToken(srv.url);
    user = await userToken(srv.url, admin, 'enum@example.com', { currency: 'BTC', amount: 1 });
    inst = (await atmCall(srv.url)).name;
  });
  after(() => srv.stop());

  const calls: [string, Record<string, unknown>][] = [
    ['private/get_open_orders_by_currency', { currency: 'BTC' }],
    ['private/get_order_history_by_currency', { currency: 'BTC' }],
    ['private/get_user_trades_by_currency', { currency: 'BTC' }],
    ['private/get_user_trades_by_currency_and_time', { currency: 'BTC', start_timestamp: 0, end_timestamp: 1 }],
    ['private/get_positions', { currency: 'BTC' }],
    ['public/get_instruments', { currency: 'BTC' }],
    ['public/get_book_summary_by_currency', { currency: 'BTC' }],
  ];

  it('refuses a kind outside Deribit\'s list with -32602 naming the param and the values it takes', async () => {
    for (const [method, params] of calls) {
      const r = await rpc(srv.url, method, { ...params, kind: 'foo' }, user);
      assertError(r, -32602, { param: 'kind' }, method);
      assert.match(r.body.error.data.reason, /option/, `${method}: the reason names the values (${r.body.error.data.reason})`);
    }
  });

  it('accepts every Deribit kind; those not listed here select nothing', async () => {
    for (const [method, params] of calls) {
      const r = await rpc(srv.url, method, { ...params, kind: 'future' }, user);
      assert.equal(r.body.error, undefined, `${method}: ${JSON.stringify(r.body.error)}`);
    }
  });

  it('refuses an open-order type outside Deribit\'s list', async () => {
    assertError(await rpc(srv.url, 'private/get_open_orders_by_currency', { currency: 'BTC', type: 'bogus' }, user), -32602, { param: 'type' });
    assertError(await rpc(srv.url, 'private/get_open_orders_by_instrument', { instrument_name: inst, type: 'bogus' }, user), -32602, { param: 'type' });
    assert.deepEqual(await ok(srv.url, 'private/get_open_orders_by_instrument', { instrument_name: inst, type: 'stop_all' }, user), []);
  });
});
