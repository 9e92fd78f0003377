// An order's trade ids are held as compactly as they can be (issue 16: what each order keeps alive
// is copied by every scavenge): an order without a trade shares one empty list, the first trade
// gives it a list of that one id, later trades append; the snapshot and its hash see plain lists.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { NO_TRADE_IDS, addTradeId } from '../../src/engine/types.ts';
import { EXP_JAN, Harness, spec } from '../helpers/engine.ts';

const C = 'BTC-30JAN26-130000-C';

describe('trade ids of an order', () => {
  it('are the shared empty list until the first trade, then exactly the ids of its trades, and survive a snapshot', () => {
    const h = Harness.market([spec('BTC', EXP_JAN, 130000, 'call')]);
    const [maker, taker] = [h.user('10'), h.user('10')];
    const rest = h.ok(maker, 'sell', C, '0.0100', '0.3').order;
    const other = h.ok(maker, 'sell', C, '0.0110', '0.1').order;
    assert.equal(rest.tradeIds, NO_TRADE_IDS, 'a resting order that has not traded allocates no list');
    assert.ok(Object.isFrozen(NO_TRADE_IDS) && NO_TRADE_IDS.length === 0, 'the shared list stays empty');

    const t1 = h.ok(taker, 'buy', C, '0.0100', '0.1').trades[0]!;
    assert.deepEqual(rest.tradeIds, [t1.id]);
    assert.notEqual(rest.tradeIds, NO_TRADE_IDS);
    const t2 = h.ok(taker, 'buy', C, '0.0100', '0.1').trades[0]!;
    assert.deepEqual(rest.tradeIds, [t1.id, t2.id], 'the second trade appends');
    assert.equal(other.tradeIds, NO_TRADE_IDS, 'another order is untouched');
    assert.equal(NO_TRADE_IDS.length, 0);

    const copy = restore(serialize(h.ex));
    assert.equal(stateHash(copy), stateHash(h.ex));
    const restored = [...copy.users.get(maker)!.orders.values()];
    assert.deepEqual(restored.map((o) => [...o.tradeIds]), [[t1.id, t2.id], []]);
    // restored lists are the snapshot's own arrays: the first id replaces an empty one, later ones append
    const [r1, r2] = restored;
    addTradeId(r2!, 99);
    addTradeId(r1!, 100);
    assert.deepEqual([r1!.tradeIds, r2!.tradeIds], [[t1.id, t2.id, 100], [99]]);
  });
});
