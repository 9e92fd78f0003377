// Trigger orders in the engine (issue 17, docs/api-notes.md "Trigger orders"): they wait out of the
// book, fire inside the command that moved their price (index, vol, trade), become ordinary orders
// that pass the usual checks (and may be refused then: state `rejected`), and replay identically.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject, type Reject } from '../../src/domain/errors.ts';
import type { Command } from '../../src/engine/commands.ts';
import { DEFAULT_LIMITS } from '../../src/engine/exchange.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { TriggerOrder, TriggerOrderType, TriggerPlaceResult, TriggerSource } from '../../src/engine/triggers.ts';
import type { Order } from '../../src/engine/types.ts';
import { mulberry32 } from '../../src/market/indexFeed.ts';
import { EXP_JAN, EXP_MAR, Harness, amt, code, px, spec } from '../helpers/engine.ts';

const CALL = spec('BTC', EXP_MAR, 100_000, 'call');
const PUT = spec('BTC', EXP_MAR, 100_000, 'put');
const JAN = spec('BTC', EXP_JAN, 100_000, 'call');

interface TrigOpts {
  type: TriggerOrderType;
  source: TriggerSource;
  /** trigger price text (coin for mark/last, USD for index) */
  at?: string;
  offset?: string;
  /** limit price text for *_limit */
  price?: string;
  amount?: string;
  reduceOnly?: boolean;
  label?: string;
}

function trigCmd(userId: number, side: 'buy' | 'sell', instrument: string, o: TrigOpts): Command {
  const limit = o.type === 'stop_limit' || o.type === 'take_limit';
  return {
    t: 'place',
    userId,
    side: side === 'buy' ? 0 : 1,
    instrument,
    price: limit ? px(o.price!) : null,
    advanced: null,
    advPrice: null,
    lots: amt(o.amount ?? '1'),
    type: limit ? 'limit' : 'market',
    tif: 'good_til_cancelled',
    postOnly: false,
    rejectPostOnly: false,
    reduceOnly: o.reduceOnly ?? false,
    label: o.label ?? '',
    clientOrderId: null,
    trig: { type: o.type, source: o.source, price: o.at === undefined ? null : px(o.at), offset: o.offset === undefined ? null : px(o.offset) },
  };
}

function trig(h: Harness, userId: number, side: 'buy' | 'sell', instrument: string, o: TrigOpts): TriggerOrder {
  const r = h.apply(trigCmd(userId, side, instrument, o)) as TriggerPlaceResult | Reject;
  if (isReject(r)) throw new Error(`trigger refused: ${r.code} ${r.reason ?? ''}`);
  return r.order;
}

function setIndex(h: Harness, price: number): void {
  h.apply({ t: 'index', currency: 'BTC', price, manual: true, by: null });
}

function mark(h: Harness, name: string): number {
  return h.ex.markets.get(h.inst(name).id)!.markCoin;
}

/** A grid price (text) inside the instrument's current band, at fraction `f` of it. */
function inBand(h: Harness, name: string, f: number): string {
  const m = h.ex.markets.get(h.inst(name).id)!;
  const units = Math.floor((m.minPrice + f * (m.maxPrice - m.minPrice)) / 5) * 5;
  return (Math.max(units, m.minPrice + 5 - (m.minPrice % 5)) / 1e4).toFixed(4);
}

function firedOrder(h: Harness, t: TriggerOrder): Order {
  assert.equal(t.state, 'triggered', `state ${t.state} ${t.rejectReason ?? ''}`);
  return h.u(t.userId).orders.get(t.firedOrderId!)!;
}

