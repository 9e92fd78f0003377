// Cross standard margin (issue 35): `cross_sm` pools each currency's standard-margin surplus at index
// with the same haircut as cross_pm (src/risk/portfolio/cross.ts; RiskEngine.requirements gives the
// standard figures). The pool by hand, and the adversarial rules: BTC collateral opens ETH shorts
// only as far as the pool allows (and segregated_sm opens none), the largest withdrawal or transfer
// passes and one satoshi more is refused, a switch back to segregated_sm that would leave a currency
// under-margined is refused, and liquidation under joint moves costs the insurance account nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CURRENCY_CODES, type CurrencyCode } from '../../../src/domain/currency.ts';
import { isReject } from '../../../src/domain/errors.ts';
import { crossMaxOutflow, crossSurplus, type CrossPart } from '../../../src/risk/portfolio/cross.ts';
import { crossView } from '../../../src/api/methods/crossView.ts';
import { balanceFields } from '../../../src/api/methods/account.ts';
import { restore, serialize, stateHash } from '../../../src/engine/snapshot.ts';
import { insuranceHeldValue } from '../../../src/engine/defaults.ts';
import { toMinorUp } from '../../../src/risk/margin.ts';
import { EXP_MAR, Harness, amt, sat, spec } from '../../helpers/engine.ts';
import { sub, transfer } from '../../accounts/helpers.ts';
import { blockCmd, leg } from '../../blocktrades/helpers.ts';
import { roundToTick } from '../../../src/domain/instrument.ts';
import { markPrice, switchModel, switched, trade } from './pmHarness.ts';

const EP3600 = spec('ETH', EXP_MAR, 3600, 'put');
const EC4000 = spec('ETH', EXP_MAR, 4000, 'call');
const EP4000 = spec('ETH', EXP_MAR, 4000, 'put');
const BC100 = spec('BTC', EXP_MAR, 100000, 'call');

function indexOf(h: Harness, c: CurrencyCode): number {
  return c === 'USDC' ? 1 : h.ex.indexPrice(c);
}

/**
 * The pool by hand from the standard figures of each currency: each currency's requirement is what
 * the account holds there on segregated_sm (its positions' IM or MM, the open orders' IM on top),
 * read with the account valued as if segregated; `extra` adds initial margin to one currency.
 */
function handPool(h: Harness, userId: number, to: CurrencyCode, kind: 'maintenance' | 'initial', extra?: { currency: CurrencyCode; im: number }): number {
  const u = h.u(userId);
  const r = h.ex.trading.risk;
  const parts: CrossPart[] = CURRENCY_CODES.map((c) => {
    const seg = r.asIf(u, 'segregated_sm', () => r.account(u, c));
    const requirement = (kind === 'maintenance' ? seg.maintenanceMargin : seg.initialMargin) + (extra?.currency === c ? extra.im : 0);
    return { currency: c, equity: seg.equity, requirement, index: indexOf(h, c) };
  });
  return crossSurplus(parts, to, indexOf(h, to), h.ex.pm.params.priceRange);
}

/** The insurance account's balances and the positions it holds at mark, over both currencies at index (USD). */
function insuranceValueUsd(h: Harness): number {
  return (['BTC', 'ETH'] as const).reduce((s, c) => s + ((h.ex.system.insurance[c].balance + insuranceHeldValue(h.ex, c)) / 1e8) * h.ex.indexPrice(c), 0);
}

function crossSmAccount(btc = '1') {
  const h = Harness.market([EP3600, EC4000, EP4000, BC100]);
  const cp = h.user('100', '10000');
  const a = h.user(btc);
  switched(h, a, 'cross_sm');
  return { h, cp, a };
}

