// private/set_self_trading_config over the API (issue 31): cancel_maker cancels the caller's own
// resting order an order meets and the order trades with another user's; reject_taker refuses it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stateHash } from '../../src/engine/snapshot.ts';
import { assertError } from '../helpers/envelope.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('set_self_trading_config', () => {
  let srv: TestServer;
  let url: string;
  let a: string;
  let b: string;
  let m: Market;

  before(async () => {
    srv = await startServer();
    url = srv.url;
    const admin = await adminToken(url);
    a = await userToken(url, admin, 'stp-a@example.com', { currency: 'BTC', amount: 10 });
    b = await userToken(url, admin, 'stp-b@example.com', { currency: 'BTC', amount: 10 });
    m = await atmCall(url);
  });
  after(() => srv.stop());

  it('reject_taker by default; cancel_maker cancels the own order met and trades with the other user', async () => {
    const p = nearMark(m);
    const own = await ok(url, 'private/sell', { instrument_name: m.name, amount: 0.1, price: p }, a);
    assertError(await rpc(url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: p }, a), 11030, { reason: 'self_trade' });
    await ok(url, 'private/sell', { instrument_name: m.name, amount: 0.3, price: p }, b);
    const before = await ok(url, 'private/get_account_summary', { currency: 'BTC', extended: true }, a);
    assert.deepEqual([before.self_trading_reject_mode, before.self_trading_extended_to_subaccounts], ['reject_taker', 'false']);
    assert.equal(await ok(url, 'private/set_self_trading_config', { mode: 'cancel_maker', extended_to_subaccounts: false }, a), 'ok');
    const after = await ok(url, 'private/get_account_summaries', { extended: true }, a);
    assert.equal(after.self_trading_reject_mode, 'cancel_maker', 'get_account_summaries shows it too');
    const r = await ok(url, 'private/buy', { instrument_name: m.name, amount: 0.2, price: p }, a);
    assert.equal(r.order.order_state, 'filled');
    assert.equal(r.trades.length, 1);
    const st = await ok(url, 'private/get_order_state', { order_id: own.order.order_id }, a);
    assert.deepEqual([st.order_state, st.cancel_reason], ['cancelled', 'self_trade_prevention']);
    assertError(await rpc(url, 'private/set_self_trading_config', { mode: 'cancel_taker', extended_to_subaccounts: false }, a), -32602);
    assertError(await rpc(url, 'private/set_self_trading_config', { mode: 'cancel_maker' }, a), -32602);
    await ok(url, 'private/cancel_all', {}, b);
  });

  it('a clean replay of the journal reproduces the state', () => {
    const r = cleanReplay(srv.dataDir);
    assert.deepEqual(r.errors, []);
    assert.equal(r.hash, stateHash(srv.app.services.ex));
  });
});
