// Snapshots in parts on PostgreSQL (src/journal/postgresSnapshots.ts): each part a write of its own,
// so that appends go between them; never visible before the last part; what a failure or a SIGKILL
// between parts leaves is never read and goes with the next snapshot; a version-2 schema's snapshot
// is still read after the migration. Each test runs in a schema of its own; without a reachable
// server every test here is skipped with the reason printed.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { encodeSnapshotParts } from '../../src/journal/snapshotParts.ts';
import { openPostgresJournal, type PostgresJournal } from '../../src/journal/postgresJournal.ts';
import { finishSnapshot } from '../../src/journal/postgresSnapshots.ts';
import { freshSchema, type TestSchema } from '../helpers/postgres.ts';
import { ROOT, tempDir } from '../helpers/server.ts';
import { noopRecord as rec, noopRecords as range } from '../helpers/journalRecords.ts';

/** A short lease, so that the restart after a SIGKILL takes over soon (the dead leader never released it). */
const TIMING = { leaseMs: 1_500, renewMs: 300 };


/** A snapshot-like text with characters of 1 to 4 UTF-8 bytes, so that parts end inside none of them. */
function sampleText(entries: number): string {
  return JSON.stringify(Array.from({ length: entries }, (_, i) => ({ id: i, label: i % 3 === 0 ? 'caf\u00e9 \ud83d\ude00' : 'plain', price: '0.0255' })));
}

async function open(t: TestContext, db: TestSchema): Promise<PostgresJournal> {
  const j = await openPostgresJournal(db.url);
  t.after(() => j.close()); // registered after the schema's drop, so it runs before it
  return j;
}

/** The transaction id (xmin) that wrote each row a query returns, as numbers (a fresh schema: no wraparound). */
async function xmins(db: TestSchema, sql: string): Promise<number[]> {
  return (await db.query<{ x: string }>(sql)).map((r) => Number(r.x));
}

test('a snapshot in parts is written part by part: an append issued meanwhile commits between its parts, and it is read back whole', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const j = await open(t, db);
  await j.append(range(1, 3));
  const text = sampleText(400);
  const parts = encodeSnapshotParts(text, 512);
  assert.ok(parts.length >= 20, `${parts.length} parts`);

  const done: string[] = [];
  const saved = j.saveSnapshotParts(3, parts).then(() => done.push('snapshot'));
  // the first part is on its way (its four statements take four round trips): an append issued
  // now is queued behind it, not behind the whole snapshot
  await new Promise((resolve) => setImmediate(resolve));
  const appended = j.append([rec(4)]).then(() => done.push('append'));
  await Promise.all([saved, appended]);
  assert.deepEqual(done, ['append', 'snapshot'], 'the append did not wait for the whole snapshot');

  const [appendTx] = await xmins(db, `SELECT xmin::text::bigint AS x FROM ${db.name}.journal WHERE seq = 4`);
  const partTxs = await xmins(db, `SELECT xmin::text::bigint AS x FROM ${db.name}.snapshot_parts WHERE seq = 3 ORDER BY part`);
  const [rowTx] = await xmins(db, `SELECT xmin::text::bigint AS x FROM ${db.name}.snapshots WHERE seq = 3`);
  assert.equal(partTxs.length, parts.length, 'one row per part');
  assert.equal(new Set(partTxs).size, parts.length, 'each part committed in a transaction of its own');
  assert.ok(partTxs[0]! < appendTx! && appendTx! < partTxs[partTxs.length - 1]!, `the append (tx ${appendTx}) committed between the parts (${partTxs[0]}..${partTxs.at(-1)})`);
  assert.ok(rowTx! > partTxs[partTxs.length - 1]!, 'the row that makes it the latest was written last');

  assert.deepEqual(await j.latestSnapshot(), { seq: 3, data: text });
  const row = await db.query<{ data: string; parts: number }>(`SELECT data, parts FROM ${db.name}.snapshots WHERE seq = 3`);
  assert.deepEqual(row, [{ data: '', parts: parts.length }]);
});

