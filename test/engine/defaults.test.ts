// Defaults at the engine level (src/engine/defaults.ts): exact pro-rata splits and conversions,
// takeovers at mark, the waterfall's order, and that a defaulter's loss never lands on a depositor
// with no position, whatever the defaulter tries first.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isReject } from '../../src/domain/errors.ts';
import { roundToTick } from '../../src/domain/instrument.ts';
import { splitProRata, valueDown } from '../../src/engine/defaults.ts';
import { liquidationCandidates, type LiquidationResult } from '../../src/engine/liquidation.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { SettleResult } from '../../src/engine/settlement.ts';
import { EXP_JAN, EXP_MAR, Harness, sat, spec } from '../helpers/engine.ts';

const JAN_CALL = spec('BTC', EXP_JAN, 110000, 'call');
const MAR_PUT = spec('BTC', EXP_MAR, 150000, 'put');
const MAR_CALL = spec('BTC', EXP_MAR, 100000, 'call');
const JAN_CALL_LOW = spec('BTC', EXP_JAN, 100000, 'call');

function atMark(h: Harness, name: string): string {
  const inst = h.inst(name);
  const m = h.ex.markets.get(inst.id)!;
  return (roundToTick(inst, m.markCoin * 1e4, 'nearest') / 1e4).toFixed(4);
}

function conserved(h: Harness): void {
  for (const [c, v] of Object.entries(h.ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
  const sums = new Map<number, number>();
  for (const u of h.ex.users.values()) for (const p of u.positions.values()) sums.set(p.inst.id, (sums.get(p.inst.id) ?? 0) + p.size);
  for (const p of h.ex.insurance.positions.values()) sums.set(p.inst.id, (sums.get(p.inst.id) ?? 0) + p.size);
  for (const [id, s] of sums) assert.equal(s, 0, `positions in ${id} sum to zero`);
}

function noneBelowZero(h: Harness): void {
  for (const u of h.ex.users.values()) for (const [c, a] of Object.entries(u.accounts)) assert.ok(a.balance >= 0, `user ${u.id} ${c} ${a.balance}`);
}

describe('exact arithmetic of defaults', () => {
  it('splits an amount pro rata to the minor unit: the shares sum to it and none is off by a unit or more', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), fc.array(fc.integer({ min: 0, max: 2 ** 52 }), { minLength: 1, maxLength: 20 }), (total, weights) => {
        const shares = splitProRata(total, weights);
        const sum = weights.reduce((s, w) => s + w, 0);
        if (sum === 0) return shares.every((x) => x === 0);
        assert.equal(shares.reduce((s, x) => s + x, 0), total);
        weights.forEach((w, i) => assert.ok(Math.abs(shares[i] - (total * w) / sum) < 1 + 1e-6 * total, `share ${i}`));
        return true;
      }),
    );
  });

  it('values one currency in another at index, rounding down (what a defaulter is credited)', () => {
    const h = Harness.market([]);
    // 1 ETH at 4,000 USD is 0.04 BTC at 100,000 USD
    assert.equal(valueDown(h.ex, sat('1'), 'ETH', 'BTC'), sat('0.04'));
    assert.equal(valueDown(h.ex, sat('0.04'), 'BTC', 'ETH'), sat('1'));
    // a third of a satoshi's worth rounds away; USDC is one dollar with 6 decimals
    assert.equal(valueDown(h.ex, 1, 'ETH', 'BTC'), 0);
    assert.equal(valueDown(h.ex, sat('1'), 'BTC', 'USDC'), 100_000 * 1e6);
    h.apply({ t: 'index', currency: 'ETH', price: 3333.33, manual: true, by: null });
    assert.equal(valueDown(h.ex, sat('3'), 'ETH', 'BTC'), Math.floor((3 * 3333.33 * 1e8) / 100_000));
  });
});