describe('trigger orders: firing', () => {
  it('an index stop sell waits out of the book and fires as a limit order in the index command that reaches it', () => {
    const h = Harness.market([CALL]);
    const [maker, seller] = [h.user('10'), h.user('10')];
    h.ok(maker, 'buy', CALL.name, '0.08', '2');
    const t = trig(h, seller, 'sell', CALL.name, { type: 'stop_limit', source: 'index_price', at: '95000', price: '0.08', amount: '1' });
    assert.equal(t.state, 'untriggered');
    assert.deepEqual(h.depth(CALL.name, 'sell'), [], 'an untriggered order is not in the book');
    assert.equal(h.openOrders(seller).length, 0);

    setIndex(h, 95_001);
    assert.equal(t.state, 'untriggered', 'above its level: still waiting');
    setIndex(h, 95_000);
    const o = firedOrder(h, t);
    assert.equal(o.origin, t);
    assert.equal(o.type, 'limit');
    assert.equal(o.state, 'filled', 'it met the resting bid');
    assert.equal(h.position(seller, CALL.name).size, -10);
    assert.equal(h.position(maker, CALL.name).size, 10);
    const log = h.ex.triggers.history.get(seller)!;
    assert.deepEqual(log.map((e) => [e.request, e.state, e.orderId]), [['order', 'untriggered', null], ['trigger:order', 'triggered', o.id]]);
  });

  it('a last-price stop buy fires inside the trade command that prints at its level, and a take buy on a falling mark too', () => {
    const h = Harness.market([CALL]);
    const [a, b, c] = [h.user('10'), h.user('10'), h.user('10')];
    h.ok(a, 'sell', CALL.name, '0.1', '1');
    h.ok(b, 'buy', CALL.name, '0.1', '1'); // last price 0.1
    const stop = trig(h, c, 'buy', CALL.name, { type: 'stop_market', source: 'last_price', at: '0.11', amount: '0.5' });
    h.ok(a, 'sell', CALL.name, '0.11', '0.5');
    h.ok(a, 'sell', CALL.name, '0.12', '2');
    assert.equal(stop.state, 'untriggered');
    // b's buy at 0.11 prints 0.11: c's stop fires in the same command and lifts the 0.12 offer
    h.ok(b, 'buy', CALL.name, '0.11', '0.5');
    const o = firedOrder(h, stop);
    assert.equal(o.type, 'market');
    assert.equal(o.filled, 5);
    assert.equal(o.filledNotional, px('0.12') * 5);
    assert.equal(h.ex.markets.get(h.inst(CALL.name).id)!.lastPrice, px('0.12'));

    // take buy on the mark: fires when the mark falls to its level (index down -> call mark down)
    const m = mark(h, CALL.name);
    const level = (Math.floor((m * 1e4 - 100) / 5) * 5) / 1e4;
    const take = trig(h, c, 'buy', CALL.name, { type: 'take_limit', source: 'mark_price', at: level.toFixed(4), price: '0.05', amount: '0.1' });
    setIndex(h, 99_000);
    assert.ok(mark(h, CALL.name) > level, 'the mark is still above the level');
    assert.equal(take.state, 'untriggered');
    setIndex(h, 90_000);
    assert.ok(mark(h, CALL.name) <= level);
    const resting = firedOrder(h, take);
    assert.equal(resting.state, 'open');
    assert.equal(h.depth(CALL.name, 'buy')[0][0], px('0.05'));
  });

  it('fires only the orders the price reached, oldest first among equal levels, and keeps the others', () => {
    const h = Harness.market([CALL]);
    const u = h.user('100');
    const ts = ['94000', '96000', '95000', '96000', '97000'].map((at) =>
      trig(h, u, 'sell', CALL.name, { type: 'stop_limit', source: 'index_price', at, price: '0.08', amount: '0.1' }),
    );
    setIndex(h, 96_000);
    assert.deepEqual(ts.map((t) => t.state), ['untriggered', 'triggered', 'untriggered', 'triggered', 'triggered']);
    const fired = ts.filter((t) => t.state === 'triggered').map((t) => t.firedOrderId!);
    assert.deepEqual(fired, [...fired].sort((a, b) => a - b), 'placed in id order: 2nd, 4th, 5th');
    assert.ok(ts[1].firedOrderId! < ts[3].firedOrderId! && ts[3].firedOrderId! < ts[4].firedOrderId!);
    setIndex(h, 94_500);
    assert.deepEqual(ts.map((t) => t.state), ['untriggered', 'triggered', 'triggered', 'triggered', 'triggered']);
  });

  it('a trailing stop sell follows the index up and fires when it falls back by the offset', () => {
    const h = Harness.market([CALL]);
    const u = h.user('10');
    const t = trig(h, u, 'sell', CALL.name, { type: 'trailing_stop', source: 'index_price', offset: '1000' });
    assert.equal(t.level, 99_000);
    setIndex(h, 103_000);
    assert.equal(t.level, 102_000, 'the level follows the peak');
    setIndex(h, 102_500);
    assert.equal(t.level, 102_000, 'and never moves back');
    assert.equal(t.state, 'untriggered');
    setIndex(h, 102_000);
    assert.equal(firedOrder(h, t).type, 'market');
  });
});

