// An account's order map forgets its oldest closed orders first, past closedOrdersKept (Trading's
// pruneClosed): the closed orders it keeps are always newer than every one it forgot, open orders
// are never forgotten, and an engine restored halfway (its closed orders partly as the snapshot's
// stubs, src/engine/snapshot.ts) forgets exactly what the live one does.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_LIMITS } from '../../src/engine/exchange.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { Command, Sequenced } from '../../src/engine/commands.ts';
import type { Exchange } from '../../src/engine/exchange.ts';
import { EXP_MAR, Harness, px, spec } from '../helpers/engine.ts';
import { markPrice } from '../risk/portfolio/pmHarness.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');
const LIMITS = { ...DEFAULT_LIMITS, closedOrdersKept: 5 };

describe('forgetting closed orders', () => {
  it('forgets the oldest closed first, never an open one, and a restored engine forgets the same', () => {
    const h = Harness.market([CALL], LIMITS);
    const a = h.user('1000');
    const b = h.user('1000');
    const mark = px(markPrice(h, CALL.name));
    const lot = h.inst(CALL.name).lotScaled;
    const order = (userId: number, side: 0 | 1, price: number, tif: 'good_til_cancelled' | 'immediate_or_cancel'): Command => ({
      t: 'place', userId, side, instrument: CALL.name, price, advanced: null, advPrice: null, lots: lot, type: 'limit', tif,
      postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null,
    });
    // old bids far below the mark that stay open at the front of the map
    const lowBids = Array.from({ length: 10 }, (_, i) => (h.apply(order(a, 0, mark - 100 - 10 * i, 'good_til_cancelled')) as { order: { id: number } }).order.id);
    let twin: Exchange | null = null;
    let seq = h.seq;
    for (let i = 0; i < 400; i++) {
      const cmds: Command[] = [order(b, 1, mark, 'good_til_cancelled'), order(a, 0, mark, 'immediate_or_cancel')];
      // now and then a resting ask cancelled instead of filled
      if (i % 7 === 3) {
        const r = h.apply(cmds[0]!) as { order: { id: number } };
        twin?.apply({ ...cmds[0]!, ts: h.ts, seq: ++seq } as Sequenced);
        cmds.length = 0;
        cmds.push({ t: 'cancel', userId: b, orderId: r.order.id });
      }
      for (const c of cmds) {
        h.apply(c);
        twin?.apply({ ...c, ts: h.ts, seq: ++seq } as Sequenced);
      }
      if (i === 150) {
        twin = restore(serialize(h.ex), LIMITS);
        seq = h.seq;
      }
    }
    // per account: every kept closed order is newer than every forgotten one (those its trades name)
    const owner = new Map<number, number>();
    for (const u of [a, b]) for (const t of h.u(u).trades) for (const o of [t.makerOrder, t.takerOrder]) owner.set(o.id, o.userId);
    for (const u of [a, b]) {
      const map = h.u(u).orders;
      const keptClosed = [...map.values()].filter((o) => o.state !== 'open').map((o) => o.id);
      const forgottenOfU = [...owner].filter(([id, uid]) => uid === u && !map.has(id)).map(([id]) => id);
      assert.ok(forgottenOfU.length > 0, 'some were forgotten');
      assert.ok(keptClosed.length <= 5 + 64, `${keptClosed.length} closed kept`);
      assert.ok(Math.max(...forgottenOfU) < Math.min(...keptClosed), `account ${u}: newest forgotten ${Math.max(...forgottenOfU)}, oldest kept ${Math.min(...keptClosed)}`);
    }
    for (const id of lowBids) assert.equal(h.u(a).orders.get(id)?.state, 'open', 'an old open order is kept');
    assert.equal(stateHash(twin!), stateHash(h.ex), 'the engine restored halfway forgot the same orders');
  });
});
