// Expiry and settlement in the engine (API.md 7.3): the delivery price is the 30-minute TWAP of the
// journaled index, positions settle at intrinsic value with payouts rounded down and liabilities
// and fees rounded up, the delivery fee is charged on ITM exercise, and all of it is one command.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { TWAP_WINDOW_MS, twap, type SettleResult } from '../../src/engine/settlement.ts';
import type { Order } from '../../src/engine/types.ts';
import { mulberry32 } from '../../src/market/indexFeed.ts';
import { EXP_JAN, Harness, code, spec } from '../helpers/engine.ts';

const MIN = 60_000;
const CALL = spec('BTC', EXP_JAN, 90_000, 'call');
const PUT = spec('BTC', EXP_JAN, 110_000, 'put');
const OTM = spec('BTC', EXP_JAN, 120_000, 'call');

/** A price on the grid near the instrument's mark (text, as the harness takes it). */
function nearMark(h: Harness, name: string): string {
  const mark = h.ex.markets.get(h.inst(name).id)!.markCoin;
  const units = mark >= 0.005 ? Math.round(mark * 2000) * 5 : Math.max(1, Math.round(mark * 1e4));
  return (units / 1e4).toFixed(4);
}

function setIndex(h: Harness, price: number, ts: number): void {
  h.apply({ t: 'index', currency: 'BTC', price, manual: true, by: null }, ts);
}