test('a part larger than a row goes in several rows, cut where a character ends, and reads back whole', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const j = await open(t, db);
  await j.append(range(1, 2));
  // ~200 KB in one part, multi-byte characters everywhere, so that the rows' cuts meet them
  const text = sampleText(5_000);
  const parts = encodeSnapshotParts(text, 1 << 20);
  assert.equal(parts.length, 1);
  await j.saveSnapshotParts(2, parts);
  const rows = await db.query<{ bytes: number }>(`SELECT octet_length(data) AS bytes FROM ${db.name}.snapshot_parts WHERE seq = 2 ORDER BY part`);
  assert.ok(rows.length >= 3, `${rows.length} rows for ${parts[0]!.length} bytes`);
  for (const r of rows) assert.ok(r.bytes <= 64 * 1024, `a row of ${r.bytes} bytes`);
  assert.deepEqual(await j.latestSnapshot(), { seq: 2, data: text });
});

test('a snapshot handed over as one text goes in rows when it is larger than one, and in one statement when it is not', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const j = await open(t, db);
  await j.append(range(1, 3));
  const large = sampleText(5_000);
  await j.saveSnapshot(2, large);
  const rows = await db.query<{ bytes: number }>(`SELECT octet_length(data) AS bytes FROM ${db.name}.snapshot_parts WHERE seq = 2 ORDER BY part`);
  assert.ok(rows.length >= 3, `${rows.length} rows`);
  for (const r of rows) assert.ok(r.bytes <= 64 * 1024, `a row of ${r.bytes} bytes`);
  assert.deepEqual(await j.latestSnapshot(), { seq: 2, data: large });
  const small = sampleText(20);
  await j.saveSnapshot(3, small);
  assert.deepEqual(await db.query(`SELECT seq::int, parts, data FROM ${db.name}.snapshots WHERE seq = 3`), [{ seq: 3, parts: 0, data: small }]);
  assert.deepEqual(await j.latestSnapshot(), { seq: 3, data: small });
  // refused past the journal, in rows or not, without breaking it
  await assert.rejects(j.saveSnapshot(4, large), /snapshot seq 4 is past the last journaled seq 3/);
  await j.append([rec(4)]);
});

test('a snapshot whose writing failed between parts is never read, and its parts go when the next one completes', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const first = await openPostgresJournal(db.url);
  await first.append(range(1, 5));
  await first.saveSnapshot(2, 'state@2');
  // its second part is not UTF-8: the server refuses it after the first part was committed
  const good = new TextEncoder().encode('{"a":');
  const bad = new Uint8Array([0x22, 0x80, 0x22]);
  await assert.rejects(first.saveSnapshotParts(4, [good, bad, new TextEncoder().encode('}')]), /invalid byte sequence|UTF8/i);
  assert.deepEqual(await db.query(`SELECT seq::int, part FROM ${db.name}.snapshot_parts`), [{ seq: 4, part: 0 }], 'the first part was written');
  assert.deepEqual(await first.latestSnapshot(), { seq: 2, data: 'state@2' }, 'a snapshot no row names is not read');
  // a write that failed in the database breaks the journal (whether more of it landed is unknown)
  await assert.rejects(first.append([rec(6)]), /earlier write failed/);
  await first.close();

  // the restart recovers from the last complete snapshot; its next snapshot clears the leftovers
  const j = await open(t, db);
  assert.deepEqual(await j.latestSnapshot(), { seq: 2, data: 'state@2' });
  const text = sampleText(50);
  await j.saveSnapshotParts(5, encodeSnapshotParts(text, 256));
  assert.deepEqual(await j.latestSnapshot(), { seq: 5, data: text });
  const left = await db.query<{ seq: number }>(`SELECT DISTINCT seq::int AS seq FROM ${db.name}.snapshot_parts ORDER BY 1`);
  assert.deepEqual(left.map((r) => r.seq), [5], 'the failed attempt\'s part is gone');
  const rows = await db.query<{ seq: number }>(`SELECT seq::int AS seq FROM ${db.name}.snapshots ORDER BY 1`);
  assert.deepEqual(rows.map((r) => r.seq), [2, 5]);
});

