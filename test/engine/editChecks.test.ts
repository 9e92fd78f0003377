// private/edit runs every check private/buy and private/sell run, for the order the edit leaves
// (issue 29 item 6): MMP's max_quote_quantity, today's price band even at an unchanged price, the
// mark price, an MMP group's freeze. A size decrease at the same price stays in place and is never
// refused by them (it only lowers what the order risks).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject, type Reject } from '../../src/domain/errors.ts';
import { priceToNumber, roundToTick } from '../../src/domain/instrument.ts';
import type { Command } from '../../src/engine/commands.ts';
import type { PlaceResult } from '../../src/engine/trading.ts';
import { EXP_JAN, Harness, amt, px, spec } from '../helpers/engine.ts';

const C = 'BTC-30JAN26-130000-C';

function setup(): Harness {
  return Harness.market([spec('BTC', EXP_JAN, 130000, 'call')]);
}

function edit(h: Harness, userId: number, orderId: number, amount: string, price: number | null, mmp?: boolean): PlaceResult | Reject {
  const c: Command = { t: 'edit', userId, orderId, lots: amt(amount), price, postOnly: null, rejectPostOnly: null };
  if (mmp !== undefined) c.mmp = mmp;
  return h.apply(c) as PlaceResult | Reject;
}

function placeMmp(h: Harness, userId: number, side: 0 | 1, price: number, amount: string): PlaceResult {
  const r = h.apply({ t: 'place', userId, side, instrument: C, price, advanced: null, advPrice: null, lots: amt(amount), type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null, mmp: true });
  if (isReject(r)) throw new Error(`order refused: ${r.code} ${r.reason ?? ''}`);
  return r as PlaceResult;
}

function mmpConfig(h: Harness, userId: number, maxQuoteQuantity: string): void {
  const r = h.apply({ t: 'set_mmp_config', userId, indexName: 'btc_usd', group: null, interval: 60, frozenTime: 10, quantityLimit: amt('100'), deltaLimit: 0, maxQuoteQuantity: amt(maxQuoteQuantity) });
  assert.ok(!isReject(r), JSON.stringify(r));
}

/** Today's band, and its edges rounded onto the grid (inward). */
function band(h: Harness): { min: number; max: number; top: number; bottom: number } {
  const m = h.ex.markets.get(h.inst(C).id)!;
  return { min: m.minPrice, max: m.maxPrice, top: roundToTick(h.inst(C), m.maxPrice, 'down'), bottom: roundToTick(h.inst(C), m.minPrice, 'up') };
}

function refusal(r: PlaceResult | Reject): string {
  assert.ok(isReject(r), `expected a refusal, got ${JSON.stringify((r as PlaceResult).order?.amount)}`);
  return `${r.code} ${r.reason ?? ''}`.trim();
}

describe('private/edit runs the checks of a new order', () => {
  it("refuses an amount increase past MMP's max_quote_quantity, as a new order of that size", () => {
    const h = setup();
    const mm = h.user('10');
    mmpConfig(h, mm, '1');
    const price = band(h).top;
    const o = placeMmp(h, mm, 1, price, '0.6').order;
    placeMmp(h, mm, 1, price, '0.3');
    // 0.6 -> 0.8 makes 1.1 open on the side: a new order of 0.5 would be refused the same way
    assert.equal(refusal(edit(h, mm, o.id, '0.8', null)), '11029 max_quote_quantity_exceeded');
    assert.equal(o.amount, 6, 'the refused edit left the order as it was');
    // up to the limit is fine, and the edited order itself is not counted twice
    assert.ok(!isReject(edit(h, mm, o.id, '0.7', null)));
    assert.equal(o.amount, 7);
  });

  it("refuses flagging an order mmp when that would pass max_quote_quantity", () => {
    const h = setup();
    const mm = h.user('10');
    mmpConfig(h, mm, '1');
    const price = band(h).top;
    placeMmp(h, mm, 1, price, '0.6');
    const plain = h.ok(mm, 'sell', C, priceToNumber(price).toString(), '0.5').order;
    assert.equal(refusal(edit(h, mm, plain.id, '0.5', null, true)), '11029 max_quote_quantity_exceeded');
    assert.equal(plain.mmp, null);
  });

  it("refuses an amount increase at a price that today's band no longer allows", () => {
    const h = setup();
    const a = h.user('10');
    const high = band(h).top;
    const o = h.ok(a, 'sell', C, priceToNumber(high).toString(), '0.2').order;
    // the index falls: the mark and the band with it, below the resting order's price
    h.apply({ t: 'index', currency: 'BTC', price: 90_000, manual: true, by: null });
    assert.ok(band(h).max < high, 'the band moved below the order');
    assert.equal(refusal(edit(h, a, o.id, '0.3', null)), '10007');
    assert.equal(o.amount, 2);
    assert.equal(o.price, high);
    // a decrease in place is never refused by the band; the increase at a price inside it is accepted
    assert.ok(!isReject(edit(h, a, o.id, '0.1', null)), 'a decrease in place is never refused by the band');
    assert.equal(o.amount, 1);
    assert.ok(!isReject(edit(h, a, o.id, '0.3', band(h).top)));
    assert.equal(o.amount, 3);
  });

  it("refuses an amount increase of a buy below today's band", () => {
    const h = setup();
    const a = h.user('10');
    const low = px('0.0100');
    const o = h.ok(a, 'buy', C, '0.0100', '0.2').order;
    h.apply({ t: 'index', currency: 'BTC', price: 150_000, manual: true, by: null });
    assert.ok(band(h).min > low, 'the band moved above the order');
    assert.equal(refusal(edit(h, a, o.id, '0.3', null)), '10005');
    assert.equal(o.amount, 2);
  });

  it('cuts a reduce-only increase to what is left to reduce, as a new reduce-only order is cut', () => {
    const h = setup();
    const [a, maker] = [h.user('10'), h.user('10')];
    const top = priceToNumber(band(h).top).toString();
    h.ok(maker, 'sell', C, top, '0.3');
    h.ok(a, 'buy', C, top, '0.3');
    const o = h.ok(a, 'sell', C, top, '0.1', { reduceOnly: true }).order;
    const r = edit(h, a, o.id, '0.5', null);
    assert.ok(!isReject(r));
    assert.equal(o.amount, 3, 'a long of 0.3 leaves 0.3 to reduce');
  });
});
