// Engine-level order options (API.md 3.3 order rules): time in force and order types, post_only
// and its repricing, reduce_only (also within one sweep), advanced USD prices and good_til_day. No
// HTTP: commands go straight into Exchange.apply. Every expected number is worked out by hand in the
// comment next to it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stepTick } from '../../src/domain/instrument.ts';
import { amt, px, sat } from '../helpers/engine.ts';
import { C, rejected, setup } from './sampleMarket.ts';

describe('time in force and order types', () => {
  it('rests a good_til_cancelled limit order that does not cross', () => {
    const h = setup();
    const u = h.user('1');
    const r = h.ok(u, 'buy', C, '0.0050', '0.2');
    assert.equal(r.order.state, 'open');
    assert.equal(r.trades.length, 0);
    assert.deepEqual(h.depth(C, 'buy'), [[50, 2]]);
    assert.deepEqual(h.openOrders(u), [r.order]);
  });

  it('immediate_or_cancel keeps its fills and cancels the rest', () => {
    const h = setup();
    const [m, t] = [h.user('10'), h.user('10')];
    h.ok(m, 'sell', C, '0.0100', '0.2');
    const r = h.ok(t, 'buy', C, '0.0100', '0.5', { tif: 'immediate_or_cancel' });
    assert.equal(r.order.state, 'cancelled');
    assert.equal(r.order.filled, 2);
    assert.equal(r.trades.length, 1);
    assert.equal(h.position(t, C).size, 2);
    assert.deepEqual(h.depth(C, 'buy'), []);
    assert.deepEqual(h.openOrders(t), []);
    assert.equal(h.ex.trading.risk.account(h.u(t), 'BTC').ordersIM, 0);
  });

  it('fill_or_kill that cannot fill completely is cancelled with no trades and nothing moved', () => {
    const h = setup();
    const [m, t] = [h.user('10'), h.user('10')];
    const mo = h.ok(m, 'sell', C, '0.0100', '0.2').order;
    const before = [h.balance(m), h.balance(t), h.feeBalance()];
    const r = h.ok(t, 'buy', C, '0.0100', '0.3', { tif: 'fill_or_kill' });
    assert.equal(r.order.state, 'cancelled');
    assert.equal(r.order.filled, 0);
    assert.deepEqual(r.trades, []);
    assert.deepEqual([h.balance(m), h.balance(t), h.feeBalance()], before);
    assert.equal(mo.remaining, 2);
    assert.equal(h.position(t, C).size, 0);
    assert.deepEqual(h.depth(C, 'buy'), []);

    const r2 = h.ok(t, 'buy', C, '0.0100', '0.2', { tif: 'fill_or_kill' });
    assert.equal(r2.order.state, 'filled');
    assert.equal(r2.trades.length, 1);
  });


  it('a market order sweeps several levels, cancels what it cannot fill and never rests', () => {
    const h = setup();
    const [m1, m2, t] = [h.user('10'), h.user('10'), h.user('10')];
    h.ok(m1, 'sell', C, '0.0100', '0.1');
    h.ok(m2, 'sell', C, '0.0140', '0.1');
    const r = h.ok(t, 'buy', C, null, '1', { type: 'market' });
    assert.deepEqual(r.trades.map((x) => [x.price, x.lots]), [[100, 1], [140, 1]]);
    assert.equal(r.order.state, 'cancelled');
    assert.equal(r.order.filled, 2);
    assert.deepEqual(h.depth(C, 'buy'), []);
    assert.deepEqual(h.depth(C, 'sell'), []);
    assert.deepEqual(h.openOrders(t), []);
    // premium 0.001 + 0.0014, fees 2 * 0.00003
    assert.equal(h.balance(t), sat('10') - sat('0.0024') - sat('0.00006'));
  });

  it('a market order against an empty side is cancelled with zero fills, not refused', () => {
    const h = setup();
    const t = h.user('1');
    const r = h.ok(t, 'sell', C, null, '0.5', { type: 'market' });
    assert.equal(r.order.state, 'cancelled');
    assert.equal(r.order.filled, 0);
    assert.deepEqual(r.trades, []);
    assert.equal(h.balance(t), sat('1'));
    assert.deepEqual(h.depth(C, 'sell'), []);
  });
});