describe('trigger orders: refusals at placement', () => {
  it('refuses a trigger that would fire at once, an off-grid trigger, a missing offset, and more than the per-user limit', () => {
    const h = Harness.market([CALL], { ...DEFAULT_LIMITS, maxUntriggeredPerUser: 2 });
    const u = h.user('10');
    const r1 = h.apply(trigCmd(u, 'sell', CALL.name, { type: 'stop_market', source: 'index_price', at: '100000' })) as Reject;
    assert.equal(r1.code, 11029);
    assert.equal(r1.reason, 'trigger_price_too_high');
    const r2 = h.apply(trigCmd(u, 'buy', CALL.name, { type: 'stop_market', source: 'index_price', at: '99999' })) as Reject;
    assert.equal(r2.reason, 'trigger_price_too_low');
    const r3 = h.apply(trigCmd(u, 'sell', CALL.name, { type: 'take_market', source: 'index_price', at: '90000' })) as Reject;
    assert.equal(r3.reason, 'trigger_price_too_low', 'a take sell must be above the price');
    const r4 = h.apply(trigCmd(u, 'buy', CALL.name, { type: 'stop_market', source: 'mark_price', at: '0.5001' }));
    assert.equal(code(r4), 10043);
    const r5 = h.apply(trigCmd(u, 'buy', CALL.name, { type: 'trailing_stop', source: 'index_price' })) as Reject;
    assert.equal(r5.reason, 'invalid_trigger_offset');
    trig(h, u, 'buy', CALL.name, { type: 'stop_market', source: 'index_price', at: '110000' });
    trig(h, u, 'buy', CALL.name, { type: 'stop_market', source: 'index_price', at: '111000' });
    const r6 = h.apply(trigCmd(u, 'buy', CALL.name, { type: 'stop_market', source: 'index_price', at: '112000' })) as Reject;
    assert.equal(r6.code, 11029);
    assert.equal(r6.reason, 'no_more_triggers');
    assert.equal(h.ex.triggers.untriggeredCount(u), 2);
    // each refusal is decided by reading only: the sequencer answers it without journaling it
    const readOnly = (cmd: Command, why: string) => {
      const before = stateHash(h.ex);
      assert.equal((h.ex.refusalOf(cmd) as Reject).reason, why);
      assert.equal(stateHash(h.ex), before, 'refusalOf changed nothing');
      assert.equal((h.apply(cmd) as Reject).reason, why, 'apply gives the same answer');
    };
    readOnly(trigCmd(u, 'buy', CALL.name, { type: 'stop_market', source: 'index_price', at: '112000' }), 'no_more_triggers');
    h.apply({ t: 'cancel', userId: u, orderId: h.ex.triggers.openOf(u)[0].id });
    readOnly(trigCmd(u, 'sell', CALL.name, { type: 'stop_market', source: 'index_price', at: '100000' }), 'trigger_price_too_high');
    readOnly(trigCmd(u, 'buy', CALL.name, { type: 'trailing_stop', source: 'index_price' }), 'invalid_trigger_offset');
    assert.equal(h.ex.refusalOf(trigCmd(u, 'buy', CALL.name, { type: 'stop_market', source: 'index_price', at: '112000' })), null, 'an acceptable one is applied');
  });
});

