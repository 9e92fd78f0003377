// Combo order books in the engine (issue 34): a combo fill executes every leg or none, at leg prices
// that sum exactly to the combo price and stay inside each leg's band; the margin of a combo order is
// that of the leg positions together (a call spread costs less than its short leg alone); fees free
// the cheaper direction; self-trade prevention; the expiry of a leg and the soft limit end a book;
// the state survives a snapshot with the same hash.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject, type Reject } from '../../src/domain/errors.ts';
import { premiumOf, tradeFee } from '../../src/domain/instrument.ts';
import type { ComboRecord } from '../../src/combos/combos.ts';
import type { ComboPlaceResult } from '../../src/combos/book.ts';
import { comboBand, legQuotes, splitPrice, type LegQuote } from '../../src/combos/legPrices.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { comboHold } from '../../src/combos/orderMargin.ts';
import type { Order } from '../../src/engine/types.ts';
import { EXP_JAN, EXP_MAR, Harness, amt, spec } from '../helpers/engine.ts';

const C100 = spec('BTC', EXP_MAR, 100000, 'call');
const C110 = spec('BTC', EXP_MAR, 110000, 'call');
const P100 = spec('BTC', EXP_MAR, 100000, 'put');
const J100 = spec('BTC', EXP_JAN, 100000, 'call');

function setup() {
  const h = Harness.market([C100, C110, P100, J100]);
  const combo = (legs: [string, number][], extra: { maxActive?: number; max?: number } = {}) =>
    h.apply({ t: 'create_combo', userId: 1, legs: legs.map(([instrument, ratio]) => ({ instrument, ratio })), ...extra }) as ComboRecord;
  h.user('1');
  const cs = combo([[C100.name, 1], [C110.name, -1]]);
  return { h, cs, combo };
}

/** A combo order at a price in price units (may be negative). */
function place(h: Harness, userId: number, side: 'buy' | 'sell', instrument: string, price: number, amount: string, tif: 'good_til_cancelled' | 'immediate_or_cancel' = 'good_til_cancelled'): ComboPlaceResult | Reject {
  return h.apply({ t: 'place', userId, side: side === 'buy' ? 0 : 1, instrument, price, advanced: null, advPrice: null, lots: amt(amount), type: 'limit', tif, postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null }) as ComboPlaceResult | Reject;
}

