// private/change_margin_model and the operator's portfolio-margin parameters over HTTP (issue 35):
// Deribit's old/new state per currency, the dry run, the refusals, the account summary's fields, and
// get_margins and pme/simulate under the parameters in force.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../helpers/envelope.ts';
import { nearDatedAtmCall, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('change_margin_model and the portfolio-margin parameters', () => {
  let srv: TestServer;
  let admin: string;
  let rich: string;
  let poor: string;
  let call: Market;
  before(async () => {
    srv = await startServer();
    admin = await adminToken(srv.url);
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100000 }, admin);
    rich = await userToken(srv.url, admin, 'mm-rich@example.com', { currency: 'BTC', amount: 5 });
    poor = await userToken(srv.url, admin, 'mm-poor@example.com', { currency: 'BTC', amount: 0.3 });
    call = await nearDatedAtmCall(srv.url);
  });
  after(() => srv.stop());

  const summary = (token: string) => ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, token);

  it('answers a dry run with the old and new state per currency and changes nothing', async () => {
    const r = await ok(srv.url, 'private/change_margin_model', { margin_model: 'segregated_pm', dry_run: true }, rich);
    assert.ok(Array.isArray(r));
    const btc = r.find((x: any) => x.currency === 'BTC');
    assert.deepEqual(Object.keys(btc.old_state).sort(), ['available_balance', 'initial_margin_rate', 'maintenance_margin_rate']);
    assert.equal(btc.old_state.available_balance, 5);
    assert.equal(btc.new_state.available_balance, 5);
    const s = await summary(rich);
    assert.deepEqual([s.margin_model, s.portfolio_margining_enabled, s.cross_collateral_enabled], ['segregated_sm', false, false]);
  });

  it('refuses the switch below the minimum equity (dry run and real), and an unknown model', async () => {
    assertError(await rpc(srv.url, 'private/change_margin_model', { margin_model: 'segregated_pm', dry_run: true }, poor), 10009);
    assertError(await rpc(srv.url, 'private/change_margin_model', { margin_model: 'cross_pm' }, poor), 10009);
    assert.equal((await summary(poor)).margin_model, 'segregated_sm');
    assertError(await rpc(srv.url, 'private/change_margin_model', { margin_model: 'portfolio' }, rich), -32602);
    assertError(await rpc(srv.url, 'private/change_margin_model', { margin_model: 'cross_pm', user_id: 999 }, rich), 13020);
  });

  it('switches to portfolio margin: the summary shows the model and the scenario figures, get_margins the scenario IM', async () => {
    const price = call.prices[Math.floor(call.prices.length / 2)];
    const seller = await ok(srv.url, 'private/sell', { instrument_name: call.name, amount: 1, price }, rich);
    const before = await summary(rich);
    const r = await ok(srv.url, 'private/change_margin_model', { margin_model: 'cross_pm' }, rich);
    assert.ok(Array.isArray(r) && r.length === 3);
    const s = await summary(rich);
    assert.deepEqual([s.margin_model, s.portfolio_margining_enabled, s.cross_collateral_enabled], ['cross_pm', true, true]);
    const pme = await ok(srv.url, 'private/pme/simulate', { currency: 'BTC' }, rich);
    assert.equal(pme.margin_model, 'cross_pm');
    // the engine's figures are the scenario ones: the open sell as if filled (rounded per leg and valued
    // at the index's time, not the call's: within a micro-coin)
    assert.ok(s.initial_margin > 0);
    // cross_pm: the summary's margin is the pool's (src/risk/portfolio/cross.ts). BTC alone: the BTC
    // requirement R plus the 16% haircut of the surplus, R + 0.16 x (equity - R)
    const pooled = pme.initial_margin + 0.16 * (s.equity - pme.initial_margin);
    assert.ok(Math.abs(pme.cross_initial_margin - pooled) <= 2e-8, `${pme.cross_initial_margin} vs ${pooled}`);
    assert.ok(Math.abs(s.initial_margin - pme.cross_initial_margin) <= 1e-6, `${s.initial_margin} vs ${pme.cross_initial_margin}`);
    assert.equal(pme.cross.collateral_currency, 'BTC');
    assert.deepEqual(pme.cross.currencies.map((c: any) => [c.currency, c.haircut]), [['BTC', 0.16], ['ETH', 0.16], ['USDC', 0]]);
    // the funds available are the pooled surplus: equity less the pooled IM is (equity - R) x 0.84
    assert.ok(Math.abs(s.available_funds - (s.equity - pme.initial_margin) * 0.84) <= 1e-6);
    assert.notEqual(s.initial_margin, before.initial_margin);
    const m = await ok(srv.url, 'private/get_margins', { instrument_name: call.name, amount: 1, price }, rich);
    assert.ok(m.sell > 0);
    await rpc(srv.url, 'private/cancel', { order_id: seller.order.order_id }, rich);
  });

  it("lets only an administrator set the parameters, refuses values out of bounds, and applies them at once", async () => {
    assertError(await rpc(srv.url, 'private/set_portfolio_margin_params', { im_factor: 2 }, rich), 13021);
    assertError(await rpc(srv.url, 'private/set_portfolio_margin_params', { im_factor: 0.5 }, admin), -32602);
    assertError(await rpc(srv.url, 'private/set_portfolio_margin_params', { price_buckets: 8 }, admin), 11029);
    assertError(await rpc(srv.url, 'private/set_portfolio_margin_params', { im_factor: 1.255 }, admin), 11029);
    const defaults = await ok(srv.url, 'private/get_portfolio_margin_params', {}, admin);
    assert.deepEqual([defaults.im_factor, defaults.price_range, defaults.min_switch_equity_btc], [1.3, 0.16, 0.5]);
    assert.equal(defaults.accounts_by_model.cross_pm, 1);
    const set = await ok(srv.url, 'private/set_portfolio_margin_params', { im_factor: 2, min_switch_equity_btc: 0.2 }, admin);
    assert.deepEqual([set.im_factor, set.min_switch_equity_btc, set.price_range], [2, 0.2, 0.16]);
    const pme = await ok(srv.url, 'private/pme/simulate', { currency: 'BTC', simulated_positions: { [call.name]: -1 } }, rich);
    assert.ok(Math.abs(pme.initial_margin - 2 * pme.maintenance_margin) < 1e-8);
    assert.equal(pme.parameters.im_factor, 2);
    // the lowered minimum lets the small account switch
    await ok(srv.url, 'private/change_margin_model', { margin_model: 'segregated_pm' }, poor);
    assert.equal((await summary(poor)).margin_model, 'segregated_pm');
  });
});
