// Engine-level matching and what a fill moves: price-time priority at the maker's price, fees and
// premium, positions and their PnL, and conservation over a scripted session (API.md 5.1-5.2, 7.2).
// No HTTP: commands go straight into Exchange.apply. Every expected number is worked out by hand in
// the comment next to it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tradeFee } from '../../src/domain/instrument.ts';
import { Harness, px, sat } from '../helpers/engine.ts';
import { C, CH, E, setup } from './sampleMarket.ts';

function sumPositions(h: Harness, instrument: string): number {
  const id = h.inst(instrument).id;
  let s = 0;
  for (const u of h.ex.users.values()) s += u.positions.get(id)?.size ?? 0;
  return s;
}

describe('matching', () => {
  it('fills best price first, then time priority within a level, at the maker price, and rests the remainder', () => {
    const h = setup();
    const [a, b, c, d, t1, t2] = [h.user('10'), h.user('10'), h.user('10'), h.user('10'), h.user('10'), h.user('10')];
    const oa = h.ok(a, 'sell', C, '0.0110', '0.1').order;
    const ob = h.ok(b, 'sell', C, '0.0100', '0.2').order;
    const oc = h.ok(c, 'sell', C, '0.0100', '0.3').order;
    const od = h.ok(d, 'sell', C, '0.0105', '0.1').order;
    assert.deepEqual(h.depth(C, 'sell'), [[100, 5], [105, 1], [110, 1]]);

    // a small taker takes from the head of the best level only: B, not C
    const r1 = h.ok(t1, 'buy', C, '0.0100', '0.1');
    assert.deepEqual(r1.trades.map((t) => [t.makerOrder.id, t.lots, t.price]), [[ob.id, 1, 100]]);
    assert.equal(ob.remaining, 1);
    assert.equal(oc.remaining, 3);

    // a taker with limit 0.0105 and room above the maker prices sweeps two levels, best first,
    // each fill at the maker's price, and rests what the limit leaves over
    const r2 = h.ok(t2, 'buy', C, '0.0105', '0.6');
    assert.deepEqual(r2.trades.map((t) => [t.makerOrder.id, t.lots, t.price]), [[ob.id, 1, 100], [oc.id, 3, 100], [od.id, 1, 105]]);
    assert.equal(r2.order.state, 'open');
    assert.equal(r2.order.remaining, 1);
    assert.equal(r2.order.filled, 5);
    assert.deepEqual(h.depth(C, 'buy'), [[105, 1]]);
    assert.deepEqual(h.depth(C, 'sell'), [[110, 1]]);
    assert.equal(oa.remaining, 1);
    for (const o of [ob, oc, od]) assert.equal(o.state, 'filled');

    // premium by hand: 0.1*0.0100 + 0.3*0.0100 + 0.1*0.0105 = 0.00505 coin; fees 0.0003 per
    // contract on 0.5 contracts = 0.00015; the resting 0.1 @ 0.0105 reserves 0.00105 + 0.00003
    assert.equal(h.balance(t2), sat('10') - sat('0.00505') - sat('0.00015'));
    const acct = h.ex.trading.risk.account(h.u(t2), 'BTC');
    assert.equal(acct.ordersIM, sat('0.00105') + sat('0.00003'));
    // positions: +0.1 T1, +0.5 T2, -0.2 B, -0.3 C, -0.1 D
    assert.deepEqual([t1, t2, b, c, d].map((u) => h.position(u, C).size), [1, 5, -2, -3, -1]);
    assert.equal(sumPositions(h, C), 0);
  });

  it('records the order state of maker and taker right after each trade', () => {
    const h = setup();
    const [m1, m2, t] = [h.user('10'), h.user('10'), h.user('10')];
    h.ok(m1, 'sell', C, '0.0100', '0.1');
    h.ok(m2, 'sell', C, '0.0105', '0.3');
    const r = h.ok(t, 'buy', C, '0.0105', '0.3');
    assert.deepEqual(r.trades.map((x) => [x.makerState, x.takerState]), [['filled', 'open'], ['open', 'filled']]);
    assert.equal(r.order.state, 'filled');
  });

  it('sells into bids best first too', () => {
    const h = setup();
    const [b1, b2, s] = [h.user('10'), h.user('10'), h.user('10')];
    h.ok(b1, 'buy', C, '0.0090', '0.2');
    h.ok(b2, 'buy', C, '0.0100', '0.2');
    const r = h.ok(s, 'sell', C, '0.0090', '0.3');
    assert.deepEqual(r.trades.map((t) => [t.makerOrder.userId, t.lots, t.price]), [[b2, 2, 100], [b1, 1, 90]]);
    assert.deepEqual(h.depth(C, 'buy'), [[90, 1]]);
  });
});