describe('cross_sm: the pool of standard margin', () => {
  it('lets out of a currency exactly the most that keeps the pool covered (arithmetic by hand)', () => {
    // BTC: equity 1, no requirement; ETH: equity 0, requirement 5 ETH; BTC 100,000, ETH 4,000; h 16%.
    // The others' term in BTC: floor(-5 x 0.04 x 1.16) = -0.232 BTC, which BTC's own surplus must
    // cover at 0.84: it keeps ceil(0.232 / 0.84) = 0.27619048 BTC, so 0.72380952 BTC may leave
    // (0.27619048 x 0.84 = 0.2320000032, floored to 0.232: the pool is 0; a satoshi more: -1)
    const parts: CrossPart[] = [
      { currency: 'BTC', equity: sat('1'), requirement: 0, index: 100_000 },
      { currency: 'ETH', equity: 0, requirement: sat('5'), index: 4_000 },
      { currency: 'USDC', equity: 0, requirement: 0, index: 1 },
    ];
    assert.equal(crossMaxOutflow(parts, 'BTC', 100_000, 0.16), 72_380_952);
    const after = (w: number) => crossSurplus(parts.map((p) => (p.currency === 'BTC' ? { ...p, equity: p.equity - w } : p)), 'BTC', 100_000, 0.16);
    assert.equal(after(72_380_952), 0);
    assert.equal(after(72_380_953), -1);
    // one currency alone: its whole surplus (the haircut is the pool's, not a tax on one's own money)
    assert.equal(crossMaxOutflow([parts[0]!], 'BTC', 100_000, 0.16), sat('1'));
    // not covered now: nothing leaves
    assert.equal(crossMaxOutflow([{ ...parts[0]!, equity: sat('0.2') }, parts[1]!], 'BTC', 100_000, 0.16), 0);
    // out of ETH (the pool's limit; the engine caps it by ETH's free cash too): BTC's 25 ETH at 0.84 (21)
    // carries ETH's shortfall at 1.16 up to floor(21 / 1.16) = 18.10344827 ETH, 5 of it the requirement
    assert.equal(crossMaxOutflow(parts, 'ETH', 4_000, 0.16), 1_310_344_827);
  });

  it('is the standard requirements pooled at index with the haircut (by hand), needs no minimum equity, and keeps running sums equal to full ones', () => {
    // 0.01 BTC: far below portfolio margin's 0.5 BTC minimum, which cross_sm (standard margin) does not ask
    const { h, cp, a } = crossSmAccount('0.01');
    h.deposit(a, 'BTC', sat('1'));
    h.deposit(a, 'ETH', sat('1'));
    trade(h, a, cp, EP3600.name, -20);
    trade(h, a, cp, BC100.name, -1);
    h.ok(a, 'sell', EC4000.name, markPrice(h, EC4000.name), '3'); // rests: the orders' IM counts
    const u = h.u(a);
    const r = h.ex.trading.risk;
    for (const c of ['BTC', 'ETH'] as const) {
      const acc = r.account(u, c);
      // equity - MM and equity - IM of each currency are the pool's surpluses in it
      assert.equal(acc.equity - acc.maintenanceMargin, handPool(h, a, c, 'maintenance'), `${c} maintenance`);
      assert.equal(acc.available, handPool(h, a, c, 'initial'), `${c} initial`);
      assert.equal(r.sumPositions(u, c).maintenanceMargin, r.positions(u, c).maintenanceMargin);
      assert.equal(r.sumPositions(u, c).initialMargin, r.positions(u, c).initialMargin);
      assert.equal(r.sumOrdersIM(u, c), r.ordersIM(u, c));
    }
    // ETH is short of its own requirement (20 puts and 3 calls on 1 ETH) and BTC carries it
    const eth = r.asIf(u, 'segregated_sm', () => r.account(u, 'ETH'));
    assert.ok(eth.equity < eth.initialMargin, 'ETH alone is under-margined');
    assert.ok(r.account(u, 'ETH').available > 0, 'the pool carries it');
    // a restored engine computes the same figures
    const ex2 = restore(serialize(h.ex));
    assert.equal(stateHash(ex2), stateHash(h.ex));
    assert.equal(ex2.pm.model(a), 'cross_sm');
    for (const c of ['BTC', 'ETH'] as const) assert.deepEqual(ex2.trading.risk.account(ex2.users.get(a)!, c), r.account(u, c));
  });

  it('BTC collateral opens ETH shorts only up to the pool\'s limit; on segregated_sm it opens none', () => {
    const { h, cp, a } = crossSmAccount('1');
    const px = markPrice(h, EP3600.name);
    h.ok(cp, 'buy', EP3600.name, px, '1000');
    const u = h.u(a);
    const r = h.ex.trading.risk;
    const inst = h.inst(EP3600.name);
    let sold = 0;
    for (; sold < 1000; sold++) {
      // the standard IM one more short put adds to ETH's requirement
      const im = r.asIf(u, 'segregated_sm', () => r.account(u, 'ETH').positionsIM);
      const res = h.place(a, 'sell', EP3600.name, px, '1');
      if (isReject(res)) {
        assert.equal(res.reason, 'not_enough_funds');
        // refused exactly when the pool would be short: by hand, the requirement raised by the order's IM
        assert.ok(handPool(h, a, 'ETH', 'initial', { currency: 'ETH', im: toMinorUp(r.imPerContract(inst), 8) }) < 0, 'the refused order would leave the pool short');
        break;
      }
      assert.ok(r.account(u, 'ETH').available >= 0 && r.account(u, 'BTC').available >= 0, `pool covered after ${sold + 1}`);
      assert.ok(r.asIf(u, 'segregated_sm', () => r.account(u, 'ETH').positionsIM) > im);
    }
    // 1 BTC = 25 ETH; each put holds about 0.1 ETH + its mark; the pool takes a 16% haircut on the BTC and 16% on top of the ETH shortfall
    assert.ok(sold > 50 && sold < 250, `sold ${sold}`);
    const acc = r.account(u, 'ETH');
    assert.ok(acc.available >= 0 && acc.available < sat('0.3'), `at the limit: ${acc.available} left`);
    // the same account on segregated_sm: ETH has no collateral of its own
    const seg = h.user('1');
    const res = h.place(seg, 'sell', EP3600.name, px, '1');
    assert.ok(isReject(res) && res.reason === 'not_enough_funds');
  });

  it('an edit that grows a resting short passes exactly up to the pool\'s limit', () => {
    const { h, a } = crossSmAccount('0.2');
    const px = markPrice(h, EP3600.name);
    const u = h.u(a);
    const r = h.ex.trading.risk;
    const placed = h.ok(a, 'sell', EP3600.name, px, '1'); // rests: nobody buys
    const amountBefore = placed.order.amount;
    const im = r.imPerContract(h.inst(EP3600.name));
    const held = toMinorUp(im, 8);
    // by hand: the most contracts whose IM the pool carries, the resting one's released first
    const fits = (n: number) => handPool(h, a, 'ETH', 'initial', { currency: 'ETH', im: toMinorUp(im * n, 8) - held }) >= 0;
    let most = 1;
    while (fits(most + 1)) most++;
    assert.ok(most > 5 && most < 100, `most ${most}`);
    const edit = (n: number) => h.apply({ t: 'edit', userId: a, orderId: placed.order.id, lots: amt(String(n)), price: null, postOnly: null, rejectPostOnly: null });
    const over = edit(most + 1) as { reason?: string };
    assert.equal(over.reason, 'not_enough_funds');
    assert.equal(u.orders.get(placed.order.id)!.amount, amountBefore, 'the refused edit changed nothing');
    assert.ok(!isReject(edit(most)));
    assert.ok(r.account(u, 'ETH').available >= 0);
  });
});

