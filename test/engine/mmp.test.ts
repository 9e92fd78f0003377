// Market-maker protection and mass quotes in the engine (src/engine/mmp.ts, massQuote.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject, type Reject } from '../../src/domain/errors.ts';
import { roundToTick } from '../../src/domain/instrument.ts';
import type { Command, QuoteItem } from '../../src/engine/commands.ts';
import type { MassQuoteResult } from '../../src/engine/massQuote.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { PlaceResult } from '../../src/engine/trading.ts';
import type { Order } from '../../src/engine/types.ts';
import { EXP_MAR, Harness, T0, amt, spec } from '../helpers/engine.ts';

const CALL = spec('BTC', EXP_MAR, 100_000, 'call');
const PUT = spec('BTC', EXP_MAR, 100_000, 'put');
const CALL2 = spec('BTC', EXP_MAR, 110_000, 'call');

function market() {
  return Harness.market([CALL, PUT, CALL2]);
}

/** A price on the grid `ticks` grid steps (0.0005) away from the instrument's mark, as units. */
function near(h: Harness, name: string, steps: number): number {
  const inst = h.inst(name);
  const m = h.ex.markets.get(inst.id)!;
  return roundToTick(inst, m.markCoin * 1e4, 'down') + steps * 5;
}

function cfg(h: Harness, userId: number, o: Partial<Extract<Command, { t: 'set_mmp_config' }>> = {}): unknown {
  return h.apply({ t: 'set_mmp_config', userId, indexName: 'btc_usd', group: null, interval: 60, frozenTime: 10, quantityLimit: amt('1'), deltaLimit: 0, maxQuoteQuantity: 0, ...o });
}

function placeMmp(h: Harness, userId: number, side: 0 | 1, name: string, price: number, amount: string, mmp = true): PlaceResult | Reject {
  return h.apply({
    t: 'place', userId, side, instrument: name, price, advanced: null, advPrice: null, lots: amt(amount), type: 'limit',
    tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null, mmp,
  }) as PlaceResult | Reject;
}

function quote(h: Harness, userId: number, quotes: QuoteItem[], group = 'g1', quoteId = 'q'): MassQuoteResult | Reject {
  return h.apply({ t: 'mass_quote', userId, quoteId, group, quotes }) as MassQuoteResult | Reject;
}

function twoSided(name: string, bid: number, ask: number, amount = '0.5', set: string | null = null): QuoteItem {
  return { instrument: name, quoteSetId: set, bid: { price: bid, lots: amt(amount), postOnly: false, rejectPostOnly: false }, ask: { price: ask, lots: amt(amount), postOnly: false, rejectPostOnly: false } };
}

function ok<T>(r: T | Reject): T {
  if (isReject(r)) throw new Error(`refused: ${r.code} ${r.reason}`);
  return r;
}

