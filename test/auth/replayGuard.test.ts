// The replay cache behind signed requests (src/auth/replayGuard.ts): a signature passes once while
// its timestamp can still be fresh, memory is bounded, and a full share refuses instead of forgetting.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ReplayGuard } from '../../src/auth/replayGuard.ts';

const W = 60_000;

describe('ReplayGuard', () => {
  it('admits a signature once and forgets it only when every clock is past its window', () => {
    const g = new ReplayGuard(W, 100, 10);
    const t0 = 1_000_000;
    assert.equal(g.admit('k', 'aa', t0, [t0, t0]), 'ok');
    assert.equal(g.admit('k', 'aa', t0, [t0 + W, t0 + W]), 'replayed', 'still inside the window');
    assert.equal(g.admit('k', 'bb', t0, [t0, t0]), 'ok', 'another signature');
    assert.equal(g.admit('other', 'aa', t0, [t0, t0]), 'ok', 'another key');
    // one clock past the window is not enough: the other could still accept the timestamp
    assert.equal(g.admit('k', 'aa', t0, [t0 + W + 1, t0]), 'replayed');
    assert.equal(g.admit('x', 'cc', t0 + 2 * W, [t0 + W + 1, t0 + W + 1]), 'ok');
    assert.equal(g.size, 1, 'the three expired entries are gone');
  });

  it('refuses past the per-key share and the total, and frees them as entries expire', () => {
    const g = new ReplayGuard(W, 5, 3);
    const t0 = 5_000_000;
    for (const s of ['a', 'b', 'c']) assert.equal(g.admit('k', s, t0, [t0]), 'ok');
    assert.equal(g.admit('k', 'd', t0, [t0]), 'full', 'per key');
    assert.equal(g.admit('j', 'a', t0, [t0]), 'ok');
    assert.equal(g.admit('j', 'b', t0, [t0]), 'ok');
    assert.equal(g.admit('i', 'a', t0, [t0]), 'full', 'in all');
    assert.equal(g.admit('k', 'd', t0 + W + 1, [t0 + W + 1]), 'ok', 'after the window');
    assert.equal(g.size, 1);
  });
});