function conserved(h: Harness): void {
  for (const [c, v] of Object.entries(h.ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
}

function netMark(h: Harness, r: ComboRecord): number {
  const q = legQuotes(h.ex, r.legs)!;
  return Math.round(q.reduce((s, l) => s + l.ratio * l.mark, 0));
}

describe('combo books', () => {
  it('fills every leg at prices that sum exactly to the combo price, each inside its band; positions in the legs; the snapshot hashes equal', () => {
    const { h, cs } = setup();
    const a = h.user('10');
    const b = h.user('10');
    const price = netMark(h, cs) + 7; // off the legs' marks: the difference is split
    assert.ok(!isReject(place(h, a, 'sell', cs.id, price, '0.5')), 'accepted or refused as expected');
    const r = place(h, b, 'buy', cs.id, price, '0.3') as ComboPlaceResult;
    assert.ok(!isReject(r), '!isReject(r)');
    assert.equal(r.order.state, 'filled');
    assert.equal(r.comboTrades.length, 1);
    const legs = r.trades;
    assert.equal(legs.length, 2);
    const net = legs[0]!.price - legs[1]!.price; // C100 bought, C110 sold
    assert.equal(net, price, 'the leg prices sum to the combo price');
    for (const t of legs) {
      const m = h.ex.markets.get(t.inst.id)!;
      assert.ok(t.price >= m.minPrice && t.price <= m.maxPrice, `${t.inst.name} inside its band`);
      assert.equal(t.lots, 3);
      assert.deepEqual(t.combo, { id: cs.id, tradeId: r.comboTrades[0]!.id });
    }
    assert.equal(h.position(b, C100.name).size, 3);
    assert.equal(h.position(b, C110.name).size, -3);
    assert.equal(h.position(a, C100.name).size, -3);
    assert.equal(h.position(a, C110.name).size, 3);
    // the maker rests with what is left
    const rest = [...h.ex.comboBooks.books.get(cs.id)!.orders()];
    assert.equal(rest.length, 1);
    assert.equal(rest[0]!.remaining, 2);
    conserved(h);
    const again = restore(serialize(h.ex));
    assert.equal(stateHash(again), stateHash(h.ex));
    // the restored engine trades on as the live one
    assert.ok(!isReject(place(h, b, 'buy', cs.id, price, '0.2')), 'accepted or refused as expected');
  });

  it('fees: each side pays its legs of the dearer direction only (a spread pays one leg)', () => {
    const { h, cs } = setup();
    const a = h.user('10');
    const b = h.user('10');
    const price = netMark(h, cs);
    place(h, a, 'sell', cs.id, price, '1');
    const fees0 = h.feeBalance();
    const r = place(h, b, 'buy', cs.id, price, '1') as ComboPlaceResult;
    const [l0, l1] = r.trades as [typeof r.trades[0], typeof r.trades[0]];
    const full = (t: typeof l0, maker: boolean) => tradeFee(t.inst, t.price, t.lots, maker ? t.inst.makerCommission : t.inst.takerCommission);
    // the taker buys C100 and sells C110: the cheaper of the two is free
    const takerFees = [full(l0, false), full(l1, false)];
    const makerFees = [full(l0, true), full(l1, true)];
    const dear = (f: number[]) => Math.max(f[0]!, f[1]!);
    assert.equal(l0.takerFee + l1.takerFee, dear(takerFees));
    assert.equal(l0.makerFee + l1.makerFee, dear(makerFees));
    assert.ok(l0.takerFee === 0 || l1.takerFee === 0, 'one leg is free');
    assert.equal(h.feeBalance() - fees0, dear(takerFees) + dear(makerFees));
    assert.equal(r.order.commission, dear(takerFees));
    conserved(h);
  });

  it('a fill the taker cannot carry executes no leg at all (and a maker that cannot is cancelled, no leg either)', () => {
    const { h, cs } = setup();
    const rich = h.user('10');
    const strd = h.apply({ t: 'create_combo', userId: 1, legs: [{ instrument: C100.name, ratio: 1 }, { instrument: P100.name, ratio: 1 }] }) as ComboRecord;
    const price = netMark(h, strd);
    // the poor account's buy of a straddle: it pays both premiums, which it has not got
    const poor = h.user('0.0001');
    assert.ok(!isReject(place(h, rich, 'sell', strd.id, price, '1')), 'accepted or refused as expected');
    const r = place(h, poor, 'buy', strd.id, price, '1');
    assert.ok(isReject(r), 'refused whole');
    assert.equal(h.position(poor, C100.name).size, 0);
    assert.equal(h.position(poor, P100.name).size, 0);
    assert.equal(h.position(rich, C100.name).size, 0, 'no leg alone on the maker either');
    // a maker that can no longer carry its order when it is met: cancelled, no leg, the taker goes on.
    // (Its resting order holds its margin, so it cannot withdraw it: orderMargin.test.ts. Funded for
    // its sold spread exactly, it is undone by a rally: the spread it sold is now dear, its short leg's
    // margin larger.)
    const mp = netMark(h, cs);
    const hold = comboHold(h.ex, cs, { side: 1, price: mp } as Order, 10);
    const maker = h.user('0');
    h.deposit(maker, 'BTC', Math.max(hold.im, hold.cash));
    const taker = h.user('10');
    assert.ok(!isReject(place(h, maker, 'sell', cs.id, mp, '1')), 'accepted or refused as expected');
    assert.ok(isReject(h.apply({ t: 'withdraw', userId: maker, currency: 'BTC', amount: 1000 })), 'what the resting order holds stays');
    h.apply({ t: 'index', currency: 'BTC', price: 115_000, manual: true, by: null });
    const t = place(h, taker, 'buy', cs.id, comboBand(legQuotes(h.ex, cs.legs)!).max, '1') as ComboPlaceResult;
    assert.ok(!isReject(t), '!isReject(t)');
    assert.equal(t.trades.length, 0);
    assert.equal(h.position(maker, C100.name).size, 0);
    assert.equal(h.position(taker, C110.name).size, 0);
    const makerOrder = h.ex.comboBooks.openOf(maker);
    assert.equal(makerOrder.length, 0, 'the maker order was cancelled');
    assert.equal(t.order.state, 'open', 'the taker rests');
    conserved(h);
  });

  it('the margin of a combo order is the margin of its legs together: a call spread fits where its short leg alone does not', () => {
    const { h } = setup();
    // the seller of the spread C110 - C100 (short the lower strike, long the upper): at most 1 BTC of loss per 1 BTC
    const ps = h.apply({ t: 'create_combo', userId: 1, legs: [{ instrument: C110.name, ratio: 1 }, { instrument: C100.name, ratio: -1 }] }) as ComboRecord;
    const counter = h.user('100');
    // a (segregated: no other currency's collateral pools in) portfolio-margin account: its requirement is the scenario loss of its positions together
    // (switched with 1 BTC, the portfolio-margin minimum, then down to 0.1 BTC)
    const seller = h.user('1');
    assert.ok(!isReject(h.apply({ t: 'change_margin_model', userId: seller, model: 'segregated_pm' })), 'accepted or refused as expected');
    h.apply({ t: 'withdraw', userId: seller, currency: 'BTC', amount: h.balance(seller) - 10_000_000 });
    const price = netMark(h, ps);
    // naked: selling 1 BTC of C100 needs more initial margin than the account has
    const naked = h.place(seller, 'sell', C100.name, '0.112', '1');
    assert.ok(isReject(naked), 'the short leg alone is refused');
    // as a spread (bought C110 covers it) the order fits, and fills both legs
    assert.ok(!isReject(place(h, counter, 'sell', ps.id, price, '1')), 'accepted or refused as expected');
    const r = place(h, seller, 'buy', ps.id, price, '1');
    assert.ok(!isReject(r), `the spread is accepted: ${isReject(r) ? r.reason : ''}`);
    assert.equal(h.position(seller, C100.name).size, -10);
    assert.equal(h.position(seller, C110.name).size, 10);
    conserved(h);
  });

  it('negative combo prices trade; self-trade is refused; the expiry of a leg cancels the book and ends the combo', () => {
    const { h, cs, combo } = setup();
    // the reverse spread has a negative net price
    const rev = combo([[C110.name, 1], [C100.name, -1]]);
    const a = h.user('10');
    const b = h.user('10');
    const p = netMark(h, rev);
    assert.ok(p < 0, 'p < 0');
    assert.ok(!isReject(place(h, a, 'sell', rev.id, p, '1')), 'accepted or refused as expected');
    const self = place(h, a, 'buy', rev.id, p, '1');
    assert.ok(isReject(self) && self.reason === 'self_trade', 'self-trade refused');
    const r = place(h, b, 'buy', rev.id, p, '1') as ComboPlaceResult;
    assert.equal(r.trades.length, 2);
    conserved(h);
    // a calendar with the January leg: its resting order ends at the January expiry
    const cal = combo([[J100.name, -1], [C100.name, 1]]);
    const o = place(h, a, 'buy', cal.id, netMark(h, cal), '1') as ComboPlaceResult;
    assert.equal(o.order.state, 'open');
    h.apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null }, EXP_JAN + 1);
    assert.equal(o.order.state, 'cancelled');
    assert.equal(h.ex.combos.isActive(cal), false);
    assert.ok(isReject(place(h, a, 'buy', cal.id, 0, '1')), 'accepted or refused as expected');
    assert.ok(h.ex.combos.isActive(cs), 'h.ex.combos.isActive(cs)');
  });

  it('the soft limit deactivates the least traded book (its orders cancelled); the hard limit refuses creation', () => {
    const { h, cs, combo } = setup();
    const a = h.user('10');
    const b = h.user('10');
    const p = netMark(h, cs);
    place(h, a, 'sell', cs.id, p, '0.1');
    place(h, b, 'buy', cs.id, p, '0.1'); // cs has traded once
    const strd = combo([[C100.name, 1], [P100.name, 1]]);
    const o = place(h, a, 'buy', strd.id, netMark(h, strd) - 100, '0.1') as ComboPlaceResult;
    assert.equal(o.order.state, 'open');
    // a third combo with two active allowed: the straddle (never traded) goes
    combo([[C110.name, 1], [P100.name, 1]], { maxActive: 2 });
    assert.equal(h.ex.combos.isActive(strd), false);
    assert.equal(o.order.state, 'cancelled');
    assert.ok(h.ex.combos.isActive(cs), 'h.ex.combos.isActive(cs)');
    assert.ok(isReject(combo([[C110.name, 1], [J100.name, 1]], { max: 3 })), 'the hard limit');
    // create_combo activates it again
    combo([[C100.name, 1], [P100.name, 1]]);
    assert.ok(h.ex.combos.isActive(strd), 'h.ex.combos.isActive(strd)');
  });
});

