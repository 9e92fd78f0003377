// Cancel-on-disconnect as engine state (src/engine/cod.ts): the WebSocket edge marks orders (`cod`
// on place/edit/mass_quote, `cod_mark`) and sets the account flag (`cod_account`); a process that
// starts or takes over cancels the marked open orders (`codSweep`). The marks and flags are state:
// in the snapshot, in the state hash, and never reach another user's orders.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import type { Command } from '../../src/engine/commands.ts';
import { codSweep } from '../../src/engine/cod.ts';
import type { MassQuoteResult } from '../../src/engine/massQuote.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { PlaceResult } from '../../src/engine/trading.ts';
import type { TriggerOrder, TriggerPlaceResult } from '../../src/engine/triggers.ts';
import { EXP_MAR, Harness, amt, px, spec } from '../helpers/engine.ts';

const CALL = spec('BTC', EXP_MAR, 100_000, 'call');

/** A grid price (text) inside the call's current band, at fraction `f` of it: a bid there rests. */
function inBand(h: Harness, f: number): string {
  const m = h.ex.markets.get(h.inst(CALL.name).id)!;
  const units = Math.floor((m.minPrice + f * (m.maxPrice - m.minPrice)) / 5) * 5;
  return (units / 1e4).toFixed(4);
}

/** A resting bid of `userId`, with `cod` when asked. */
function bid(h: Harness, userId: number, f: number, cod = false): PlaceResult {
  const cmd: Extract<Command, { t: 'place' }> = {
    t: 'place', userId, side: 0, instrument: CALL.name, price: px(inBand(h, f)), advanced: null, advPrice: null, lots: amt('0.1'),
    type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null,
  };
  if (cod) cmd.cod = true;
  const r = h.apply(cmd);
  if (isReject(r)) throw new Error(`refused: ${r.code} ${r.reason ?? ''}`);
  const placed = r as PlaceResult;
  assert.equal(placed.order.state, 'open');
  return placed;
}

/** An untriggered buy stop (fires when the index rises to 101,000), with `cod` when asked. */
function stop(h: Harness, userId: number, cod = false): TriggerOrder {
  const cmd: Extract<Command, { t: 'place' }> = {
    t: 'place', userId, side: 0, instrument: CALL.name, price: px(inBand(h, 0.4)), advanced: null, advPrice: null, lots: amt('0.1'),
    type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null,
    trig: { type: 'stop_limit', source: 'index_price', price: px('101000'), offset: null },
  };
  if (cod) cmd.cod = true;
  const r = h.apply(cmd);
  if (isReject(r)) throw new Error(`refused: ${r.code} ${r.reason ?? ''}`);
  return (r as TriggerPlaceResult).order as TriggerOrder;
}

function sweep(h: Harness): number[] {
  const ids: number[] = [];
  for (const c of codSweep(h.ex)) {
    h.apply(c);
    ids.push(...c.orderIds);
  }
  return ids;
}

