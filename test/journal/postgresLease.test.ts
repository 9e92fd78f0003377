// The leadership lease of the PostgreSQL journal (src/journal/postgresLease.ts) on a real server:
// taken with a term, renewed on the writer connection, every append fenced by the term and the
// database's clock; a lease that cannot be renewed is given up at the renew deadline, before it ends;
// a taken-over leader writes nothing more; a version-1 schema (no lease) is migrated. Skips without
// a reachable PostgreSQL.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { WriterLockTaken, openPostgresJournal, type PostgresJournal } from '../../src/journal/postgresJournal.ts';
import { leaseTimingProblem } from '../../src/journal/postgresLease.ts';
import { freshSchema, type TestSchema } from '../helpers/postgres.ts';
import { noopRecord as rec } from '../helpers/journalRecords.ts';

const TIMING = { leaseMs: 1_500, renewMs: 300 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function leaseRow(db: TestSchema): Promise<{ term: number; lock_held: boolean; left_ms: number }> {
  const [row] = await db.query<{ term: string; lock_held: boolean; left_ms: string }>(
    `SELECT term::text AS term, lock_held, (EXTRACT(EPOCH FROM expires_at - now()) * 1000)::bigint::text AS left_ms FROM ${db.name}.leader_lease WHERE id = 1`,
  );
  assert.ok(row, 'a lease row exists');
  return { term: Number(row.term), lock_held: row.lock_held, left_ms: Number(row.left_ms) };
}

async function open(t: TestContext, db: TestSchema, onLost?: (err: Error) => void, lockWaitMs?: number): Promise<PostgresJournal> {
  const j = await openPostgresJournal(db.url, { lease: TIMING, lockRetryMs: 50, ...(lockWaitMs !== undefined ? { lockWaitMs } : {}), ...(onLost ? { onLeaseLost: onLost } : {}) });
  t.after(() => j.close());
  return j;
}

test('the lease timing must leave renewals before its deadline', () => {
  assert.equal(leaseTimingProblem({ leaseMs: 5_000, renewMs: 1_000 }), null);
  assert.match(leaseTimingProblem({ leaseMs: 2_000, renewMs: 1_000 }) ?? '', /at least 3 times/);
});

test('a writer takes the lease with term 1, renews it with the database clock, and holds the advisory lock beside it', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const j = await open(t, db);
  assert.equal(j.term, 1);
  const first = await leaseRow(db);
  assert.equal(first.term, 1);
  assert.equal(first.lock_held, true);
  assert.ok(first.left_ms > 0 && first.left_ms <= TIMING.leaseMs, `expiry within the lease (${first.left_ms} ms)`);
  await sleep(TIMING.leaseMs + 500);
  const later = await leaseRow(db);
  assert.ok(later.left_ms > 0, `renewed past its first expiry (${later.left_ms} ms left)`);
  const st = j.lease();
  assert.ok(st !== null && st.held && st.term === 1 && st.ageMs < TIMING.leaseMs, `the journal reports the lease held: ${JSON.stringify(st)}`);
  await j.append([rec(1)]);
  // a second writer is refused while it is held
  await assert.rejects(openPostgresJournal(db.url, { lease: TIMING, lockWaitMs: 200, lockRetryMs: 50 }), WriterLockTaken);
});

