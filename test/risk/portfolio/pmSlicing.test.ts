// The portfolio-margin recompute after a tick, sliced by work units (issue 35: no engine turn over
// 2 ms from PM work): the liquidation scan never does more than PM_STEP_UNITS of recompute work
// between two yields, whatever one account holds, and a rebuild left halfway between two slices
// gives the same figures as a full sum through trades, orders and ticks. Work is counted, not timed.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { scanForLiquidation } from '../../../src/engine/liquidation.ts';
import { PM_STEP_UNITS, WORK, maxLegUnits } from '../../../src/risk/portfolio/pmRisk.ts';
import type { Harness } from '../../helpers/engine.ts';
import { DESK_SPECS, bigDesk, markPrice } from './pmHarness.ts';


/** Runs the scan to its end; the recompute work of every step (between two yields). */
function scanSteps(h: Harness): number[] {
  const pm = h.ex.trading.risk.pm;
  const units: number[] = [];
  let last = pm.work;
  for (const _ of scanForLiquidation(h.ex)) {
    units.push(pm.work - last);
    last = pm.work;
  }
  return units;
}

function assertExact(h: Harness, userId: number): void {
  const pm = h.ex.trading.risk.pm;
  const u = h.u(userId);
  assert.deepEqual(pm.figures(u, 'BTC'), pm.freshFigures(u, 'BTC'));
}

describe('the PM recompute after a tick, sliced by work units', () => {
  it('a step is always able to add one leg: the costliest leg under the largest table fits the budget', () => {
    // 41 buckets x 3 vols + 16 extended moves = 139 scenarios: 139 sums and 141 revaluations
    assert.equal(maxLegUnits(), 139 + WORK.revaluation * 141);
    assert.ok(maxLegUnits() <= PM_STEP_UNITS);
  });

  for (const model of ['segregated_pm', 'cross_pm'] as const) {
    it(`never does more than PM_STEP_UNITS of work between two yields of the scan, a ${model} desk's rebuild spread over several steps`, () => {
      const { h, desk: d } = bigDesk(model);
      h.apply({ t: 'index', currency: 'BTC', price: 101_000, manual: true, by: null });
      const units = scanSteps(h);
      // every series revalued (41 x 3 + 8 extended scenarios, its base and its delta) and every leg summed, once
      const scenarios = 41 * 3 + h.ex.pm.params.extendedMoves.length;
      const total = DESK_SPECS.length * (scenarios + WORK.revaluation * (scenarios + 2));
      assert.equal(units.reduce((a, b) => a + b, 0), total, 'the rebuild did all of its work, once');
      assert.ok(Math.max(...units) <= PM_STEP_UNITS, `largest step ${Math.max(...units)} units`);
      // one account per step would have done it all in one (the naive scan)
      assert.ok(units.filter((x) => x > 0).length >= Math.ceil(total / PM_STEP_UNITS), `${units.filter((x) => x > 0).length} steps did work`);
      assertExact(h, d);
      // the next tick: the same again, and no work at all when nothing moved
      h.apply({ t: 'index', currency: 'BTC', price: 99_000, manual: true, by: null });
      assert.ok(Math.max(...scanSteps(h)) <= PM_STEP_UNITS);
      assert.equal(scanSteps(h).reduce((a, b) => a + b, 0), 0, 'sums and vectors complete: nothing to redo');
      assertExact(h, d);
    });
  }

  it('a rebuild left halfway stays exact through fills, a cancel and a tick between its slices', () => {
    const { h, desk: d, cp } = bigDesk('segregated_pm');
    const pm = h.ex.trading.risk.pm;
    const u = h.u(d);
    const [first, mid, last] = [DESK_SPECS[0]!.name, DESK_SPECS[31]!.name, DESK_SPECS[DESK_SPECS.length - 1]!.name];
    // resting orders the counterparty fills, or the desk cancels, while the rebuild is halfway: the
    // desk's own orders would finish it (an order check reads complete figures)
    const sell = h.ok(d, 'sell', first, markPrice(h, first), '2');
    const buy = h.ok(d, 'buy', last, markPrice(h, last), '1');
    const resting = h.ok(d, 'sell', mid, markPrice(h, mid), '3');
    /** Steps `scan` until the desk's sums are part built (refresh with no budget only tells). */
    const halfway = (scan: Generator<unknown>) => {
      const w = pm.work;
      do assert.equal(scan.next().done, false);
      while (!(pm.work > w && !pm.refresh(u, 'BTC', 0)));
    };

    h.apply({ t: 'index', currency: 'BTC', price: 101_000, manual: true, by: null });
    const scan = scanForLiquidation(h.ex);
    halfway(scan);
    // a leg the rebuild has added (the queue starts with the positions, in order), one it has not reached
    h.ok(cp, 'buy', first, (sell.order.price / 1e4).toFixed(4), '2');
    h.ok(cp, 'sell', last, (buy.order.price / 1e4).toFixed(4), '1');
    h.apply({ t: 'cancel', userId: d, orderId: resting.order.id });
    assert.equal(pm.refresh(u, 'BTC', 0), false, 'still halfway');
    for (let r = scan.next(); !r.done; r = scan.next());
    assertExact(h, d);

    // a tick between two slices: the rebuild starts again at the new epoch
    h.apply({ t: 'index', currency: 'BTC', price: 98_000, manual: true, by: null });
    const again = scanForLiquidation(h.ex);
    halfway(again);
    h.apply({ t: 'index', currency: 'BTC', price: 98_500, manual: true, by: null });
    for (let r = again.next(); !r.done; r = again.next());
    assertExact(h, d);

    // an order check in the middle of a rebuild finishes it at once (the figures it reads are complete)
    h.apply({ t: 'index', currency: 'BTC', price: 99_000, manual: true, by: null });
    halfway(scanForLiquidation(h.ex));
    h.ok(d, 'buy', DESK_SPECS[4]!.name, markPrice(h, DESK_SPECS[4]!.name), '1');
    assert.equal(pm.refresh(u, 'BTC', 0), true);
    assertExact(h, d);
  });
});
