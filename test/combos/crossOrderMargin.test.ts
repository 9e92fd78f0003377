// Resting combo orders on a cross-collateral account (issues 34 and 35): the hold of each resting
// combo order enters the pool through RiskEngine.requirements, so BTC collateral carries ETH combo
// orders only up to the pool's limit. On the version where the cross path of ordersIM left the combo
// holds out, the account rested any number of them and its pool went below zero.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import type { ComboRecord } from '../../src/combos/combos.ts';
import { legQuotes } from '../../src/combos/legPrices.ts';
import { EXP_MAR, Harness, amt, sat, spec } from '../helpers/engine.ts';
import { switched } from '../risk/portfolio/pmHarness.ts';

const EC4000 = spec('ETH', EXP_MAR, 4000, 'call');
const EP4000 = spec('ETH', EXP_MAR, 4000, 'put');

describe('resting combo orders on cross_sm', () => {
  it('BTC collateral rests ETH combo orders only while the pool stays covered; the rest are refused and the held part cannot be withdrawn', () => {
    const h = Harness.market([EC4000, EP4000]);
    // a little ETH for the fees (paid in ETH, out of ETH's own cash); the margin is BTC's to carry
    const a = h.user('0.5', '0.05');
    switched(h, a, 'cross_sm');
    // a risk reversal (long call, short put): the short put holds margin in ETH, carried by BTC
    const rr = h.apply({ t: 'create_combo', userId: a, legs: [{ instrument: EC4000.name, ratio: 1 }, { instrument: EP4000.name, ratio: -1 }] }) as ComboRecord;
    const q = legQuotes(h.ex, rr.legs)!;
    const price = Math.round(q.reduce((s, l) => s + l.ratio * l.mark, 0));
    const risk = h.ex.trading.risk;
    let rested = 0;
    let refused = 0;
    for (let i = 0; i < 400 && refused < 20; i++) {
      const r = h.apply({ t: 'place', userId: a, side: 0, instrument: rr.id, price, advanced: null, advPrice: null, lots: amt('1'), type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null });
      if (isReject(r)) refused++;
      else rested++;
      // the pool never goes below zero, in either currency's view
      for (const c of ['BTC', 'ETH'] as const) assert.ok(risk.crossSums(h.u(a), c).initialWithOrders >= 0, `pool below zero after ${rested} resting orders (${c})`);
    }
    assert.ok(rested > 0, 'some orders rest');
    assert.equal(refused, 20, `refused once the pool is used up (${rested} rested)`);
    assert.ok(h.ex.comboBooks.heldBy(a, 'ETH').im > 0, 'the resting orders hold ETH margin');
    // what they hold stays: withdrawing the whole BTC balance is refused
    assert.ok(isReject(h.apply({ t: 'withdraw', userId: a, currency: 'BTC', amount: sat('0.5') })), 'the held part stays');
    for (const [c, v] of Object.entries(h.ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
  });
});