function conserved(h: Harness): void {
  for (const [c, v] of Object.entries(h.ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
}

describe('twap', () => {
  it('weights each index point by the time it was in force inside the window', () => {
    const pts: [number, number][] = [[0, 100], [10, 200], [20, 400]];
    assert.equal(twap(pts, 0, 30), (100 * 10 + 200 * 10 + 400 * 10) / 30);
  });

  it('carries the point in force when the window opens and ignores points after its end', () => {
    const pts: [number, number][] = [[0, 100], [15, 300], [40, 9999]];
    assert.equal(twap(pts, 10, 30), (100 * 5 + 300 * 15) / 20);
  });

  it('averages only the covered time when the first point falls inside the window, and is NaN with no point', () => {
    assert.equal(twap([[20, 50]], 0, 30), 50);
    assert.ok(Number.isNaN(twap([], 0, 30)));
    assert.ok(Number.isNaN(twap([[31, 50]], 0, 30)));
  });
});

describe('settlement of an expiry', () => {
  function scenario() {
    const h = Harness.market([CALL, PUT, OTM]);
    const [a, b, c, d] = [h.user('50'), h.user('50'), h.user('50'), h.user('50')];
    h.ok(b, 'sell', CALL.name, nearMark(h, CALL.name), '1.5');
    h.ok(a, 'buy', CALL.name, nearMark(h, CALL.name), '1.5');
    h.ok(d, 'sell', PUT.name, nearMark(h, PUT.name), '0.3');
    h.ok(c, 'buy', PUT.name, nearMark(h, PUT.name), '0.3');
    const resting = h.ok(a, 'buy', OTM.name, nearMark(h, OTM.name), '0.2').order;
    // the index over the last hour: 100000 until 07:20, 104000 until 07:50, 99500 until 08:00,
    // then a print after expiry that must not count
    setIndex(h, 100_000, EXP_JAN - 40 * MIN);
    setIndex(h, 104_000, EXP_JAN - 20 * MIN);
    setIndex(h, 99_500, EXP_JAN - 10 * MIN);
    setIndex(h, 150_000, EXP_JAN + 2_000);
    return { h, a, b, c, d, resting };
  }

  it('refuses to settle before expiry and moves no money', () => {
    const h = Harness.market([CALL]);
    const [a, b] = [h.user('50'), h.user('50')];
    h.ok(b, 'sell', CALL.name, nearMark(h, CALL.name), '1');
    h.ok(a, 'buy', CALL.name, nearMark(h, CALL.name), '1');
    const balances = [h.balance(a), h.balance(b), h.feeBalance()];
    const r = h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN - 1);
    assert.ok(isReject(r));
    assert.equal(r.reason, 'not_expired');
    assert.deepEqual([h.balance(a), h.balance(b), h.feeBalance()], balances);
    assert.equal(h.inst(CALL.name).state, 'open');
    assert.equal(h.position(a, CALL.name).size, 10);
  });

  it('settles every position at intrinsic value of the TWAP delivery price, with the delivery fee, in one command', () => {
    const { h, a, b, c, d, resting } = scenario();
    const bal0 = [a, b, c, d].map((u) => h.balance(u));
    const fees0 = h.feeBalance();
    const r = h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN + 5_000) as SettleResult;
    assert.ok(!isReject(r), JSON.stringify(r));

    // delivery price by hand: ten minutes each at 100000, 104000 and 99500, rounded to the cent
    const S = Math.round(((100_000 + 104_000 + 99_500) / 3) * 100) / 100;
    assert.equal(r.deliveryPrice, S);
    assert.equal(S, 101_166.67);
    assert.equal(h.ex.deliveries.at(-1)?.price, S);

    // long 1.5 calls K=90000: payout rounded down, fee min(0.00015, 0.125 x intrinsic) per contract rounded up
    const callPay = 1 - 90_000 / S;
    const aPayout = Math.floor(1.5e8 * callPay);
    const aFee = Math.ceil(1.5e8 * Math.min(0.00015, 0.125 * callPay));
    assert.equal(aFee, 22_500);
    assert.equal(h.balance(a) - bal0[0], aPayout - aFee);
    // the short pays intrinsic rounded up
    assert.equal(h.balance(b) - bal0[1], -Math.ceil(1.5e8 * callPay));
    // long 0.3 puts K=110000
    const putPay = 110_000 / S - 1;
    const cPayout = Math.floor(0.3e8 * putPay);
    const cFee = Math.ceil(0.3e8 * Math.min(0.00015, 0.125 * putPay));
    assert.equal(h.balance(c) - bal0[2], cPayout - cFee);
    assert.equal(h.balance(d) - bal0[3], -Math.ceil(0.3e8 * putPay));
    // the exchange keeps the fees and the rounding residue
    const residue = Math.ceil(1.5e8 * callPay) - aPayout + Math.ceil(0.3e8 * putPay) - cPayout;
    assert.equal(h.feeBalance() - fees0, aFee + cFee + residue);
    conserved(h);

    // positions are gone, the series is delivered, its open order was cancelled for settlement
    for (const u of [a, b, c, d]) for (const s of [CALL, PUT, OTM]) assert.equal(h.position(u, s.name).size, 0);
    for (const s of [CALL, PUT, OTM]) {
      assert.equal(h.inst(s.name).state, 'delivered');
      assert.equal(h.inst(s.name).deliveryPrice, S);
    }
    assert.equal((resting as Order).state, 'cancelled');
    assert.equal((resting as Order).cancelReason, 'settlement');
    assert.equal(h.openOrders(a).length, 0);
    assert.deepEqual(r.instruments.sort(), [CALL.name, PUT.name, OTM.name].sort());
    assert.equal(r.positionsSettled, 4);
  });

  it('leaves nothing of the settled positions in the account totals order entry reads', () => {
    const { h, a, b } = scenario();
    const risk = h.ex.trading.risk;
    // the running totals exist for both accounts, at the version settlement leaves unchanged
    for (const u of [a, b]) assert.notEqual(risk.positions(h.u(u), 'BTC').initialMargin + risk.positions(h.u(u), 'BTC').value, 0);
    h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN + 5_000);
    for (const u of [a, b]) {
      const { value, initialMargin, maintenanceMargin } = risk.positions(h.u(u), 'BTC');
      assert.deepEqual({ value, initialMargin, maintenanceMargin }, { value: 0, initialMargin: 0, maintenanceMargin: 0 }, `user ${u}`);
      assert.equal(risk.account(h.u(u), 'BTC').optionsValue, 0);
    }
  });

  it('settles exactly once: a second settle command is refused and moves no money', () => {
    const { h, a, b } = scenario();
    h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN + 5_000);
    const balances = [h.balance(a), h.balance(b), h.feeBalance()];
    const again = h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN + 6_000);
    assert.ok(isReject(again));
    assert.equal(again.reason, 'nothing_to_settle');
    assert.deepEqual([h.balance(a), h.balance(b), h.feeBalance()], balances);
    assert.equal(h.ex.deliveries.length, 1);
  });

  it('refuses orders in a delivered series with 10020 and in an expired, unsettled one with 10012', () => {
    const { h, a } = scenario();
    h.apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null }, EXP_JAN + 1_000);
    assert.equal(code(h.place(a, 'buy', CALL.name, '0.1', '0.1')), 10012);
    h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN + 5_000);
    assert.equal(code(h.place(a, 'buy', CALL.name, '0.1', '0.1')), 10020);
  });

  it('round-trips the index history and delivery records through a snapshot with an equal state hash', () => {
    const { h } = scenario();
    let copy = restore(serialize(h.ex));
    assert.equal(stateHash(copy), stateHash(h.ex));
    h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN + 5_000);
    copy = restore(serialize(h.ex));
    assert.equal(stateHash(copy), stateHash(h.ex));
    assert.deepEqual(copy.deliveries, h.ex.deliveries);
  });

  it('settles the same way from a snapshot taken before expiry (the TWAP needs only engine state)', () => {
    const { h } = scenario();
    const copy = restore(serialize(h.ex));
    const cmd = { t: 'settle' as const, currency: 'BTC' as const, expiry: EXP_JAN, ts: EXP_JAN + 5_000, seq: h.seq + 1 };
    h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN + 5_000);
    copy.apply(cmd);
    assert.equal(stateHash(copy), stateHash(h.ex));
  });

  it('keeps the index history bounded while keeping every point a pending expiry needs', () => {
    const h = Harness.market([CALL]);
    // six hours of one print a minute before the window, then the window at 120000
    const start = EXP_JAN - 6 * 60 * MIN;
    for (let t = start; t < EXP_JAN - TWAP_WINDOW_MS; t += MIN) setIndex(h, 90_000, t);
    for (let t = EXP_JAN - TWAP_WINDOW_MS; t < EXP_JAN; t += MIN) setIndex(h, 120_000, t);
    assert.ok(h.ex.indexHistory.BTC.length < 120, `history holds ${h.ex.indexHistory.BTC.length} points`);
    const r = h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN + 1_000) as SettleResult;
    assert.equal(r.deliveryPrice, 120_000);
  });
});

