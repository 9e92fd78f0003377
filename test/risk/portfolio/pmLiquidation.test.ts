// Liquidation of portfolio-margin accounts (issue 35), adversarial: an account moves onto portfolio
// margin, withdraws every coin it frees, and the market moves 16%: it is liquidated while its equity
// is still positive, and the loss never reaches the insurance account. A liquidation step closes the
// position whose reduction lowers the scenario requirement most.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../../src/domain/errors.ts';
import { liquidationCandidates, type LiquidationResult } from '../../../src/engine/liquidation.ts';
import { EXP_JAN, EXP_MAR, Harness, spec } from '../../helpers/engine.ts';
import { markPrice, risk, switched, trade } from './pmHarness.ts';

const CALL = spec('BTC', EXP_JAN, 100000, 'call');
const PUT = spec('BTC', EXP_JAN, 100000, 'put');

function conserved(h: Harness): void {
  const c = h.ex.conservation().BTC;
  assert.equal(c.balances, c.expected);
}

describe('portfolio-margin liquidation', () => {
  for (const move of [+0.16, -0.16]) {
    it(`switch to PM, withdraw the freed collateral, index ${move > 0 ? '+' : ''}${move * 100}%: liquidated (if below maintenance) with equity positive, nothing for the insurance account`, () => {
      const h = Harness.market([CALL, PUT]);
      const cp = h.user('1000');
      const a = h.user('10');
      // a short straddle of 10: standard margin holds 0.075 + mark per contract of each leg
      trade(h, a, cp, CALL.name, -10);
      trade(h, a, cp, PUT.name, -10);
      const sm = risk(h, a);
      switched(h, a, 'segregated_pm');
      const pm = risk(h, a);
      assert.ok(pm.initialMargin < sm.initialMargin, `PM frees collateral: ${pm.initialMargin} < ${sm.initialMargin}`);
      // withdraw all that is free: equity is left at exactly the PM initial margin
      const w = h.apply({ t: 'withdraw', userId: a, currency: 'BTC', amount: pm.availableWithdrawal });
      assert.ok(!isReject(w));
      assert.ok(isReject(h.apply({ t: 'withdraw', userId: a, currency: 'BTC', amount: 1 })), 'not one satoshi more');
      const left = risk(h, a);
      assert.equal(left.equity, left.initialMargin);
      const insurance = h.ex.system.insurance.BTC.balance;

      h.apply({ t: 'index', currency: 'BTC', price: 100000 * (1 + move), manual: true, by: null });
      const moved = risk(h, a);
      // the move is inside the scenarios: the account lost less than its maintenance margin
      assert.ok(moved.equity > 0, `equity after the move ${moved.equity}`);
      assert.ok(left.equity - moved.equity < left.maintenanceMargin, `lost ${left.equity - moved.equity} < MM ${left.maintenanceMargin}`);
      const below = moved.equity < moved.maintenanceMargin;
      assert.equal(liquidationCandidates(h.ex).some((x) => x.userId === a), below);
      // liquidity for the buy-backs: the counterparty offers both legs at the mark
      h.ok(cp, 'sell', CALL.name, markPrice(h, CALL.name), '10');
      h.ok(cp, 'sell', PUT.name, markPrice(h, PUT.name), '10');
      let steps = 0;
      while (liquidationCandidates(h.ex).some((x) => x.userId === a) && steps < 20) {
        const r = h.apply({ t: 'liquidate', userId: a, currency: 'BTC' }) as LiquidationResult;
        steps++;
        assert.equal(r.takenOver, 0, 'no position handed to the insurance account');
        assert.ok(r.equity >= 0, `equity ${r.equity} during liquidation`);
        conserved(h);
      }
      assert.equal(steps > 0, below, below ? 'liquidated' : 'left alone');
      const after = risk(h, a);
      assert.ok(after.equity >= after.maintenanceMargin, `healthy after: ${after.equity} >= ${after.maintenanceMargin}`);
      assert.equal(h.ex.inLiquidation(a, 'BTC'), false);
      assert.ok(h.ex.system.insurance.BTC.balance >= insurance, 'the insurance account only gained (fees)');
    });
  }

  it('closes the position whose reduction lowers the scenario requirement most, not the largest standard margin', () => {
    const C = spec('BTC', EXP_MAR, 100000, 'call');
    const C105 = spec('BTC', EXP_MAR, 105000, 'call');
    const P = spec('BTC', EXP_MAR, 88000, 'put');
    const h = Harness.market([C, C105, P]);
    const cp = h.user('1000');
    const a = h.user('100');
    switched(h, a, 'segregated_pm');
    // a call spread (short ATM, long 105k) and a naked short put below (inside the standard table's reach: no extended scenario), on as little collateral as PM allows
    trade(h, a, cp, C105.name, 20);
    trade(h, a, cp, C.name, -20);
    trade(h, a, cp, P.name, -10);
    h.apply({ t: 'withdraw', userId: a, currency: 'BTC', amount: risk(h, a).availableWithdrawal });
    // the market falls: the put is the risk now, while the short call keeps the larger standard margin
    h.apply({ t: 'index', currency: 'BTC', price: 90000, manual: true, by: null });
    const std = h.ex.trading.risk;
    const stdMM = (name: string) => std.positionMM(h.u(a).positions.get(h.inst(name).id)!);
    assert.ok(stdMM(C.name) > stdMM(P.name), `standard margin would buy the call back first: ${stdMM(C.name)} > ${stdMM(P.name)}`);
    const r = risk(h, a);
    assert.ok(r.equity < r.maintenanceMargin, `below maintenance: ${r.equity} < ${r.maintenanceMargin}`);
    const u = h.u(a);
    const pm = h.ex.trading.risk.pm;
    const relief = (name: string, lots: number) => r.maintenanceMargin - pm.withPosition(u, h.inst(name), lots).maintenanceMargin;
    const lots = (name: string) => Math.min(Math.abs(u.positions.get(h.inst(name).id)!.size), 100);
    const reliefPut = relief(P.name, lots(P.name));
    const reliefCall = relief(C.name, lots(C.name));
    const reliefLong = relief(C105.name, -lots(C105.name));
    assert.ok(reliefPut > reliefCall && reliefPut > reliefLong, `put ${reliefPut}, call ${reliefCall}, long ${reliefLong}`);
    // every leg has liquidity in the band
    h.ok(cp, 'sell', P.name, markPrice(h, P.name), '10');
    h.ok(cp, 'sell', C.name, markPrice(h, C.name), '20');
    h.ok(cp, 'buy', C105.name, (Math.max(0.0005, Number(markPrice(h, C105.name)) - 0.0005)).toFixed(4), '20');
    const step = h.apply({ t: 'liquidate', userId: a, currency: 'BTC' }) as LiquidationResult;
    assert.ok(step.orders.length > 0);
    assert.equal(step.orders[0]!.inst.name, P.name, 'the put goes first');
    assert.ok(step.orders[0]!.filled > 0);
  });
});
