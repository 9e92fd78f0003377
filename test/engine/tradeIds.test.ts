// An order's trade ids are held as compactly as they can be (issues 16 and 36: what each order keeps
// alive is copied by every scavenge and faulted in by every replay): an order without a trade shares
// one empty list, the first trade puts its id there as a number, the second makes a list, later ones
// append; the snapshot and its hash see plain lists, and a restore gives back the same forms.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { NO_TRADE_IDS, addTradeId, compactTradeIds, lastTradeIdOf, tradeIdsOf } from '../../src/engine/types.ts';
import { EXP_JAN, Harness, spec } from '../helpers/engine.ts';

const C = 'BTC-30JAN26-130000-C';

describe('trade ids of an order', () => {
  it('are the shared empty list until the first trade, then its id, then a list, and survive a snapshot', () => {
    const h = Harness.market([spec('BTC', EXP_JAN, 130000, 'call')]);
    const [maker, taker] = [h.user('10'), h.user('10')];
    const rest = h.ok(maker, 'sell', C, '0.0100', '0.3').order;
    const other = h.ok(maker, 'sell', C, '0.0110', '0.1').order;
    assert.equal(rest.tradeIds, NO_TRADE_IDS, 'a resting order that has not traded allocates no list');
    assert.ok(Object.isFrozen(NO_TRADE_IDS) && NO_TRADE_IDS.length === 0, 'the shared list stays empty');

    const t1 = h.ok(taker, 'buy', C, '0.0100', '0.1').trades[0]!;
    assert.equal(rest.tradeIds, t1.id, 'one trade: its id, no list');
    assert.deepEqual(tradeIdsOf(rest), [t1.id]);
    assert.equal(lastTradeIdOf(rest), t1.id);
    const t2 = h.ok(taker, 'buy', C, '0.0100', '0.1').trades[0]!;
    assert.deepEqual(rest.tradeIds, [t1.id, t2.id], 'the second trade makes a list');
    assert.deepEqual(tradeIdsOf(rest), [t1.id, t2.id]);
    assert.equal(lastTradeIdOf(rest), t2.id);
    assert.equal(lastTradeIdOf(other), undefined);
    assert.deepEqual(tradeIdsOf(other), []);
    assert.equal(other.tradeIds, NO_TRADE_IDS, 'another order is untouched');
    assert.equal(NO_TRADE_IDS.length, 0);

    const copy = restore(serialize(h.ex));
    assert.equal(stateHash(copy), stateHash(h.ex));
    const restored = [...copy.users.get(maker)!.orders.values()];
    assert.deepEqual(restored.map((o) => o.tradeIds), [[t1.id, t2.id], NO_TRADE_IDS], 'the forms a live engine holds');
    // a restored list is the snapshot's own array: later ids append; an empty one is the shared list again
    const [r1, r2] = restored;
    addTradeId(r2!, 99);
    addTradeId(r1!, 100);
    assert.deepEqual([r1!.tradeIds, r2!.tradeIds], [[t1.id, t2.id, 100], 99]);
    addTradeId(r2!, 101);
    assert.deepEqual(r2!.tradeIds, [99, 101]);
    assert.equal(NO_TRADE_IDS.length, 0, 'the shared list is never written');
  });

  it('of an order that traded once come back from a snapshot as its id, and the snapshot text is a list', () => {
    const h = Harness.market([spec('BTC', EXP_JAN, 130000, 'call')]);
    const [maker, taker] = [h.user('10'), h.user('10')];
    const rest = h.ok(maker, 'sell', C, '0.0100', '0.3').order;
    const t1 = h.ok(taker, 'buy', C, '0.0100', '0.1').trades[0]!;
    assert.equal(rest.tradeIds, t1.id);
    const text = serialize(h.ex);
    assert.ok(text.includes(`,[${t1.id}]]`), 'written as a one-element list, as before the compact form');
    const copy = restore(text);
    assert.equal(copy.users.get(maker)!.orders.get(rest.id)!.tradeIds, t1.id);
    assert.equal(stateHash(copy), stateHash(h.ex));
    assert.deepEqual([compactTradeIds([]), compactTradeIds([7]), compactTradeIds([7, 8])], [NO_TRADE_IDS, 7, [7, 8]]);
  });
});