test('a leader whose lease expired and was taken over is fenced: its append inserts nothing and it reports the lease lost', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const lost: Error[] = [];
  // renewals far apart: the expiry below is not renewed away before the successor looks
  const old = await openPostgresJournal(db.url, { lease: { leaseMs: 30_000, renewMs: 10_000 }, onLeaseLost: (err) => lost.push(err) });
  t.after(() => old.close());
  await old.append([rec(1), rec(2)]);
  // what a freeze looks like from the database: the lease runs out while the session lives on
  await db.query(`UPDATE ${db.name}.leader_lease SET expires_at = now() - interval '1 second'`);
  const next = await openPostgresJournal(db.url, { lease: TIMING, lockWaitMs: 10_000, lockRetryMs: 50 });
  t.after(() => next.close());
  assert.equal(next.term, 2, 'the next term');
  assert.equal(next.lastSeq(), 2);
  await assert.rejects(old.append([rec(3)]), /lease/);
  await next.append([rec(3)]);
  const [c] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${db.name}.journal`);
  assert.equal(c!.n, 3, 'only the new leader wrote seq 3');
  assert.equal(lost.length, 1, 'the old leader was told it lost the lease');
  assert.equal(old.lease()?.held, false);
});

/** A transaction elsewhere holding the lease row: renewals (and appends) wait behind it, as behind a hung connection. */
async function blockLeaseRow(t: TestContext, db: TestSchema): Promise<{ release(): Promise<void> }> {
  const blocker = new pg.Client({ connectionString: db.url });
  await blocker.connect();
  t.after(() => blocker.end().catch(() => undefined));
  await blocker.query('BEGIN');
  await blocker.query(`SELECT 1 FROM ${db.name}.leader_lease WHERE id = 1 FOR UPDATE`);
  return { release: async () => void (await blocker.query('ROLLBACK')) };
}

test('a leader whose renewals are held up stops acknowledging at its renew deadline, before its lease ends, and resumes once a renewal gets through', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  // a renew interval long enough that the renewal held up is not given up on while the test looks
  const lost: Error[] = [];
  const j = await openPostgresJournal(db.url, { lease: { leaseMs: 6_000, renewMs: 2_000 }, onLeaseLost: (err) => lost.push(err) });
  t.after(() => j.close());
  await j.append([rec(1)]);
  const block = await blockLeaseRow(t, db);
  const since = performance.now();
  while (j.lease()!.held && performance.now() - since < 20_000) await sleep(20);
  assert.equal(j.lease()!.held, false, 'the lease is no longer counted held');
  const atDeadline = await leaseRow(db);
  assert.ok(atDeadline.left_ms > 0, `acknowledgements stopped while the database still counted the lease valid (${atDeadline.left_ms} ms left)`);
  let acknowledged = false;
  const pending = j.append([rec(2)]).then(() => (acknowledged = true));
  await sleep(300);
  assert.equal(acknowledged, false, 'an append is not acknowledged while the lease is not held');
  await block.release();
  await pending;
  assert.equal(j.lease()!.held, true, 'a renewal with the same term holds the lease again');
  assert.deepEqual(lost, []);
  assert.equal((await leaseRow(db)).term, 1);
});

test('a leader whose renewal goes unanswered for longer than the lease loses it for good, and writes nothing more', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  let lostAt = 0;
  const j = await open(t, db, () => (lostAt = performance.now()));
  await j.append([rec(1)]);
  const block = await blockLeaseRow(t, db);
  const since = performance.now();
  while (lostAt === 0 && performance.now() - since < 20_000) await sleep(20);
  assert.ok(lostAt > 0, 'the lease was given up');
  const st = j.lease();
  assert.ok(st !== null && !st.held && st.lost !== null, `reported lost: ${JSON.stringify(st)}`);
  await block.release();
  await assert.rejects(j.append([rec(2)]), /refused|lease/, 'nothing more is written');
});

test('a leader that crashed is taken over at once through the advisory lock, without waiting out its lease', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const j = await openPostgresJournal(db.url, { lease: { leaseMs: 60_000, renewMs: 1_000 } });
  await j.append([rec(1)]);
  const started = performance.now();
  const waiting = openPostgresJournal(db.url, { lease: TIMING, lockWaitMs: 20_000, lockRetryMs: 50 });
  await sleep(300);
  await db.query('SELECT pg_terminate_backend($1)', [j.writerPid]);
  const next = await waiting;
  t.after(() => next.close());
  await j.close();
  assert.ok(performance.now() - started < 20_000);
  assert.equal(next.term, 2);
  assert.equal((await leaseRow(db)).lock_held, true);
});

test('a server of an older version, holding only the advisory lock, keeps a new server out', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  // a new server created the tables once, then an old one took only the lock (it knows no lease)
  const first = await openPostgresJournal(db.url, { lease: TIMING });
  const key = first.lockKey;
  await first.close();
  await db.query(`DELETE FROM ${db.name}.leader_lease`);
  const oldServer = new pg.Client({ connectionString: db.url });
  await oldServer.connect();
  t.after(() => oldServer.end().catch(() => undefined));
  await oldServer.query('SELECT pg_advisory_lock($1::bigint)', [key]);
  await assert.rejects(openPostgresJournal(db.url, { lease: TIMING, lockWaitMs: 300, lockRetryMs: 50 }), WriterLockTaken);
  await oldServer.query('SELECT pg_advisory_unlock($1::bigint)', [key]);
  const j = await open(t, db);
  assert.ok(j.term >= 1);
});

test('a journal schema of version 1 (no lease table) is migrated and written on under a lease', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  // the tables exactly as version 1 created them, with records in them
  await db.query(`CREATE TABLE ${db.name}.journal (seq bigint PRIMARY KEY, ts bigint NOT NULL, cmd text NOT NULL)`);
  await db.query(`CREATE TABLE ${db.name}.snapshots (seq bigint PRIMARY KEY, data text NOT NULL)`);
  await db.query(`CREATE TABLE ${db.name}.meta (key text PRIMARY KEY, value text NOT NULL)`);
  await db.query(`INSERT INTO ${db.name}.meta (key, value) VALUES ('schema_version', '1')`);
  for (const r of [rec(1), rec(2)]) await db.query(`INSERT INTO ${db.name}.journal (seq, ts, cmd) VALUES ($1, $2, $3)`, [r.seq, r.ts, r.cmd]);
  const j = await open(t, db);
  assert.equal(j.lastSeq(), 2);
  assert.equal(await j.getMeta('schema_version'), '3');
  assert.equal(j.term, 1);
  await j.append([rec(3)]);
  const seqs: number[] = [];
  for await (const r of j.readAfter(0)) seqs.push(r.seq);
  assert.deepEqual(seqs, [1, 2, 3]);
});

test('a leader that took over from a frozen one is not taken over when the frozen one exits, and takes the advisory lock itself', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const frozen = await openPostgresJournal(db.url, { lease: { leaseMs: 30_000, renewMs: 10_000 }, onLeaseLost: () => undefined });
  await frozen.append([rec(1)]);
  await db.query(`UPDATE ${db.name}.leader_lease SET expires_at = now() - interval '1 second'`);
  const leader = await open(t, db, undefined, 10_000);
  assert.equal(leader.term, 2);
  assert.equal((await leaseRow(db)).lock_held, false, 'the frozen one still holds the advisory lock');
  // the frozen one goes (its session ends, the lock is free); a third server must not take over
  await frozen.close();
  await assert.rejects(openPostgresJournal(db.url, { lease: TIMING, lockWaitMs: 200, lockRetryMs: 20 }), WriterLockTaken);
  // the leader's next renewals take the lock, so that its own crash is taken over at once
  for (const start = performance.now(); !(await leaseRow(db)).lock_held; ) {
    assert.ok(performance.now() - start < 10_000, 'the leader took the advisory lock');
    await sleep(50);
  }
  assert.equal((await leaseRow(db)).term, 2);
  await leader.append([rec(2)]);
});
