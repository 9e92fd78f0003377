// Portfolio margin in the engine (issue 35): change_margin_model's rules, the scenario sums the
// engine margins a PM account by, its order checks, and a hedged book against standard margin.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject, type Reject } from '../../../src/domain/errors.ts';
import { bookOf } from '../../../src/risk/portfolio/book.ts';
import { portfolioMargin } from '../../../src/risk/portfolio/scenarios.ts';
import type { SwitchResult } from '../../../src/risk/portfolio/switch.ts';
import { restore, serialize, stateHash } from '../../../src/engine/snapshot.ts';
import { EXP_MAR, Harness, sat, spec } from '../../helpers/engine.ts';
import { markPrice, risk, switchModel, switched, trade } from './pmHarness.ts';

const C100 = spec('BTC', EXP_MAR, 100000, 'call');
const C110 = spec('BTC', EXP_MAR, 110000, 'call');
const P100 = spec('BTC', EXP_MAR, 100000, 'put');
const P90 = spec('BTC', EXP_MAR, 90000, 'put');

function reason(r: unknown): string | undefined {
  assert.ok(isReject(r), `expected a refusal, got ${JSON.stringify(r)?.slice(0, 200)}`);
  return (r as Reject).reason;
}

function admin(h: Harness): number {
  const u = h.apply({ t: 'create_user', email: 'admin@pm.io', passwordHash: 'x', role: 'admin', inviteCode: null, by: null }) as { id: number };
  return u.id;
}