describe('market-maker protection', () => {
  it('a fill reaching the quantity limit cancels every MMP order of the index in the same command and freezes it', () => {
    const h = market();
    const mm = h.user('10');
    const taker = h.user('10');
    ok(cfg(h, mm, { quantityLimit: amt('1'), frozenTime: 10 }) as object);
    const a = ok(placeMmp(h, mm, 1, CALL.name, near(h, CALL.name, 4), '1'));
    const b = ok(placeMmp(h, mm, 1, PUT.name, near(h, PUT.name, 4), '1'));
    const plain = ok(placeMmp(h, mm, 1, CALL2.name, near(h, CALL2.name, 4), '1', false));
    assert.equal(a.order.mmp?.group, null);
    const seqBefore = h.seq;
    // 0.6 then 0.4: the second fill reaches 1.0 and triggers
    ok(h.place(taker, 'buy', CALL.name, null, '0.6', { type: 'market' }));
    assert.equal(a.order.state, 'open');
    ok(h.place(taker, 'buy', CALL.name, null, '0.4', { type: 'market' }));
    assert.equal(h.seq, seqBefore + 2, 'the trigger needs no command of its own');
    assert.equal(a.order.state, 'filled');
    assert.equal(b.order.state, 'cancelled');
    assert.equal(b.order.cancelReason, 'mmp_trigger');
    assert.equal(plain.order.state, 'open', 'orders without the mmp flag stay');
    // frozen: mmp orders refused, plain ones accepted
    const refused = placeMmp(h, mm, 1, PUT.name, near(h, PUT.name, 4), '1');
    assert.ok(isReject(refused) && refused.code === 11030 && refused.reason === 'mmp_frozen');
    ok(placeMmp(h, mm, 1, PUT.name, near(h, PUT.name, 5), '0.1', false));
    // the freeze ends after frozen_time (10 s) of engine time
    h.ts = T0 + 9_999;
    assert.ok(isReject(placeMmp(h, mm, 1, PUT.name, near(h, PUT.name, 4), '1')));
    h.ts = T0 + 10_000;
    ok(placeMmp(h, mm, 1, PUT.name, near(h, PUT.name, 4), '1'));
  });

  it('frozen_time 0 freezes until reset_mmp, however much time passes', () => {
    const h = market();
    const mm = h.user('10');
    const taker = h.user('10');
    ok(cfg(h, mm, { quantityLimit: amt('0.5'), frozenTime: 0 }) as object);
    ok(placeMmp(h, mm, 1, CALL.name, near(h, CALL.name, 4), '1'));
    ok(h.place(taker, 'buy', CALL.name, null, '0.5', { type: 'market' }));
    h.ts += 24 * 3600_000;
    assert.ok(isReject(placeMmp(h, mm, 1, CALL.name, near(h, CALL.name, 4), '1')));
    // another user's reset does not touch it
    assert.ok(isReject(h.apply({ t: 'reset_mmp', userId: taker, indexName: 'btc_usd', group: null })));
    assert.ok(isReject(placeMmp(h, mm, 1, CALL.name, near(h, CALL.name, 4), '1')));
    ok(h.apply({ t: 'reset_mmp', userId: mm, indexName: 'btc_usd', group: null }) as object);
    ok(placeMmp(h, mm, 1, CALL.name, near(h, CALL.name, 4), '1'));
  });

  it('fills further apart than the interval do not add up', () => {
    const h = market();
    const mm = h.user('10');
    const taker = h.user('10');
    ok(cfg(h, mm, { quantityLimit: amt('1'), interval: 5 }) as object);
    const a = ok(placeMmp(h, mm, 1, CALL.name, near(h, CALL.name, 4), '3'));
    ok(h.place(taker, 'buy', CALL.name, null, '0.9', { type: 'market' }));
    h.ts += 5_000; // the window of the first fill is over: a new one starts
    ok(h.place(taker, 'buy', CALL.name, null, '0.9', { type: 'market' }));
    assert.equal(a.order.state, 'open');
    h.ts += 4_999;
    ok(h.place(taker, 'buy', CALL.name, null, '0.1', { type: 'market' }));
    assert.equal(a.order.state, 'cancelled');
    assert.equal(a.order.cancelReason, 'mmp_trigger');
  });

  it('the delta limit triggers on net delta: a buy and a sell of the same call offset each other', () => {
    const h = market();
    const mm = h.user('10');
    const taker = h.user('10');
    // ATM call delta ~0.5: 1 contract bought then 1 sold nets ~0; 2 more sold pass |delta| 0.9
    ok(cfg(h, mm, { quantityLimit: 0, deltaLimit: 0.9 }) as object);
    const ask = ok(placeMmp(h, mm, 1, CALL.name, near(h, CALL.name, 6), '3'));
    const bid = ok(placeMmp(h, mm, 0, CALL.name, near(h, CALL.name, -6), '1'));
    ok(h.place(taker, 'sell', CALL.name, null, '1', { type: 'market' }));
    ok(h.place(taker, 'buy', CALL.name, null, '1', { type: 'market' }));
    assert.equal(ask.order.state, 'open');
    assert.equal(bid.order.state, 'filled');
    ok(h.place(taker, 'buy', CALL.name, null, '1', { type: 'market' }));
    assert.equal(ask.order.state, 'open', '|delta| ~0.5 < 0.9');
    ok(h.place(taker, 'buy', CALL.name, null, '0.9', { type: 'market' }));
    assert.equal(ask.order.state, 'cancelled');
    assert.equal(ask.order.cancelReason, 'mmp_trigger');
  });

  it('refuses an mmp order without a config, a market mmp order, and a config without limits', () => {
    const h = market();
    const mm = h.user('10');
    const r = placeMmp(h, mm, 1, CALL.name, near(h, CALL.name, 4), '1');
    assert.ok(isReject(r) && r.code === 11029 && r.reason === 'mmp_not_configured');
    const none = cfg(h, mm, { quantityLimit: 0, deltaLimit: 0 });
    assert.ok(isReject(none) && none.code === 11029);
    ok(cfg(h, mm) as object);
    const mkt = h.apply({
      t: 'place', userId: mm, side: 0, instrument: CALL.name, price: null, advanced: null, advPrice: null, lots: amt('1'), type: 'market',
      tif: 'immediate_or_cancel', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null, mmp: true,
    });
    assert.ok(isReject(mkt) && mkt.reason === 'mmp_limit_only');
    // interval 0 removes the config
    assert.equal(cfg(h, mm, { interval: 0 }), 'removed');
    assert.equal(h.ex.mmp.list(mm, null, undefined).length, 0);
  });
});

