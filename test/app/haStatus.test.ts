// What /ready and /health say (src/app/haStatus.ts): a leader is ready only while it holds its lease
// and has not stepped down; /health shows the term, the lease's age and the last commit's age.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { healthBody, isReady, newHaState, readyBody } from '../../src/app/haStatus.ts';
import type { LeaseStatus } from '../../src/journal/postgresJournal.ts';

const held: LeaseStatus = { term: 7, ageMs: 420, validForMs: 3_580, held: true, lost: null };

test('a leader holding its lease is ready and reports its term, lease age and last commit age', () => {
  const ha = newHaState('leader', null, () => held);
  ha.lastCommitAt = performance.now() - 1_000;
  assert.equal(isReady(ha), true);
  assert.deepEqual(readyBody(ha), { ready: true, role: 'leader', term: 7 });
  const h = healthBody(ha, 99);
  assert.equal(h.status, 'ok');
  assert.equal(h.term, 7);
  assert.deepEqual(h.lease, { held: true, age_ms: 420, valid_for_ms: 3_580 });
  assert.ok(typeof h.last_commit_age_ms === 'number' && h.last_commit_age_ms >= 1_000);
});

test('a leader past its renew deadline, or stepped down, is not ready and says why', () => {
  let lease: LeaseStatus = { ...held, held: false, validForMs: 0 };
  const ha = newHaState('leader', null, () => lease);
  assert.equal(isReady(ha), false);
  assert.equal(readyBody(ha).reason, 'the leadership lease is not held');
  lease = { ...lease, lost: 'another server took the lease over' };
  assert.equal(readyBody(ha).reason, 'another server took the lease over');
  ha.fenced = 'journal: lost the leadership lease of term 7: another server took the lease over';
  assert.equal(healthBody(ha, 1).status, 'fenced');
  assert.equal(readyBody(ha).ready, false);
});

test('a server without a lease (SQLite) is ready as the leader; a standby is not', () => {
  assert.equal(isReady(newHaState('leader', null, () => null)), true);
  assert.deepEqual(healthBody(newHaState('leader', null, () => null), 3), { status: 'ok', seq: 3, role: 'leader', last_commit_age_ms: null });
  assert.equal(isReady(newHaState('standby', null, () => null)), false);
});