describe('post_only', () => {
  it('moves a crossing buy one tick inside the spread and never takes liquidity (0.0005 tick above 0.005)', () => {
    const h = setup();
    const [m, u] = [h.user('10'), h.user('10')];
    h.ok(m, 'sell', C, '0.0100', '0.1');
    const r = h.ok(u, 'buy', C, '0.0120', '0.2', { postOnly: true });
    assert.equal(r.trades.length, 0);
    assert.equal(r.order.price, px('0.0095'));
    assert.equal(r.order.state, 'open');
    assert.deepEqual(h.depth(C, 'buy'), [[95, 2]]);
    assert.deepEqual(h.depth(C, 'sell'), [[100, 1]]);
    assert.equal(h.position(u, C).size, 0);
    assert.equal(h.balance(u), sat('10'));
    // the reservation is taken at the price the order rests at: 0.2 * 0.0095 + 0.2 * 0.0003
    assert.equal(h.ex.trading.risk.account(h.u(u), 'BTC').ordersIM, sat('0.0019') + sat('0.00006'));
  });

  it('uses the 0.0001 tick below 0.005 and the 0.0005 tick from 0.005 when repricing', () => {
    const cases: Array<[makerSide: 'buy' | 'sell', maker: string, limit: string, expected: string]> = [
      ['sell', '0.0050', '0.0060', '0.0049'], // ask 0.0050: one tick below is 0.0049
      ['sell', '0.0030', '0.0030', '0.0029'],
      ['sell', '0.0055', '0.0100', '0.0050'], // ask 0.0055: one 0.0005 tick below
      ['buy', '0.0049', '0.0040', '0.0050'], // bid 0.0049: the next price up is 0.0050
      ['buy', '0.0050', '0.0050', '0.0055'], // bid 0.0050: from 0.005 the tick is 0.0005
      ['buy', '0.0030', '0.0010', '0.0031'],
    ];
    for (const [makerSide, makerPrice, limit, expected] of cases) {
      const h = setup();
      const [m, u] = [h.user('10'), h.user('10')];
      h.ok(m, makerSide, C, makerPrice, '0.1');
      const r = h.ok(u, makerSide === 'sell' ? 'buy' : 'sell', C, limit, '0.1', { postOnly: true });
      assert.equal(r.order.price, px(expected), `maker ${makerSide} ${makerPrice}, post-only limit ${limit}`);
      assert.equal(r.trades.length, 0);
      assert.equal(r.order.state, 'open');
    }
    const inst = setup().inst(C);
    assert.deepEqual([stepTick(inst, 50, -1), stepTick(inst, 55, -1), stepTick(inst, 49, 1), stepTick(inst, 50, 1), stepTick(inst, 2, -1)], [49, 50, 50, 55, 1]);
  });

  it('leaves a non-crossing post-only order at its price', () => {
    const h = setup();
    const [m, u] = [h.user('10'), h.user('10')];
    h.ok(m, 'sell', C, '0.0100', '0.1');
    const r = h.ok(u, 'buy', C, '0.0090', '0.1', { postOnly: true });
    assert.equal(r.order.price, px('0.0090'));
  });

  it('rejects a crossing post_only + reject_post_only order with 11054 and creates nothing', () => {
    const h = setup();
    const [m, u] = [h.user('10'), h.user('10')];
    h.ok(m, 'sell', C, '0.0100', '0.1');
    const next = h.ex.nextOrderId;
    rejected(h.place(u, 'buy', C, '0.0100', '0.1', { postOnly: true, rejectPostOnly: true }), 11054);
    assert.equal(h.ex.nextOrderId, next);
    assert.deepEqual(h.depth(C, 'buy'), []);
    assert.deepEqual(h.depth(C, 'sell'), [[100, 1]]);
  });

  it('refuses a repriced post-only order that would leave the price band (or reach 0)', () => {
    const h = setup();
    const [m, m2, u] = [h.user('10'), h.user('10'), h.user('10')];
    const band = h.ex.markets.get(h.inst(C).id)!;
    assert.deepEqual([band.minPrice, band.maxPrice], [1, 146]);
    // ask at the lowest price: one tick inside would be 0
    h.ok(m, 'sell', C, '0.0001', '0.1');
    rejected(h.place(u, 'buy', C, '0.0010', '0.1', { postOnly: true }), 10005);
    // bid at 0.0145: one tick above is 0.0150, beyond max_price 0.0146
    h.apply({ t: 'cancel_all', userId: m, currency: null, instrument: null, side: null, label: null });
    h.ok(m2, 'buy', C, '0.0145', '0.1');
    rejected(h.place(u, 'sell', C, '0.0100', '0.1', { postOnly: true }), 10007);
    assert.deepEqual(h.openOrders(u), []);
  });
});

