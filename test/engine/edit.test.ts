// private/edit in the engine (API.md 3.3 "Also, for Deribit clients"): a size decrease keeps time
// priority, a price change or a size increase loses it, an edit that crosses trades at once, risk
// is checked again, and a refused edit leaves the order as it was.
import { describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import { serialize, restore, stateHash } from '../../src/engine/snapshot.ts';
import type { PlaceResult } from '../../src/engine/trading.ts';
import { EXP_JAN, Harness, amt, px, spec } from '../helpers/engine.ts';

// Mark ~0.0037 coin, band [0.0001, 0.0146].
const C = 'BTC-30JAN26-130000-C';

function setup(): Harness {
  return Harness.market([spec('BTC', EXP_JAN, 130000, 'call')]);
}

function edit(h: Harness, userId: number, orderId: number, amount: string, price: string | null, o: { postOnly?: boolean; rejectPostOnly?: boolean } = {}) {
  return h.apply({ t: 'edit', userId, orderId, lots: amt(amount), price: price === null ? null : px(price), postOnly: o.postOnly ?? null, rejectPostOnly: o.rejectPostOnly ?? null });
}

function okEdit(h: Harness, userId: number, orderId: number, amount: string, price: string | null, o: { postOnly?: boolean; rejectPostOnly?: boolean } = {}): PlaceResult {
  const r = edit(h, userId, orderId, amount, price, o);
  if (isReject(r)) throw new Error(`edit refused: ${r.code} ${r.reason ?? ''}`);
  return r as PlaceResult;
}

describe('private/edit in the engine', () => {
  it('keeps time priority when only the size decreases', () => {
    const h = setup();
    const [a, b, t] = [h.user('10'), h.user('10'), h.user('10')];
    const oa = h.ok(a, 'sell', C, '0.0100', '0.5').order;
    const ob = h.ok(b, 'sell', C, '0.0100', '0.5').order;
    const r = okEdit(h, a, oa.id, '0.2', null);
    assert.equal(r.order, oa);
    assert.deepEqual(r.trades, []);
    assert.equal(oa.amount, 2);
    assert.equal(oa.remaining, 2);
    assert.deepEqual(h.depth(C, 'sell'), [[100, 7]]);
    // A is still first in the queue
    const fill = h.ok(t, 'buy', C, '0.0100', '0.1');
    assert.equal(fill.trades[0].makerOrder.id, oa.id);
    assert.equal(ob.remaining, 5);
  });

  it('loses time priority on a size increase', () => {
    const h = setup();
    const [a, b, t] = [h.user('10'), h.user('10'), h.user('10')];
    const oa = h.ok(a, 'sell', C, '0.0100', '0.2').order;
    const ob = h.ok(b, 'sell', C, '0.0100', '0.2').order;
    okEdit(h, a, oa.id, '0.3', null);
    assert.equal(oa.remaining, 3);
    assert.deepEqual(h.depth(C, 'sell'), [[100, 5]]);
    const fill = h.ok(t, 'buy', C, '0.0100', '0.1');
    assert.equal(fill.trades[0].makerOrder.id, ob.id, 'B is now first');
  });

  it('loses time priority on a price change, even back to the same level', () => {
    const h = setup();
    const [a, b, t] = [h.user('10'), h.user('10'), h.user('10')];
    const oa = h.ok(a, 'sell', C, '0.0100', '0.2').order;
    const ob = h.ok(b, 'sell', C, '0.0100', '0.2').order;
    okEdit(h, a, oa.id, '0.2', '0.0110');
    assert.deepEqual(h.depth(C, 'sell'), [[100, 2], [110, 2]]);
    okEdit(h, a, oa.id, '0.2', '0.0100');
    assert.equal(oa.price, px('0.0100'));
    const fill = h.ok(t, 'buy', C, '0.0100', '0.1');
    assert.equal(fill.trades[0].makerOrder.id, ob.id);
  });

  it('trades at once when the new price crosses, and returns the trades with the order', () => {
    const h = setup();
    const [a, b] = [h.user('10'), h.user('10')];
    const ask = h.ok(a, 'sell', C, '0.0100', '0.3').order;
    const bid = h.ok(b, 'buy', C, '0.0090', '0.2').order;
    const r = okEdit(h, b, bid.id, '0.2', '0.0100');
    assert.equal(r.trades.length, 1);
    assert.equal(r.trades[0].price, px('0.0100'));
    assert.equal(r.trades[0].lots, 2);
    assert.equal(r.trades[0].makerOrder, ask);
    assert.equal(bid.state, 'filled');
    assert.equal(h.position(b, C).size, 2);
    assert.equal(h.position(a, C).size, -2);
    assert.deepEqual(h.depth(C, 'buy'), []);
  });

  it('re-checks risk: a buy edited beyond the funds is refused with 10009 and stays as it was', () => {
    const h = setup();
    const a = h.user('0.005');
    const o = h.ok(a, 'buy', C, '0.0100', '0.3').order;
    const reserved = o.reserved;
    const r = edit(h, a, o.id, '1', null);
    assert.ok(isReject(r));
    assert.equal(r.code, 10009);
    assert.equal(o.amount, 3);
    assert.equal(o.reserved, reserved);
    assert.deepEqual(h.depth(C, 'buy'), [[100, 3]]);
    // a smaller edit frees funds and is accepted
    okEdit(h, a, o.id, '0.1', null);
    assert.ok(o.reserved < reserved);
  });

  it('refuses unknown, foreign and closed orders, off-tick prices and amounts not above the filled part', () => {
    const h = setup();
    const [a, b, t] = [h.user('10'), h.user('10'), h.user('10')];
    const o = h.ok(a, 'sell', C, '0.0100', '0.5').order;
    assert.equal((edit(h, a, 999, '0.1', null) as { code: number }).code, 10004);
    assert.equal((edit(h, b, o.id, '0.1', null) as { code: number }).code, 10004);
    assert.equal((edit(h, a, o.id, '0.5', '0.0102') as { code: number }).code, 10043, 'above 0.005 the tick is 0.0005');
    h.ok(t, 'buy', C, '0.0100', '0.2');
    assert.equal((edit(h, a, o.id, '0.2', null) as { code: number }).code, 10021);
    const r = okEdit(h, a, o.id, '0.3', null);
    assert.equal(r.order.remaining, 1);
    h.apply({ t: 'cancel', userId: a, orderId: o.id });
    assert.equal((edit(h, a, o.id, '0.3', null) as { code: number }).code, 10010);
  });

  it('rejects a crossing post-only edit with reject_post_only, and reprices it without', () => {
    const h = setup();
    const [a, b] = [h.user('10'), h.user('10')];
    h.ok(a, 'sell', C, '0.0100', '0.1');
    const bid = h.ok(b, 'buy', C, '0.0080', '0.1', { postOnly: true }).order;
    assert.equal((edit(h, b, bid.id, '0.1', '0.0100', { rejectPostOnly: true }) as { code: number }).code, 11054);
    const r = okEdit(h, b, bid.id, '0.1', '0.0100');
    assert.deepEqual(r.trades, []);
    assert.equal(bid.price, px('0.0095'));
  });

  it('keeps the snapshot canonical after edits', () => {
    const h = setup();
    const [a, b] = [h.user('10'), h.user('10')];
    const o = h.ok(a, 'sell', C, '0.0100', '0.5').order;
    h.ok(b, 'sell', C, '0.0100', '0.5');
    okEdit(h, a, o.id, '0.3', null);
    okEdit(h, a, o.id, '0.6', '0.0105');
    assert.equal(stateHash(restore(serialize(h.ex))), stateHash(h.ex));
  });
});

test('an edit that crosses only another user’s liquidity is not refused for the caller’s deeper order', () => {
  const h = setup();
  const [a, b] = [h.user('10'), h.user('10')];
  h.ok(b, 'sell', C, '0.0100', '0.1');
  h.ok(a, 'sell', C, '0.0110', '0.1');
  const bid = h.ok(a, 'buy', C, '0.0080', '0.1').order;
  // up to 0.011 the edit meets B's 0.1 at 0.010 first, which fills it: A's own ask is never reached
  const r = okEdit(h, a, bid.id, '0.1', '0.0110');
  assert.equal(r.trades.length, 1);
  assert.equal(r.order.state, 'filled');
});