describe('settlement under random markets', () => {
  it('conserves every currency, zeroes every position and restores to an equal hash, for 20 seeded markets', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const rnd = mulberry32(seed);
      const strikes = [80_000, 95_000, 100_000, 105_000, 130_000];
      const specs = strikes.flatMap((k) => [spec('BTC', EXP_JAN, k, 'call'), spec('BTC', EXP_JAN, k, 'put')]);
      const h = Harness.market(specs);
      const users = Array.from({ length: 5 }, () => h.user('100'));
      for (let n = 0; n < 60; n++) {
        const s = specs[Math.floor(rnd() * specs.length)];
        const [maker, taker] = [users[Math.floor(rnd() * 5)], users[Math.floor(rnd() * 5)]];
        if (maker === taker) continue;
        const price = nearMark(h, s.name);
        const amount = (1 + Math.floor(rnd() * 9)) / 10;
        const side = rnd() < 0.5 ? 'buy' : 'sell';
        if (isReject(h.place(maker, side, s.name, price, amount.toFixed(1)))) continue;
        h.place(taker, side === 'buy' ? 'sell' : 'buy', s.name, price, amount.toFixed(1));
      }
      // a random index path through the window
      for (let t = EXP_JAN - 45 * MIN; t < EXP_JAN; t += 5 * MIN) setIndex(h, 80_000 + rnd() * 40_000, t);
      const r = h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN + 1_000);
      assert.ok(!isReject(r), `seed ${seed}`);
      assert.ok((r as SettleResult).positionsSettled > 0, `seed ${seed}: the stream traded`);
      conserved(h);
      for (const u of users) assert.equal(h.u(u).positions.size, 0, `seed ${seed}: positions left`);
      const risk = h.ex.trading.risk;
      for (const u of users) {
        assert.equal(risk.ordersIM(h.u(u), 'BTC'), risk.sumOrdersIM(h.u(u), 'BTC'), `seed ${seed}: orders margin`);
        const { value, initialMargin, maintenanceMargin } = risk.positions(h.u(u), 'BTC');
        assert.deepEqual({ value, initialMargin, maintenanceMargin }, { value: 0, initialMargin: 0, maintenanceMargin: 0 }, `seed ${seed}: settled positions still counted`);
      }
      assert.equal(stateHash(restore(serialize(h.ex))), stateHash(h.ex), `seed ${seed}: snapshot`);
    }
  });
});