describe('reduce_only', () => {
  it('is refused when there is nothing to reduce', () => {
    const h = setup();
    const u = h.user('10');
    rejected(h.place(u, 'sell', C, '0.0100', '0.1', { reduceOnly: true }), 11030, 'reduce_only');
    rejected(h.place(u, 'buy', C, '0.0100', '0.1', { reduceOnly: true }), 11030, 'reduce_only');
  });

  it('cuts the excess over the position, counting reduce-only orders already open', () => {
    const h = setup();
    const [u, m] = [h.user('10'), h.user('10')];
    h.ok(m, 'sell', C, '0.0100', '0.3');
    h.ok(u, 'buy', C, '0.0100', '0.3');
    const r1 = h.ok(u, 'sell', C, '0.0140', '0.5', { reduceOnly: true });
    assert.equal(r1.order.amount, 3);
    assert.equal(r1.order.remaining, 3);
    h.apply({ t: 'cancel', userId: u, orderId: r1.order.id });
    h.ok(u, 'sell', C, '0.0140', '0.2', { reduceOnly: true });
    // 0.3 long, 0.2 already offered reduce-only: only 0.1 is left to reduce
    const r2 = h.ok(u, 'sell', C, '0.0135', '0.5', { reduceOnly: true });
    assert.equal(r2.order.amount, 1);
    rejected(h.place(u, 'sell', C, '0.0130', '0.1', { reduceOnly: true }), 11030, 'reduce_only');
    // a short is reduced by buys
    rejected(h.place(m, 'sell', C, '0.0050', '0.1', { reduceOnly: true }), 11030, 'reduce_only');
    const r3 = h.ok(m, 'buy', C, '0.0050', '1', { reduceOnly: true });
    assert.equal(r3.order.amount, 3);
  });

  it('never lets a reduce-only order open a position: it fills only up to the position', () => {
    const h = setup();
    const [u, m, b] = [h.user('10'), h.user('10'), h.user('10')];
    h.ok(m, 'sell', C, '0.0100', '0.3');
    h.ok(u, 'buy', C, '0.0100', '0.3');
    h.ok(b, 'buy', C, '0.0090', '1');
    const r = h.ok(u, 'sell', C, '0.0090', '0.8', { reduceOnly: true, tif: 'immediate_or_cancel' });
    assert.equal(r.order.filled, 3);
    assert.equal(h.position(u, C).size, 0);
  });

  it('trims resting reduce-only orders when the position shrinks through other orders', () => {
    const h = setup();
    const [u, m, b, x] = [h.user('10'), h.user('10'), h.user('10'), h.user('10')];
    h.ok(m, 'sell', C, '0.0100', '0.3');
    h.ok(u, 'buy', C, '0.0100', '0.3');
    const ro = h.ok(u, 'sell', C, '0.0140', '0.3', { reduceOnly: true }).order;
    h.ok(b, 'buy', C, '0.0090', '1');
    // an ordinary sell of 0.2 leaves a 0.1 long: the reduce-only offer shrinks to 0.1
    h.ok(u, 'sell', C, '0.0090', '0.2');
    assert.equal(h.position(u, C).size, 1);
    assert.equal(ro.remaining, 1);
    assert.deepEqual(h.depth(C, 'sell'), [[140, 1]]);
    assert.equal(h.u(u).exposures.get(h.inst(C).id)!.sellOpenLots, 1);
    // flat: the reduce-only offer has nothing left to reduce and is cancelled
    h.ok(u, 'sell', C, '0.0090', '0.1');
    assert.equal(ro.state, 'cancelled');
    assert.deepEqual(h.depth(C, 'sell'), []);
    // so a buyer at 0.0140 cannot turn it into a short
    h.ok(x, 'buy', C, '0.0140', '0.3');
    assert.equal(h.position(u, C).size, 0);
  });
});