describe('a deficit at settlement', () => {
  it("is covered by the account's own longs, taken over at mark, before anyone else's money", () => {
    const h = Harness.market([JAN_CALL, MAR_PUT]);
    const d = h.user('0.6');
    const other = h.user('50');
    // D sells a January call and holds deep in-the-money March puts, with little cash left
    h.ok(other, 'sell', MAR_PUT.name, atMark(h, MAR_PUT.name), '2');
    h.ok(d, 'buy', MAR_PUT.name, atMark(h, MAR_PUT.name), '1.1');
    h.ok(other, 'buy', JAN_CALL.name, atMark(h, JAN_CALL.name), '1');
    h.ok(d, 'sell', JAN_CALL.name, atMark(h, JAN_CALL.name), '1');
    // January settles at 130,000: the call costs D far more cash than it has, its March put is worth more
    h.apply({ t: 'index', currency: 'BTC', price: 130000, manual: true, by: null }, EXP_JAN - 3_600_000);
    const settled = h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN) as SettleResult;
    assert.ok(!isReject(settled));
    noneBelowZero(h);
    const user = h.u(d);
    const held = h.ex.insurance.positions.get(h.inst(MAR_PUT.name).id);
    assert.ok(held && held.size > 0 && held.size < 11, `part of the puts went to the insurance account (${held?.size} lots)`);
    assert.equal((user.positions.get(h.inst(MAR_PUT.name).id)?.size ?? 0) + held.size, 11);
    // only as much as the deficit needed: one lot less would not have covered it
    assert.ok(h.balance(d) < h.ex.trading.risk.positionValue({ ...held, size: 1 }) + 1, `left ${h.balance(d)} in cash`);
    // the insurance account paid the put's value at mark: nothing was covered or socialized
    const types = user.log.entries().map((e) => e.type);
    assert.ok(types.includes('takeover'));
    assert.ok(!types.includes('insurance_cover') && !types.includes('conversion'), types.join());
    assert.equal(h.u(other).log.entries().filter((e) => e.type === 'socialized_loss').length, 0);
    conserved(h);
    assert.equal(stateHash(restore(serialize(h.ex))), stateHash(h.ex));
  });

  it('takes the defaulter\'s other currencies before the insurance account, and never the ETH it needs for its own ETH positions', () => {
    const eth = spec('ETH', EXP_MAR, 4000, 'call');
    const h = Harness.market([JAN_CALL, eth]);
    const d = h.user('0.15', '20');
    const other = h.user('50', '1000');
    // D's ETH: a short ETH call holds part of it as margin
    h.ok(other, 'buy', eth.name, atMark(h, eth.name), '10');
    h.ok(d, 'sell', eth.name, atMark(h, eth.name), '10');
    const ethRisk = h.ex.trading.risk.account(h.u(d), 'ETH');
    const freeEth = Math.min(h.ex.trading.risk.freeCash(h.u(d), 'ETH'), ethRisk.available);
    assert.ok(freeEth > 0 && freeEth < h.balance(d, 'ETH'));
    h.ok(other, 'buy', JAN_CALL.name, atMark(h, JAN_CALL.name), '1');
    h.ok(d, 'sell', JAN_CALL.name, atMark(h, JAN_CALL.name), '1');
    // D tries to take its ETH out before the expiry: refused while its BTC account is in trouble
    h.apply({ t: 'index', currency: 'BTC', price: 150000, manual: true, by: null }, EXP_JAN - 3_600_000);
    const w = h.apply({ t: 'withdraw', userId: d, currency: 'ETH', amount: freeEth });
    assert.ok(isReject(w) && w.code === 10009 && w.reason === 'account_below_maintenance', JSON.stringify(w));
    const ethBefore = h.balance(d, 'ETH');
    h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN);
    noneBelowZero(h);
    // the ETH left D, never more than was free: the margin of D's ETH short stayed
    const taken = ethBefore - h.balance(d, 'ETH');
    assert.ok(taken > 0 && taken <= freeEth, `took ${taken} of ${freeEth} free`);
    // the insurance account had no BTC to give for it: the call's buyer, whose payout D could not
    // pay in BTC, received D's ETH instead (all but what rounding keeps back)
    const compensated = h.u(other).log.entries().filter((e) => e.type === 'socialized_loss_compensation').reduce((s, e) => s + e.amount, 0);
    assert.equal(h.ex.insurance.accounts.ETH.balance + compensated, taken);
    assert.ok(h.ex.insurance.accounts.ETH.balance <= 1);
    const after = h.ex.trading.risk.account(h.u(d), 'ETH');
    assert.ok(after.equity >= after.initialMargin, 'D still carries its ETH short');
    const conversion = h.u(d).log.entries().filter((e) => e.type === 'conversion');
    assert.deepEqual(conversion.map((e) => [e.currency, Math.sign(e.amount)]), [['ETH', -1], ['BTC', 1]]);
    // the ETH covered the whole BTC deficit: the insurance account's own BTC was not needed
    assert.equal(h.balance(d), 0);
    assert.ok(!h.u(d).log.entries().some((e) => e.type === 'insurance_cover'));
    assert.ok(conversion[1].amount <= valueDown(h.ex, taken, 'ETH', 'BTC')!);
    conserved(h);
  });

  it('shares what the insurance account cannot cover among that settlement\'s payouts only, pro rata, with its other currencies in compensation', () => {
    const h = Harness.market([JAN_CALL]);
    const d = h.user('0.2', '1');
    const a = h.user('10');
    const b = h.user('10');
    const bystander = h.user('7', '3');
    const p = atMark(h, JAN_CALL.name);
    h.ok(d, 'sell', JAN_CALL.name, p, '1');
    h.ok(a, 'buy', JAN_CALL.name, p, '0.3');
    h.ok(b, 'buy', JAN_CALL.name, p, '0.7');
    const aBefore = h.balance(a);
    const bBefore = h.balance(b);
    h.apply({ t: 'index', currency: 'BTC', price: 220000, manual: true, by: null }, EXP_JAN - 3_600_000);
    h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN);
    noneBelowZero(h);
    assert.equal(h.balance(bystander), sat('7'), 'a depositor without a position keeps every satoshi');
    assert.equal(h.balance(bystander, 'ETH'), sat('3'));
    const cutA = h.u(a).log.entries().find((e) => e.type === 'socialized_loss')!.amount;
    const cutB = h.u(b).log.entries().find((e) => e.type === 'socialized_loss')!.amount;
    // 3 : 7, to the satoshi
    assert.ok(Math.abs(cutA * 7 - cutB * 3) <= 10, `${cutA} vs ${cutB}`);
    assert.equal(h.ex.insurance.accounts.BTC.balance, 0, 'the shortfall is fully shared');
    // D's ETH went to the cut payouts, 3 : 7
    assert.equal(h.balance(a, 'ETH') + h.balance(b, 'ETH'), sat('1'));
    assert.ok(h.balance(b, 'ETH') > h.balance(a, 'ETH'));
    assert.ok(h.balance(a) > aBefore && h.balance(b) > bBefore, 'each long still gains from its payout');
    conserved(h);
  });
  it('shares a shortfall among net payouts only: an account paid on one series and debited more on another is not cut below zero', () => {
    const h = Harness.market([JAN_CALL, JAN_CALL_LOW]);
    const d = h.user('0.2', '1');
    const m = h.user('0.4');
    const b = h.user('10');
    h.ok(d, 'sell', JAN_CALL.name, atMark(h, JAN_CALL.name), '1');
    h.ok(m, 'buy', JAN_CALL.name, atMark(h, JAN_CALL.name), '0.3');
    h.ok(b, 'buy', JAN_CALL.name, atMark(h, JAN_CALL.name), '0.7');
    h.ok(m, 'sell', JAN_CALL_LOW.name, atMark(h, JAN_CALL_LOW.name), '1');
    h.ok(b, 'buy', JAN_CALL_LOW.name, atMark(h, JAN_CALL_LOW.name), '1');
    h.apply({ t: 'index', currency: 'BTC', price: 220000, manual: true, by: null }, EXP_JAN - 3_600_000);
    const r = h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN) as SettleResult;
    assert.ok(!isReject(r));
    // m was paid on the 110000 call but owed more on the 100000 call: nothing net to share from
    noneBelowZero(h);
    assert.equal(h.u(m).log.entries().filter((e) => e.type === 'socialized_loss').length, 0, 'a net debtor is not cut');
    assert.ok(h.u(b).log.entries().some((e) => e.type === 'socialized_loss'), 'the net creditor shares the shortfall');
    conserved(h);
  });
});