describe('cross_sm: block trades', () => {
  it('a block trade of ETH shorts on BTC collateral passes while the pool stays covered and is refused, whole, past it', () => {
    const { h, cp, a } = crossSmAccount('0.5');
    const inst = h.inst(EP3600.name);
    const price = roundToTick(inst, h.ex.markets.get(inst.id)!.markCoin * 1e4, 'nearest');
    const u = h.u(a);
    const r = h.ex.trading.risk;
    let accepted = 0;
    let refusal: { reason?: string } | null = null;
    for (let i = 0; i < 100 && refusal === null; i++) {
      // a sells 5 puts to cp (a executes as maker, cp signed as taker)
      const res = h.apply(blockCmd(h, a, cp, [leg(EP3600.name, 'sell', price, '5')], { nonce: `n${i}`, role: 'maker' }));
      if (isReject(res)) refusal = res;
      else {
        accepted += 5;
        assert.ok(r.account(u, 'ETH').available >= 0 && r.account(u, 'BTC').available >= 0, `the pool covers ${accepted} puts`);
      }
    }
    assert.ok(refusal !== null && refusal.reason === 'not_enough_funds', JSON.stringify(refusal));
    assert.ok(accepted >= 20, `accepted ${accepted}`);
    assert.equal(-h.position(a, EP3600.name).size * inst.lotScaled / 1e8, accepted, 'the refused trade applied nothing');
    for (const [c, v] of Object.entries(h.ex.conservation())) assert.equal(v.balances, v.expected, c);
  });

  it('counts the haircut: BTC worth 1.08x the trade\'s ETH margin is refused (a linear check would pass it), 1.3x passes', () => {
    const h = Harness.market([EP3600]);
    const cp = h.user('100', '10000');
    const inst = h.inst(EP3600.name);
    const price = roundToTick(inst, h.ex.markets.get(inst.id)!.markCoin * 1e4, 'nearest');
    // 10 short puts hold R ETH of standard IM; BTC at 25 ETH counts 0.84 x 25 = 21 ETH per BTC in the
    // pool, and ETH's shortfall (R, plus the fee) counts at 1.16: covered from about 1.16 R / 21 BTC on
    const R = toMinorUp(h.ex.trading.risk.imPerContract(inst) * 10, 8);
    const account = (cover: number) => {
      const a = h.user('0');
      h.deposit(a, 'BTC', Math.round((R * cover) / 21));
      switched(h, a, 'cross_sm');
      return a;
    };
    const short = account(1.08);
    // the equity the BTC brings (1.08 R of ETH after the haircut) exceeds R and the fee: a check of
    // available + cash + change would let it through; the pool is short by about 0.08 R
    const r = h.apply(blockCmd(h, short, cp, [leg(EP3600.name, 'sell', price, '10')], { nonce: 'short' }));
    assert.equal((r as { reason?: string }).reason, 'not_enough_funds');
    assert.equal(h.position(short, EP3600.name).size, 0);
    const enough = account(1.3);
    assert.ok(!isReject(h.apply(blockCmd(h, enough, cp, [leg(EP3600.name, 'sell', price, '10')], { nonce: 'enough' }))));
    assert.ok(h.ex.trading.risk.account(h.u(enough), 'ETH').available >= 0);
  });
});

