// Cross standard margin over HTTP (issue 35): an account on cross_sm whose BTC carries an ETH short
// order. get_account_summary shows Deribit's cross-collateral fields and the pooled figures, and the
// portfolio get_subaccounts lists for the account shows the same pooled figures (a currency's own
// figure, its equity less the pooled surplus, would be below zero there). pme/simulate and
// simulate_portfolio answer the pooled projection under portfolio margin, over HTTP and WebSocket.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, type Market } from '../helpers/market.ts';
import { assertError } from '../helpers/envelope.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

/** The same shape and values, numbers within 10^-6 (the valuation instant moves with the engine's clock). */
function near(actual: unknown, expected: unknown, at = '$'): void {
  if (typeof expected === 'number' && typeof actual === 'number') {
    assert.ok(Math.abs(actual - expected) <= 1e-6 * Math.max(1, Math.abs(expected)), `${at}: ${actual} vs ${expected}`);
  } else if (expected !== null && typeof expected === 'object') {
    assert.ok(actual !== null && typeof actual === 'object', `${at}: ${JSON.stringify(actual)}`);
    assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), at);
    for (const k of Object.keys(expected)) near((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k], `${at}.${k}`);
  } else assert.equal(actual, expected, at);
}

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

  it('pme/simulate and simulate_portfolio answer the pooled view across currencies, over HTTP and WebSocket', async () => {
    // the first test left the desk on cross_sm with a resting ETH sell its BTC carries
    const what = { currency: 'ETH', simulated_positions: { [ethCall.name]: -5 } };
    const pme = await ok(srv.url, 'private/pme/simulate', what, desk);
    assert.equal(pme.margin_model, 'cross_sm');
    assert.equal(pme.cross.collateral_currency, 'ETH');
    assert.deepEqual(pme.cross.currencies.map((c: any) => c.currency), ['BTC', 'ETH', 'USDC']);
    // the BTC collateral in the pool: 2 BTC, nothing required of it (no BTC positions)
    const btc = pme.cross.currencies[0];
    assert.deepEqual([btc.equity, btc.maintenance_margin, btc.initial_margin], [2, 0, 0]);
    // the ETH book (the resting sell as if filled, and the what-if) under its scenarios, pooled: the
    // ETH requirement stands in the pool as the table gives it, and 2 BTC at 25 ETH cover it
    const eth = pme.cross.currencies[1];
    assert.ok(Math.abs(eth.initial_margin - pme.initial_margin) < 1e-9, `${eth.initial_margin} vs ${pme.initial_margin}`);
    assert.ok(pme.initial_margin > 0);
    assert.ok(Math.abs(pme.cross.margin_balance - 50) < 1e-6, `${pme.cross.margin_balance}`);
    assert.ok(pme.cross_initial_margin > 0 && pme.cross.available_funds > 0);
    assert.ok(Math.abs(pme.cross.margin_balance - pme.cross_initial_margin - pme.cross.available_funds) < 2e-8);
    // a segregated view would show the ETH book against ETH's own equity (none): not what a cross account has
    const sim = await ok(srv.url, 'private/simulate_portfolio', what, desk);
    assert.equal(sim.projected_initial_margin, pme.cross_initial_margin);
    assert.equal(sim.projected_maintenance_margin, pme.cross_maintenance_margin);
    assert.equal(sim.margin_model, 'cross_sm');
    // the same answers over WebSocket (the engine's clock moved on a little: the options' time to
    // expiry with it, so figures agree to a few minor units)
    const ws = await WsClient.open(srv.url);
    try {
      await ws.auth('cross-desk@example.com');
      near(await ws.ok('private/pme/simulate', what), pme);
      near(await ws.ok('private/simulate_portfolio', what), sim);
    } finally {
      await ws.close();
    }
  });
});