describe('a balance below zero', () => {
  it('blocks withdrawals in every currency and every order that adds risk, but not one that reduces a position', () => {
    const h = Harness.market([MAR_CALL, spec('ETH', EXP_MAR, 4000, 'call')]);
    const n = h.user('1', '10');
    const m = h.user('100', '100');
    h.ok(m, 'sell', MAR_CALL.name, atMark(h, MAR_CALL.name), '1');
    h.ok(n, 'buy', MAR_CALL.name, atMark(h, MAR_CALL.name), '0.5');
    // no command leaves a balance below zero (the liquidation check would cover it at once): put
    // one there to see the rule hold on its own
    h.u(n).accounts.BTC.balance = -1;
    const w = h.apply({ t: 'withdraw', userId: n, currency: 'ETH', amount: 1 });
    assert.ok(isReject(w) && w.code === 10009 && w.reason === 'negative_balance');
    assert.equal(h.ex.trading.risk.account(h.u(n), 'ETH').availableWithdrawal, 0);
    const eth = spec('ETH', EXP_MAR, 4000, 'call').name;
    const buy = h.place(n, 'buy', eth, atMark(h, eth), '1');
    assert.ok(isReject(buy) && buy.code === 10009 && buy.reason === 'negative_balance');
    const sellShort = h.place(n, 'sell', eth, atMark(h, eth), '1');
    assert.ok(isReject(sellShort) && sellShort.reason === 'negative_balance');
    // selling the long it holds only reduces risk
    const reduce = h.place(n, 'sell', MAR_CALL.name, atMark(h, MAR_CALL.name), '0.5');
    assert.ok(!isReject(reduce), isReject(reduce) ? reduce.reason : "");
  });
});

