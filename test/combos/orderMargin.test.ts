// Resting combo orders hold margin and are cancelled like ordinary orders (issue 34; docs/api-notes.md
// "Combo orders"). Each test fails on the version where combo orders lived only in their books:
// a trader with collateral for one spread rested any number of them; the account's figures, its
// withdrawals, cancel_all by kind, liquidation and cancel-on-disconnect did not see them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject, type Reject } from '../../src/domain/errors.ts';
import { premiumOf, roundToTick } from '../../src/domain/instrument.ts';
import type { ComboRecord } from '../../src/combos/combos.ts';
import type { ComboPlaceResult } from '../../src/combos/book.ts';
import { comboHold } from '../../src/combos/orderMargin.ts';
import { comboBand, legQuotes } from '../../src/combos/legPrices.ts';
import { codSweep } from '../../src/engine/cod.ts';
import type { LiquidationResult } from '../../src/engine/liquidation.ts';
import type { Order } from '../../src/engine/types.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { Command } from '../../src/engine/commands.ts';
import { EXP_MAR, Harness, amt, code, spec } from '../helpers/engine.ts';

const C100 = spec('BTC', EXP_MAR, 100000, 'call');
const C110 = spec('BTC', EXP_MAR, 110000, 'call');
const P100 = spec('BTC', EXP_MAR, 100000, 'put');

/** Every command applied, so that a fresh engine can replay them. */
class Recorded extends Harness {
  readonly log: { cmd: Command; ts: number }[] = [];
  override apply(cmd: Command, ts?: number): unknown {
    const r = super.apply(cmd, ts);
    this.log.push({ cmd, ts: this.ts });
    return r;
  }
}

function setup() {
  const h = new Recorded();
  h.apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null });
  h.apply({ t: 'index', currency: 'ETH', price: 4_000, manual: true, by: null });
  h.apply({ t: 'list', instruments: [C100, C110, P100] });
  h.user('1');
  const cs = h.apply({ t: 'create_combo', userId: 1, legs: [{ instrument: C100.name, ratio: 1 }, { instrument: C110.name, ratio: -1 }] }) as ComboRecord;
  return { h, cs };
}

function placeCmd(userId: number, side: 'buy' | 'sell', instrument: string, price: number, amount: string, extra: Partial<Extract<Command, { t: 'place' }>> = {}): Command {
  return { t: 'place', userId, side: side === 'buy' ? 0 : 1, instrument, price, advanced: null, advPrice: null, lots: amt(amount), type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null, ...extra };
}

function place(h: Harness, userId: number, side: 'buy' | 'sell', instrument: string, price: number, amount: string, extra: Partial<Extract<Command, { t: 'place' }>> = {}): ComboPlaceResult | Reject {
  return h.apply(placeCmd(userId, side, instrument, price, amount, extra)) as ComboPlaceResult | Reject;
}

function netMark(h: Harness, r: ComboRecord): number {
  const q = legQuotes(h.ex, r.legs)!;
  return Math.round(q.reduce((s, l) => s + l.ratio * l.mark, 0));
}

function account(h: Harness, userId: number) {
  return h.ex.trading.risk.account(h.u(userId), 'BTC');
}

/** The hold one order of `amount` on `side` at `price` would have (its figures as if resting). */
function holdOf(h: Harness, r: ComboRecord, side: 'buy' | 'sell', price: number, amount: string) {
  const o = { side: side === 'buy' ? 0 : 1, price } as Order;
  return comboHold(h.ex, r, o, amt(amount) / h.ex.comboBooks.inst(r).lotScaled);
}

/** The lowest price (text) the leg's band allows: a cheap resting bid. */
function bandLow(h: Harness, name: string): string {
  const inst = h.inst(name);
  return (roundToTick(inst, h.ex.markets.get(inst.id)!.minPrice, 'up') / 1e4).toFixed(4);
}

