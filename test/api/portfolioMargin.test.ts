// private/pme/simulate and private/simulate_portfolio over HTTP: the portfolio margin of the caller's
// book plus what-if positions, computed without changing anything.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../helpers/envelope.ts';
import { nearDatedAtmCall, twinPut, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('portfolio margin simulation', () => {
  let srv: TestServer;
  let seller: string;
  let buyer: string;
  let call: Market;
  let put: Market;
  let admin: string;
  before(async () => {
    srv = await startServer();
    admin = await adminToken(srv.url);
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100000 }, admin);
    seller = await userToken(srv.url, admin, 'pm-seller@example.com', { currency: 'BTC', amount: 10 });
    buyer = await userToken(srv.url, admin, 'pm-buyer@example.com', { currency: 'BTC', amount: 10 });
    call = await nearDatedAtmCall(srv.url);
    put = await twinPut(srv.url, call);
  });
  after(() => srv.stop());

  const pme = (params: Record<string, unknown>, token = seller) => ok(srv.url, 'private/pme/simulate', { currency: 'BTC', ...params }, token);

  it('answers an empty book with no margin and 27 flat scenarios', async () => {
    const r = await pme({});
    assert.equal(r.maintenance_margin, 0);
    assert.equal(r.initial_margin, 0);
    assert.equal(r.scenarios.length, 27);
    assert.ok(r.scenarios.every((s: any) => s.pnl === 0));
    assert.equal(r.parameters.price_range, 0.16);
    assert.equal(r.index_price, 100000);
    // USDC settles no options here and has no index: an empty book, not an error
    const usdc = await pme({ currency: 'USDC' });
    assert.deepEqual([usdc.maintenance_margin, usdc.index_price], [0, null]);
  });

  it('margins a simulated naked short at its worst scenario (+16%, vol up) plus contingencies', async () => {
    const r = await pme({ simulated_positions: { [call.name]: -1 } });
    assert.deepEqual([r.worst_scenario.table, r.worst_scenario.price_move, r.worst_scenario.vol_move], ['standard', 0.16, 'up']);
    assert.equal(r.worst_loss, -r.worst_scenario.pnl);
    assert.equal(r.contingencies.short_option, 0.01);
    assert.ok(Math.abs(r.maintenance_margin - (r.worst_loss + r.contingencies.total)) < 1e-9);
    assert.ok(Math.abs(r.initial_margin - r.maintenance_margin * 1.3) < 1e-8);
    // the same what-if as JSON text (how GET clients send it) gives the same answer
    assert.deepEqual(await pme({ simulated_positions: JSON.stringify({ [call.name]: -1 }) }), r);
  });

  it('counts both legs of a short straddle: more than the short call alone, 0.01 BTC per contract of each', async () => {
    const straddle = await pme({ simulated_positions: { [call.name]: -1, [put.name]: -1 } });
    const c = await pme({ simulated_positions: { [call.name]: -1 } });
    assert.ok(straddle.maintenance_margin > c.maintenance_margin);
    assert.equal(straddle.contingencies.short_option, 0.02);
  });

  it("counts the caller's real positions, and a what-if that offsets them leaves no margin", async () => {
    const price = call.prices[Math.floor(call.prices.length / 2)];
    await ok(srv.url, 'private/sell', { instrument_name: call.name, amount: 1, price }, seller);
    await ok(srv.url, 'private/buy', { instrument_name: call.name, amount: 1, price }, buyer);
    const summaryBefore = await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, seller);

    const real = await pme({});
    const asIf = await pme({ add_positions: false, simulated_positions: { [call.name]: -1 } });
    assert.ok(real.maintenance_margin > 0);
    assert.deepEqual(real, asIf);
    const flat = await pme({ simulated_positions: { [call.name]: 1 } });
    assert.equal(flat.maintenance_margin, 0);

    const sim = await ok(srv.url, 'private/simulate_portfolio', { currency: 'BTC' }, seller);
    assert.equal(sim.projected_maintenance_margin, real.maintenance_margin);
    assert.equal(sim.projected_initial_margin, real.initial_margin);
    // the rest is the account as it stands: still on standard margin, nothing changed
    assert.equal(sim.margin_model, 'segregated_sm');
    assert.equal(sim.maintenance_margin, summaryBefore.maintenance_margin);
    const summaryAfter = await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, seller);
    assert.deepEqual(summaryAfter, summaryBefore);
    const positions = await ok(srv.url, 'private/get_positions', { currency: 'BTC' }, seller);
    assert.deepEqual(positions.map((p: any) => [p.instrument_name, p.size]), [[call.name, -1]]);
  });

  it('counts open orders as if filled, the worse side', async () => {
    const order = await ok(srv.url, 'private/sell', { instrument_name: put.name, amount: 2, price: put.prices.at(-1) }, buyer);
    try {
      const withOrder = await pme({}, buyer);
      const asIf = await pme({ simulated_positions: { [put.name]: -2 } }, buyer);
      await ok(srv.url, 'private/cancel', { order_id: order.order.order_id }, buyer);
      const asIfAfter = await pme({ simulated_positions: { [put.name]: -2 } }, buyer);
      // the same stress, summed in another order: equal to the last minor unit of rounding
      assert.ok(Math.abs(withOrder.maintenance_margin - asIfAfter.maintenance_margin) <= 2e-8, `${withOrder.maintenance_margin} vs ${asIfAfter.maintenance_margin}`);
      assert.ok(withOrder.maintenance_margin > (await pme({}, buyer)).maintenance_margin, 'the cancelled order no longer counts');
      assert.ok(asIf.maintenance_margin >= withOrder.maintenance_margin);
    } finally {
      await rpc(srv.url, 'private/cancel', { order_id: order.order.order_id }, buyer);
    }
  });

  it("counts a PM account's resting combo orders as the engine does: pme/simulate's and simulate_portfolio's initial margin is the account summary's", async () => {
    const pm = await userToken(srv.url, admin, 'pm-combo@example.com', { currency: 'BTC', amount: 10 });
    await ok(srv.url, 'private/change_margin_model', { margin_model: 'segregated_pm' }, pm);
    const combo = (await ok(srv.url, 'private/create_combo', { trades: [{ instrument_name: call.name, direction: 'buy', amount: 1 }, { instrument_name: put.name, direction: 'buy', amount: 1 }] }, pm)).id;
    const t = await ok(srv.url, 'public/ticker', { instrument_name: combo });
    // a short straddle resting above the mark (within the band): its fill gains at mark, the scenario loss is all it holds
    const price = Math.min(t.max_price, Math.round(t.mark_price * 1.2 * 1e4) / 1e4);
    const order = await ok(srv.url, 'private/sell', { instrument_name: combo, amount: 2, price }, pm);
    assert.equal(order.order.order_state, 'open');
    try {
      const s = await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, pm);
      assert.ok(s.initial_margin > 0, 'the engine holds the resting straddle');
      const r = await pme({}, pm);
      const sim = await ok(srv.url, 'private/simulate_portfolio', { currency: 'BTC' }, pm);
      // the engine rounds per leg and values at the index's time: within a micro-coin
      assert.ok(Math.abs(r.initial_margin - s.initial_margin) <= 1e-6, `pme/simulate ${r.initial_margin} vs summary ${s.initial_margin}`);
      assert.ok(Math.abs(sim.projected_initial_margin - s.initial_margin) <= 1e-6, `simulate_portfolio ${sim.projected_initial_margin} vs summary ${s.initial_margin}`);
      assert.equal(sim.initial_margin, s.initial_margin);
      // the order as if filled, the worse side (a sell order's other side is no fill): per scenario the
      // loss of two short straddles, or nothing where they would gain; both legs' sells in the
      // short-option contingency
      assert.equal(r.contingencies.short_option, 0.04);
      assert.ok(Math.abs(r.maintenance_margin - (r.worst_loss + r.contingencies.total)) < 1e-9);
      const asIf = await pme({ add_positions: false, simulated_positions: { [call.name]: -2, [put.name]: -2 } }, pm);
      assert.equal(r.scenarios.length, asIf.scenarios.length);
      r.scenarios.forEach((x: any, i: number) => assert.ok(Math.abs(x.pnl - Math.min(0, asIf.scenarios[i].pnl)) <= 2e-8, `scenario ${i}: ${x.pnl} vs ${asIf.scenarios[i].pnl}`));
      assert.ok(r.scenarios.some((x: any) => x.pnl < 0));
      assert.ok(Math.abs(r.maintenance_margin - asIf.maintenance_margin) <= 4e-8);
      assert.equal(r.combo_orders_hold, 0);
      // without add_positions the combo order does not count
      assert.equal((await pme({ add_positions: false }, pm)).maintenance_margin, 0);
    } finally {
      await rpc(srv.url, 'private/cancel', { order_id: order.order.order_id }, pm);
    }
    const after = await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, pm);
    assert.equal(after.initial_margin, 0);
    assert.equal((await pme({}, pm)).initial_margin, 0);
  });

  it('refuses bad what-ifs with the API codes, bounds their number and needs a login', async () => {
    assertError(await rpc(srv.url, 'private/pme/simulate', { currency: 'BTC', simulated_positions: { 'BTC-1JAN20-1-C': 1 } }, seller), 10020);
    assertError(await rpc(srv.url, 'private/pme/simulate', { currency: 'ETH', simulated_positions: { [call.name]: 1 } }, seller), 10020);
    assertError(await rpc(srv.url, 'private/pme/simulate', { currency: 'BTC', simulated_positions: { [call.name]: 0.05 } }, seller), 10021);
    assertError(await rpc(srv.url, 'private/pme/simulate', { currency: 'BTC', simulated_positions: { [call.name]: -10000.1 } }, seller), 10021);
    assertError(await rpc(srv.url, 'private/pme/simulate', { currency: 'BTC', simulated_positions: { [call.name]: 1e300 } }, seller), 10021);
    assertError(await rpc(srv.url, 'private/pme/simulate', { currency: 'BTC', simulated_positions: '{not json' }, seller), 11029);
    assertError(await rpc(srv.url, 'private/pme/simulate', { currency: 'BTC', simulated_positions: '[1]' }, seller), 11029);
    const many: Record<string, number> = {};
    for (let i = 0; i < 101; i++) many[`BTC-1JAN27-${1000 + i}-C`] = 1;
    const tooMany = await rpc(srv.url, 'private/simulate_portfolio', { currency: 'BTC', simulated_positions: many }, seller);
    assert.ok(tooMany.body.error, 'more than 100 what-if positions is refused');
    assertError(await rpc(srv.url, 'private/simulate_portfolio', { currency: 'BTC', simulated_positions: JSON.stringify(many) }, seller), 11029);
    assertError(await rpc(srv.url, 'private/pme/simulate', { currency: 'BTC' }), 10000);
  });
});
