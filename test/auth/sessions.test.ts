// Sessions per user are bounded (src/auth/authState.ts): one more than MAX_SESSIONS_PER_USER
// revokes that user's oldest, in issue order, also after a snapshot restore; other users and
// refreshes (which replace a session, not add one) are not affected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_SESSIONS_PER_USER } from '../../src/auth/authState.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { Harness } from '../helpers/engine.ts';

const HOUR = 3_600_000;

function login(h: Harness, userId: number, n: number, replaces: string | null = null): { access: string; refresh: string } {
  const access = `a-${userId}-${n}`;
  const refresh = `r-${userId}-${n}`;
  h.apply({ t: 'issue_token', userId, access, refresh, scope: 'connection', accessTtl: HOUR, refreshTtl: 720 * HOUR, replaces });
  return { access, refresh };
}

test('the oldest session goes when a user opens one more than the cap; others stay', () => {
  const h = new Harness();
  const a = h.user();
  const b = h.user();
  const other = login(h, b, 0);
  for (let n = 0; n < MAX_SESSIONS_PER_USER + 3; n++) login(h, a, n);
  assert.equal(h.ex.auth.sessionCount(a), MAX_SESSIONS_PER_USER);
  for (let n = 0; n < 3; n++) {
    assert.equal(h.ex.auth.access.has(`a-${a}-${n}`), false, `access ${n} revoked`);
    assert.equal(h.ex.auth.refresh.has(`r-${a}-${n}`), false, `refresh ${n} revoked`);
  }
  assert.equal(h.ex.auth.access.has(`a-${a}-3`), true);
  assert.equal(h.ex.auth.access.has(`a-${a}-${MAX_SESSIONS_PER_USER + 2}`), true);
  assert.equal(h.ex.auth.access.has(other.access), true, "another user's session is untouched");
  assert.equal(h.ex.auth.sessionCount(b), 1);
});

test('a refresh replaces its session instead of adding one', () => {
  const h = new Harness();
  const a = h.user();
  let s = login(h, a, 0);
  for (let n = 1; n <= 2 * MAX_SESSIONS_PER_USER; n++) s = login(h, a, n, s.refresh);
  assert.equal(h.ex.auth.sessionCount(a), 1);
  assert.equal(h.ex.auth.access.has(s.access), true);
});

test('after a snapshot restore the cap still drops the oldest session, and the state hash is the same', () => {
  const h = new Harness();
  const a = h.user();
  for (let n = 0; n < MAX_SESSIONS_PER_USER; n++) login(h, a, n);
  const restored = restore(serialize(h.ex));
  assert.equal(stateHash(restored), stateHash(h.ex));
  assert.equal(restored.auth.sessionCount(a), MAX_SESSIONS_PER_USER);
  // the same next command on both: each drops session 0 (not an arbitrary one)
  const cmd = { t: 'issue_token', userId: a, access: 'a-next', refresh: 'r-next', scope: 'connection', accessTtl: HOUR, refreshTtl: HOUR, replaces: null } as const;
  h.apply(cmd);
  restored.apply({ ...cmd, ts: h.ts, seq: h.seq });
  for (const ex of [h.ex, restored]) {
    assert.equal(ex.auth.access.has(`a-${a}-0`), false);
    assert.equal(ex.auth.access.has(`a-${a}-1`), true);
  }
  assert.equal(stateHash(restored), stateHash(h.ex));
});

test('a revoked or expired session frees its place', () => {
  const h = new Harness();
  const a = h.user();
  const first = login(h, a, 0);
  login(h, a, 1);
  h.apply({ t: 'revoke_token', access: first.access });
  assert.equal(h.ex.auth.sessionCount(a), 1);
  h.ex.auth.sweep(h.ts + 1000 * HOUR);
  assert.equal(h.ex.auth.sessionCount(a), 0);
});