describe('change_margin_model', () => {
  it('refuses portfolio margin below the minimum equity (0.5 BTC by default, all currencies at index) and takes it at the minimum', () => {
    const h = Harness.market([C100]);
    const a = h.user('0.49');
    assert.equal(reason(switchModel(h, a, 'segregated_pm')), 'equity_below_portfolio_margin_minimum');
    assert.equal(h.ex.pm.model(a), 'segregated_sm');
    // 0.49 BTC + 0.25 ETH at 4,000 / 100,000 = 0.01 BTC: exactly 0.5 BTC of equity
    h.deposit(a, 'ETH', sat('0.25'));
    const r = switchModel(h, a, 'segregated_pm') as SwitchResult;
    assert.ok(!isReject(r));
    assert.deepEqual([r.from, r.to], ['segregated_sm', 'segregated_pm']);
    assert.equal(h.ex.pm.model(a), 'segregated_pm');
    assert.equal(h.ex.trading.risk.isPm(h.u(a)), true);
    // standard margin needs no minimum
    switched(h, a, 'cross_sm');
    assert.equal(h.ex.trading.risk.isPm(h.u(a)), false);
  });

  it("uses the operator's minimum: an administrator lowers it by a journaled command, a user cannot", () => {
    const h = Harness.market([C100]);
    const boss = admin(h);
    const a = h.user('0.2');
    assert.equal(reason(h.apply({ t: 'set_pm_params', params: { minSwitchEquityBtc: 0.1 }, by: a })), 'admin_required');
    assert.equal(reason(switchModel(h, a, 'cross_pm')), 'equity_below_portfolio_margin_minimum');
    assert.equal(reason(h.apply({ t: 'set_pm_params', params: { minSwitchEquityBtc: -1 }, by: boss })), 'invalid_parameter');
    assert.equal(reason(h.apply({ t: 'set_pm_params', params: { priceBuckets: 8 }, by: boss })), 'invalid_parameter');
    assert.equal(reason(h.apply({ t: 'set_pm_params', params: { imFactorPercent: 99 }, by: boss })), 'invalid_parameter');
    assert.equal(h.ex.pm.params.minSwitchEquityBtc, 0.5, 'a refused change changes nothing');
    assert.ok(!isReject(h.apply({ t: 'set_pm_params', params: { minSwitchEquityBtc: 0.1 }, by: boss })));
    switched(h, a, 'cross_pm');
    assert.equal(h.ex.pm.params.minSwitchEquityBtc, 0.1);
    // the parameters and the model are state: a snapshot restores them and hashes equal
    const copy = restore(serialize(h.ex));
    assert.equal(stateHash(copy), stateHash(h.ex));
    assert.equal(copy.pm.model(a), 'cross_pm');
    assert.equal(copy.pm.params.minSwitchEquityBtc, 0.1);
  });

  it('refuses switching back to standard margin while the standard requirement would not be covered, and allows it once it is', () => {
    const h = Harness.market([C100, C110, P100, P90]);
    const cp = h.user('100');
    const a = h.user('2');
    switched(h, a, 'segregated_pm');
    // spreads: short 10 ATM calls and puts, long 10 of the wings. Standard margin holds each short on its own
    trade(h, a, cp, C110.name, 10);
    trade(h, a, cp, P90.name, 10);
    trade(h, a, cp, C100.name, -10);
    trade(h, a, cp, P100.name, -10);
    const pm = risk(h, a);
    const sm = h.ex.trading.risk.asIf(h.u(a), false, () => risk(h, a));
    assert.ok(pm.equity >= pm.maintenanceMargin, `PM covered: ${pm.equity} >= ${pm.maintenanceMargin}`);
    assert.ok(sm.equity < sm.maintenanceMargin, `standard not covered: ${sm.equity} < ${sm.maintenanceMargin}`);
    // the state apart from the command counter and clock
    const state = () => serialize(h.ex).replace(/"now":\d+,"seq":\d+/, '');
    const before = state();
    assert.equal(reason(switchModel(h, a, 'segregated_sm')), 'account_below_maintenance');
    assert.equal(reason(switchModel(h, a, 'cross_sm')), 'account_below_maintenance');
    assert.equal(h.ex.pm.model(a), 'segregated_pm');
    assert.equal(state(), before, 'a refused switch changes nothing');
    // with the standard requirement covered, the switch goes through
    h.deposit(a, 'BTC', sm.maintenanceMargin - sm.equity);
    const r = switchModel(h, a, 'segregated_sm') as SwitchResult;
    assert.ok(!isReject(r));
    const btc = r.states.find((s) => s.currency === 'BTC')!;
    assert.equal(btc.old.maintenanceMargin, pm.maintenanceMargin);
    assert.equal(btc.new.maintenanceMargin, sm.maintenanceMargin);
    assert.equal(risk(h, a).maintenanceMargin, sm.maintenanceMargin);
  });

  it('refuses any switch while the account is in liquidation or owes cash', () => {
    const h = Harness.market([C100]);
    const cp = h.user('100');
    const a = h.user('0.3');
    trade(h, a, cp, C100.name, -1);
    h.apply({ t: 'index', currency: 'BTC', price: 120000, manual: true, by: null });
    h.apply({ t: 'liquidate', userId: a, currency: 'BTC' });
    assert.ok(h.ex.inLiquidation(a, 'BTC'));
    assert.equal(reason(switchModel(h, a, 'segregated_pm')), 'account_in_liquidation');
    assert.equal(h.ex.pm.model(a), 'segregated_sm');
  });
});

