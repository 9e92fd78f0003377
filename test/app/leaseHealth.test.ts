// A leader on PostgreSQL reports its lease (issue 30): /ready 200 with its term, /health with the
// term, the lease's age and the last commit's age, and the lease gauges in /metrics. Skips without
// a reachable PostgreSQL.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freshSchema } from '../helpers/postgres.ts';
import { request, startServer } from '../helpers/server.ts';

test('a leader on PostgreSQL reports its lease in /ready, /health and /metrics', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const server = await startServer({ DATABASE_URL: db.url, STRIKEBOOK_LEASE_MS: '6000', STRIKEBOOK_LEASE_RENEW_MS: '500' });
  t.after(() => server.stop());
  const ready = await request(server.url, '/ready');
  assert.equal(ready.status, 200);
  assert.deepEqual(ready.body, { ready: true, role: 'leader', term: 1 });
  const health = (await request(server.url, '/health')).body;
  assert.equal(health.role, 'leader');
  assert.equal(health.term, 1);
  assert.equal(health.lease.held, true);
  assert.ok(health.lease.age_ms >= 0 && health.lease.age_ms < 6_000, `lease age ${health.lease.age_ms} ms`);
  assert.ok(health.lease.valid_for_ms > 0);
  assert.ok(typeof health.last_commit_age_ms === 'number', 'the start committed (index, listings)');
  const metrics = (await request(server.url, '/metrics')).text;
  assert.match(metrics, /^strikebook_lease_held 1$/m);
  assert.match(metrics, /^strikebook_lease_term 1$/m);
  assert.match(metrics, /^strikebook_lease_age_seconds \d/m);
  // the row in the database says the same term
  const [row] = await db.query<{ term: string }>(`SELECT term::text AS term FROM ${db.name}.leader_lease`);
  assert.equal(row!.term, '1');
});