describe('the leg price split', () => {
  it('sums exactly and stays in every band, over random combos and prices; outside the combo band there is none', () => {
    let seed = 12345;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let k = 0; k < 2000; k++) {
      const n = 2 + rnd(3);
      const q: LegQuote[] = [];
      for (let i = 0; i < n; i++) {
        const mark = rnd(5000) + rnd(100) / 7;
        const min = Math.max(1, Math.round(mark) - 100 - rnd(300));
        const max = Math.round(mark) + 100 + rnd(300);
        const ratio = (rnd(2) ? 1 : -1) * (1 + (i === 0 ? 0 : rnd(3)));
        q.push({ ratio, mark, min, max });
      }
      const band = comboBand(q);
      const price = band.min + rnd(band.max - band.min + 1);
      const p = splitPrice(q, price);
      assert.ok(p !== null, `a split exists (k=${k})`);
      assert.equal(p.reduce((s, x, i) => s + q[i]!.ratio * x, 0), price, 'exact sum');
      p.forEach((x, i) => assert.ok(x >= q[i]!.min && x <= q[i]!.max, 'inside the band'));
      assert.equal(splitPrice(q, band.max + 1), null);
      assert.equal(splitPrice(q, band.min - 1), null);
    }
  });

  it('starts from the marks: at the net mark each leg is its mark; a difference moves the legs in proportion to their marks', () => {
    const q: LegQuote[] = [
      { ratio: 1, mark: 300, min: 100, max: 600 },
      { ratio: -1, mark: 100, min: 1, max: 300 },
    ];
    assert.deepEqual(splitPrice(q, 200), [300, 100]);
    // +40: 3/4 of it on the first leg (up), 1/4 on the second (down)
    assert.deepEqual(splitPrice(q, 240), [330, 90]);
    assert.equal(premiumOf({ currency: 'BTC', lotScaled: 10_000_000 } as never, 1, 1) > 0, true);
  });
});