describe('max_quote_quantity', () => {
  it('bounds what the group holds open per instrument and side, a replaced quote not counted', () => {
    const h = market();
    const mm = h.user('10');
    ok(cfg(h, mm, { group: 'g1', maxQuoteQuantity: amt('1') }) as object);
    ok(cfg(h, mm, { maxQuoteQuantity: amt('1') }) as object);
    const big = ok(quote(h, mm, [twoSided(CALL.name, near(h, CALL.name, -4), near(h, CALL.name, 4), '1.1')]));
    assert.deepEqual(big.errors.map((e) => e.error.reason), ['max_quote_quantity_exceeded', 'max_quote_quantity_exceeded']);
    ok(quote(h, mm, [twoSided(CALL.name, near(h, CALL.name, -4), near(h, CALL.name, 4), '1')]));
    // replacing a full quote with another of 1 is fine: the old one goes first
    assert.deepEqual(ok(quote(h, mm, [twoSided(CALL.name, near(h, CALL.name, -5), near(h, CALL.name, 5), '1')])).errors, []);
    // ordinary mmp orders: 0.6 + 0.5 on one side pass 1
    ok(placeMmp(h, mm, 1, PUT.name, near(h, PUT.name, 4), '0.6'));
    const r = placeMmp(h, mm, 1, PUT.name, near(h, PUT.name, 5), '0.5');
    assert.ok(isReject(r) && r.reason === 'max_quote_quantity_exceeded');
    ok(placeMmp(h, mm, 0, PUT.name, near(h, PUT.name, -5), '0.5'));
  });
});