describe('cross_sm: money leaving the pool', () => {
  for (const how of ['withdrawal', 'transfer'] as const) {
    it(`the largest ${how} of BTC passes and one satoshi more is refused; the pool stays covered`, () => {
      const { h, cp, a } = crossSmAccount('1');
      trade(h, a, cp, EP3600.name, -60);
      const u = h.u(a);
      const r = h.ex.trading.risk;
      const max = r.account(u, 'BTC').availableWithdrawal;
      assert.ok(max > 0 && max < sat('0.8'), `withdrawable ${max}`);
      const s = how === 'transfer' ? sub(h, a) : 0;
      const send = (amount: number) => (how === 'withdrawal' ? h.apply({ t: 'withdraw', userId: a, currency: 'BTC', amount }) : transfer(h, a, a, s, amount));
      const refused = send(max + 1) as { reason?: string };
      assert.equal(refused.reason, how === 'withdrawal' ? 'withdrawal_exceeds_available' : 'transfer_exceeds_available');
      assert.equal(h.balance(a), sat('1'), 'the refusal moved nothing');
      assert.ok(!isReject(send(max)));
      assert.equal(h.balance(a), sat('1') - max);
      assert.ok(crossView(h.ex, u, 'BTC')!.initialSurplus >= 0, 'the pool covers its initial margin');
      for (const c of ['BTC', 'ETH'] as const) assert.ok(r.account(u, c).available >= 0, c);
      assert.equal(r.account(u, 'BTC').availableWithdrawal, 0);
      for (const [c, v] of Object.entries(h.ex.conservation())) assert.equal(v.balances, v.expected, c);
    });
  }
});

