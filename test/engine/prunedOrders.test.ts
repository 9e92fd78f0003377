// Orders no account's map holds any more (pruned past closedOrdersKept) are written to the snapshot
// as stubs of what their trades read (src/engine/snapshot.ts prunedOrderToJson): a restored engine
// renders those trades as the live one does, hashes equal to it, and stays equal through more
// trading; and the snapshot holds the stubs, not full orders.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { renderUserTrade } from '../../src/api/render.ts';
import { DEFAULT_LIMITS } from '../../src/engine/exchange.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { Command, Sequenced } from '../../src/engine/commands.ts';
import { EXP_MAR, Harness, px, spec } from '../helpers/engine.ts';
import { markPrice } from '../risk/portfolio/pmHarness.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');
const LIMITS = { ...DEFAULT_LIMITS, closedOrdersKept: 3 };

describe('pruned orders in the snapshot', () => {
  it('are stubs that render their trades as the live engine does, and keep the state hash', () => {
    const h = Harness.market([CALL], LIMITS);
    const maker = h.user('100');
    const taker = h.user('100');
    const price = markPrice(h, CALL.name);
    for (let i = 0; i < 100; i++) {
      h.ok(maker, 'sell', CALL.name, price, '1', { label: `ask-${i}`, postOnly: i % 2 === 0 });
      h.ok(taker, 'buy', CALL.name, price, '1', { label: `lift-${i}` });
    }
    const m = h.u(maker);
    assert.ok(m.orders.size <= 3 + 64, 'closed orders were pruned from the map');
    const first = m.trades[0]!;
    assert.ok(!m.orders.has(first.makerOrder.id), "the first trade's order is pruned");

    const text = serialize(h.ex);
    const stubs = (JSON.parse(text).orders as unknown[][]).filter((a) => a.length === 10);
    assert.ok(stubs.length >= 30, `${stubs.length} stubs`);

    const back = restore(text, LIMITS);
    assert.equal(stateHash(back), stateHash(h.ex));
    for (const uid of [maker, taker]) {
      const live = h.u(uid).trades.map((t) => renderUserTrade(t, uid));
      const restored = back.users.get(uid)!.trades.map((t) => renderUserTrade(t, uid));
      assert.deepEqual(restored, live);
    }
    assert.equal(renderUserTrade(back.users.get(maker)!.trades[0]!, maker).label, 'ask-0');
    assert.equal(renderUserTrade(back.users.get(maker)!.trades[0]!, maker).post_only, true);

    // the same commands on both: still equal
    let seq = h.seq;
    const both = (cmd: Command) => {
      h.apply(cmd);
      back.apply({ ...cmd, ts: h.ts, seq: ++seq } as Sequenced);
    };
    for (let i = 0; i < 5; i++) {
      both({ t: 'place', userId: maker, side: 1, instrument: CALL.name, price: px(price), advanced: null, advPrice: null, lots: h.inst(CALL.name).lotScaled, type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: 'more', clientOrderId: null });
      both({ t: 'place', userId: taker, side: 0, instrument: CALL.name, price: px(price), advanced: null, advPrice: null, lots: h.inst(CALL.name).lotScaled, type: 'limit', tif: 'immediate_or_cancel', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null });
    }
    assert.equal(stateHash(back), stateHash(h.ex));
  });
});
