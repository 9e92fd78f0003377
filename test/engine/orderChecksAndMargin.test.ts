// Engine-level order entry checks and margin (API.md 3.3 order rules, 5.3): self-trade prevention,
// client_order_id, validation (band, tick, amount, halts, a stale index), cancels, and Deribit
// standard margin with its limits on withdrawals, deposits and open orders. No HTTP: commands go
// straight into Exchange.apply. Every expected number is worked out by hand in the comment next to it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import { DEFAULT_LIMITS } from '../../src/engine/exchange.ts';
import { shortInitialMargin } from '../../src/risk/margin.ts';
import { Harness, T0, sat } from '../helpers/engine.ts';
import { C, E, SC, SF, SP, rejected, setup } from './sampleMarket.ts';

describe('self-trade prevention', () => {
  it('rejects an order that would meet its own user with 11030 self_trade before anything fills', () => {
    const h = setup();
    const [u, o] = [h.user('10'), h.user('10')];
    h.ok(o, 'sell', C, '0.0100', '0.1');
    const own = h.ok(u, 'sell', C, '0.0105', '0.1').order;
    const before = [h.balance(u), h.balance(o), h.feeBalance(), h.ex.nextOrderId, h.ex.nextTradeId];
    // the better-priced foreign ask would fill first, but nothing may fill at all
    rejected(h.place(u, 'buy', C, '0.0105', '0.2'), 11030, 'self_trade');
    rejected(h.place(u, 'buy', C, '0.0105', '0.2', { tif: 'fill_or_kill' }), 11030, 'self_trade');
    rejected(h.place(u, 'buy', C, '0.0105', '0.2', { tif: 'immediate_or_cancel' }), 11030, 'self_trade');
    rejected(h.place(u, 'buy', C, null, '0.2', { type: 'market' }), 11030, 'self_trade');
    assert.deepEqual([h.balance(u), h.balance(o), h.feeBalance(), h.ex.nextOrderId, h.ex.nextTradeId], before);
    assert.deepEqual(h.depth(C, 'sell'), [[100, 1], [105, 1]]);
    assert.equal(own.state, 'open');
    // an order that fills before reaching the own order is fine
    const r = h.ok(u, 'buy', C, '0.0100', '0.1');
    assert.equal(r.order.state, 'filled');
  });

  it('a fill-or-kill that cannot fill and meets its own order is still rejected as self_trade', () => {
    const h = setup();
    const u = h.user('10');
    h.ok(u, 'sell', C, '0.0100', '0.1');
    rejected(h.place(u, 'buy', C, '0.0100', '0.5', { tif: 'fill_or_kill' }), 11030, 'self_trade');
    assert.equal(h.openOrders(u).length, 1);
  });
});