describe('fees and premium', () => {
  it('charges 0.0003 per contract to each side and moves the premium buyer -> seller exactly', () => {
    const h = setup();
    const [m, t] = [h.user('1'), h.user('1')];
    h.ok(m, 'sell', C, '0.0100', '0.3');
    const fee0 = h.feeBalance();
    const r = h.ok(t, 'buy', C, '0.0100', '0.3');
    // premium 0.3 * 0.0100 = 0.003; fee 0.3 * min(0.0003, 0.125*0.0100=0.00125) = 0.00009 each
    assert.equal(r.trades[0].makerFee, 9000);
    assert.equal(r.trades[0].takerFee, 9000);
    assert.equal(h.balance(m), sat('1') + 300_000 - 9000);
    assert.equal(h.balance(t), sat('1') - 300_000 - 9000);
    assert.equal(h.feeBalance() - fee0, 18_000);
    assert.equal(h.u(m).accounts.BTC.fees, 9000);
    assert.equal(r.order.commission, 9000);
  });

  it('caps the fee at 12.5% of the price for cheap options', () => {
    const h = setup();
    const [m, t] = [h.user('1'), h.user('1')];
    h.ok(m, 'sell', C, '0.0010', '1');
    const r = h.ok(t, 'buy', C, '0.0010', '1');
    // 1 * min(0.0003, 0.125 * 0.0010 = 0.000125) = 0.000125 coin = 12500 sat each side
    assert.equal(r.trades[0].makerFee, 12_500);
    assert.equal(r.trades[0].takerFee, 12_500);
    assert.equal(h.balance(m), sat('1') + sat('0.001') - 12_500);
    assert.equal(h.balance(t), sat('1') - sat('0.001') - 12_500);
    assert.equal(h.feeBalance(), 25_000);
  });

  it('applies the cap exactly at its boundary: 0.0024 pays full commission, 0.0023 pays 12.5%', () => {
    const h = setup();
    const inst = h.inst(C);
    // 0.125 * 0.0024 = 0.0003 -> 0.1 contract pays 0.00003 = 3000 sat
    assert.equal(tradeFee(inst, px('0.0024'), 1, inst.takerCommission), 3000);
    // 0.125 * 0.0023 = 0.0002875 -> 0.1 contract pays 0.00002875 = 2875 sat
    assert.equal(tradeFee(inst, px('0.0023'), 1, inst.takerCommission), 2875);
    // ETH lot = 1 contract: 0.125 * 0.0001 = 0.0000125 = 1250 sat
    assert.equal(tradeFee(h.inst(E), 1, 1, 30_000), 1250);
  });

  it('rounds a fee with a fraction of a satoshi up to the next satoshi', () => {
    const h = setup();
    const [m, t] = [h.user('1'), h.user('1')];
    h.ok(m, 'sell', CH, '0.0001', '0.003');
    const r = h.ok(t, 'buy', CH, '0.0001', '0.003');
    // premium 0.003 * 0.0001 = 0.0000003 = 30 sat; fee 0.003 * 0.0000125 = 3.75 sat -> 4 sat
    assert.equal(r.trades[0].takerFee, 4);
    assert.equal(r.trades[0].makerFee, 4);
    assert.equal(h.balance(t), sat('1') - 30 - 4);
    assert.equal(h.balance(m), sat('1') + 30 - 4);
    assert.equal(h.feeBalance(), 8);
    // 0.001 * min(0.0003, 0.125 * 0.0003 = 0.0000375) = 3.75e-8 coin -> 4 sat
    assert.equal(tradeFee(h.inst(CH), px('0.0003'), 1, 30_000), 4);
  });

  it('settles ETH options in ETH', () => {
    const h = setup();
    const [m, t] = [h.user('0', '10'), h.user('0', '10')];
    h.ok(m, 'sell', E, '0.0100', '2');
    h.ok(t, 'buy', E, '0.0100', '2');
    // premium 2 * 0.0100 = 0.02 ETH, fee 2 * 0.0003 = 0.0006 ETH
    assert.equal(h.balance(t, 'ETH'), sat('10') - sat('0.02') - sat('0.0006'));
    assert.equal(h.balance(m, 'ETH'), sat('10') + sat('0.02') - sat('0.0006'));
    assert.equal(h.feeBalance('ETH'), sat('0.0012'));
    assert.equal(h.feeBalance('BTC'), 0);
  });
});