describe('trigger orders: good_til_day', () => {
  it('an untriggered good_til_day order expires at the next 08:00 UTC by the expire_orders command', () => {
    const h = Harness.market([CALL]);
    const u = h.user('10');
    const gtd = trig(h, u, 'sell', CALL.name, { type: 'stop_market', source: 'index_price', at: '90000' });
    const day = { ...trigCmd(u, 'sell', CALL.name, { type: 'stop_market', source: 'index_price', at: '91000' }) } as Extract<Command, { t: 'place' }>;
    day.tif = 'good_til_day';
    const t = (h.apply(day) as TriggerPlaceResult).order;
    const eight = Date.UTC(2026, 0, 6, 8);
    assert.equal(t.expiresAt, eight);
    assert.equal(h.ex.trading.nextExpiry(), eight, 'the expiry scheduler sees it');
    h.apply({ t: 'expire_orders' }, eight - 1);
    assert.equal(t.state, 'untriggered');
    assert.equal(h.apply({ t: 'expire_orders' }, eight), 1);
    assert.deepEqual([t.state, t.cancelReason], ['cancelled', 'good_til_day']);
    assert.equal(gtd.state, 'untriggered', 'good_til_cancelled stays');
    assert.equal(h.ex.trading.nextExpiry(), Infinity);
  });
});

describe('trigger orders: client_order_id', () => {
  it('a retry gets the first trigger order, another request with the id is refused, and the id survives a snapshot', () => {
    const h = Harness.market([CALL]);
    const u = h.user('10');
    const cmd = { ...trigCmd(u, 'sell', CALL.name, { type: 'stop_market', source: 'index_price', at: '95000' }), clientOrderId: 'k1' } as Command;
    const first = (h.apply(cmd) as TriggerPlaceResult).order;
    const ids = h.ex.nextOrderId;
    assert.equal((h.apply(cmd) as TriggerPlaceResult).order, first);
    assert.equal(h.ex.nextOrderId, ids, 'no second order');
    assert.equal(h.ex.triggers.untriggeredCount(u), 1);
    assert.equal(h.ex.refusalOf(cmd), null, 'a placement with a client_order_id is left to apply');
    const other = { ...trigCmd(u, 'sell', CALL.name, { type: 'stop_market', source: 'index_price', at: '94000' }), clientOrderId: 'k1' } as Command;
    assert.equal((h.apply(other) as Reject).reason, 'client_order_id_reused');
    const plain = h.place(u, 'sell', CALL.name, '0.1', '1', { clientOrderId: 'k1' }) as Reject;
    assert.equal(plain.reason, 'client_order_id_in_use');
    // the price moves past the level: a late retry still answers the first order (now triggered)
    setIndex(h, 95_000);
    assert.equal(first.state, 'triggered');
    assert.equal((h.apply(cmd) as TriggerPlaceResult).order, first);
    const restored = restore(serialize(h.ex));
    assert.equal(restored.triggers.get(u, first.id)!.clientOrderId, 'k1');
    assert.equal(stateHash(restored), stateHash(h.ex));
  });
});