describe('client_order_id', () => {
  it('returns the first order for a repeated id and never creates a second one', () => {
    const h = setup();
    const [u, v] = [h.user('10'), h.user('10')];
    const first = h.ok(u, 'buy', C, '0.0050', '0.1', { clientOrderId: 'abc' });
    const next = h.ex.nextOrderId;
    const again = h.ok(u, 'buy', C, '0.0050', '0.1', { clientOrderId: 'abc' });
    assert.equal(again.order, first.order);
    // the id reused for another order is refused, not answered with the first one
    rejected(h.place(u, 'buy', C, '0.0060', '0.1', { clientOrderId: 'abc' }), 11029, 'client_order_id_reused');
    rejected(h.place(u, 'buy', C, '0.0050', '0.5', { clientOrderId: 'abc' }), 11029, 'client_order_id_reused');
    rejected(h.place(u, 'sell', C, '0.0050', '0.1', { clientOrderId: 'abc' }), 11029, 'client_order_id_reused');
    assert.equal(h.ex.nextOrderId, next);
    assert.equal(h.openOrders(u).length, 1);
    assert.equal(first.order.clientOrderId, 'abc');
    // another user's id space is independent
    const other = h.ok(v, 'buy', C, '0.0050', '0.1', { clientOrderId: 'abc' });
    assert.notEqual(other.order.id, first.order.id);
    assert.equal(h.openOrders(v).length, 1);
  });

  it('a retry of a filled order returns its trades, and a refused request does not use up the id', () => {
    const h = setup();
    const [m, u] = [h.user('10'), h.user('0.0001')];
    h.ok(m, 'sell', C, '0.0100', '0.1');
    rejected(h.place(u, 'buy', C, '0.0100', '0.1', { clientOrderId: 'k1' }), 10009);
    h.deposit(u, 'BTC', sat('1'));
    const r = h.ok(u, 'buy', C, '0.0100', '0.1', { clientOrderId: 'k1' });
    assert.equal(r.trades.length, 1);
    const again = h.ok(u, 'buy', C, '0.0100', '0.1', { clientOrderId: 'k1' });
    assert.equal(again.order, r.order);
    assert.deepEqual(again.trades.map((t) => t.id), r.trades.map((t) => t.id));
    assert.equal(h.position(u, C).size, 1);
  });

  it('refuses a retry whose first order is no longer kept in memory instead of creating a second one', () => {
    const h = setup({ ...DEFAULT_LIMITS, closedOrdersKept: 2 });
    const u = h.user('10');
    const first = h.ok(u, 'buy', C, '0.0050', '0.1', { clientOrderId: 'old', tif: 'immediate_or_cancel' }).order;
    for (let i = 0; i < 80; i++) h.ok(u, 'buy', C, '0.0050', '0.1', { tif: 'immediate_or_cancel' });
    assert.equal(h.u(u).orders.has(first.id), false, 'the first order was pruned');
    const next = h.ex.nextOrderId;
    rejected(h.place(u, 'buy', C, '0.0050', '0.1', { clientOrderId: 'old' }), 11029, 'client_order_id_in_use');
    assert.equal(h.ex.nextOrderId, next);
  });

  it('is forgotten after 24 hours', () => {
    const h = setup();
    const u = h.user('10');
    const a = h.ok(u, 'buy', C, '0.0050', '0.1', { clientOrderId: 'day' });
    h.apply({ t: 'index', currency: 'BTC', price: 100000, manual: true, by: null }, T0 + 24 * 3600 * 1000 + 1);
    const b = h.ok(u, 'buy', C, '0.0050', '0.1', { clientOrderId: 'day' });
    assert.notEqual(a.order.id, b.order.id);
  });
});

describe('order validation', () => {
  it('refuses prices outside the band with 10005 / 10007 and the limit in the message', () => {
    const h = setup();
    const u = h.user('10');
    const m = h.ex.markets.get(h.inst(SC).id)!;
    // band by hand from the mark: min = m - 0.25m - 0.01, max = m + 0.25m + 0.01, onto 0.0001
    assert.equal(m.minPrice, Math.ceil((0.75 * m.markCoin - 0.01) * 1e4 - 1e-9));
    assert.equal(m.maxPrice, Math.floor((1.25 * m.markCoin + 0.01) * 1e4 + 1e-9));
    assert.deepEqual([m.minPrice, m.maxPrice], [300, 766]);
    assert.equal(rejected(h.place(u, 'buy', SC, '0.0295', '0.1'), 10005).suffix, '0.03');
    assert.equal(rejected(h.place(u, 'sell', SC, '0.0770', '0.1'), 10007).suffix, '0.0766');
    h.ok(u, 'buy', SC, '0.0300', '0.1');
    h.ok(u, 'sell', SC, '0.0765', '0.1');
  });

  it('checks tick, amount, price and instrument', () => {
    const h = setup();
    const u = h.user('10', '100');
    rejected(h.place(u, 'buy', C, '0.0101', '0.1'), 10043);
    rejected(h.place(u, 'buy', C, '0.0052', '0.1'), 10043);
    h.ok(u, 'buy', C, '0.0049', '0.1');
    h.ok(u, 'buy', C, '0.0055', '0.1');
    rejected(h.place(u, 'buy', C, '0.0050', '0.15'), 10021);
    rejected(h.place(u, 'buy', C, '0.0050', '0.05'), 10002);
    rejected(h.place(u, 'buy', C, '0.0050', '0'), 10021);
    rejected(h.place(u, 'buy', E, '0.0050', '1.5'), 10021);
    rejected(h.place(u, 'buy', E, '0.0050', '0.5'), 10002);
    rejected(h.place(u, 'buy', C, '0', '0.1'), 10023);
    rejected(h.place(u, 'buy', C, null, '0.1'), 10023);
    rejected(h.place(u, 'buy', 'BTC-30JAN26-777-C', '0.0050', '0.1'), 10020);
  });

  it('refuses orders on a halted instrument with 10012 and cancels its open orders', () => {
    const h = setup();
    const u = h.user('10');
    const o = h.ok(u, 'buy', C, '0.0050', '0.1').order;
    h.apply({ t: 'halt', instrument: C, halted: true, by: 0 });
    assert.equal(o.state, 'cancelled');
    assert.equal(o.cancelReason, 'instrument_halted');
    assert.deepEqual(h.depth(C, 'buy'), []);
    assert.equal(h.ex.trading.risk.account(h.u(u), 'BTC').ordersIM, 0);
    rejected(h.place(u, 'buy', C, '0.0050', '0.1'), 10012, 'instrument_halted');
    h.apply({ t: 'halt', instrument: C, halted: false, by: 0 });
    h.ok(u, 'buy', C, '0.0050', '0.1');
  });

  it('refuses orders while an automatic index is stale (over 30 s old) and accepts again on the next update', () => {
    const h = setup(DEFAULT_LIMITS, false);
    const u = h.user('10');
    h.apply({ t: 'expire_orders' }, T0 + 30_000);
    h.ok(u, 'buy', C, '0.0050', '0.1');
    h.apply({ t: 'expire_orders' }, T0 + 30_001);
    rejected(h.place(u, 'buy', C, '0.0050', '0.1'), 10012, 'index_stale');
    // ETH's automatic index is just as stale
    rejected(h.place(u, 'buy', E, '0.0050', '1'), 10012, 'index_stale');
    h.apply({ t: 'index', currency: 'BTC', price: 100_000, manual: false, by: null });
    h.ok(u, 'buy', C, '0.0050', '0.1');
  });

  it('never considers a manual index stale', () => {
    const h = setup();
    const u = h.user('10');
    h.apply({ t: 'expire_orders' }, T0 + 7 * 24 * 3600 * 1000);
    h.ok(u, 'buy', C, '0.0050', '0.1');
  });
});