test('a leader SIGKILLed between two parts restarts from the snapshot before, and its next snapshot at that seq starts over', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const first = await openPostgresJournal(db.url, { lease: TIMING });
  await first.append(range(1, 5));
  await first.saveSnapshot(2, 'state@2');
  await first.close();

  const text = sampleText(40);
  const dir = tempDir('strikebook-pgsnapparts-');
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'snapshot.txt');
  writeFileSync(file, text);
  try {
    execFileSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/helpers/pgSnapshotPartsChild.ts'), db.url, file, '5', '64', '2', String(TIMING.leaseMs), String(TIMING.renewMs)], { cwd: ROOT, stdio: 'pipe' });
    assert.fail('the child was to kill itself');
  } catch (err) {
    assert.equal((err as { signal?: string }).signal, 'SIGKILL', `the child died by SIGKILL: ${String((err as { stderr?: Buffer }).stderr ?? err)}`);
  }
  const written = await db.query<{ part: number }>(`SELECT part FROM ${db.name}.snapshot_parts WHERE seq = 5 ORDER BY part`);
  assert.deepEqual(written.map((r) => r.part), [0, 1, 2], 'three parts were committed before the kill');

  // the restart waits out the dead leader's lease, then reads the snapshot before
  const j = await openPostgresJournal(db.url, { lease: TIMING, lockRetryMs: 50 });
  t.after(() => j.close());
  assert.equal(j.lastSeq(), 5);
  assert.deepEqual(await j.latestSnapshot(), { seq: 2, data: 'state@2' });
  // the same seq again, in one part this time: the leftover parts 1 and 2 would make it three
  await j.saveSnapshotParts(5, encodeSnapshotParts(text, 1 << 20));
  assert.deepEqual(await j.latestSnapshot(), { seq: 5, data: text });
  const left = await db.query<{ part: number }>(`SELECT part FROM ${db.name}.snapshot_parts ORDER BY seq, part`);
  assert.deepEqual(left.map((r) => r.part), [0]);
});

test('a snapshot is refused its row while a part is missing, and the journal goes on', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const j = await open(t, db);
  await j.append(range(1, 3));
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  t.after(() => client.end());
  await client.query('INSERT INTO snapshot_parts (seq, part, data) VALUES (3, 0, $1), (3, 2, $2)', ['{"a":', '1}']);
  await assert.rejects(finishSnapshot(client, 3, 3, 3), /snapshot 3 has 2 of its 3 parts written/);
  await assert.rejects(finishSnapshot(client, 3, 3, 2), /snapshot 3 has 2 of its 2 parts written/, 'part 1 is missing, part 2 is not the last');
  await assert.rejects(finishSnapshot(client, 3, 4, 1), /snapshot seq 4 is past the last journaled seq 3/);
  assert.equal(await j.latestSnapshot(), null);
  await j.append([rec(4)]);
  assert.equal(j.lastSeq(), 4);
});

test('close() lets a snapshot being written in parts finish: its later parts are not refused as closed', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const j = await openPostgresJournal(db.url);
  await j.append(range(1, 2));
  const text = sampleText(200);
  const saved = j.saveSnapshotParts(2, encodeSnapshotParts(text, 256));
  await j.close();
  await saved;
  const again = await open(t, db);
  assert.deepEqual(await again.latestSnapshot(), { seq: 2, data: text });
});

test('the snapshot of a version-2 schema is read after its migration to version 3, and the next one is in parts', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  // the tables as version 2 left them (the lease table is created by the migration if missing)
  await db.query(`CREATE TABLE ${db.name}.journal (seq bigint PRIMARY KEY, ts bigint NOT NULL, cmd text NOT NULL)`);
  await db.query(`CREATE TABLE ${db.name}.snapshots (seq bigint PRIMARY KEY, data text NOT NULL)`);
  await db.query(`CREATE TABLE ${db.name}.meta (key text PRIMARY KEY, value text NOT NULL)`);
  await db.query(`INSERT INTO ${db.name}.meta (key, value) VALUES ('schema_version', '2')`);
  for (const r of range(1, 3)) await db.query(`INSERT INTO ${db.name}.journal (seq, ts, cmd) VALUES ($1, $2, $3)`, [r.seq, r.ts, r.cmd]);
  await db.query(`INSERT INTO ${db.name}.snapshots (seq, data) VALUES (2, '{"v":2}')`);

  const j = await open(t, db);
  assert.equal(await j.getMeta('schema_version'), '3');
  assert.deepEqual(await j.latestSnapshot(), { seq: 2, data: '{"v":2}' });
  const text = sampleText(30);
  await j.saveSnapshotParts(3, encodeSnapshotParts(text, 128));
  assert.deepEqual(await j.latestSnapshot(), { seq: 3, data: text });
  // a whole snapshot after one in parts is read as itself
  await j.append([rec(4)]);
  await j.saveSnapshot(4, '{"whole":true}');
  assert.deepEqual(await j.latestSnapshot(), { seq: 4, data: '{"whole":true}' });
});
