// Cross standard margin over HTTP (issue 35): an account on cross_sm whose BTC carries an ETH short
// order. get_account_summary shows Deribit's cross-collateral fields and the pooled figures, and the
// portfolio get_subaccounts lists for the account shows the same pooled figures (a currency's own
// figure, its equity less the pooled surplus, would be below zero there).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, type Market } from '../helpers/market.ts';
import { assertError } from '../helpers/envelope.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('cross_sm over the API: the account summary and the subaccounts portfolio', () => {
  let srv: TestServer;
  let desk: string;
  let ethCall: Market;
  before(async () => {
    srv = await startServer();
    const admin = await adminToken(srv.url);
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100000 }, admin);
    await ok(srv.url, 'private/set_index_price', { index_name: 'eth_usd', price: 4000 }, admin);
    desk = await userToken(srv.url, admin, 'cross-desk@example.com', { currency: 'BTC', amount: 2 });
    ethCall = await atmCall(srv.url, 'ETH');
  });
  after(() => srv.stop());

  it('shows the pool in the summary and in the portfolio get_subaccounts lists, never a negative margin', async () => {
    // on segregated_sm the account has no ETH: the sell is refused
    const price = ethCall.prices[Math.floor(ethCall.prices.length / 2)];
    assertError(await rpc(srv.url, 'private/sell', { instrument_name: ethCall.name, amount: 10, price }, desk), 10009);
    await ok(srv.url, 'private/change_margin_model', { margin_model: 'cross_sm' }, desk);
    await ok(srv.url, 'private/sell', { instrument_name: ethCall.name, amount: 10, price }, desk); // rests: BTC carries its margin
    const s = await ok(srv.url, 'private/get_account_summary', { currency: 'ETH', extended: true }, desk);
    assert.deepEqual([s.margin_model, s.cross_collateral_enabled, s.portfolio_margining_enabled], ['cross_sm', true, false]);
    // the pool in ETH: 2 BTC at 25 ETH each, no haircut on the margin balance
    assert.ok(Math.abs(s.margin_balance - 50) < 1e-6, `margin balance ${s.margin_balance}`);
    assert.ok(s.initial_margin > 0 && s.maintenance_margin >= 0, `${s.initial_margin} ${s.maintenance_margin}`);
    assert.ok(Math.abs(s.margin_balance - s.initial_margin - s.available_funds) < 2e-8);
    assert.equal(s.projected_initial_margin, s.initial_margin);
    // the same pool in USD
    assert.ok(Math.abs(s.total_margin_balance_usd - 200000) < 1e-3, `${s.total_margin_balance_usd}`);
    assert.ok(Math.abs(s.total_initial_margin_usd - s.initial_margin * 4000) < 0.01, `${s.total_initial_margin_usd} vs ${s.initial_margin * 4000}`);
    const [row] = await ok(srv.url, 'private/get_subaccounts', { with_portfolio: true }, desk);
    const eth = row.portfolio.eth;
    for (const k of ['margin_balance', 'initial_margin', 'maintenance_margin', 'available_funds', 'available_withdrawal_funds', 'equity', 'balance']) {
      assert.equal(eth[k], s[k], `portfolio.eth.${k} is the summary's`);
    }
    assert.ok(eth.initial_margin > 0, 'the pooled initial margin, not the currency\'s own (negative) figure');
    const btc = await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, desk);
    assert.equal(row.portfolio.btc.initial_margin, btc.initial_margin);
    assert.ok(btc.initial_margin > 0);
  });
});