describe('liquidation of an account holding only longs', () => {
  it('has no maintenance margin yet is taken over when its balance went below zero, never left owing', () => {
    const h = Harness.market([MAR_CALL, MAR_PUT]);
    const l = h.user('1');
    const m = h.user('100');
    h.ok(m, 'sell', MAR_PUT.name, atMark(h, MAR_PUT.name), '1');
    h.ok(l, 'buy', MAR_PUT.name, atMark(h, MAR_PUT.name), '1');
    // a balance below zero cannot come from an order: put one there, as an old journal might have
    h.u(l).accounts.BTC.balance -= sat('0.7');
    h.ex.system.fees.BTC.balance += sat('0.7');
    assert.deepEqual(liquidationCandidates(h.ex), [{ userId: l, currency: 'BTC' }]);
    const r = h.apply({ t: 'liquidate', userId: l, currency: 'BTC' }) as LiquidationResult;
    assert.equal(r.inLiquidation, false);
    assert.ok(r.takenOver >= 1);
    noneBelowZero(h);
    assert.ok(h.balance(l) <= h.ex.trading.risk.account(h.u(l), 'BTC').equity);
    conserved(h);
  });

  it('sells at most a bounded size per order and never pays a liquidation fee above what a sale brought in', () => {
    const h = Harness.market([MAR_CALL, MAR_PUT]);
    const l = h.user('1');
    const m = h.user('1000');
    h.ok(m, 'sell', MAR_PUT.name, atMark(h, MAR_PUT.name), '1');
    h.ok(l, 'buy', MAR_PUT.name, atMark(h, MAR_PUT.name), '1');
    h.ok(m, 'buy', MAR_CALL.name, atMark(h, MAR_CALL.name), '3');
    h.ok(l, 'sell', MAR_CALL.name, atMark(h, MAR_CALL.name), '3');
    // bids on the put and asks on the call, then a rally
    h.apply({ t: 'index', currency: 'BTC', price: 125000, manual: true, by: null });
    h.ok(m, 'buy', MAR_PUT.name, atMark(h, MAR_PUT.name), '5');
    h.ok(m, 'sell', MAR_CALL.name, atMark(h, MAR_CALL.name), '10');
    for (let i = 0; i < 20 && liquidationCandidates(h.ex).length > 0; i++) {
      const r = h.apply({ t: 'liquidate', userId: l, currency: 'BTC' }) as LiquidationResult;
      for (const o of r.orders) assert.ok(o.amount <= 100, `an order of ${o.amount} lots`);
      noneBelowZero(h);
    }
    assert.deepEqual(liquidationCandidates(h.ex), []);
    for (const e of h.u(l).log.entries().filter((x) => x.type === 'liquidation_fee')) assert.ok(e.amount < 0);
    conserved(h);
  });
});