describe('cross_sm: switching', () => {
  it('back to segregated_sm is refused while ETH would be under-margined, and allowed once ETH covers itself', () => {
    const { h, cp, a } = crossSmAccount('1');
    trade(h, a, cp, EP3600.name, -30);
    const u = h.u(a);
    const r = h.ex.trading.risk;
    const refused = switchModel(h, a, 'segregated_sm') as { reason?: string };
    assert.equal(refused.reason, 'account_below_maintenance');
    assert.equal(h.ex.pm.model(a), 'cross_sm', 'the model did not change');
    // the dry-run's figures show why: ETH's own maintenance margin exceeds its equity
    const seg = r.asIf(u, 'segregated_sm', () => r.account(u, 'ETH'));
    assert.ok(seg.equity < seg.maintenanceMargin);
    // to segregated_pm too (ETH alone short of its scenario requirement), and cross_pm is not below the 0.5 BTC minimum here
    assert.equal((switchModel(h, a, 'segregated_pm') as { reason?: string }).reason, 'account_below_maintenance');
    // ETH deposited to cover its own maintenance margin: the switch passes
    h.deposit(a, 'ETH', seg.maintenanceMargin - seg.equity + sat('0.01'));
    switched(h, a, 'segregated_sm');
    assert.equal(h.ex.pm.model(a), 'segregated_sm');
    // and from segregated_sm to cross_sm and back with nothing at stake
    switched(h, a, 'cross_sm');
    switched(h, a, 'segregated_sm');
  });
});

