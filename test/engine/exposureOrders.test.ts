// An exposure's open orders as a list through the orders (src/engine/exposureOrders.ts): it must
// behave as the Set it replaced (size, membership, what delete answers, insertion order), and in
// the engine an edit moves the order to the end, a cancel unlinks it wherever it is, a closed order
// keeps no link, and a snapshot restores the same order of the list.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ExposureOrders } from '../../src/engine/exposureOrders.ts';
import type { Order } from '../../src/engine/types.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { Command } from '../../src/engine/commands.ts';
import { EXP_MAR, Harness, px, spec } from '../helpers/engine.ts';
import { markPrice } from '../risk/portfolio/pmHarness.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');

/** Stand-ins with only the two fields the list reads and writes. */
function orders(n: number): Order[] {
  return Array.from({ length: n }, (_, id) => ({ id, exposurePrev: null, exposureNext: null }) as unknown as Order);
}

describe('ExposureOrders', () => {
  it('answers as a Set<Order> over any sequence of adds and deletes', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.nat(11)), { maxLength: 200 }), (ops) => {
        const pool = orders(12);
        const list = new ExposureOrders();
        const model = new Set<Order>();
        for (const [isAdd, i] of ops) {
          const o = pool[i]!;
          if (isAdd) {
            // the engine adds only an order that is in no list
            if (model.has(o)) continue;
            list.add(o);
            model.add(o);
          } else {
            assert.equal(list.delete(o), model.delete(o));
          }
          assert.equal(list.size, model.size);
          assert.deepEqual([...list].map((x) => x.id), [...model].map((x) => x.id));
          for (const x of pool) assert.equal(list.has(x), model.has(x));
        }
        // nothing out of the list points at anything
        for (const x of pool) if (!model.has(x)) assert.deepEqual([x.exposurePrev, x.exposureNext], [null, null]);
      }),
      { numRuns: 300 },
    );
  });

  it('lets the current order be deleted while iterating', () => {
    const pool = orders(4);
    const list = new ExposureOrders();
    for (const o of pool) list.add(o);
    const seen: number[] = [];
    for (const o of list) {
      seen.push(o.id);
      list.delete(o);
    }
    assert.deepEqual(seen, [0, 1, 2, 3]);
    assert.equal(list.size, 0);
    assert.deepEqual([...list], []);
  });
});

describe('an exposure list in the engine', () => {
  function market() {
    const h = Harness.market([CALL]);
    const a = h.user('1000');
    const inst = h.inst(CALL.name);
    const listed = () => [...h.u(a).exposures.get(inst.id)!.openOrders].map((o) => o.id);
    const mark = px(markPrice(h, CALL.name));
    /** A one-lot limit order at `price` (units), resting unless `ioc`. */
    const place = (userId: number, side: 0 | 1, price: number, ioc = false): number => {
      const cmd: Command = {
        t: 'place', userId, side, instrument: CALL.name, price, advanced: null, advPrice: null, lots: inst.lotScaled, type: 'limit',
        tif: ioc ? 'immediate_or_cancel' : 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null,
      };
      return (h.apply(cmd) as { order: { id: number } }).order.id;
    };
    return { h, a, inst, listed, mark, place };
  }

  it('follows places, cancels from the middle, edits (to the end) and fills, and restores in the same order', () => {
    const { h, a, inst, listed, mark, place } = market();
    const ids = [40, 30, 20, 10].map((below) => place(a, 0, mark - below));
    assert.deepEqual(listed(), ids);
    // cancel the second: unlinked, its neighbours joined
    h.apply({ t: 'cancel', userId: a, orderId: ids[1]! });
    assert.deepEqual(listed(), [ids[0], ids[2], ids[3]]);
    const cancelled = h.u(a).orders.get(ids[1]!)!;
    assert.deepEqual([cancelled.exposurePrev, cancelled.exposureNext], [null, null]);
    // an edit takes the order out and rests it again: it goes last, as it loses its priority
    h.apply({ t: 'edit', userId: a, orderId: ids[0]!, lots: 2 * inst.lotScaled, price: mark - 35, postOnly: null, rejectPostOnly: null });
    assert.deepEqual(listed(), [ids[2], ids[3], ids[0]]);
    // a fill of the best bid closes it out of the list
    const b = h.user('1000');
    place(b, 1, mark - 10, true);
    assert.equal(h.u(a).orders.get(ids[3]!)!.state, 'filled');
    assert.deepEqual(listed(), [ids[2], ids[0]]);
    assert.equal(h.u(a).exposures.get(inst.id)!.openOrders.size, 2);
    // the snapshot holds the list in its order; a restored engine lists the same and hashes the same
    const twin = restore(serialize(h.ex));
    assert.deepEqual([...twin.users.get(a)!.exposures.get(inst.id)!.openOrders].map((o) => o.id), [ids[2], ids[0]]);
    assert.equal(stateHash(twin), stateHash(h.ex));
    // cancelling everything empties the list on both
    const cancelAll = { t: 'cancel_all', userId: a, currency: null, instrument: null, side: null, label: null } as const;
    twin.apply({ ...cancelAll, ts: h.ts, seq: h.seq + 1 });
    h.apply(cancelAll);
    assert.deepEqual(listed(), []);
    assert.equal(stateHash(twin), stateHash(h.ex));
  });
});