describe('cancel-on-disconnect in the engine', () => {
  it('marks what a place, edit or mass quote with cod placed, and the sweep cancels exactly those with cancel_on_disconnect', () => {
    const h = Harness.market([CALL]);
    const a = h.user('10');
    const plain = bid(h, a, 0.1).order;
    const marked = bid(h, a, 0.12, true).order;
    const edited = bid(h, a, 0.14).order;
    const editCmd: Command = { t: 'edit', userId: a, orderId: edited.id, lots: amt('0.2'), price: null, postOnly: null, rejectPostOnly: null, cod: true };
    assert.ok(!isReject(h.apply(editCmd)));
    h.apply({ t: 'set_mmp_config', userId: a, indexName: 'btc_usd', group: 'g', interval: 60, frozenTime: 0, quantityLimit: amt('100'), deltaLimit: 0, maxQuoteQuantity: 0 });
    const quoted = h.apply({ t: 'mass_quote', userId: a, quoteId: 'q', group: 'g', quotes: [{ instrument: CALL.name, quoteSetId: null, bid: { price: px(inBand(h, 0.16)), lots: amt('0.1'), postOnly: false, rejectPostOnly: false }, ask: null }], cod: true }) as MassQuoteResult;
    assert.deepEqual(quoted.errors.map((e) => e.error.reason), []);
    const quote = quoted.orders[0]!;
    const trig = stop(h, a, true);
    const trigPlain = stop(h, a);
    assert.deepEqual([plain.cod, marked.cod, edited.cod, quote.cod, trig.cmd.cod, trigPlain.cmd.cod], [false, true, true, true, true, undefined]);

    const swept = sweep(h);
    assert.deepEqual(swept, [marked.id, edited.id, quote.id, trig.id].sort((x, y) => x - y));
    for (const o of [marked, edited, quote]) assert.deepEqual([o.state, o.cancelReason], ['cancelled', 'cancel_on_disconnect']);
    assert.deepEqual([trig.state, trig.cancelReason], ['cancelled', 'cancel_on_disconnect']);
    assert.equal(plain.state, 'open');
    assert.equal(trigPlain.state, 'untriggered');
    assert.deepEqual(codSweep(h.ex), [], 'nothing left to sweep');
  });

  it('cod_mark marks and unmarks open and untriggered orders; the order a marked trigger fires into is not marked, as live', () => {
    const h = Harness.market([CALL]);
    const a = h.user('10');
    const o = bid(h, a, 0.1).order;
    const t = stop(h, a);
    assert.equal(h.apply({ t: 'cod_mark', userId: a, orderIds: [o.id, t.id], on: true }), 2);
    assert.deepEqual([o.cod, t.cmd.cod], [true, true]);
    assert.equal(h.apply({ t: 'cod_mark', userId: a, orderIds: [o.id, t.id], on: false }), 2);
    assert.deepEqual([o.cod, 'cod' in t.cmd], [false, false]);
    h.apply({ t: 'cod_mark', userId: a, orderIds: [t.id], on: true });
    h.apply({ t: 'index', currency: 'BTC', price: 101_000, manual: true, by: null });
    assert.equal(t.state, 'triggered');
    const fired = h.u(a).orders.get(t.firedOrderId!)!;
    assert.equal(fired.state, 'open');
    // it has an id of its own, which no connection's set holds: the live close does not cancel it
    assert.equal(fired.cod, false);
    assert.deepEqual(sweep(h), []);
  });

  it('another user cannot mark or sweep an order: cod_mark and a cod edit of a foreign id touch nothing', () => {
    const h = Harness.market([CALL]);
    const a = h.user('10');
    const b = h.user('10');
    const victim = bid(h, a, 0.1).order;
    assert.equal(h.apply({ t: 'cod_mark', userId: b, orderIds: [victim.id], on: true }), 0);
    const edit = h.apply({ t: 'edit', userId: b, orderId: victim.id, lots: amt('0.1'), price: null, postOnly: null, rejectPostOnly: null, cod: true });
    assert.ok(isReject(edit), 'the edit of another user\'s order is refused');
    assert.equal(victim.cod, false);
    assert.deepEqual(sweep(h), []);
    assert.equal(victim.state, 'open');
  });

  it('the account flags and the marks are in the snapshot and the state hash', () => {
    const build = (cod: boolean) => {
      const h = Harness.market([CALL]);
      const a = h.user('10');
      const b = h.user('10');
      h.apply({ t: 'cod_account', userId: b, on: true });
      h.apply({ t: 'cod_account', userId: a, on: cod });
      bid(h, a, 0.1, cod);
      bid(h, a, 0.12);
      stop(h, a, cod);
      return h;
    };
    const h = build(true);
    const text = serialize(h.ex);
    const restored = restore(text);
    assert.equal(stateHash(restored), stateHash(h.ex));
    assert.deepEqual([...restored.codAccounts].sort(), [...h.ex.codAccounts].sort());
    assert.deepEqual(codSweep(restored), codSweep(h.ex));
    assert.equal(codSweep(restored)[0]!.orderIds.length, 2, 'the marked order and the marked trigger order');
    assert.equal(JSON.parse(text).cod.accounts.length, 2);
    // the same commands without the marks and the flag: another state, another hash
    assert.notEqual(stateHash(build(false).ex), stateHash(h.ex));
    // and a mark alone changes the hash
    const one = build(false);
    assert.equal(one.apply({ t: 'cod_mark', userId: one.ex.usersByEmail.get('u1@test.io')!.id, orderIds: [one.openOrders(one.ex.usersByEmail.get('u1@test.io')!.id)[0]!.id], on: true }), 1);
    assert.notEqual(stateHash(one.ex), stateHash(build(false).ex));
  });

  it('a snapshot from before cancel-on-disconnect (no `cod` part) restores with nothing marked', () => {
    const h = Harness.market([CALL]);
    const a = h.user('10');
    bid(h, a, 0.1);
    const old = JSON.parse(serialize(h.ex));
    delete old.cod;
    const restored = restore(JSON.stringify(old));
    assert.equal(restored.codAccounts.size, 0);
    assert.deepEqual(codSweep(restored), []);
  });

  it('cod_account refuses an unknown user and sets and clears the flag', () => {
    const h = Harness.market([CALL]);
    const a = h.user('10');
    assert.ok(isReject(h.apply({ t: 'cod_account', userId: 999, on: true })));
    assert.equal(h.apply({ t: 'cod_account', userId: a, on: true }), true);
    assert.ok(h.ex.codAccounts.has(a));
    h.apply({ t: 'cod_account', userId: a, on: false });
    assert.equal(h.ex.codAccounts.size, 0);
  });
});