function conserved(h: Harness): void {
  for (const [c, v] of Object.entries(h.ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
}

describe('resting combo orders hold margin', () => {
  it('a trader with collateral for one spread rests exactly as many as it can carry; the next is refused as an ordinary order is', () => {
    const { h, cs } = setup();
    const price = netMark(h, cs);
    const one = holdOf(h, cs, 'buy', price, '1');
    assert.ok(one.im > 0 && one.cash > 0, 'a bought call spread holds margin and cash');
    // collateral for the spread once and a half: one rests, the second is refused
    const binding = Math.max(one.im, one.cash);
    const trader = h.user('0');
    h.deposit(trader, 'BTC', binding + Math.floor(binding / 2));
    const first = place(h, trader, 'buy', cs.id, price, '1');
    assert.ok(!isReject(first), 'the first spread rests');
    assert.equal((first as ComboPlaceResult).order.state, 'open');
    const after = account(h, trader);
    assert.equal(after.ordersIM, one.im, 'the resting spread counts in the initial margin');
    assert.ok(after.availableWithdrawal <= h.balance(trader) - binding, 'its cash and margin cannot be withdrawn');
    const refusals: Reject[] = [];
    for (let i = 0; i < 50; i++) {
      const r = place(h, trader, 'buy', cs.id, price, '1');
      if (isReject(r)) refusals.push(r);
    }
    assert.equal(refusals.length, 50, 'no second spread rests');
    assert.equal(h.ex.comboBooks.openOf(trader).length, 1);
    // the same error an ordinary order beyond the funds gets
    const m110 = h.ex.markets.get(h.inst(C110.name).id)!.markCoin;
    const ordinary = h.place(trader, 'sell', C110.name, (Math.ceil((m110 * 1e4) / 5) * 5 / 1e4).toFixed(4), '5');
    assert.ok(isReject(ordinary));
    assert.equal(refusals[0]!.code, ordinary.code);
    assert.equal(refusals[0]!.reason, ordinary.reason);
    // a spread costs less than its legs alone: the hold is below the long leg's premium plus the short leg's margin
    const c100 = h.inst(C100.name);
    const c110 = h.inst(C110.name);
    const alone = premiumOf(c100, Math.round(h.ex.markets.get(c100.id)!.markCoin * 1e4), 10) + h.ex.trading.risk.positionIM({ inst: c110, size: -10, openCost: 0, realizedPnl: 0 });
    assert.ok(one.im < alone, `spread ${one.im} < legs alone ${alone}`);
    // withdrawing what the resting spread holds is refused
    assert.ok(isReject(h.apply({ t: 'withdraw', userId: trader, currency: 'BTC', amount: h.balance(trader) - Math.floor(binding / 4) })), 'the held part stays');
    conserved(h);
  });

  it('a maker with collateral for exactly its one spread is filled (its own hold is released by the fill, not counted twice)', () => {
    const { h, cs } = setup();
    const price = netMark(h, cs);
    const one = holdOf(h, cs, 'buy', price, '1');
    const maker = h.user('0');
    h.deposit(maker, 'BTC', Math.max(one.im, one.cash));
    assert.ok(!isReject(place(h, maker, 'buy', cs.id, price, '1')), 'rests');
    const taker = h.user('10');
    const t = place(h, taker, 'sell', cs.id, price, '1') as ComboPlaceResult;
    assert.ok(!isReject(t));
    assert.equal(t.order.state, 'filled', 'the maker was not cancelled for its own hold');
    assert.equal(h.position(maker, C100.name).size, 10);
    assert.equal(h.position(maker, C110.name).size, -10);
    assert.equal(account(h, maker).ordersIM, 0, 'nothing held once filled');
    conserved(h);
  });

  it('a partial fill holds what is left; an index move moves the hold; cancelling frees it', () => {
    const { h, cs } = setup();
    const price = netMark(h, cs);
    const a = h.user('10');
    const b = h.user('10');
    place(h, a, 'buy', cs.id, price, '1');
    const full = account(h, a).ordersIM;
    const resting = h.ex.comboBooks.openOf(a)[0]!;
    assert.equal(full, h.ex.comboBooks.holds.of(resting).im);
    place(h, b, 'sell', cs.id, price, '0.4');
    const left = account(h, a).ordersIM;
    assert.ok(left < full && left > 0, `a partial fill holds what is left (${left} of ${full})`);
    assert.equal(left, holdOf(h, cs, 'buy', price, '0.6').im);
    h.apply({ t: 'index', currency: 'BTC', price: 104_000, manual: true, by: null });
    assert.notEqual(account(h, a).ordersIM, left, 'the marks moved the hold');
    assert.equal(account(h, a).ordersIM, h.ex.trading.risk.sumOrdersIM(h.u(a), 'BTC'), 'the figure and the full sum agree');
    h.apply({ t: 'cancel_all', userId: a, currency: null, instrument: null, side: null, label: null });
    assert.equal(account(h, a).ordersIM, 0);
    assert.equal(h.ex.trading.risk.freeCash(h.u(a), 'BTC'), h.balance(a), 'no cash set aside once cancelled');
    conserved(h);
  });
});

describe('combo orders are cancelled like ordinary orders', () => {
  it('cancel_all cancels both; kind option spares combo orders, kind option_combo cancels only them', () => {
    const { h, cs } = setup();
    const u = h.user('10');
    const price = netMark(h, cs);
    const combo1 = (place(h, u, 'buy', cs.id, price - 50, '1') as ComboPlaceResult).order;
    const plain1 = h.ok(u, 'buy', C100.name, bandLow(h, C100.name), '1').order;
    const base = { t: 'cancel_all' as const, userId: u, currency: 'BTC' as const, instrument: null, side: null, label: null };
    const optionOnly = h.apply({ ...base, kind: 'option' }) as Order[];
    assert.deepEqual(optionOnly.map((o) => o.id), [plain1.id]);
    assert.equal(combo1.state, 'open', 'kind option spares the combo order');
    const plain2 = h.ok(u, 'buy', C100.name, bandLow(h, C100.name), '1').order;
    const comboOnly = h.apply({ ...base, kind: 'option_combo' }) as Order[];
    assert.deepEqual(comboOnly.map((o) => o.id), [combo1.id]);
    assert.equal(combo1.cancelReason, 'user_request');
    assert.equal(plain2.state, 'open', 'kind option_combo spares the option order');
    const combo2 = (place(h, u, 'sell', cs.id, price + 50, '1') as ComboPlaceResult).order;
    const all = h.apply({ t: 'cancel_all', userId: u, currency: null, instrument: null, side: null, label: null }) as Order[];
    assert.deepEqual(all.map((o) => o.id).sort((x, y) => x - y), [plain2.id, combo2.id]);
    assert.equal(account(h, u).ordersIM, 0);
  });

  it('an account entering liquidation has its combo orders cancelled with autoliquidation', () => {
    const { h, cs } = setup();
    const writer = h.user('0.3');
    const buyer = h.user('10');
    const mark = (name: string) => Math.ceil((h.ex.markets.get(h.inst(name).id)!.markCoin * 1e4) / 5) * 5;
    h.ok(buyer, 'buy', C100.name, (mark(C100.name) / 1e4).toFixed(4), '1');
    h.ok(writer, 'sell', C100.name, (mark(C100.name) / 1e4).toFixed(4), '1');
    const price = Math.max(comboBand(legQuotes(h.ex, cs.legs)!).min, netMark(h, cs) - 100);
    const co = place(h, writer, 'buy', cs.id, price, '0.1');
    assert.ok(!isReject(co), `the writer rests a combo order: ${isReject(co) ? co.reason : ''}`);
    h.apply({ t: 'index', currency: 'BTC', price: 125_000, manual: true, by: null });
    const r = h.apply({ t: 'liquidate', userId: writer, currency: 'BTC' }) as LiquidationResult;
    assert.equal(r.inLiquidation, true);
    const order = (co as ComboPlaceResult).order;
    assert.equal(order.state, 'cancelled');
    assert.equal(order.cancelReason, 'autoliquidation');
    assert.ok(r.cancelled.includes(order), 'listed among the cancelled orders');
    assert.equal(h.ex.comboBooks.openOf(writer).length, 0);
    conserved(h);
  });

  it('cancel-on-disconnect: a marked combo order is swept and cancelled with cancel_on_disconnect; the mark survives a snapshot', () => {
    const { h, cs } = setup();
    const u = h.user('10');
    const price = netMark(h, cs);
    const o = (place(h, u, 'buy', cs.id, price - 50, '1', { cod: true }) as ComboPlaceResult).order;
    assert.equal(o.cod, true);
    const sweep = codSweep(h.ex);
    assert.deepEqual(sweep, [{ t: 'cancel_orders', userId: u, orderIds: [o.id], reason: 'cancel_on_disconnect' }]);
    const again = restore(serialize(h.ex));
    assert.equal(stateHash(again), stateHash(h.ex));
    assert.deepEqual(codSweep(again), sweep, 'the restored engine sweeps it too');
    // an unmarked combo order (cod_mark off) is not swept
    h.apply({ t: 'cod_mark', userId: u, orderIds: [o.id], on: false });
    assert.deepEqual(codSweep(h.ex), []);
    h.apply({ t: 'cod_mark', userId: u, orderIds: [o.id], on: true });
    h.apply(sweep[0]!);
    assert.equal(o.state, 'cancelled');
    assert.equal(o.cancelReason, 'cancel_on_disconnect');
  });
});

describe('replay', () => {
  it('resting, partly filled and cancelled combo orders replay to the same state hash and the same holds', () => {
    const { h, cs } = setup();
    const strd = h.apply({ t: 'create_combo', userId: 1, legs: [{ instrument: C100.name, ratio: 1 }, { instrument: P100.name, ratio: 1 }] }) as ComboRecord;
    const a = h.user('3');
    const b = h.user('3');
    const p = netMark(h, cs);
    const s = netMark(h, strd);
    place(h, a, 'buy', cs.id, p, '1');
    place(h, a, 'sell', strd.id, s + 100, '0.5', { cod: true });
    place(h, b, 'sell', cs.id, p, '0.3');
    place(h, b, 'buy', strd.id, s - 100, '1', { label: 'x' });
    h.apply({ t: 'index', currency: 'BTC', price: 101_000, manual: true, by: null });
    h.apply({ t: 'cancel_all', userId: b, currency: 'BTC', instrument: null, side: null, label: null, kind: 'option_combo' });
    place(h, b, 'buy', strd.id, s - 200, '0.2');
    const fresh = new Harness();
    for (const { cmd, ts } of h.log) fresh.apply(cmd, ts);
    assert.equal(stateHash(fresh.ex), stateHash(h.ex), 'replay gives the same state hash');
    const restored = restore(serialize(h.ex));
    assert.equal(stateHash(restored), stateHash(h.ex));
    for (const ex of [fresh.ex, restored]) {
      for (const id of [a, b]) {
        assert.equal(ex.trading.risk.ordersIM(ex.users.get(id)!, 'BTC'), account(h, id).ordersIM, 'the same margin held');
        assert.equal(ex.trading.risk.freeCash(ex.users.get(id)!, 'BTC'), h.ex.trading.risk.freeCash(h.u(id), 'BTC'), 'the same cash set aside');
        assert.deepEqual(ex.comboBooks.openOf(id).map((o) => o.id), h.ex.comboBooks.openOf(id).map((o) => o.id));
      }
    }
    assert.ok(account(h, a).ordersIM > 0 && h.ex.comboBooks.openOf(a).length === 2);
    assert.equal(code(place(h, a, 'buy', cs.id, p, '100')), 10009, 'far beyond the funds');
  });
});

describe('the part that rests after matching', () => {
  it('makers cancelled during matching leave more to rest than was checked: the remainder is checked before it rests, and available funds never go below zero', () => {
    const { h, cs } = setup();
    const price = netMark(h, cs);
    // a maker whose fill will be refused: options disabled for it after its order rests
    const maker = h.user('10');
    const m = place(h, maker, 'sell', cs.id, price, '1') as ComboPlaceResult;
    assert.equal(m.order.state, 'open');
    assert.equal(h.apply({ t: 'set_disabled_trading_products', userId: maker, products: ['options'] }), 'ok');
    // the taker is short the spread's long leg: buying the spread closes it, so its fill needs little
    // (the short's margin is released), while resting the spread from flat holds its full debit
    const taker = h.user('10');
    const buyer = h.user('10');
    const c100 = Math.ceil((h.ex.markets.get(h.inst(C100.name).id)!.markCoin * 1e4) / 5) * 5;
    h.ok(buyer, 'buy', C100.name, (c100 / 1e4).toFixed(4), '1');
    h.ok(taker, 'sell', C100.name, (c100 / 1e4).toFixed(4), '1');
    const hold = holdOf(h, cs, 'buy', price, '1');
    // leave the taker available funds one minor unit short of the hold (its free cash stays above the debit)
    const before = account(h, taker);
    assert.ok(!isReject(h.apply({ t: 'withdraw', userId: taker, currency: 'BTC', amount: before.available - (hold.im - 1) })));
    assert.equal(account(h, taker).available, hold.im - 1);
    assert.ok(h.ex.trading.risk.freeCash(h.u(taker), 'BTC') >= hold.cash, 'the debit fits the free cash: only the margin binds');
    // the check before matching counts the maker's lot as fillable: nothing would rest, so it passes
    const t = place(h, taker, 'buy', cs.id, price, '1') as ComboPlaceResult;
    assert.ok(!isReject(t), `accepted: the whole fill fits (${isReject(t) ? t.reason : ''})`);
    assert.equal(m.order.state, 'cancelled');
    assert.equal(m.order.cancelReason, 'risk_mitigation', 'the maker could not carry its fill');
    // the whole order would now rest, holding one minor unit more than the account has
    assert.equal(t.order.filled, 0);
    assert.ok(account(h, taker).available >= 0, `available funds ${account(h, taker).available} never below zero`);
    assert.equal(t.order.state, 'cancelled', 'the remainder did not rest');
    assert.equal(t.order.cancelReason, 'risk_mitigation');
    assert.equal(h.ex.comboBooks.openOf(taker).length, 0);
    assert.equal(account(h, taker).available, hold.im - 1, 'nothing held');
    // with one minor unit more the same order rests (the check is exact, not a blanket refusal)
    h.deposit(taker, 'BTC', 1);
    const again = place(h, taker, 'buy', cs.id, price, '1') as ComboPlaceResult;
    assert.equal(again.order.state, 'open');
    assert.equal(account(h, taker).available, 0);
    conserved(h);
  });
});

describe('the cash a resting combo order sets aside', () => {
  it('moves with no mark: a straddle bought at the bottom of its band stays funded when the index leaves the price behind (free cash never below zero)', () => {
    const { h } = setup();
    const strd = h.apply({ t: 'create_combo', userId: 1, legs: [{ instrument: C100.name, ratio: 1 }, { instrument: P100.name, ratio: 1 }] }) as ComboRecord;
    const low = comboBand(legQuotes(h.ex, strd.legs)!).min;
    assert.ok(low > 0, 'a bought straddle pays');
    const one = holdOf(h, strd, 'buy', low, '1');
    const u = h.user('0');
    h.deposit(u, 'BTC', Math.max(one.im, one.cash));
    const r = place(h, u, 'buy', strd.id, low, '1') as ComboPlaceResult;
    assert.equal(r.order.state, 'open');
    const free = h.ex.trading.risk.freeCash(h.u(u), 'BTC');
    assert.ok(free >= 0);
    // a move either way lifts the straddle's band above the order's price, which is all it can pay
    for (const price of [110_000, 125_000, 80_000, 100_000]) {
      h.apply({ t: 'index', currency: 'BTC', price, manual: true, by: null });
      assert.ok(h.ex.trading.risk.freeCash(h.u(u), 'BTC') >= 0, `free cash below zero at index ${price}`);
      assert.equal(h.ex.trading.risk.freeCash(h.u(u), 'BTC'), free, `free cash unmoved at index ${price}`);
    }
    conserved(h);
  });
});
