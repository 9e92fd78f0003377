// Issue 14 finding 2: client_order_id memory is bounded per user (the newest `clientOrderIdsKept`,
// none older than 24 h by the engine clock), and a snapshot restore or a replay forgets exactly the
// same ids as the live engine.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Sequenced } from '../../src/engine/commands.ts';
import { DEFAULT_LIMITS, Exchange } from '../../src/engine/exchange.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { applyCommand } from '../../src/sequencer/sequencer.ts';
import { EXP_JAN, Harness, T0, spec } from '../helpers/engine.ts';

const C = 'BTC-30JAN26-130000-C';
const N = 50;
const limits = { ...DEFAULT_LIMITS, clientOrderIdsKept: N };

function setup(): { h: Harness; log: Sequenced[] } {
  const h = new Harness(limits);
  const log: Sequenced[] = [];
  h.ex.viewObserver = (cmd) => log.push(JSON.parse(JSON.stringify(cmd)) as Sequenced);
  h.apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null });
  h.apply({ t: 'list', instruments: [spec('BTC', EXP_JAN, 130000, 'call')] });
  return { h, log };
}

const ids = (ex: Exchange, userId: number): string[] => [...ex.users.get(userId)!.clientOrderIds.keys()];

describe('client_order_id memory', () => {
  it('keeps the newest N ids per user: after N+k orders it holds N, the k oldest forgotten', () => {
    const { h, log } = setup();
    const u = h.user('10');
    const v = h.user('10');
    const k = 20;
    const first = new Map<string, number>();
    for (let i = 0; i < N + k; i++) first.set(`id${i}`, h.ok(u, 'buy', C, '0.0050', '0.1', { clientOrderId: `id${i}`, tif: 'immediate_or_cancel' }).order.id);
    h.ok(v, 'buy', C, '0.0050', '0.1', { clientOrderId: 'other-user', tif: 'immediate_or_cancel' });
    assert.equal(h.ex.users.get(u)!.clientOrderIds.size, N, 'count after N+k orders is N');
    assert.deepEqual(ids(h.ex, u), Array.from({ length: N }, (_, i) => `id${k + i}`), 'the newest N, oldest first');
    assert.deepEqual(ids(h.ex, v), ['other-user'], 'another user is not affected');

    // inside the window a retry is the first order; past it, a new order
    const next = h.ex.nextOrderId;
    assert.equal(h.ok(u, 'buy', C, '0.0050', '0.1', { clientOrderId: `id${N + k - 1}`, tif: 'immediate_or_cancel' }).order.id, first.get(`id${N + k - 1}`));
    assert.equal(h.ex.nextOrderId, next, 'the retry made no order');
    const again = h.ok(u, 'buy', C, '0.0050', '0.1', { clientOrderId: 'id0', tif: 'immediate_or_cancel' }).order.id;
    assert.notEqual(again, first.get('id0'), 'a forgotten id places a new order');
    assert.equal(h.ex.users.get(u)!.clientOrderIds.size, N);

    // a snapshot restore and a replay keep the same set, in the same order, and the same state
    const restored = restore(serialize(h.ex), limits);
    assert.deepEqual(ids(restored, u), ids(h.ex, u));
    assert.equal(stateHash(restored), stateHash(h.ex));
    const replayed = new Exchange(limits);
    for (const cmd of log) applyCommand(replayed, cmd);
    assert.deepEqual(ids(replayed, u), ids(h.ex, u));
    assert.equal(stateHash(replayed), stateHash(h.ex));
  });

  it('forgets ids older than 24 h by the engine clock at the next order', () => {
    const { h } = setup();
    const u = h.user('10');
    for (let i = 0; i < 5; i++) h.ok(u, 'buy', C, '0.0050', '0.1', { clientOrderId: `old${i}`, tif: 'immediate_or_cancel' });
    h.apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null }, T0 + 24 * 3600 * 1000 + 1);
    h.ok(u, 'buy', C, '0.0050', '0.1', { clientOrderId: 'new', tif: 'immediate_or_cancel' });
    assert.deepEqual(ids(h.ex, u), ['new']);
  });
});