describe('cancels', () => {
  it('cancels own orders only, and reports already closed ones', () => {
    const h = setup();
    const [u, v] = [h.user('10'), h.user('10')];
    const o = h.ok(u, 'buy', C, '0.0050', '0.1').order;
    rejected(h.apply({ t: 'cancel', userId: v, orderId: o.id }), 10004);
    rejected(h.apply({ t: 'cancel', userId: u, orderId: 999_999 }), 10004);
    const c = h.apply({ t: 'cancel', userId: u, orderId: o.id }) as typeof o;
    assert.equal(c.state, 'cancelled');
    assert.equal(c.cancelReason, 'user_request');
    rejected(h.apply({ t: 'cancel', userId: u, orderId: o.id }), 10010);
    assert.equal(h.ex.trading.risk.account(h.u(u), 'BTC').ordersIM, 0);
  });

  it('cancel_all filters by currency, instrument, side and label', () => {
    const h = setup();
    const u = h.user('10', '10');
    h.ok(u, 'buy', C, '0.0050', '0.1', { label: 'a' });
    h.ok(u, 'sell', C, '0.0140', '0.1');
    h.ok(u, 'buy', SC, '0.0300', '0.1');
    h.ok(u, 'buy', E, '0.0050', '1', { label: 'a' });
    const all = (x: Record<string, unknown>) => (h.apply({ t: 'cancel_all', userId: u, currency: null, instrument: null, side: null, label: null, ...x } as never) as unknown[]).length;
    assert.equal(all({ label: 'a', currency: 'ETH' }), 1);
    assert.equal(all({ instrument: C, side: 1 }), 1);
    assert.equal(all({ currency: 'BTC' }), 2);
    assert.equal(all({}), 0);
    assert.equal(h.u(u).openOrderCount, 0);
  });
});

