// Resting combo orders on portfolio-margin accounts (issues 34 and 35; docs/api-notes.md "Combo
// orders and margin"): "open orders count as if filled, the worse of each side". A PM account's
// combo orders enter the scenario engine per combo (its bid lots and ask lots, one vector per combo
// lot), plus each order's loss at mark and fees; the debit comes out of the free cash. Each test
// fails on a version that held standard margin for them (the hedge is refused, the figure is not the
// scenario's) or held nothing (any number of them rest).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import type { ComboRecord } from '../../src/combos/combos.ts';
import type { ComboPlaceResult } from '../../src/combos/book.ts';
import { comboHold } from '../../src/combos/orderMargin.ts';
import { legQuotes } from '../../src/combos/legPrices.ts';
import { bookOf } from '../../src/risk/portfolio/book.ts';
import { portfolioMargin } from '../../src/risk/portfolio/scenarios.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { Order } from '../../src/engine/types.ts';
import type { Command } from '../../src/engine/commands.ts';
import { EXP_MAR, Harness, amt, spec } from '../helpers/engine.ts';
import { switched, trade } from '../risk/portfolio/pmHarness.ts';

const C100 = spec('BTC', EXP_MAR, 100000, 'call');
const P100 = spec('BTC', EXP_MAR, 100000, 'put');

function setup() {
  const h = Harness.market([C100, P100]);
  const straddle = h.apply({ t: 'create_combo', userId: h.user(), legs: [{ instrument: C100.name, ratio: 1 }, { instrument: P100.name, ratio: 1 }] }) as ComboRecord;
  const q = legQuotes(h.ex, straddle.legs)!;
  return { h, straddle, mark: Math.round(q.reduce((s, l) => s + l.ratio * l.mark, 0)) };
}

function placeCmd(userId: number, side: 0 | 1, instrument: string, price: number, amount: string): Command {
  return { t: 'place', userId, side, instrument, price, advanced: null, advPrice: null, lots: amt(amount), type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null };
}

function account(h: Harness, userId: number) {
  return h.ex.trading.risk.account(h.u(userId), 'BTC');
}