describe('positions', () => {
  it('keeps the average price through open cost and realizes PnL on partial closes and flips', () => {
    const h = setup();
    const [p, mm] = [h.user('10'), h.user('10')];
    h.ok(mm, 'sell', C, '0.0100', '0.5');
    h.ok(p, 'buy', C, '0.0100', '0.5');
    h.ok(mm, 'sell', C, '0.0120', '0.5');
    h.ok(p, 'buy', C, '0.0120', '0.5');
    // long 1.0 for 0.005 + 0.006 = 0.011 coin: average 0.0110
    let pos = h.position(p, C);
    assert.deepEqual([pos.size, pos.openCost, pos.realizedPnl], [10, sat('0.011'), 0]);
    assert.equal(h.position(mm, C).openCost, -sat('0.011'));

    h.ok(mm, 'buy', C, '0.0130', '0.4');
    h.ok(p, 'sell', C, '0.0130', '0.4');
    // closes 0.4 of 1.0: cost 0.4 * 0.011 = 0.0044, proceeds 0.4 * 0.0130 = 0.0052, realized +0.0008
    pos = h.position(p, C);
    assert.deepEqual([pos.size, pos.openCost, pos.realizedPnl], [6, sat('0.0066'), sat('0.0008')]);
    // the counterparty bought back 0.4 of its 1.0 short: realized -0.0008
    assert.equal(h.position(mm, C).realizedPnl, -sat('0.0008'));

    h.ok(mm, 'buy', C, '0.0090', '0.8');
    h.ok(p, 'sell', C, '0.0090', '0.8');
    // closes the remaining 0.6 (cost 0.0066) for 0.6 * 0.0090 = 0.0054: realized -0.0012, total
    // -0.0004; then opens a 0.2 short at 0.0090: open cost -0.0018
    pos = h.position(p, C);
    assert.deepEqual([pos.size, pos.openCost, pos.realizedPnl], [-2, -sat('0.0018'), -sat('0.0004')]);
    assert.equal(sumPositions(h, C), 0);
  });
});

describe('conservation after a scripted session', () => {
  it('balances sum to deposits minus withdrawals and positions to zero', () => {
    const h = setup();
    const users = [h.user('5'), h.user('5'), h.user('5')];
    h.ok(users[0], 'sell', C, '0.0100', '0.5');
    h.ok(users[1], 'buy', C, '0.0100', '0.2');
    h.ok(users[2], 'buy', C, null, '1', { type: 'market' });
    h.ok(users[1], 'sell', C, '0.0090', '0.1', { tif: 'immediate_or_cancel' });
    h.apply({ t: 'withdraw', userId: users[2], currency: 'BTC', amount: sat('1') });
    const c = h.ex.conservation();
    assert.equal(c.BTC.balances, c.BTC.expected);
    assert.equal(c.BTC.expected, sat('14'));
    assert.equal(sumPositions(h, C), 0);
  });
});