describe('risk (Deribit standard margin)', () => {
  /** Deposits exactly the IM of a `contracts` short (and one satoshi less for a second user) and
   *  sells at `price`, which rests (no bids): the first fits exactly, the second is refused. */
  function imBoundary(h: Harness, name: string, contracts: string, price: string, perContractByHand: number): number {
    const inst = h.inst(name);
    const per = h.ex.trading.risk.imPerContract(inst);
    assert.ok(Math.abs(per - perContractByHand) < 1e-12, `IM per contract ${per} vs by hand ${perContractByHand}`);
    // rounded up to the satoshi (the exchange's favour)
    const im = Math.ceil(perContractByHand * Number(contracts) * 1e8 - 1e-6);
    const fits = h.user();
    h.deposit(fits, 'BTC', im);
    const r = h.place(fits, 'sell', name, price, contracts);
    assert.ok(!isReject(r), `an order that fits exactly is accepted (needs ${im}, got ${isReject(r) ? r.code : ''})`);
    const acct = h.ex.trading.risk.account(h.u(fits), 'BTC');
    assert.equal(acct.initialMargin, im);
    assert.equal(acct.available, 0);
    const short = h.user();
    h.deposit(short, 'BTC', im - 1);
    rejected(h.place(short, 'sell', name, price, contracts), 10009, 'not_enough_funds');
    return im;
  }

  it('a short call needs max(0.15 - OTM/U, 0.1) + mark per contract; one satoshi less is refused', () => {
    const h = setup();
    const m = h.ex.markets.get(h.inst(SC).id)!.markCoin;
    // U = 100000, K = 102000: OTM = 2000, 0.15 - 0.02 = 0.13 > 0.1
    const byHand = 0.13 + m;
    assert.equal(shortInitialMargin('call', 100_000, 102_000, m), byHand);
    const im = imBoundary(h, SC, '1', '0.0700', byHand);
    // with the model mark ~0.0533128 that is ~0.1833128 coin
    assert.ok(Math.abs(im - 18_331_281) <= 1, `IM ${im}`);
  });

  it('a far out-of-the-money short call is floored at 0.1 + mark', () => {
    const h = setup();
    const m = h.ex.markets.get(h.inst(SF).id)!.markCoin;
    // K = 110000: 0.15 - 10000/100000 = 0.05 < 0.1
    imBoundary(h, SF, '0.5', '0.0400', 0.1 + m);
  });

  it('a short put needs max(max(0.15 - OTM/U, 0.1) + mark, maintenance margin) per contract', () => {
    const h = setup();
    const m = h.ex.markets.get(h.inst(SP).id)!.markCoin;
    // U = 100000, K = 98000: OTM = 2000 -> 0.13 + m; MM = max(0.075, 0.075m) + m is smaller
    const byHand = Math.max(0.13 + m, Math.max(0.075, 0.075 * m) + m);
    assert.equal(byHand, 0.13 + m);
    imBoundary(h, SP, '1.2', '0.0700', byHand);
  });

  it('a buy reserves premium plus fee, exactly', () => {
    const h = setup();
    const [fits, short] = [h.user(), h.user()];
    // 0.5 * 0.0100 = 0.005 premium + 0.5 * 0.0003 = 0.00015 fee
    const need = sat('0.005') + sat('0.00015');
    h.deposit(fits, 'BTC', need);
    h.deposit(short, 'BTC', need - 1);
    h.ok(fits, 'buy', C, '0.0100', '0.5');
    rejected(h.place(short, 'buy', C, '0.0100', '0.5'), 10009);
    assert.equal(h.ex.trading.risk.account(h.u(fits), 'BTC').available, 0);
    // cheap option: 1 * 0.0010 premium + 1 * 0.000125 capped fee
    const cheap = h.user();
    h.deposit(cheap, 'BTC', sat('0.001125'));
    h.ok(cheap, 'buy', C, '0.0010', '1');
    rejected(h.place(h.user('0.001124'), 'buy', C, '0.0010', '1'), 10009);
  });

  it('a market buy on a thin book needs only the cost of what it can fill', () => {
    const h = setup();
    const [m1, m2] = [h.user('10'), h.user('10')];
    h.ok(m1, 'sell', C, '0.0100', '0.1');
    h.ok(m2, 'sell', C, '0.0120', '0.1');
    // 0.1 * 0.0100 + 0.1 * 0.0120 = 0.0022 premium, 2 * 0.00003 fees
    const cost = sat('0.0022') + sat('0.00006');
    rejected(h.place(h.user('0.00225999'), 'buy', C, null, '5', { type: 'market' }), 10009);
    const u = h.user('0.00226');
    assert.equal(sat('0.00226'), cost);
    const r = h.ok(u, 'buy', C, null, '5', { type: 'market' });
    assert.equal(r.order.filled, 2);
    assert.equal(h.balance(u), 0);
  });

  it('a sell covered by a long position needs no margin; only the uncovered part does', () => {
    const h = setup();
    const [u, m] = [h.user(), h.user('10')];
    // 0.5 * 0.0500 premium + 0.5 * 0.0003 fee
    h.deposit(u, 'BTC', sat('0.025') + sat('0.00015'));
    h.ok(m, 'sell', SC, '0.0500', '0.5');
    h.ok(u, 'buy', SC, '0.0500', '0.5');
    assert.equal(h.balance(u), 0);
    // covered by the long: no margin at all
    h.ok(u, 'sell', SC, '0.0700', '0.5');
    const acct = h.ex.trading.risk.account(h.u(u), 'BTC');
    assert.equal(acct.initialMargin, 0);
    // equity is the long's mark value 0.5 * m ~ 0.0267; each uncovered 0.1 needs 0.1 * (0.13 + m)
    // ~ 0.0183, so one more 0.1 fits and a second does not
    const mark = h.ex.markets.get(h.inst(SC).id)!.markCoin;
    assert.equal(acct.equity, Math.floor(0.5 * mark * 1e8 + 1e-6));
    h.ok(u, 'sell', SC, '0.0700', '0.1');
    assert.equal(h.ex.trading.risk.account(h.u(u), 'BTC').initialMargin, Math.ceil(0.1 * (0.13 + mark) * 1e8 - 1e-6));
    rejected(h.place(u, 'sell', SC, '0.0700', '0.1'), 10009);
  });

  it('limits withdrawals to available_withdrawal_funds', () => {
    const h = setup();
    const u = h.user('1');
    h.ok(u, 'buy', C, '0.0100', '0.5'); // reserves 0.00515
    const acct = h.ex.trading.risk.account(h.u(u), 'BTC');
    assert.equal(acct.availableWithdrawal, sat('1') - sat('0.00515'));
    rejected(h.apply({ t: 'withdraw', userId: u, currency: 'BTC', amount: acct.availableWithdrawal + 1 }), 10009);
    h.apply({ t: 'withdraw', userId: u, currency: 'BTC', amount: acct.availableWithdrawal });
    assert.equal(h.balance(u), sat('0.00515'));
    rejected(h.apply({ t: 'withdraw', userId: u, currency: 'BTC', amount: 1 }), 10009);
    rejected(h.apply({ t: 'withdraw', userId: u, currency: 'ETH', amount: 1 }), 10009);
    const c = h.ex.conservation();
    assert.equal(c.BTC.balances, c.BTC.expected);
  });

  it('applies a deposit_id once, per user', () => {
    const h = setup();
    const [u, v] = [h.user(), h.user()];
    const a = h.deposit(u, 'BTC', sat('0.5'), 'dep-1');
    const b = h.deposit(u, 'BTC', sat('0.5'), 'dep-1');
    assert.equal(a, b);
    assert.equal(h.balance(u), sat('0.5'));
    assert.equal(h.ex.deposits.BTC, sat('0.5'));
    h.deposit(v, 'BTC', sat('0.5'), 'dep-1');
    assert.equal(h.balance(v), sat('0.5'));
  });

  it('a client deposit_id never collides with the id generated for a deposit without one', () => {
    const h = setup();
    const u = h.user();
    const auto = h.deposit(u, 'BTC', sat('0.1')) as { depositId: string };
    h.deposit(u, 'BTC', sat('0.2'), auto.depositId);
    assert.equal(h.balance(u), sat('0.3'));
  });

  it('limits open orders per instrument and per user (orders that cannot rest are not limited)', () => {
    const h = setup({ ...DEFAULT_LIMITS, maxOpenOrdersPerInstrument: 2, maxOpenOrdersPerUser: 3 });
    const u = h.user('10');
    h.ok(u, 'buy', C, '0.0050', '0.1');
    h.ok(u, 'buy', C, '0.0049', '0.1');
    rejected(h.place(u, 'buy', C, '0.0048', '0.1'), 11029, 'max_open_orders_per_instrument');
    h.ok(u, 'buy', C, '0.0048', '0.1', { tif: 'immediate_or_cancel' });
    h.ok(u, 'buy', SC, '0.0300', '0.1');
    rejected(h.place(u, 'buy', SF, '0.0200', '0.1'), 11029, 'max_open_orders');
    h.apply({ t: 'cancel_all', userId: u, currency: null, instrument: C, side: null, label: null });
    h.ok(u, 'buy', SF, '0.0200', '0.1');
  });
});