describe('reduce_only within one sweep', () => {
  // u is long and offers its position twice: an ordinary sell at 0.0100, a reduce-only one at 0.0105
  function offeredTwice(long = '0.3', ordinaryAmount = '0.3', reduceOnlyAmount = '0.3') {
    const h = setup();
    const [u, m, x] = [h.user('10'), h.user('10'), h.user('10')];
    h.ok(m, 'sell', C, '0.0100', long);
    h.ok(u, 'buy', C, '0.0100', long);
    const ordinary = h.ok(u, 'sell', C, '0.0100', ordinaryAmount).order;
    const ro = h.ok(u, 'sell', C, '0.0105', reduceOnlyAmount, { reduceOnly: true }).order;
    return { h, u, m, x, ordinary, ro };
  }

  it('a buyer sweeping both offers stops short of the reduce-only one once the position is closed', () => {
    const { h, u, x, ordinary, ro } = offeredTwice();
    const r = h.ok(x, 'buy', C, '0.0110', '0.6');
    assert.deepEqual(r.trades.map((t) => [t.makerOrder.id, t.price, t.lots]), [[ordinary.id, 100, 3]]);
    assert.equal(h.position(u, C).size, 0, 'the reduce-only order did not open a short');
    assert.equal(ro.state, 'cancelled');
    assert.equal(ro.cancelReason, 'reduce_only');
    // the rest of the buy rests as usual
    assert.equal(r.order.remaining, 3);
    assert.deepEqual(h.depth(C, 'buy'), [[110, 3]]);
    assert.deepEqual(h.depth(C, 'sell'), []);
  });

  it('a reduce-only order partly reduced by the same sweep fills only what is left of the position', () => {
    const { h, u, x, ordinary, ro } = offeredTwice('0.5', '0.3', '0.5');
    const r = h.ok(x, 'buy', C, '0.0110', '1');
    assert.deepEqual(r.trades.map((t) => [t.makerOrder.id, t.lots]), [[ordinary.id, 3], [ro.id, 2]]);
    assert.equal(h.position(u, C).size, 0);
    assert.equal(ro.state, 'filled');
    assert.equal(ro.amount, 2, 'cut to the 0.2 left to reduce, then filled');
    assert.equal(r.order.remaining, 5);
  });

  it('a market buy pays for everything reduce-only makers may fill: refused when funds would not cover it', () => {
    const h = setup();
    const [u, m, x] = [h.user('10'), h.user('10'), h.user('0.0035')];
    h.ok(m, 'sell', C, '0.0100', '0.5');
    h.ok(u, 'buy', C, '0.0100', '0.5');
    // u offers its 0.5 long three times: 0.3 ordinary, then 0.2 and 0.3 reduce-only
    h.ok(u, 'sell', C, '0.0100', '0.3');
    h.ok(u, 'sell', C, '0.0105', '0.2', { reduceOnly: true });
    h.ok(u, 'sell', C, '0.0110', '0.3', { reduceOnly: true });
    // the sweep would take 0.3 at 0.0100 and then 0.2 at 0.0105 (the newer reduce-only order is cut):
    // 0.0051 BTC of premium, more than x holds
    rejected(h.place(x, 'buy', C, null, '0.8', { type: 'market' }), 10009, 'not_enough_funds');
    assert.equal(h.balance(x), sat('0.0035'));
    assert.equal(h.position(u, C).size, 5);
  });

  it('fill_or_kill counts only what reduce-only makers can still fill: killed whole, or filled from others', () => {
    const { h, u, x, ordinary, ro } = offeredTwice();
    const before = [h.balance(u), h.balance(x)];
    // 0.6 would need the reduce-only offer, which can fill nothing once 0.3 is bought from u
    const killed = h.ok(x, 'buy', C, '0.0110', '0.6', { tif: 'fill_or_kill' });
    assert.equal(killed.order.state, 'cancelled');
    assert.equal(killed.order.filled, 0);
    assert.deepEqual(killed.trades, []);
    assert.deepEqual([h.balance(u), h.balance(x)], before);
    assert.equal(h.position(u, C).size, 3);
    assert.deepEqual([ordinary.remaining, ro.remaining], [3, 3], 'nothing in the book moved');
    // with another seller behind it, the same order fills whole: 0.3 from u, 0.3 from the other
    const other = h.user('10');
    const otherAsk = h.ok(other, 'sell', C, '0.0110', '0.3').order;
    const filled = h.ok(x, 'buy', C, '0.0110', '0.6', { tif: 'fill_or_kill' });
    assert.equal(filled.order.state, 'filled');
    assert.deepEqual(filled.trades.map((t) => [t.makerOrder.id, t.lots]), [[ordinary.id, 3], [otherAsk.id, 3]]);
    assert.equal(h.position(u, C).size, 0);
    assert.equal(ro.state, 'cancelled');
  });
});

