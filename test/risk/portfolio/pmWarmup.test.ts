// A call for a PM account the scan has not refreshed since a tick waits while its sums are rebuilt
// in slices (src/risk/portfolio/warmup.ts; issue 35: no engine turn over 2 ms from PM work): no
// slice does more than PM_STEP_UNITS of work, and the order check that follows does one leg's work,
// not the account's rebuild. Work is counted (PmRisk.work), never timed.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PM_STEP_UNITS, maxLegUnits } from '../../../src/risk/portfolio/pmRisk.ts';
import { PmWarmup } from '../../../src/risk/portfolio/warmup.ts';
import type { Harness } from '../../helpers/engine.ts';
import { DESK_SPECS, bigDesk, markPrice } from './pmHarness.ts';

/** A warm-up whose turns are counted: the recompute work done in each slice (between two yields). */
function countedWarmup(h: Harness, between?: (turn: number) => void): { warm: PmWarmup; slices: number[] } {
  const pm = h.ex.trading.risk.pm;
  const slices: number[] = [];
  let last = pm.work;
  let turn = 0;
  const warm = new PmWarmup(h.ex, async () => {
    if (turn > 0) slices.push(pm.work - last);
    between?.(turn);
    turn++;
    await new Promise((r) => setImmediate(r));
    last = pm.work;
  });
  return { warm, slices };
}

function assertExact(h: Harness, userId: number): void {
  const pm = h.ex.trading.risk.pm;
  const u = h.u(userId);
  assert.deepEqual(pm.figures(u, 'BTC'), pm.freshFigures(u, 'BTC'));
}

const tick = (h: Harness, price: number) => h.apply({ t: 'index', currency: 'BTC', price, manual: true, by: null });

describe('the PM warm-up before a call', () => {
  for (const model of ['segregated_pm', 'cross_pm'] as const) {
    it(`rebuilds a stale ${model} desk in slices of at most PM_STEP_UNITS, after which its order check does one leg's work`, async () => {
      const { h, desk: d } = bigDesk(model);
      const pm = h.ex.trading.risk.pm;
      const { warm, slices } = countedWarmup(h);
      assert.equal(warm.needs(d), false, 'complete after the trades that built the desk');
      tick(h, 101_000);
      assert.equal(warm.needs(d), true, 'a tick leaves every PM account stale');

      await warm.readyAll([d]);
      assert.equal(warm.needs(d), false);
      assert.ok(slices.length >= 3, `${slices.length} slices: the rebuild is several budgets' work`);
      assert.ok(Math.max(...slices) <= PM_STEP_UNITS, `largest slice ${Math.max(...slices)} units`);
      assertExact(h, d);

      // the order check reads complete sums: its work is one leg (and one series revalued at most)
      const name = DESK_SPECS[7]!.name;
      let before = pm.work;
      h.ok(d, 'sell', name, markPrice(h, name), '1');
      assert.ok(pm.work - before <= maxLegUnits(), `order check after the warm-up: ${pm.work - before} units`);

      // the same order without the warm-up rebuilds the whole desk inside the command
      tick(h, 99_000);
      before = pm.work;
      h.ok(d, 'sell', name, markPrice(h, name), '1');
      assert.ok(pm.work - before > 3 * PM_STEP_UNITS, `order check of a stale desk: ${pm.work - before} units`);
    });
  }

  it('keeps rebuilding through a tick between its slices, and ends exact', async () => {
    const { h, desk: d } = bigDesk('segregated_pm');
    const { warm, slices } = countedWarmup(h, (turn) => {
      if (turn === 2) tick(h, 97_000); // the epoch moves halfway: done legs are stale again
    });
    tick(h, 101_000);
    await warm.readyAll([d]);
    assert.equal(warm.needs(d), false);
    assert.ok(Math.max(...slices) <= PM_STEP_UNITS);
    assertExact(h, d);
    assert.equal(h.ex.index.BTC!.price, 97_000);
  });

  it('calls of one account share one rebuild and resume in the order they waited', async () => {
    const { h, desk: d } = bigDesk('segregated_pm');
    const { warm } = countedWarmup(h);
    tick(h, 101_000);
    const order: number[] = [];
    await Promise.all([1, 2, 3].map((i) => warm.readyAll([d]).then(() => order.push(i))));
    assert.deepEqual(order, [1, 2, 3]);
    assert.equal(warm.waited, 3);
  });

  it('a standard account waits only for a switch onto portfolio margin (evenIfStandard), whose check then reads ready sums', async () => {
    const { h, desk: d } = bigDesk('segregated_sm');
    const pm = h.ex.trading.risk.pm;
    const { warm, slices } = countedWarmup(h);
    assert.equal(warm.needs(d), false, 'standard margin reads no scenario sums');
    assert.equal(warm.needs(d, true), true);
    await warm.readyAll([d], true);
    assert.ok(Math.max(...slices) <= PM_STEP_UNITS);
    const before = pm.work;
    const r = h.apply({ t: 'change_margin_model', userId: d, model: 'segregated_pm' });
    assert.equal((r as { to?: string }).to, 'segregated_pm');
    assert.ok(pm.work - before <= maxLegUnits(), `the switch after the warm-up: ${pm.work - before} units`);
    assertExact(h, d);
  });

  it('an unknown account, or one with nothing stale, does not wait', async () => {
    const { h, desk: d, cp } = bigDesk('segregated_pm');
    const { warm, slices } = countedWarmup(h);
    assert.equal(warm.needs(999_999), false);
    assert.equal(warm.needs(cp), false, 'the counterparty is on standard margin');
    await warm.readyAll([d, cp, 999_999]);
    assert.deepEqual(slices, []);
  });
});