function conserved(h: Harness): void {
  for (const [c, v] of Object.entries(h.ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
}

describe('resting combo orders on portfolio margin', () => {
  it('selling straddles: each rests while the scenario loss of all of them as if filled fits; the figure is the scenario engine\'s; the held part cannot be withdrawn', () => {
    const { h, straddle, mark } = setup();
    const a = h.user('0.6');
    switched(h, a, 'segregated_pm');
    const risk = h.ex.trading.risk;
    // above the mark: the fills would gain at mark, so the hold is the scenario loss alone
    const price = mark + 100;
    let rested = 0;
    let refused = 0;
    for (let i = 0; i < 400 && refused < 5; i++) {
      const r = h.apply(placeCmd(a, 1, straddle.id, price, '0.1'));
      if (isReject(r)) {
        refused++;
        assert.equal(r.code, 10009);
      } else rested++;
      assert.ok(account(h, a).available >= 0, `available below zero after ${rested} resting straddles`);
    }
    assert.ok(rested > 1, `some rest (${rested})`);
    assert.equal(refused, 5, `refused once the scenarios are used up (${rested} rested)`);
    // the figure: a short straddle of all the resting lots, valued by the scenario engine on its own
    // (the pure engine: per scenario one rounding of the book's P&L, contingencies on the book); the
    // live sums round per combo and the delta per combo, so they may differ by a minor unit or two
    const inst = (n: string) => h.inst(n);
    const lots = (rested * amt('0.1')) / inst(C100.name).lotScaled;
    const pf = bookOf(h.ex, h.u(a), 'BTC', { includeAccount: false, simulated: new Map([[inst(C100.name), -lots], [inst(P100.name), -lots]]) })!;
    const expected = portfolioMargin(pf, h.ex.pm.params).initialMargin;
    const held = account(h, a).ordersIM;
    assert.ok(Math.abs(held - expected) <= 3, `held ${held} = the scenario engine's ${expected} (to rounding)`);
    assert.equal(h.ex.comboBooks.heldBy(a, 'BTC').pmIm, 0, 'sold above the mark: no loss at mark');
    assert.equal(held, risk.sumOrdersIM(h.u(a), 'BTC'), 'the running sums and the full sum agree');
    // far less than standard margin would hold for the same orders: two short legs each
    const standard = h.ex.comboBooks.heldBy(a, 'BTC').im;
    assert.ok(held < standard, `PM ${held} < standard ${standard}`);
    // what they hold stays: withdrawing the balance less a quarter of the hold is refused
    assert.ok(account(h, a).availableWithdrawal <= h.balance(a) - held);
    assert.ok(isReject(h.apply({ t: 'withdraw', userId: a, currency: 'BTC', amount: h.balance(a) - Math.floor(held / 4) })), 'the held part stays');
    // a snapshot restores the same figures
    const copy = restore(serialize(h.ex));
    assert.equal(stateHash(copy), stateHash(h.ex));
    assert.equal(copy.trading.risk.ordersIM(copy.users.get(a)!, 'BTC'), held);
    conserved(h);
  });

  it('a combo order that hedges the book holds what its fill would add to the worst scenario: less than standard, so it rests where standard margin refuses it', () => {
    const { h, straddle, mark } = setup();
    const a = h.user('0.6');
    const cp = h.user('100');
    switched(h, a, 'segregated_pm');
    // a short straddle on the books, and a resting order to buy it back (a hedge)
    trade(h, a, cp, C100.name, -2);
    trade(h, a, cp, P100.name, -2);
    const hedge = { side: 0, price: mark } as Order;
    const standard = comboHold(h.ex, straddle, hedge, amt('2') / h.ex.comboBooks.inst(straddle).lotScaled);
    const before = account(h, a);
    assert.ok(before.available < standard.im, `standard margin could not rest it: available ${before.available} < its hold ${standard.im}`);
    const r = h.apply(placeCmd(a, 0, straddle.id, mark, '2')) as ComboPlaceResult;
    assert.ok(!isReject(r), `the hedge rests on portfolio margin (${isReject(r) ? r.reason : ''})`);
    assert.equal(r.order.state, 'open');
    const after = account(h, a);
    const held = after.ordersIM;
    assert.ok(held >= 0 && held < standard.im / 3, `the hedge holds ${held}, less than a third of standard's ${standard.im}`);
    assert.ok(after.available >= 0);
    // its debit is set aside from the free cash, as a resting buy's premium
    assert.equal(h.ex.trading.risk.freeCash(h.u(a), 'BTC'), h.balance(a) - standard.cash);
    // the same order adding risk (a second straddle bought on top of a flat book) holds its scenario loss
    const b = h.user('0.6');
    switched(h, b, 'segregated_pm');
    h.apply(placeCmd(b, 0, straddle.id, mark, '2'));
    assert.ok(account(h, b).ordersIM > held, `adding risk holds more (${account(h, b).ordersIM}) than hedging (${held})`);
    conserved(h);
  });

  it("pme/simulate's book (bookOf) counts the resting combo orders as the engine does: its initial margin plus the combo hold is the account's", () => {
    const { h, straddle, mark } = setup();
    const a = h.user('5');
    const cp = h.user('100');
    switched(h, a, 'segregated_pm');
    trade(h, a, cp, C100.name, -2);
    trade(h, a, cp, P100.name, -1);
    // both sides of one combo resting (a hedge bid, a riskier ask), each the worse per scenario
    assert.ok(!isReject(h.apply(placeCmd(a, 0, straddle.id, mark - 100, '1'))));
    assert.ok(!isReject(h.apply(placeCmd(a, 1, straddle.id, mark + 100, '3'))));
    const pf = bookOf(h.ex, h.u(a), 'BTC', { includeAccount: true, simulated: new Map() })!;
    assert.equal(pf.combos?.length, 1);
    const sim = portfolioMargin(pf, h.ex.pm.params);
    const r = account(h, a);
    const held = h.ex.comboBooks.heldBy(a, 'BTC').pmIm;
    // the engine rounds per leg and per combo: within a few minor units
    assert.ok(Math.abs(sim.initialMargin + held - r.initialMargin) <= 4, `simulated ${sim.initialMargin} + ${held} vs the engine's ${r.initialMargin}`);
    // without them the book is the positions alone: less than with them (the ask side adds risk)
    const without = portfolioMargin({ ...pf, combos: [] }, h.ex.pm.params);
    assert.ok(without.maintenanceMargin < sim.maintenanceMargin, `${without.maintenanceMargin} < ${sim.maintenanceMargin}`);
    assert.ok(Math.abs(without.maintenanceMargin - r.maintenanceMargin) <= 4, 'the positions alone are the engine\'s maintenance margin');
  });

  it('a maker at its limit is filled: the fill frees its own lots in the scenarios (not counted twice); partial fills keep the rest counted', () => {
    const { h, straddle, mark } = setup();
    const a = h.user('0.6');
    switched(h, a, 'segregated_pm');
    const price = mark + 100;
    let n = 0;
    while (!isReject(h.apply(placeCmd(a, 1, straddle.id, price, '0.1'))) && n < 400) n++;
    assert.ok(n > 1);
    const full = account(h, a).ordersIM;
    const taker = h.user('100');
    const t = h.apply(placeCmd(taker, 0, straddle.id, price, '0.3')) as ComboPlaceResult;
    assert.ok(!isReject(t));
    assert.equal(t.order.filled * h.ex.comboBooks.inst(straddle).lotScaled, amt('0.3'), 'the maker at its limit was filled, not cancelled for its own hold');
    assert.equal(h.position(a, C100.name).size, -3);
    assert.equal(h.ex.comboBooks.openOf(a).length, n - 3);
    assert.ok(account(h, a).available >= 0);
    assert.equal(account(h, a).ordersIM, h.ex.trading.risk.sumOrdersIM(h.u(a), 'BTC'));
    assert.ok(account(h, a).ordersIM < full, 'the filled lots no longer count as orders');
    // an index move recomputes everything: the running sums still equal the full sums
    h.apply({ t: 'index', currency: 'BTC', price: 101_000, manual: true, by: null });
    assert.equal(account(h, a).ordersIM, h.ex.trading.risk.sumOrdersIM(h.u(a), 'BTC'));
    h.apply({ t: 'cancel_all', userId: a, currency: null, instrument: null, side: null, label: null });
    assert.equal(h.ex.comboBooks.heldBy(a, 'BTC').im, 0);
    const f = h.ex.trading.risk.pm.figures(h.u(a), 'BTC');
    assert.equal(f.initialMarginWithOrders, f.initialMargin, 'nothing of the cancelled orders left in the scenarios');
    conserved(h);
  });
});