describe('advanced prices', () => {
  it('converts a USD price to coin on the grid, rounding towards the passive side', () => {
    const h = setup();
    const u = h.user('10');
    // 512 USD / 100000 = 0.00512 coin: a buy rounds down to 0.0050, a sell up to 0.0055
    const place = (side: 'buy' | 'sell') =>
      h.apply({ t: 'place', userId: u, side: side === 'buy' ? 0 : 1, instrument: C, price: null, advanced: 'usd', advPrice: 512, lots: amt('0.1'), type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null }) as { order: { price: number; advanced: string } };
    assert.equal(place('buy').order.price, px('0.0050'));
    const sell = place('sell').order;
    assert.equal(sell.price, px('0.0055'));
    assert.equal(sell.advanced, 'usd');
  });
});

describe('good_til_day', () => {
  it('expires at the next 08:00 UTC through expire_orders, with cancel_reason good_til_day', () => {
    const h = setup();
    const u = h.user('10');
    const gtd = h.ok(u, 'buy', C, '0.0050', '0.1', { tif: 'good_til_day' }).order;
    const gtc = h.ok(u, 'buy', C, '0.0040', '0.1').order;
    const eight = Date.UTC(2026, 0, 6, 8);
    assert.equal(gtd.expiresAt, eight);
    assert.equal(h.ex.trading.nextExpiry(), eight);
    assert.equal(h.apply({ t: 'expire_orders' }, eight - 1), 0);
    assert.equal(gtd.state, 'open');
    assert.equal(h.apply({ t: 'expire_orders' }, eight), 1);
    assert.equal(gtd.state, 'cancelled');
    assert.equal(gtd.cancelReason, 'good_til_day');
    assert.equal(gtc.state, 'open');
    assert.deepEqual(h.depth(C, 'buy'), [[40, 1]]);
    assert.deepEqual(h.openOrders(u), [gtc]);
    // placed exactly at 08:00, a day order lives until 08:00 the next day
    const next = h.ok(u, 'buy', C, '0.0050', '0.1', { tif: 'good_til_day' }).order;
    assert.equal(next.expiresAt, eight + 24 * 3600 * 1000);
  });
});
