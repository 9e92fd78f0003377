// Closed orders past closedOrdersKept: an account's order map forgets its oldest closed orders
// first (pruneClosed, src/engine/orderMemory.ts), never an open one, and an engine restored halfway
// forgets exactly what the live one does. The orders no map holds any more are written to the
// snapshot as stubs of what their trades read (src/engine/snapshot.ts prunedOrderToJson): a
// restored engine renders those trades as the live one does, hashes equal to it, and stays equal
// through more trading.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { renderUserTrade } from '../../src/api/render.ts';
import { userTradeJson } from '../../src/api/orderJson.ts';
import { tradeById } from '../../src/engine/tradedOrders.ts';
import type { Order, Trade } from '../../src/engine/types.ts';
import { DEFAULT_LIMITS, type Exchange } from '../../src/engine/exchange.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { Command, Sequenced } from '../../src/engine/commands.ts';
import { EXP_MAR, Harness, px, spec } from '../helpers/engine.ts';
import { markPrice } from '../risk/portfolio/pmHarness.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');

/** Two funded accounts on one call, accounts keeping `keep` closed orders, and a limit order of one lot at any price. */
function twoAccounts(keep: number) {
  const limits = { ...DEFAULT_LIMITS, closedOrdersKept: keep };
  const h = Harness.market([CALL], limits);
  const a = h.user('1000');
  const b = h.user('1000');
  const lot = h.inst(CALL.name).lotScaled;
  const order = (userId: number, side: 0 | 1, price: number, tif: 'good_til_cancelled' | 'immediate_or_cancel', label = ''): Command => ({
    t: 'place', userId, side, instrument: CALL.name, price, advanced: null, advPrice: null, lots: lot, type: 'limit', tif,
    postOnly: false, rejectPostOnly: false, reduceOnly: false, label, clientOrderId: null,
  });
  return { h, a, b, limits, mark: px(markPrice(h, CALL.name)), order };
}