describe('trigger orders: the order a trigger becomes passes the usual checks', () => {
  it('holds no margin while untriggered; a fired buy that exceeds the funds is rejected and moves nothing', () => {
    const h = Harness.market([CALL]);
    const [maker, poor] = [h.user('10'), h.user('0.05')];
    h.ok(maker, 'sell', CALL.name, '0.09', '5');
    // 1 BTC of calls at 0.09 costs 0.09 BTC + fee: more than 0.05, but the trigger is accepted
    const t = trig(h, poor, 'buy', CALL.name, { type: 'stop_limit', source: 'index_price', at: '101000', price: '0.09', amount: '1' });
    const acct = h.ex.trading.risk.account(h.u(poor), 'BTC');
    assert.equal(acct.available, 5_000_000, 'an untriggered order reserves nothing');
    const before = [h.balance(poor), h.balance(maker), h.feeBalance()];
    setIndex(h, 101_000);
    assert.equal(t.state, 'rejected');
    assert.equal(t.rejectReason, 'not_enough_funds');
    assert.equal(t.firedOrderId, null);
    assert.deepEqual([h.balance(poor), h.balance(maker), h.feeBalance()], before);
    assert.equal(h.position(poor, CALL.name).size, 0);
    assert.deepEqual(h.ex.triggers.history.get(poor)!.at(-1)!.state, 'rejected');
  });

  it('a reduce-only stop whose position is gone when it fires is rejected, not turned into a new position', () => {
    const h = Harness.market([CALL]);
    const [a, b] = [h.user('10'), h.user('10')];
    h.ok(a, 'sell', CALL.name, '0.1', '1');
    h.ok(b, 'buy', CALL.name, '0.1', '1'); // b long 1
    const t = trig(h, b, 'sell', CALL.name, { type: 'stop_market', source: 'index_price', at: '95000', amount: '1', reduceOnly: true });
    h.ok(a, 'buy', CALL.name, '0.1', '1');
    h.ok(b, 'sell', CALL.name, '0.1', '1'); // b closes by hand
    assert.equal(h.position(b, CALL.name).size, 0);
    h.ok(a, 'buy', CALL.name, '0.09', '3'); // a bid the stop could hit
    setIndex(h, 94_000);
    assert.equal(t.state, 'rejected');
    assert.equal(t.rejectReason, 'reduce_only');
    assert.equal(h.position(b, CALL.name).size, 0);
  });

  it('cancels: own untriggered order once (then already closed), another user\'s id is not found', () => {
    const h = Harness.market([CALL]);
    const [a, b] = [h.user('10'), h.user('10')];
    const t = trig(h, a, 'sell', CALL.name, { type: 'stop_market', source: 'index_price', at: '90000' });
    assert.equal(code(h.ex.refusalOf({ t: 'cancel', userId: b, orderId: t.id })), 10004);
    assert.equal(code(h.apply({ t: 'cancel', userId: b, orderId: t.id })), 10004);
    assert.equal(t.state, 'untriggered');
    assert.equal(h.ex.refusalOf({ t: 'cancel', userId: a, orderId: t.id }), null);
    h.apply({ t: 'cancel', userId: a, orderId: t.id });
    assert.equal(t.state, 'cancelled');
    assert.equal(t.cancelReason, 'user_request');
    assert.equal(code(h.apply({ t: 'cancel', userId: a, orderId: t.id })), 10010);
    setIndex(h, 80_000);
    assert.equal(t.state, 'cancelled', 'a cancelled trigger never fires');
  });

  it('cancel_all by type: trigger_all leaves regular orders, limit leaves triggers, stop/take select their kind', () => {
    const h = Harness.market([CALL]);
    const a = h.user('10');
    h.ok(a, 'buy', CALL.name, '0.08', '1');
    const stop = trig(h, a, 'sell', CALL.name, { type: 'stop_market', source: 'index_price', at: '90000' });
    const take = trig(h, a, 'sell', CALL.name, { type: 'take_market', source: 'index_price', at: '110000' });
    const all = { t: 'cancel_all' as const, userId: a, currency: null, instrument: null, side: null, label: null };
    assert.equal((h.apply({ ...all, types: 'take' }) as unknown[]).length, 1);
    assert.deepEqual([stop.state, take.state], ['untriggered', 'cancelled']);
    assert.equal((h.apply({ ...all, types: 'limit' }) as unknown[]).length, 1);
    assert.equal(stop.state, 'untriggered');
    assert.equal((h.apply({ ...all, types: 'trigger_all' }) as unknown[]).length, 1);
    assert.equal(stop.state, 'cancelled');
  });

  it('edits the trigger price of an untriggered order (refusing one that would fire at once) and it fires at the new level', () => {
    const h = Harness.market([CALL]);
    const a = h.user('10');
    const t = trig(h, a, 'sell', CALL.name, { type: 'stop_market', source: 'index_price', at: '90000' });
    const edit = { t: 'edit' as const, userId: a, orderId: t.id, lots: amt('2'), price: null, postOnly: null, rejectPostOnly: null };
    assert.equal((h.apply({ ...edit, triggerPrice: px('100001') }) as Reject).reason, 'trigger_price_too_high');
    assert.equal(t.level, 90_000);
    h.apply({ ...edit, triggerPrice: px('98000') });
    assert.equal(t.level, 98_000);
    assert.equal(t.cmd.lots, amt('2'));
    setIndex(h, 98_500);
    assert.equal(t.state, 'untriggered');
    setIndex(h, 98_000);
    assert.equal(t.state, 'triggered');
  });

  it('settlement cancels the untriggered orders of the delivered series (reason settlement); halts cancel theirs', () => {
    const h = Harness.market([JAN, CALL]);
    const a = h.user('10');
    const jan = trig(h, a, 'sell', JAN.name, { type: 'stop_market', source: 'index_price', at: '90000' });
    const mar = trig(h, a, 'sell', CALL.name, { type: 'stop_market', source: 'index_price', at: '90000' });
    h.apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null }, EXP_JAN - 10 * 60_000);
    const r = h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN + 1_000);
    assert.ok(!isReject(r), JSON.stringify(r));
    assert.equal(jan.state, 'cancelled');
    assert.equal(jan.cancelReason, 'settlement');
    assert.equal(mar.state, 'untriggered');
    h.apply({ t: 'halt', instrument: CALL.name, halted: true, by: 1 });
    assert.equal(mar.state, 'cancelled');
    assert.equal(mar.cancelReason, 'instrument_halted');
    assert.equal(h.ex.triggers.untriggeredCount(a), 0);
  });
});

