// Market-maker protection's vega and trade-count limits (src/engine/mmp.ts; issue 31): a maker whose
// MMP fills pass either limit within the interval has its group cancelled and frozen in the same
// command; fills outside the interval, offsetting fills and the group's config id; snapshots keep it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject, type Reject } from '../../src/domain/errors.ts';
import { roundToTick } from '../../src/domain/instrument.ts';
import { yearFraction } from '../../src/domain/pricing.ts';
import type { Command } from '../../src/engine/commands.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { PlaceResult } from '../../src/engine/trading.ts';
import { optionGreeksCoin } from '../../src/market/smile.ts';
import { EXP_MAR, Harness, amt, spec } from '../helpers/engine.ts';

const CALL = spec('BTC', EXP_MAR, 100_000, 'call');
const PUT = spec('BTC', EXP_MAR, 100_000, 'put');

function ok<T>(r: T | Reject): T {
  if (isReject(r)) throw new Error(`refused: ${r.code} ${r.reason}`);
  return r;
}

function cfg(h: Harness, userId: number, o: Partial<Extract<Command, { t: 'set_mmp_config' }>>): unknown {
  return h.apply({ t: 'set_mmp_config', userId, indexName: 'btc_usd', group: null, interval: 60, frozenTime: 0, quantityLimit: 0, deltaLimit: 0, maxQuoteQuantity: 0, ...o });
}

/** An MMP ask `steps` grid steps above the mark. */
function ask(h: Harness, userId: number, name: string, amount: string, steps = 4): PlaceResult {
  const inst = h.inst(name);
  const price = roundToTick(inst, h.ex.markets.get(inst.id)!.markCoin * 1e4, 'down') + steps * 5;
  return ok(
    h.apply({
      t: 'place', userId, side: 1, instrument: name, price, advanced: null, advPrice: null, lots: amt(amount), type: 'limit',
      tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null, mmp: true,
    }) as PlaceResult | Reject,
  );
}

/** Vega of one contract at the mark now, as the engine computes it. */
function vegaPerContract(h: Harness, name: string): number {
  const inst = h.inst(name);
  const m = h.ex.markets.get(inst.id)!;
  return optionGreeksCoin(inst.optionType, h.ex.indexPrice('BTC'), inst.strike, yearFraction(h.ex.now, inst.expiry), m.markIv).vega;
}