describe('the engine margins a portfolio-margin account by its scenario sums', () => {
  it('keeps running sums equal to the full sum through trades, orders and index moves, within a minor unit per leg of the scenario engine', () => {
    const h = Harness.market([C100, C110, P100, P90]);
    const cp = h.user('100');
    const a = h.user('20');
    switched(h, a, 'segregated_pm');
    const check = () => {
      const u = h.u(a);
      const live = h.ex.trading.risk.pm.figures(u, 'BTC');
      assert.deepEqual(live, h.ex.trading.risk.pm.freshFigures(u, 'BTC'));
      const book = bookOf(h.ex, u, 'BTC', { includeAccount: true, simulated: new Map() })!;
      // the scenario engine valued at the index's time, as the engine does
      const ref = portfolioMargin({ ...book, now: h.ex.index.BTC.ts }, h.ex.pm.params);
      const legs = book.legs.length + 1;
      assert.ok(Math.abs(live.initialMarginWithOrders - ref.initialMargin) <= 2 * legs, `${live.initialMarginWithOrders} vs ${ref.initialMargin}`);
    };
    trade(h, a, cp, C100.name, -3);
    check();
    trade(h, a, cp, P90.name, 2);
    check();
    h.ok(a, 'sell', C110.name, markPrice(h, C110.name), '4');
    check();
    h.apply({ t: 'index', currency: 'BTC', price: 104000, manual: true, by: null });
    check();
    trade(h, a, cp, C100.name, 1);
    h.ok(a, 'buy', P100.name, markPrice(h, P100.name), '2');
    check();
    // the account summary's figures are the scenario ones (IM: the orders as if filled); the cash an
    // open buy promises is held out of what may be withdrawn
    const r = risk(h, a);
    const f = h.ex.trading.risk.pm.figures(h.u(a), 'BTC');
    const reserved = h.u(a).exposures.get(h.inst(P100.name).id)!.buyReserved;
    assert.ok(reserved > 0);
    assert.equal(r.maintenanceMargin, f.maintenanceMargin);
    assert.equal(r.positionsIM, f.initialMargin);
    assert.equal(r.initialMargin, f.initialMarginWithOrders);
    assert.ok(r.availableWithdrawal <= h.balance(a) - reserved);
  });

  it("refuses an order whose scenario requirement the account cannot carry, and takes a hedge standard margin would refuse", () => {
    const h = Harness.market([C100, C110]);
    const cp = h.user('100');
    const a = h.user('1.2');
    switched(h, a, 'segregated_pm');
    // a naked short of 10 ATM calls needs more than 1.2 BTC in the scenarios (1.5 BTC of IM)
    assert.equal(reason(h.place(a, 'sell', C100.name, markPrice(h, C100.name), '10')), 'not_enough_funds');
    // with the long wing bought first, the call spread's worst loss is bounded: the same sell fits
    trade(h, a, cp, C110.name, 10);
    h.ok(cp, 'buy', C100.name, markPrice(h, C100.name), '10');
    const sell = h.place(a, 'sell', C100.name, markPrice(h, C100.name), '10');
    assert.ok(!isReject(sell), `the spread's short leg is accepted: ${isReject(sell) ? sell.reason : ''}`);
    const r = risk(h, a);
    assert.ok(r.available >= 0, 'and leaves the account above its initial margin');
    // on standard margin the same account could not have sold it (each short on its own)
    const sm = h.ex.trading.risk.asIf(h.u(a), false, () => risk(h, a));
    assert.ok(sm.available < 0, `standard margin: available ${sm.available}`);
  });

  it("margins a market maker's hedged 50-strike book at no more than 1/3 of standard margin", () => {
    const specs = [];
    for (let i = 0; i < 13; i++) {
      specs.push(spec('BTC', EXP_MAR, 100000 + 4000 * i, 'call'), spec('BTC', EXP_MAR, 100000 - 4000 * i, 'put'));
    }
    const h = Harness.market(specs);
    const cp = h.user('1000');
    const mm = h.user('500');
    switched(h, mm, 'segregated_pm');
    // verticals both ways: short 10 at each strike, long 10 at the next one out (50 legs)
    for (let i = 0; i < 12; i++) {
      trade(h, mm, cp, specs[2 * (i + 1)]!.name, 10);
      trade(h, mm, cp, specs[2 * (i + 1) + 1]!.name, 10);
      trade(h, mm, cp, specs[2 * i]!.name, -10);
      trade(h, mm, cp, specs[2 * i + 1]!.name, -10);
    }
    const pm = risk(h, mm);
    const sm = h.ex.trading.risk.asIf(h.u(mm), false, () => risk(h, mm));
    assert.ok(pm.maintenanceMargin > 0);
    assert.ok(pm.maintenanceMargin * 3 <= sm.maintenanceMargin, `PM ${pm.maintenanceMargin} vs standard ${sm.maintenanceMargin}`);
    assert.ok(pm.initialMargin * 3 <= sm.initialMargin, `PM IM ${pm.initialMargin} vs standard ${sm.initialMargin}`);
  });
});