describe('mass quotes', () => {
  it('places both sides of many instruments in one command and replaces them per slot', () => {
    const h = market();
    const mm = h.user('10');
    ok(cfg(h, mm, { group: 'g1' }) as object);
    const seq0 = h.seq;
    const r1 = ok(quote(h, mm, [twoSided(CALL.name, near(h, CALL.name, -4), near(h, CALL.name, 4)), twoSided(PUT.name, near(h, PUT.name, -4), near(h, PUT.name, 4))]));
    assert.equal(h.seq, seq0 + 1, 'one command');
    assert.equal(r1.orders.length, 4);
    assert.deepEqual(r1.errors, []);
    for (const o of r1.orders) assert.deepEqual(o.mmp, { group: 'g1', quoteId: 'q', quoteSetId: null });
    // a new bid for the call replaces the old one; the ask at the same price and size keeps its order
    const r2 = ok(quote(h, mm, [twoSided(CALL.name, near(h, CALL.name, -5), near(h, CALL.name, 4))], 'g1', 'q2'));
    assert.equal(r1.orders[0].state, 'cancelled');
    assert.equal(r2.orders[0].state, 'open');
    assert.equal(r2.orders[0].price, near(h, CALL.name, -5));
    assert.equal(r2.orders[1], r1.orders[1], 'unchanged quote kept (time priority)');
    assert.equal(h.openOrders(mm).length, 4);
    // amount 0 removes a side
    ok(quote(h, mm, [{ instrument: PUT.name, quoteSetId: null, bid: { price: near(h, PUT.name, -4), lots: 0, postOnly: false, rejectPostOnly: false }, ask: null }]));
    assert.equal(r1.orders[2].state, 'cancelled');
    assert.equal(h.openOrders(mm).length, 3);
  });

  it('reports per-side errors: unknown instrument, off-band price, margin exhausted, self-trade', () => {
    const h = market();
    const mm = h.user('0.3');
    const other = h.user('10');
    ok(cfg(h, mm, { group: 'g1', quantityLimit: amt('100') }) as object);
    // the account can carry a few short calls at most: quoting 5 asks of 2 BTC each over-commits
    const r = ok(quote(h, mm, [
      { instrument: 'BTC-NOPE', quoteSetId: null, bid: { price: 10, lots: amt('1'), postOnly: false, rejectPostOnly: false }, ask: null },
      { instrument: CALL.name, quoteSetId: null, bid: { price: 1, lots: amt('0.1'), postOnly: false, rejectPostOnly: false }, ask: { price: near(h, CALL.name, 2), lots: amt('2'), postOnly: false, rejectPostOnly: false } },
      twoSided(PUT.name, near(h, PUT.name, -2), near(h, PUT.name, 2), '2'),
      twoSided(CALL2.name, near(h, CALL2.name, -2), near(h, CALL2.name, 2), '2'),
    ]));
    const codes = r.errors.map((e) => `${e.instrument}/${e.side}/${e.error.code}/${e.error.reason ?? ''}`);
    assert.ok(codes.includes('BTC-NOPE/bid/10020/'), codes.join(' '));
    assert.ok(codes.some((c) => c.startsWith(`${CALL.name}/bid/10005`)), codes.join(' '));
    assert.ok(codes.some((c) => c.endsWith('/10009/not_enough_funds')), `margin refusals: ${codes.join(' ')}`);
    // nothing refused rests, and what rests fits the account
    const risk = h.ex.trading.risk.account(h.u(mm), 'BTC');
    assert.ok(risk.available >= 0, `available ${risk.available}`);
    // a quote crossing the user's own order is refused as a self-trade, not matched
    const bidP = near(h, PUT.name, -10);
    ok(h.place(mm, 'buy', PUT.name, (bidP / 1e4).toFixed(4), '0.1'));
    const st = ok(quote(h, mm, [{ instrument: PUT.name, quoteSetId: null, bid: null, ask: { price: bidP, lots: amt('0.1'), postOnly: false, rejectPostOnly: false } }], 'g1', 'q3'));
    assert.equal(st.errors.length, 1);
    assert.equal(st.errors[0].error.code, 11030);
    assert.equal(st.errors[0].error.reason, 'self_trade');
    void other;
  });

  it('is refused whole while its group is frozen, and a trigger inside a message refuses the rest', () => {
    const h = market();
    const mm = h.user('10');
    const taker = h.user('10');
    ok(cfg(h, mm, { group: 'g1', quantityLimit: amt('0.5'), frozenTime: 0 }) as object);
    // the taker rests a bid the mass quote's first ask crosses: 0.5 fills and triggers
    ok(h.place(taker, 'buy', CALL.name, (near(h, CALL.name, 0) / 1e4).toFixed(4), '0.5'));
    const r = ok(quote(h, mm, [
      { instrument: CALL.name, quoteSetId: null, bid: null, ask: { price: near(h, CALL.name, 0), lots: amt('1'), postOnly: false, rejectPostOnly: false } },
      twoSided(PUT.name, near(h, PUT.name, -4), near(h, PUT.name, 4)),
    ]));
    assert.equal(r.trades.length, 1);
    assert.equal(r.orders[0].state, 'cancelled', 'the rest of the crossing ask went with the trigger');
    assert.equal(r.orders[0].cancelReason, 'mmp_trigger');
    assert.deepEqual(r.errors.map((e) => [e.side, e.error.code, e.error.reason]), [['bid', 11030, 'mmp_frozen'], ['ask', 11030, 'mmp_frozen']]);
    assert.equal(h.openOrders(mm).length, 0);
    const again = quote(h, mm, [twoSided(PUT.name, near(h, PUT.name, -4), near(h, PUT.name, 4))]);
    assert.ok(isReject(again) && again.code === 11030 && again.reason === 'mmp_frozen');
    ok(h.apply({ t: 'reset_mmp', userId: mm, indexName: 'btc_usd', group: 'g1' }) as object);
    assert.equal(ok(quote(h, mm, [twoSided(PUT.name, near(h, PUT.name, -4), near(h, PUT.name, 4))])).orders.length, 2);
  });

  it('needs a configured group, and groups are separate: quotes of another group are not replaced', () => {
    const h = market();
    const mm = h.user('10');
    const r = quote(h, mm, [twoSided(CALL.name, near(h, CALL.name, -4), near(h, CALL.name, 4))]);
    assert.ok(isReject(r) && r.reason === 'mmp_group_not_configured');
    ok(cfg(h, mm, { group: 'g1' }) as object);
    ok(cfg(h, mm, { group: 'g2' }) as object);
    ok(quote(h, mm, [twoSided(CALL.name, near(h, CALL.name, -4), near(h, CALL.name, 4))], 'g1'));
    ok(quote(h, mm, [twoSided(CALL.name, near(h, CALL.name, -5), near(h, CALL.name, 5))], 'g2'));
    assert.equal(h.openOrders(mm).length, 4);
    const dup = quote(h, mm, [twoSided(CALL.name, 1, 2), twoSided(CALL.name, 1, 2)]);
    assert.ok(isReject(dup) && dup.reason === 'duplicate_instrument');
  });

  it('cancel_quotes selects by quote_set_id, instrument, currency and all, and only the caller\'s quotes', () => {
    const h = market();
    const mm = h.user('10');
    const other = h.user('10');
    ok(cfg(h, mm, { group: 'g1' }) as object);
    ok(cfg(h, other, { group: 'g1' }) as object);
    ok(quote(h, mm, [twoSided(CALL.name, near(h, CALL.name, -4), near(h, CALL.name, 4), '0.5', 'A'), twoSided(PUT.name, near(h, PUT.name, -4), near(h, PUT.name, 4), '0.5', 'B')]));
    ok(quote(h, other, [twoSided(CALL2.name, near(h, CALL2.name, -4), near(h, CALL2.name, 4), '0.5', 'A')]));
    const plain = ok(h.place(mm, 'buy', CALL2.name, (near(h, CALL2.name, -6) / 1e4).toFixed(4), '0.1'));
    const base = { minDelta: null, maxDelta: null, instrument: null, currency: null, quoteSetId: null } as const;
    const bySet = h.apply({ t: 'cancel_quotes', userId: mm, cancelType: 'quote_set_id', ...base, quoteSetId: 'A' }) as Order[];
    assert.deepEqual(bySet.map((o) => o.inst.name), [CALL.name, CALL.name]);
    assert.equal(h.openOrders(other).length, 2, "another user's set A untouched");
    const none = h.apply({ t: 'cancel_quotes', userId: other, cancelType: 'quote_set_id', ...base, quoteSetId: 'B' }) as Order[];
    assert.equal(none.length, 0, "set B of another user is not found");
    const all = h.apply({ t: 'cancel_quotes', userId: mm, cancelType: 'all', ...base }) as Order[];
    assert.equal(all.length, 2);
    assert.equal(plain.order.state, 'open', 'ordinary orders are not quotes');
  });

  it('cancel_quotes by delta selects instruments by their delta at the mark: calls (~0.5) and not puts (~-0.5)', () => {
    const h = market();
    const mm = h.user('10');
    ok(cfg(h, mm, { group: 'g1' }) as object);
    ok(quote(h, mm, [twoSided(CALL.name, near(h, CALL.name, -4), near(h, CALL.name, 4)), twoSided(PUT.name, near(h, PUT.name, -4), near(h, PUT.name, 4))]));
    const base = { instrument: null, currency: null, quoteSetId: null } as const;
    const calls = h.apply({ t: 'cancel_quotes', userId: mm, cancelType: 'delta', ...base, minDelta: 0, maxDelta: 1 }) as Order[];
    assert.deepEqual(calls.map((o) => o.inst.name), [CALL.name, CALL.name]);
    const none = h.apply({ t: 'cancel_quotes', userId: mm, cancelType: 'delta', ...base, minDelta: 0, maxDelta: 1 }) as Order[];
    assert.equal(none.length, 0);
    const puts = h.apply({ t: 'cancel_quotes', userId: mm, cancelType: 'delta', ...base, minDelta: -1, maxDelta: -0.1 }) as Order[];
    assert.deepEqual(puts.map((o) => o.inst.name), [PUT.name, PUT.name]);
  });

  it('snapshots keep MMP state: a restored engine hashes equal and behaves the same; old snapshots restore', () => {
    const h = market();
    const mm = h.user('10');
    const taker = h.user('10');
    ok(cfg(h, mm, { group: 'g1', quantityLimit: amt('1') }) as object);
    ok(cfg(h, mm, { quantityLimit: amt('2') }) as object);
    ok(quote(h, mm, [twoSided(CALL.name, near(h, CALL.name, -4), near(h, CALL.name, 4), '1', 'S')]));
    ok(placeMmp(h, mm, 1, PUT.name, near(h, PUT.name, 4), '1'));
    ok(h.place(taker, 'buy', CALL.name, null, '0.6', { type: 'market' }));
    const text = serialize(h.ex);
    const r = restore(text);
    assert.equal(stateHash(r), stateHash(h.ex));
    const g = r.mmp.list(mm, 'btc_usd', 'g1')[0];
    assert.equal(g.quantity, amt('0.6'));
    // both engines trigger on the next 0.4
    for (const ex of [h.ex, r]) ex.apply({ t: 'place', userId: taker, side: 0, instrument: CALL.name, price: null, advanced: null, advPrice: null, lots: amt('0.4'), type: 'market', tif: 'immediate_or_cancel', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null, ts: h.ts, seq: h.seq + 1 });
    assert.equal(stateHash(r), stateHash(h.ex));
    assert.equal(r.mmp.list(mm, 'btc_usd', 'g1')[0].frozen, true);
    // a snapshot written before MMP existed has no `mmp` part
    const old = JSON.parse(text);
    delete old.mmp;
    const o = restore(JSON.stringify(old));
    assert.equal(o.mmp.groups.size, 0);
    assert.equal(o.users.size, h.ex.users.size);
  });
});