describe('MMP vega and trade-count limits', () => {
  it('a maker whose fills pass the vega limit within the interval is cancelled and frozen in the fill command', () => {
    const h = Harness.market([CALL, PUT]);
    const mm = h.user('10');
    const taker = h.user('10');
    const v = vegaPerContract(h, CALL.name);
    assert.ok(v > 0, 'an option has vega');
    // 1.5 contracts of vega: one contract sold stays under it, the second passes it
    ok(cfg(h, mm, { vegaLimit: 1.5 * v }) as object);
    const a = ask(h, mm, CALL.name, '3');
    const b = ask(h, mm, PUT.name, '1');
    ok(h.place(taker, 'buy', CALL.name, null, '1', { type: 'market' }));
    assert.equal(a.order.state, 'open', '|vega| of one contract is under the limit');
    const g = h.ex.mmp.list(mm, 'btc_usd', null)[0];
    assert.ok(Math.abs(g.vega + v) < 1e-9 * v, 'a sold option takes its vega away');
    assert.equal(g.tradeCount, 1);
    ok(h.place(taker, 'buy', CALL.name, null, '1', { type: 'market' }));
    assert.equal(a.order.state, 'cancelled');
    assert.equal(a.order.cancelReason, 'mmp_trigger');
    assert.equal(b.order.state, 'cancelled', 'the whole group goes');
    assert.equal(g.frozen, true);
    assert.equal(g.frozenUntil, 0, 'frozen_time 0: until reset_mmp');
    // frozen: a new MMP order is refused
    const inst = h.inst(PUT.name);
    const refused = h.apply({
      t: 'place', userId: mm, side: 1, instrument: PUT.name, price: roundToTick(inst, h.ex.markets.get(inst.id)!.markCoin * 1e4, 'down') + 20, advanced: null, advPrice: null, lots: amt('1'),
      type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null, mmp: true,
    });
    assert.ok(isReject(refused) && refused.reason === 'mmp_frozen');
  });

  it('counts net vega: a buy back offsets a sale, and fills further apart than the interval do not add up', () => {
    const h = Harness.market([CALL, PUT]);
    const mm = h.user('10');
    const taker = h.user('10');
    const v = vegaPerContract(h, CALL.name);
    ok(cfg(h, mm, { vegaLimit: 1.5 * v, interval: 5 }) as object);
    const a = ask(h, mm, CALL.name, '5');
    ok(h.place(taker, 'buy', CALL.name, null, '1', { type: 'market' }));
    h.ts += 5_000; // the first fill's window is over
    ok(h.place(taker, 'buy', CALL.name, null, '1', { type: 'market' }));
    assert.equal(a.order.state, 'open', 'one contract in each window');
    h.ts += 1_000;
    ok(h.place(taker, 'buy', CALL.name, null, '1', { type: 'market' }));
    assert.equal(a.order.state, 'cancelled', 'two contracts within 5 s pass 1.5');
  });

  it('a maker whose fills reach the trade-count limit within the interval is frozen; fewer fills or slower ones are not', () => {
    const h = Harness.market([CALL, PUT]);
    const mm = h.user('10');
    const taker = h.user('10');
    ok(cfg(h, mm, { tradeCountLimit: 3, interval: 10, frozenTime: 30 }) as object);
    const a = ask(h, mm, CALL.name, '5');
    ok(h.place(taker, 'buy', CALL.name, null, '0.1', { type: 'market' }));
    ok(h.place(taker, 'buy', CALL.name, null, '0.1', { type: 'market' }));
    h.ts += 10_000; // a new window: the two fills before count no more
    ok(h.place(taker, 'buy', CALL.name, null, '0.1', { type: 'market' }));
    ok(h.place(taker, 'buy', CALL.name, null, '0.1', { type: 'market' }));
    assert.equal(a.order.state, 'open', 'two fills in this window');
    const g = h.ex.mmp.list(mm, 'btc_usd', null)[0];
    assert.equal(g.tradeCount, 2);
    // the third fill of the window triggers, however small
    ok(h.place(taker, 'buy', CALL.name, null, '0.1', { type: 'market' }));
    assert.equal(a.order.state, 'cancelled');
    assert.equal(a.order.cancelReason, 'mmp_trigger');
    assert.equal(g.frozenUntil, h.ts + 30_000);
    assert.equal(g.tradeCount, 0, 'the trigger starts a new window');
    // reset_mmp lifts it and starts a new count
    ok(h.apply({ t: 'reset_mmp', userId: mm, indexName: 'btc_usd', group: null }) as object);
    assert.equal(g.frozen, false);
  });

  it('a config without any limit is refused; bad vega and trade-count limits are refused; a config keeps its id', () => {
    const h = Harness.market([CALL, PUT]);
    const mm = h.user('10');
    const none = cfg(h, mm, { vegaLimit: 0, tradeCountLimit: 0 });
    assert.ok(isReject(none) && none.reason === 'mmp_limit_required');
    for (const bad of [{ vegaLimit: -1 }, { vegaLimit: Number.NaN }, { tradeCountLimit: 1.5 }, { tradeCountLimit: -2 }]) {
      const r = cfg(h, mm, bad);
      assert.ok(isReject(r), JSON.stringify(bad));
    }
    assert.equal(h.ex.mmp.list(mm, null, undefined).length, 0, 'a refused config leaves nothing');
    const first = ok(cfg(h, mm, { tradeCountLimit: 5 }) as { id: number });
    const second = ok(cfg(h, mm, { vegaLimit: 2 }) as { id: number; tradeCountLimit: number });
    assert.equal(second.id, first.id, 'changing a config keeps its id');
    assert.equal(second.tradeCountLimit, 0, 'a limit not given is no limit');
    const other = ok(cfg(h, mm, { group: 'g', tradeCountLimit: 5 }) as { id: number });
    assert.notEqual(other.id, first.id);
  });

  it('snapshots keep the limits and the running counts: a restored engine triggers on the same fill', () => {
    const h = Harness.market([CALL, PUT]);
    const mm = h.user('10');
    const taker = h.user('10');
    const v = vegaPerContract(h, CALL.name);
    ok(cfg(h, mm, { vegaLimit: 10 * v, tradeCountLimit: 2 }) as object);
    ask(h, mm, CALL.name, '5');
    ok(h.place(taker, 'buy', CALL.name, null, '0.1', { type: 'market' }));
    const text = serialize(h.ex);
    const r = restore(text);
    assert.equal(stateHash(r), stateHash(h.ex));
    const g = r.mmp.list(mm, 'btc_usd', null)[0];
    assert.deepEqual([g.id, g.vegaLimit, g.tradeCountLimit, g.tradeCount], [h.ex.mmp.list(mm, 'btc_usd', null)[0].id, 10 * v, 2, 1]);
    for (const ex of [h.ex, r]) {
      ex.apply({ t: 'place', userId: taker, side: 0, instrument: CALL.name, price: null, advanced: null, advPrice: null, lots: amt('0.1'), type: 'market', tif: 'immediate_or_cancel', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null, ts: h.ts, seq: h.seq + 1 });
    }
    assert.equal(stateHash(r), stateHash(h.ex));
    assert.equal(r.mmp.list(mm, 'btc_usd', null)[0].frozen, true);
    // a snapshot from before these limits: its groups get ids by position and no such limits
    const old = JSON.parse(text);
    old.mmp.groups = old.mmp.groups.map((a: unknown[]) => a.slice(0, 13));
    const o = restore(JSON.stringify(old));
    const og = o.mmp.list(mm, 'btc_usd', null)[0];
    assert.deepEqual([og.id, og.vegaLimit, og.tradeCountLimit, og.vega, og.tradeCount], [1, 0, 0, 0, 0]);
  });
});