describe('trigger orders: the queues against a plain scan', () => {
  it('every index and vol move fires exactly the orders a scan of all untriggered orders says it reached', () => {
    const rand = mulberry32(0x5ca9);
    const h = Harness.market([CALL, PUT], { ...DEFAULT_LIMITS, maxUntriggeredPerUser: 1000 });
    const u = h.user('1000');
    let index = 100_000;
    let vol = 0.6;
    /** The reference: level and direction of each untriggered order, trailing peaks followed by hand. */
    const model = new Map<number, { t: TriggerOrder; level: number; up: boolean; trailing: boolean; offset: number; peak: number }>();
    const ref = (t: TriggerOrder) => (t.source === 'index_price' ? index : mark(h, t.inst.name));
    let fired = 0;
    for (let step = 0; step < 400; step++) {
      // a few new orders around the current prices (market orders: nothing rests, nothing trades)
      for (let k = 0; k < 3; k++) {
        const inst = rand() < 0.5 ? CALL.name : PUT.name;
        const source: TriggerSource = rand() < 0.5 ? 'index_price' : 'mark_price';
        const types: TriggerOrderType[] = ['stop_market', 'take_market', 'trailing_stop'];
        const type = types[Math.floor(rand() * 3)];
        const side = rand() < 0.5 ? 'buy' : 'sell';
        const x = source === 'index_price' ? index : mark(h, inst);
        const dist = source === 'index_price' ? 50 + Math.floor(rand() * 3000) : 0.0005 * (1 + Math.floor(rand() * 30));
        const cmd = trigCmd(u, side, inst, { type, source, at: '1', offset: source === 'index_price' ? String(dist) : dist.toFixed(4) });
        const spec = (cmd as { trig: { price: number | null } }).trig;
        const up = type === 'take_market' ? side === 'sell' : side === 'buy';
        const level = up ? x + dist : x - dist;
        spec.price = source === 'index_price' ? Math.round(level) * 1e4 : Math.max(5, Math.round((level * 1e4) / 5) * 5);
        const r = h.apply(cmd) as TriggerPlaceResult | Reject;
        if (isReject(r)) continue;
        const t = r.order;
        model.set(t.id, { t, level: type === 'trailing_stop' ? t.level : spec.price / 1e4, up, trailing: type === 'trailing_stop', offset: t.offset, peak: t.peak });
      }
      // a move of the index or of the vol smile (the marks move with both)
      if (rand() < 0.7) {
        index = Math.max(80_000, Math.min(120_000, index + Math.round((rand() - 0.5) * 3000)));
        h.apply({ t: 'index', currency: 'BTC', price: index, manual: true, by: null });
      } else {
        vol = Math.max(0.3, Math.min(1.2, vol + (rand() - 0.5) * 0.1));
        h.apply({ t: 'set_vol', currency: 'BTC', atmVol: vol, skew: -0.1, curvature: 0.5, by: 1 });
      }
      for (const [id, m] of model) {
        const x = ref(m.t);
        if (m.trailing) {
          if (m.up ? x < m.peak : x > m.peak) {
            m.peak = x;
            m.level = m.up ? x + m.offset : x - m.offset;
          }
        }
        const reached = m.up ? x >= m.level : x <= m.level;
        assert.equal(m.t.state !== 'untriggered', reached, `step ${step}: order ${id} (${m.t.type} ${m.t.source} ${m.up ? 'up' : 'down'} at ${m.level}, price ${x}) ${m.t.state}`);
        if (reached) {
          model.delete(id);
          fired++;
        } else assert.equal(m.t.level, m.level, 'the trailing level follows the peak');
      }
    }
    assert.ok(fired > 100, `orders fired (${fired})`);
    assert.ok(model.size > 20, `orders still waiting (${model.size})`);
  });
});