describe('cross_sm: liquidation under joint moves', () => {
  let liquidated = 0;
  // up to moves far beyond the haircut (ETH +80% while BTC falls 20%): the account's BTC still covers
  // its ETH loss, so the insurance account must not pay any of it
  for (const [ethMove, btcMove] of [[+0.3, -0.3], [-0.3, -0.3], [+0.5, -0.2], [+0.8, -0.2], [-0.5, -0.3], [0, -0.5]] as const) {
    it(`BTC collateral, ETH short straddle at the pool's limit, the BTC it frees withdrawn; ETH ${ethMove * 100}%, BTC ${btcMove * 100}%: the insurance account loses nothing`, () => {
      const h = Harness.market([EC4000, EP4000]);
      const cp = h.user('100', '10000');
      const a = h.user('2');
      switched(h, a, 'cross_sm');
      trade(h, a, cp, EC4000.name, -40);
      trade(h, a, cp, EP4000.name, -40);
      const u = h.u(a);
      const r = h.ex.trading.risk;
      const max = r.account(u, 'BTC').availableWithdrawal;
      assert.ok(!isReject(h.apply({ t: 'withdraw', userId: a, currency: 'BTC', amount: max })));
      assert.ok(crossView(h.ex, u, 'BTC')!.initialSurplus >= 0);
      h.apply({ t: 'index', currency: 'ETH', price: 4000 * (1 + ethMove), manual: true, by: null });
      h.apply({ t: 'index', currency: 'BTC', price: 100000 * (1 + btcMove), manual: true, by: null });
      const insurance = { BTC: h.ex.system.insurance.BTC.balance, ETH: h.ex.system.insurance.ETH.balance };
      const insuranceUsd = insuranceValueUsd(h);
      const below = r.account(u, 'ETH').equity < r.account(u, 'ETH').maintenanceMargin;
      h.ok(cp, 'sell', EC4000.name, markPrice(h, EC4000.name), '40');
      h.ok(cp, 'sell', EP4000.name, markPrice(h, EP4000.name), '40');
      let steps = 0;
      while ((r.account(u, 'ETH').equity < r.account(u, 'ETH').maintenanceMargin || h.ex.inLiquidation(a, 'ETH')) && steps < 40) {
        h.apply({ t: 'liquidate', userId: a, currency: 'ETH' });
        steps++;
      }
      assert.equal(steps > 0, below, below ? 'liquidated' : 'left alone');
      if (below) liquidated++;
      assert.ok(!h.ex.inLiquidation(a, 'ETH'), 'liquidation finished');
      const x = crossView(h.ex, u, 'BTC')!;
      assert.ok(x.maintenanceSurplus >= 0, `the pool covers its maintenance margin after: ${x.maintenanceSurplus}`);
      // the fund covered nothing: the account's BTC paid its ETH deficit (converted at index), and what
      // the fund took over it holds at mark: its value over both currencies did not fall
      assert.deepEqual(u.log.entries().filter((e) => e.type === 'insurance_cover'), [], 'no deficit left to the insurance account');
      assert.ok(insuranceValueUsd(h) >= insuranceUsd - 1e-6, `the insurance account's value ${insuranceUsd} -> ${insuranceValueUsd(h)} USD`);
      for (const c of ['BTC', 'ETH'] as const) {
        assert.ok(h.ex.system.insurance[c].balance >= insurance[c], `the insurance account's ${c} balance did not fall: ${insurance[c]} -> ${h.ex.system.insurance[c].balance}`);
        assert.ok(h.balance(a, c) >= 0, `no ${c} debt left`);
        const k = h.ex.conservation()[c];
        assert.equal(k.balances, k.expected, `${c} conserved`);
      }
    });
  }
  it('liquidated in at least four of the moves (the account really was at its limit)', () => {
    assert.ok(liquidated >= 4, `${liquidated} liquidated`);
  });
});

describe('cross_sm: the views', () => {
  it("balanceFields (the summary's and a subaccount portfolio's) shows the pool, never a currency's own figure below zero", () => {
    const { h, cp, a } = crossSmAccount('1');
    trade(h, a, cp, EP3600.name, -30);
    const u = h.u(a);
    const r = h.ex.trading.risk;
    const eth = r.account(u, 'ETH');
    // the currency's own figure: its equity less the pooled surplus, below zero (BTC carries ETH)
    assert.ok(eth.initialMargin < 0 && eth.maintenanceMargin < 0, `${eth.initialMargin} ${eth.maintenanceMargin}`);
    const f = balanceFields(h.ex, u, 'ETH') as Record<string, number>;
    const x = crossView(h.ex, u, 'ETH')!;
    assert.equal(f.margin_balance, x.marginBalance / 1e8);
    assert.equal(f.initial_margin, x.initialMargin / 1e8);
    assert.equal(f.maintenance_margin, x.maintenanceMargin / 1e8);
    assert.ok(f.initial_margin > 0 && f.maintenance_margin > 0);
    // the pool's margin balance (1 BTC at 25 ETH, plus ETH's own equity) less its IM is the funds available
    assert.ok(Math.abs(f.margin_balance - f.initial_margin - f.available_funds) <= 2e-8, JSON.stringify(f));
    assert.ok(f.margin_balance > 24 && f.margin_balance < 26);
  });
});