describe('closed orders past closedOrdersKept', () => {
  it('forgets the oldest closed first, never an open one, and a restored engine forgets the same', () => {
    const { h, a, b, limits, mark, order } = twoAccounts(5);
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
        twin = restore(serialize(h.ex), limits);
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

  it('forgets by age of the order, not of its closing: an old bid filled late goes first', () => {
    const { h, a, b, limits, mark, order } = twoAccounts(5);
    // an old bid below the mark, then many orders of the account that close at once
    const old = (h.apply(order(a, 0, mark - 100, 'good_til_cancelled')) as { order: { id: number } }).order.id;
    for (let i = 0; i < 60; i++) {
      h.apply(order(b, 1, mark, 'good_til_cancelled'));
      h.apply(order(a, 0, mark, 'immediate_or_cancel'));
    }
    assert.equal(h.u(a).orders.get(old)?.state, 'open');
    // b's ask fills the old bid: it closes last but is the account's oldest closed order
    h.apply(order(b, 1, mark - 100, 'immediate_or_cancel'));
    assert.equal(h.u(a).orders.get(old)?.state, 'filled');
    const restored = restore(serialize(h.ex), limits);
    let seq = h.seq;
    // enough closes of a's orders for the next prune: the old bid is the first forgotten
    for (let i = 0; i < 70 && h.u(a).orders.has(old); i++) {
      for (const c of [order(b, 1, mark, 'good_til_cancelled'), order(a, 0, mark, 'immediate_or_cancel')]) {
        h.apply(c);
        restored.apply({ ...c, ts: h.ts, seq: ++seq } as Sequenced);
      }
    }
    assert.equal(h.u(a).orders.has(old), false, 'the old bid, filled last, was forgotten');
    const kept = [...h.u(a).orders.values()].filter((o) => o.state !== 'open').map((o) => o.id);
    assert.ok(kept.every((id) => id > old));
    assert.equal(stateHash(restored), stateHash(h.ex), 'a restored engine forgot the same');
  });

  it('those no map holds are snapshot stubs that render their trades as the live engine does and keep the state hash', () => {
    const { h, a: maker, b: taker, limits, mark, order } = twoAccounts(3);
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

    const back = restore(text, limits);
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
      both(order(maker, 1, mark, 'good_til_cancelled', 'more'));
      both(order(taker, 0, mark, 'immediate_or_cancel'));
    }
    assert.equal(stateHash(back), stateHash(h.ex));
  });

  it('a forgotten order leaves its trades holding a stub, not the order, and they render as before', () => {
    const { h, a: maker, b: taker, mark, order } = twoAccounts(3);
    // a wide MMP limit, so that the tagged makers below are never frozen
    h.apply({ t: 'set_mmp_config', userId: maker, indexName: 'btc_usd', group: null, interval: 60, frozenTime: 10, quantityLimit: 1e12, deltaLimit: 0, maxQuoteQuantity: 0 } as Command);
    const ids: number[] = [];
    const before = new Map<number, unknown>();
    for (let i = 0; i < 150; i++) {
      // an MMP-tagged maker now and then: the stub keeps its tag, which the trade renders
      const ask = h.apply({ ...order(maker, 1, mark, 'good_til_cancelled', `ask-${i}`), mmp: i % 5 === 0 } as Command) as { order: Order };
      ids.push(ask.order.id);
      const lift = h.apply(order(taker, 0, mark, 'immediate_or_cancel', `lift-${i}`)) as { trades: Trade[] };
      const t = lift.trades[0]!;
      before.set(t.id, [renderUserTrade(t, maker), renderUserTrade(t, taker), userTradeJson(t, maker), userTradeJson(t, taker)]);
    }
    const m = h.u(maker);
    const forgotten = ids.filter((id) => !m.orders.has(id));
    assert.ok(forgotten.length >= 80, `${forgotten.length} forgotten`);
    const stubKeys = ['id', 'userId', 'side', 'inst', 'type', 'postOnly', 'reduceOnly', 'label', 'isLiquidation', 'state', 'mmp', 'origin'];
    let stubs = 0;
    for (const t of [...m.trades, ...h.u(taker).trades, ...h.ex.markets.get(h.inst(CALL.name).id)!.trades]) {
      for (const o of [t.makerOrder, t.takerOrder]) {
        const held = h.u(o.userId).orders.get(o.id);
        if (held !== undefined) {
          assert.equal(o, held, `trade ${t.id}: a kept order is the order itself`);
        } else {
          // what no account holds any more is a stub of 12 fields: the 330-byte order is unreachable
          assert.deepEqual(Object.keys(o), stubKeys, `trade ${t.id}: order ${o.id} is held whole after it was forgotten`);
          stubs++;
        }
      }
      assert.deepEqual([renderUserTrade(t, maker), renderUserTrade(t, taker), userTradeJson(t, maker), userTradeJson(t, taker)], before.get(t.id), `trade ${t.id} renders as before`);
    }
    assert.ok(stubs >= 2 * forgotten.length, `${stubs} stubs in the trade lists`);
    assert.ok(m.trades.some((t) => !m.orders.has(t.makerOrder.id) && t.makerOrder.mmp !== null), 'a stub keeps its MMP tag');
    // a restored engine holds the same stubs
    const back = restore(serialize(h.ex), h.ex.limits);
    assert.equal(stateHash(back), stateHash(h.ex));
    const restoredFirst = back.users.get(maker)!.trades[0]!.makerOrder;
    assert.deepEqual(Object.keys(restoredFirst), stubKeys);
    assert.deepEqual({ ...restoredFirst, inst: null }, { ...m.trades[0]!.makerOrder, inst: null });
  });

  it('finds a trade by id in an ascending list, and nothing for an id it does not hold', () => {
    const list = [3, 5, 9, 10, 42].map((id) => ({ id }) as Trade);
    for (const t of list) assert.equal(tradeById(list, t.id), t);
    for (const id of [0, 4, 11, 43]) assert.equal(tradeById(list, id), undefined);
    assert.equal(tradeById([], 1), undefined);
  });
});