describe('trigger orders: determinism', () => {
  it('a random stream with triggers firing replays to the same state hash, and from a mid-stream snapshot too', () => {
    const rand = mulberry32(0x7e1993);
    const live = Harness.market([CALL, PUT]);
    const users = [live.user('20'), live.user('20'), live.user('20'), live.user('20')];
    const log: Command[] = [];
    const apply = (cmd: Command) => {
      log.push(cmd);
      live.apply(cmd);
    };
    let index = 100_000;
    let snapshotAt = -1;
    let snapshot = '';
    let fired = 0;
    for (let i = 0; i < 1500; i++) {
      const u = users[Math.floor(rand() * users.length)];
      const inst = rand() < 0.5 ? CALL.name : PUT.name;
      const side = rand() < 0.5 ? 'buy' : 'sell';
      const r = rand();
      if (r < 0.1) {
        index = Math.max(80_000, Math.min(120_000, index + Math.round((rand() - 0.5) * 4_000)));
        apply({ t: 'index', currency: 'BTC', price: index, manual: true, by: null });
      } else if (r < 0.35) {
        const types: TriggerOrderType[] = ['stop_limit', 'stop_market', 'take_limit', 'take_market', 'trailing_stop'];
        const type = types[Math.floor(rand() * types.length)];
        const sources: TriggerSource[] = ['index_price', 'mark_price', 'last_price'];
        const source = sources[Math.floor(rand() * sources.length)];
        const lastUnits = live.ex.markets.get(live.inst(inst).id)!.lastPrice;
        const ref = source === 'index_price' ? index : source === 'mark_price' ? mark(live, inst) : (lastUnits ?? 1000) / 1e4;
        const delta = source === 'index_price' ? 100 + Math.round(rand() * 2000) : 0.0005 * (1 + Math.floor(rand() * 20));
        const up = rand() < 0.5;
        const at = up ? ref + delta : Math.max(0.0005, ref - delta);
        const atText = source === 'index_price' ? String(Math.round(at)) : (Math.round(at * 2000) / 2000).toFixed(4);
        apply(trigCmd(u, side, inst, { type, source, at: atText, offset: source === 'index_price' ? '500' : '0.002', price: inBand(live, inst, rand()), amount: '0.1', reduceOnly: rand() < 0.2 }));
      } else if (r < 0.45) {
        const mine = live.ex.triggers.openOf(u);
        if (mine.length > 0) apply({ t: 'cancel', userId: u, orderId: mine[Math.floor(rand() * mine.length)].id });
      } else {
        apply({ t: 'place', userId: u, side: side === 'buy' ? 0 : 1, instrument: inst, price: px(inBand(live, inst, rand())), advanced: null, advPrice: null, lots: amt('0.1'), type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null });
      }
      if (i === 700) {
        snapshotAt = log.length;
        snapshot = serialize(live.ex);
      }
    }
    for (const list of live.ex.triggers.byUser.values()) for (const t of list.values()) if (t.state === 'triggered' || t.state === 'rejected') fired++;
    assert.ok(fired > 20, `the stream fired triggers (${fired})`);
    // money and positions are conserved through every firing
    for (const [c, v] of Object.entries(live.ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
    for (const name of [CALL.name, PUT.name]) {
      let sum = 0;
      for (const u of live.ex.users.values()) sum += u.positions.get(live.inst(name).id)?.size ?? 0;
      assert.equal(sum, 0, `positions in ${name} sum to zero`);
    }

    // clean replay from the start: same commands, same times
    const replay = Harness.market([CALL, PUT]);
    for (let i = 0; i < 4; i++) replay.user('20');
    for (const cmd of log) replay.apply(cmd);
    assert.equal(stateHash(replay.ex), stateHash(live.ex));

    // from the snapshot, with the rest of the log
    const restored = restore(snapshot);
    let seq = restored.seq;
    const tsOf = live.ts;
    for (const cmd of log.slice(snapshotAt)) restored.apply({ ...cmd, ts: tsOf, seq: ++seq } as never);
    assert.equal(stateHash(restored), stateHash(live.ex));
  });
});
