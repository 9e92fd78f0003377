// Issue 14 finding 5: journal retention behind snapshots. With `delete` or `archive`, the records
// up to the second-to-last snapshot leave the journal in small steps (archived first to fsynced
// JSON-lines files with `archive`); recovery from the latest snapshot still has every record it
// needs, and a server restarted on a compacted journal comes back to the same state.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { JournalRecord } from '../../src/journal/journal.ts';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { openPostgresJournal } from '../../src/journal/postgresJournal.ts';
import { freshSchema } from '../helpers/postgres.ts';
import { adminToken, ok, sqliteOf, startServer, tempDir, userToken } from '../helpers/server.ts';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const rec = (seq: number): JournalRecord => ({ seq, ts: 1_000 + seq, cmd: JSON.stringify({ t: 'noop', seq }) });
const seqs = (it: Iterable<JournalRecord>): number[] => [...it].map((r) => r.seq);

for (const mode of ['archive', 'delete'] as const) {
  test(`${mode}: records up to the second-to-last snapshot go, in steps; the rest stays readable`, () => {
    const dir = tempDir('strikebook-retention-');
    dirs.push(dir);
    const archiveDir = path.join(dir, 'archive');
    const j = openSqliteJournal(dir, { retention: { mode, archiveDir, stepRecords: 10 } });
    try {
      j.append(Array.from({ length: 100 }, (_, i) => rec(i + 1)));
      j.saveSnapshot(30, 'S30');
      assert.equal(j.compactStep(), 0, 'one snapshot: nothing may go');
      j.saveSnapshot(60, 'S60');
      let removed = 0;
      for (let n = j.compactStep(); n > 0; n = j.compactStep()) {
        assert.ok(n <= 10, 'at most one step of records at a time');
        removed += n;
      }
      assert.equal(removed, 30, 'records 1..30 (up to the second-to-last snapshot) removed');
      assert.deepEqual(seqs(j.readAfter(0)), Array.from({ length: 70 }, (_, i) => i + 31));
      assert.equal(j.lastSeq(), 100);
      assert.deepEqual(seqs(j.readAfter(60)), Array.from({ length: 40 }, (_, i) => i + 61), 'recovery from the latest snapshot has its tail');
      // appends go on after compaction
      j.append([rec(101)]);
      assert.equal(j.lastSeq(), 101);
      j.saveSnapshot(90, 'S90');
      while (j.compactStep() > 0);
      assert.equal(seqs(j.readAfter(0))[0], 61, 'the next window moves with the snapshots');
      if (mode === 'archive') {
        const files = readdirSync(archiveDir).sort();
        const archived = files.flatMap((f) => readFileSync(path.join(archiveDir, f), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as JournalRecord));
        assert.deepEqual(archived.map((r) => r.seq), Array.from({ length: 60 }, (_, i) => i + 1), 'every removed record is archived, in order');
        assert.deepEqual(archived[41], rec(42), 'as it was journaled');
        assert.ok(files.every((f) => /^journal-\d{12}-\d{12}\.jsonl$/.test(f)), `archive files: ${files.join(', ')}`);
      }
    } finally {
      j.close();
    }
  });
}

test('PostgreSQL, archive: after the second snapshot the journal compacts itself behind it', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const dir = tempDir('strikebook-retention-pg-');
  dirs.push(dir);
  const archiveDir = path.join(dir, 'archive');
  const j = await openPostgresJournal(db.url, { retention: { mode: 'archive', archiveDir, stepRecords: 10 } });
  t.after(() => j.close());
  await j.append(Array.from({ length: 100 }, (_, i) => rec(i + 1)));
  await j.saveSnapshot(30, 'S30');
  assert.equal(await j.compactStep(), 0, 'one snapshot: nothing may go');
  await j.saveSnapshot(60, 'S60');
  // the journal runs the steps by itself after a snapshot; wait until they are done
  const deadline = Date.now() + 10_000;
  let first = 0;
  while (Date.now() < deadline) {
    first = Number((await db.query<{ m: string }>(`SELECT MIN(seq) AS m FROM ${db.name}.journal`))[0]!.m);
    if (first === 31) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(first, 31, 'records 1..30 removed');
  const tail: number[] = [];
  for await (const r of j.readAfter(60)) tail.push(r.seq);
  assert.deepEqual(tail, Array.from({ length: 40 }, (_, i) => i + 61));
  const archived = readdirSync(archiveDir).sort().flatMap((f) => readFileSync(path.join(archiveDir, f), 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as JournalRecord).seq));
  assert.deepEqual(archived, Array.from({ length: 30 }, (_, i) => i + 1));
  await j.append([rec(101)]);
  assert.equal(j.lastSeq(), 101);
});

test('keep (the default) removes nothing', () => {
  const dir = tempDir('strikebook-retention-');
  dirs.push(dir);
  const j = openSqliteJournal(dir);
  try {
    j.append(Array.from({ length: 50 }, (_, i) => rec(i + 1)));
    j.saveSnapshot(20, 'a');
    j.saveSnapshot(40, 'b');
    assert.equal(j.compactStep(), 0);
    assert.equal(seqs(j.readAfter(0)).length, 50);
  } finally {
    j.close();
  }
});

test('a server with retention delete compacts its journal behind snapshots and restarts to the same state', async () => {
  const dataDir = tempDir('strikebook-retention-srv-');
  dirs.push(dataDir);
  const env = { STRIKEBOOK_JOURNAL_RETENTION: 'delete', STRIKEBOOK_SNAPSHOT_EVERY: '10' };
  let srv = await startServer(env, dataDir);
  const admin = await adminToken(srv.url);
  for (let i = 0; i < 8; i++) await userToken(srv.url, admin, `u${i}@example.com`, { currency: 'BTC', amount: 1 });
  const before = await ok(srv.url, 'private/get_state_hash', {}, admin);
  // the writer compacts after its writes: one more write lets it catch up with the last snapshot
  await userToken(srv.url, admin, 'last@example.com');
  const hash = await ok(srv.url, 'private/get_state_hash', {}, admin);
  assert.ok(hash.seq > before.seq);
  const first = sqliteOf(srv.app).journal.readAfter(0).next().value as JournalRecord;
  assert.ok(first.seq > 1, `the oldest records are gone (journal starts at ${first.seq})`);
  await srv.stop({ keepData: true });
  srv = await startServer(env, dataDir);
  try {
    const again = await ok(srv.url, 'private/get_state_hash', {}, admin);
    assert.equal(again.seq, hash.seq);
    assert.equal(again.state_hash, hash.state_hash, 'recovered from snapshot + tail to the same state');
  } finally {
    await srv.stop({ keepData: true });
  }
});
