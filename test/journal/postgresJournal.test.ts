// The PostgreSQL journal adapter on a real server (DATABASE_URL; test/helpers/postgres.ts): the same
// contract as the SQLite adapter (sqliteJournal.test.ts) plus what a network database adds: the
// server's durability settings, the single-writer advisory lock, int8 values as text, paging.
// Each test runs in a schema of its own; without a reachable server every test here is skipped.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import pg from 'pg';
import type { JournalRecord } from '../../src/journal/journal.ts';
import { encodeSnapshotParts } from '../../src/journal/snapshotParts.ts';
import { detectDeadClient } from '../../src/journal/postgresSetup.ts';
import { APPEND_SQL, WriterLockTaken, describeDatabaseUrl, durabilityProblem, openPostgresJournal, type PostgresJournal, type PostgresJournalOptions } from '../../src/journal/postgresJournal.ts';
import { freshSchema, type TestSchema } from '../helpers/postgres.ts';
import { noopRecord, noopRecords } from '../helpers/journalRecords.ts';

// quotes, a backslash and non-ASCII text survive the text[] parameter unchanged
const rec = (seq: number): JournalRecord => noopRecord(seq, { s: 'a"b\\c é' });
const range = (from: number, to: number): JournalRecord[] => noopRecords(from, to, rec);

/** The records read, without the transaction each came in (`tx`, checked on its own). */
async function all(it: AsyncIterable<JournalRecord>): Promise<JournalRecord[]> {
  const out: JournalRecord[] = [];
  for await (const { seq, ts, cmd } of it) out.push({ seq, ts, cmd });
  return out;
}

/** The seqs read, grouped by the transaction that wrote them (as a standby groups the leader's batches). */
async function byTx(it: AsyncIterable<JournalRecord>): Promise<number[][]> {
  const out: number[][] = [];
  let tx: string | undefined;
  for await (const r of it) {
    assert.ok(r.tx, `record ${r.seq} names its transaction`);
    if (out.length === 0 || r.tx !== tx) out.push([]);
    out[out.length - 1]!.push(r.seq);
    tx = r.tx;
  }
  return out;
}

/** A fresh schema and a journal open on it (closed when the test ends); null when skipped. */
async function setup(t: TestContext, opts?: PostgresJournalOptions): Promise<{ db: TestSchema; j: PostgresJournal } | null> {
  const db = await freshSchema(t);
  if (!db) return null;
  const j = await openPostgresJournal(db.url, opts);
  t.after(() => j.close()); // registered after the schema's drop, so it runs before it
  return { db, j };
}

test('appended records read back in order, page by page across page boundaries, also after reopening', async (t) => {
  const s = await setup(t, { pageSize: 4 });
  if (!s) return;
  const { db, j } = s;
  await j.append(range(1, 3));
  await j.append([rec(4)]);
  await j.append(range(5, 23));
  assert.equal(j.lastSeq(), 23);

  const pageQueries = t.mock.method(pg.Pool.prototype, 'query');
  assert.deepEqual(await all(j.readAfter(0)), range(1, 23));
  assert.equal(pageQueries.mock.callCount(), 6, 'five full pages of 4 and a last one of 3');
  pageQueries.mock.resetCalls();
  assert.deepEqual(await all(j.readAfter(15)), range(16, 23));
  assert.equal(pageQueries.mock.callCount(), 3, 'two full pages, then an empty one ends the read');
  assert.deepEqual(await all(j.readAfter(23)), []);
  pageQueries.mock.restore();
  // each append is one transaction, whatever the pages: a standby applies the leader's batches as written
  assert.deepEqual(await byTx(j.readAfter(2)), [[3], [4], range(5, 23).map((r) => r.seq)]);

  // the tables went into the test's schema (search_path from the connection string)
  assert.equal(j.schema, db.name);
  const tables = await db.query<{ table_name: string }>('SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1', [db.name]);
  assert.deepEqual(tables.map((r) => r.table_name), ['journal', 'leader_lease', 'meta', 'snapshot_parts', 'snapshots']);
  assert.equal(await j.getMeta('schema_version'), '3');

  await j.close();
  const again = await openPostgresJournal(db.url);
  try {
    assert.equal(again.lastSeq(), 23);
    assert.deepEqual(await all(again.readAfter(0)), range(1, 23));
    await again.append([rec(24)]);
    assert.equal(again.lastSeq(), 24);
  } finally {
    await again.close();
  }
});

test('append refuses a gap or a duplicate seq, writes nothing of such a batch, and stays usable', async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { j } = s;
  await j.append(range(1, 3));
  await assert.rejects(j.append([rec(5)]), /seq 5 does not follow 3/);
  await assert.rejects(j.append([rec(3)]), /seq 3 does not follow 3/);
  await assert.rejects(j.append([rec(4), rec(6)]), /seq 6 does not follow 4/);
  await assert.rejects(j.append([{ seq: 4, ts: Number.NaN, cmd: '{}' }]), /ts of seq 4 must be a safe integer/);
  assert.equal(j.lastSeq(), 3);
  assert.deepEqual(await all(j.readAfter(0)), range(1, 3), 'no record of a refused batch was written');
  // a refusal by validation is not a failed write: the journal goes on
  await j.append(range(4, 5));
  assert.deepEqual(await all(j.readAfter(0)), range(1, 5));
});

test('after a write fails in the database, every later write is refused, also ones already issued', async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { db, j } = s;
  await j.append(range(1, 2));
  // a constraint the next batch breaks: the statement fails inside PostgreSQL
  await db.query(`ALTER TABLE ${db.name}.journal ADD CONSTRAINT short_cmd CHECK (length(cmd) < 100)`);
  const failing = j.append([{ seq: 3, ts: 3, cmd: 'x'.repeat(200) }]);
  const queuedBehind = j.append([rec(3)]); // issued before the failure is known, as the sequencer pipelines
  await assert.rejects(failing, /short_cmd/);
  await assert.rejects(queuedBehind, /append refused, an earlier write failed/);
  await db.query(`ALTER TABLE ${db.name}.journal DROP CONSTRAINT short_cmd`);

  // the database would accept these now; the journal must not (DESIGN.md rule 3)
  await assert.rejects(j.append([rec(3)]), /append refused, an earlier write failed; restart and recover/);
  await assert.rejects(j.saveSnapshot(2, 'state'), /saveSnapshot refused/);
  await assert.rejects(j.setMeta('k', 'v'), /setMeta refused/);
  assert.equal(j.lastSeq(), 2);
  assert.deepEqual(await all(j.readAfter(0)), range(1, 2), 'reads still work; the failed batch left nothing');
  await j.close();

  // restart and recover: a new journal on the same tables writes again
  const again = await openPostgresJournal(db.url);
  try {
    assert.equal(again.lastSeq(), 2);
    await again.append([rec(3)]);
    assert.equal(again.lastSeq(), 3);
  } finally {
    await again.close();
  }
});

test('a writer connection cut off by the server breaks the journal instead of crashing the process', async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { db, j } = s;
  await j.append(range(1, 2));
  const [killed] = await db.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [j.writerPid]);
  assert.equal(killed!.ok, true);
  // the writer notices the lost connection as an 'error' event while idle, or on its next query
  await new Promise((r) => setTimeout(r, 200));
  await assert.rejects(j.append([rec(3)]));
  await assert.rejects(j.append([rec(3)]), /append refused, an earlier write failed/);
  assert.equal(j.lastSeq(), 2);
  await j.close();
  // the lock went with the session: a new writer can start
  const again = await openPostgresJournal(db.url);
  try {
    assert.equal(again.lastSeq(), 2);
  } finally {
    await again.close();
  }
});

test('a write the server holds past the statement timeout fails, and the journal refuses every later write', async (t) => {
  const s = await setup(t, { statementTimeoutMs: 300 });
  if (!s) return;
  const { db, j } = s;
  await j.append(range(1, 2));
  // another session holds the table: the next batch waits on its lock until the server cancels it
  await db.query('BEGIN');
  await db.query(`LOCK TABLE ${db.name}.journal IN ACCESS EXCLUSIVE MODE`);
  const started = performance.now();
  await assert.rejects(j.append([rec(3)]), /statement timeout/);
  const waited = performance.now() - started;
  await db.query('ROLLBACK');
  assert.ok(waited >= 250 && waited < 3_000, `failed after ${waited.toFixed(0)} ms, not at the 300 ms timeout`);
  await assert.rejects(j.append([rec(3)]), /append refused, an earlier write failed/);
  assert.deepEqual(await all(j.readAfter(0)), range(1, 2), 'the cancelled batch left nothing');
});

test('a write whose answer never comes back over the network fails at the client-side deadline', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  // a TCP relay to the server that can go silent both ways, as a dropped route would
  let silent = false;
  const sockets = new Set<net.Socket>();
  const relay = net.createServer((client) => {
    const upstream = net.connect(Number(new URL(db.url).port || 5432), new URL(db.url).hostname);
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      sockets.add(from);
      from.on('data', (chunk) => { if (!silent) to.write(chunk); });
      from.on('error', () => undefined);
      from.on('close', () => to.destroy());
    }
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
  t.after(() => {
    for (const sock of sockets) sock.destroy();
    relay.close();
  });
  const url = new URL(db.url);
  url.host = `127.0.0.1:${(relay.address() as net.AddressInfo).port}`;
  const j = await openPostgresJournal(url.toString(), { statementTimeoutMs: 100 });
  await j.append(range(1, 2));
  silent = true;
  const started = performance.now();
  await assert.rejects(j.append([rec(3)]), /Query read timeout/);
  const waited = performance.now() - started;
  // the server's own timeout (100 ms) cannot reach the client; the client gives up 5 s after it
  assert.ok(waited >= 4_500 && waited < 10_000, `failed after ${waited.toFixed(0)} ms`);
  await assert.rejects(j.append([rec(3)]), /append refused, an earlier write failed/);
  assert.equal(j.lastSeq(), 2);
  await j.close();
});

test('a read-only journal opens beside the writer (no lock taken), reads, and refuses every write', async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { db, j } = s;
  await j.append(range(1, 4));
  await j.saveSnapshot(2, 'state at 2');
  const reader = await openPostgresJournal(db.url, { readOnly: true });
  try {
    assert.deepEqual(await all(reader.readAfter(0)), range(1, 4));
    assert.deepEqual(await reader.latestSnapshot(), { seq: 2, data: 'state at 2' });
    await assert.rejects(reader.append([rec(5)]), /append refused, the journal was opened read-only/);
    await assert.rejects(reader.saveSnapshot(4, 'x'), /saveSnapshot refused, the journal was opened read-only/);
    await j.append([rec(5)]);
    assert.deepEqual(await all(reader.readAfter(4)), [rec(5)]);
  } finally {
    await reader.close();
  }
});

test('a snapshot past the last journaled seq is refused, and only the last two snapshots are kept', async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { db, j } = s;
  assert.equal(await j.latestSnapshot(), null);
  await assert.rejects(j.saveSnapshot(1, 'too early'), /snapshot seq 1 is past the last journaled seq 0/);
  await j.append(range(1, 5));
  await j.saveSnapshot(2, 'state@2');
  await j.saveSnapshot(4, 'state@4');
  await j.saveSnapshot(5, 'state@5');
  await assert.rejects(j.saveSnapshot(6, 'ahead'), /snapshot seq 6 is past the last journaled seq 5/);
  assert.deepEqual(await j.latestSnapshot(), { seq: 5, data: 'state@5' });
  const kept = await db.query<{ seq: string }>(`SELECT seq FROM ${db.name}.snapshots ORDER BY seq`);
  assert.deepEqual(kept.map((r) => Number(r.seq)), [4, 5]);

  // issued right behind the append it covers, without waiting: writes complete in order
  const appended = j.append(range(6, 7));
  const snapped = j.saveSnapshot(7, 'state@7');
  await Promise.all([appended, snapped]);
  assert.deepEqual(await j.latestSnapshot(), { seq: 7, data: 'state@7' });
  await j.append([rec(8)]); // a refused snapshot did not break the journal
  assert.equal(j.lastSeq(), 8);
});

test('a snapshot handed over as UTF-8 parts is stored as its text; bytes that are not UTF-8 are refused by the server', async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { j } = s;
  await j.append(range(1, 3));
  const text = JSON.stringify({ labels: ['abc\ud83d\ude00', '\u00e9t\u00e9', 'plain'] });
  await j.saveSnapshotParts(2, encodeSnapshotParts(text, 5));
  assert.deepEqual(await j.latestSnapshot(), { seq: 2, data: text });
  // a lone continuation byte: the server's own UTF-8 check refuses it, and the last snapshot stays
  await assert.rejects(j.saveSnapshotParts(3, [new Uint8Array([0x7b, 0x80, 0x7d])]), /invalid byte sequence|UTF8/i);
  assert.deepEqual(await j.latestSnapshot(), { seq: 2, data: text });
});

test('meta values are stored, replaced and kept across a reopen', async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { db, j } = s;
  assert.equal(await j.getMeta('server_key'), null);
  await j.setMeta('server_key', 'abc');
  assert.equal(await j.getMeta('server_key'), 'abc');
  await j.setMeta('server_key', 'def');
  assert.equal(await j.getMeta('server_key'), 'def');
  await j.close();
  const again = await openPostgresJournal(db.url);
  try {
    assert.equal(await again.getMeta('server_key'), 'def');
  } finally {
    await again.close();
  }
});

test('a writer waiting for the lock takes it once the holding session ends, as after a crash', async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { db, j } = s;
  await j.append(range(1, 3));
  let opened = false;
  const waiting = openPostgresJournal(db.url, { lockWaitMs: 10_000 }).then((w) => {
    opened = true;
    return w;
  });
  await new Promise((r) => setTimeout(r, 700));
  assert.equal(opened, false, 'the lock is still held');
  // what the server does to the session of a writer that died or lost the network
  await db.query('SELECT pg_terminate_backend($1)', [j.writerPid]);
  const successor = await waiting;
  try {
    assert.equal(successor.lastSeq(), 3);
    await successor.append([rec(4)]);
  } finally {
    await successor.close();
  }
});

test('the writer session asks the server to notice a dead client within seconds, not hours', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    await detectDeadClient(client);
    const settings = await client.query<{ name: string; setting: string }>(
      `SELECT name, setting FROM pg_settings WHERE name IN ('tcp_keepalives_idle', 'tcp_keepalives_interval', 'tcp_keepalives_count', 'tcp_user_timeout') ORDER BY name`,
    );
    // over a Unix socket the keepalive settings read 0 (not applicable); this connection is TCP
    assert.deepEqual(
      settings.rows.map((r) => [r.name, r.setting]),
      [['tcp_keepalives_count', '3'], ['tcp_keepalives_idle', '10'], ['tcp_keepalives_interval', '5'], ['tcp_user_timeout', '30000']],
    );
  } finally {
    await client.end();
  }
});

test('a second writer on the same schema is refused while the first holds the lock; another schema is not', async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { db, j } = s;
  await j.append(range(1, 2));
  const started = performance.now();
  await assert.rejects(openPostgresJournal(db.url, { lockWaitMs: 300 }), /another Strikebook server is writing to this database/);
  assert.ok(performance.now() - started >= 300, 'it waited for the lock before it gave up');
  assert.equal(j.lastSeq(), 2, 'the refused second writer did not disturb the first');
  await j.append([rec(3)]);

  const other = await freshSchema(t);
  assert.ok(other);
  const neighbour = await openPostgresJournal(other.url);
  await neighbour.close();

  await j.close(); // ending the session releases the lock
  const second = await openPostgresJournal(db.url);
  try {
    assert.equal(second.lastSeq(), 3);
  } finally {
    await second.close();
  }
});

test('the journal refuses a server whose commits would not be durable', async (t) => {
  // fsync is a server-wide setting a test cannot change, so the rule is pinned on its own...
  const durable = { fsync: 'on', synchronousCommit: 'on', fullPageWrites: 'on' };
  assert.match(durabilityProblem({ ...durable, fsync: 'off' }) ?? '', /fsync is off/);
  assert.match(durabilityProblem({ ...durable, synchronousCommit: 'off' }) ?? '', /synchronous_commit is off/);
  assert.match(durabilityProblem({ ...durable, fullPageWrites: 'off' }) ?? '', /full_page_writes is off/);
  assert.equal(durabilityProblem(durable), null);
  assert.equal(durabilityProblem({ ...durable, synchronousCommit: 'local' }), null);

  const db = await freshSchema(t);
  if (!db) return;
  // ...and synchronous_commit, which a session may turn off, on a real connection
  await assert.rejects(openPostgresJournal(db.urlWith({ synchronous_commit: 'off' })), /is not durable: synchronous_commit is off/);
  const j = await openPostgresJournal(db.url);
  try {
    assert.deepEqual(await j.durability(), durable, 'the writer connection runs durable');
  } finally {
    await j.close();
  }
});

test('an int8 beyond the safe integers is refused instead of being rounded', async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { db, j } = s;
  await j.close();
  await db.query(`INSERT INTO ${db.name}.journal (seq, ts, cmd) VALUES (9007199254740993, 1, '{}')`);
  await assert.rejects(openPostgresJournal(db.url), /last journal seq 9007199254740993 is not a safe integer/);
});

test('closing the journal mid-iteration makes the iteration throw instead of ending quietly', async (t) => {
  const s = await setup(t, { pageSize: 2 });
  if (!s) return;
  const { j } = s;
  await j.append(range(1, 5));
  const it = j.readAfter(0);
  assert.equal((await it.next()).value?.seq, 1);
  await j.close();
  await assert.rejects(it.next(), /closed during readAfter/);
  assert.throws(() => j.lastSeq(), /journal: closed/);
  await assert.rejects(j.append([rec(6)]), /journal: closed/);
});

test('connection errors name the server without the password', async () => {
  assert.equal(describeDatabaseUrl('postgres://strike:s3cret@db.example:5433/book?password=s3cret'), 'postgres://strike@db.example:5433/book');
  // nothing listens on port 1: the error must say where, and never the password
  const err = await openPostgresJournal('postgres://strike:s3cret@127.0.0.1:1/book').then(
    () => assert.fail('connected to port 1'),
    (e: unknown) => e as Error,
  );
  assert.match(err.message, /cannot connect to PostgreSQL at postgres:\/\/strike@127\.0\.0\.1:1\/book/);
  assert.doesNotMatch(err.message, /s3cret/);
});

test('the append is fenced: a statement of another term inserts nothing, and seqs already written are refused', async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { db, j } = s;
  await j.append(range(1, 2));
  // a stale leader's statement, exactly as the adapter sends it, under the term before this one
  const stale = new pg.Client({ connectionString: db.url });
  await stale.connect();
  try {
    const r = rec(3);
    assert.ok(j.term >= 1);
    const res = await stale.query<{ n: number }>(APPEND_SQL, [[r.seq], [r.ts], [r.cmd], 2, j.term - 1, j.channel]);
    assert.equal(res.rows[0]!.n, 0, 'nothing inserted under a stale term, although the seq follows');
    // and with a stale idea of the journal's end (a seq written twice) the primary key and the end check refuse it
    const again = await stale.query<{ n: number }>(APPEND_SQL, [[2], [r.ts], [r.cmd], 1, j.term, j.channel]);
    assert.equal(again.rows[0]!.n, 0);
  } finally {
    await stale.end();
  }
  const [count] = await db.query<{ n: number; max: string }>(`SELECT count(*)::int AS n, MAX(seq) AS max FROM ${db.name}.journal`);
  assert.deepEqual([count!.n, count!.max], [2, '2']);
  // the lock holder carries on
  await j.append([rec(3)]);
  assert.equal(j.lastSeq(), 3);
  await assert.rejects(openPostgresJournal(db.url, { lockWaitMs: 0 }), WriterLockTaken);
});

test('each committed batch is announced on the journal channel with its last seq', async (t) => {
  const s = await setup(t);
  if (!s) return;
  const { db, j } = s;
  const listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  t.after(() => listener.end());
  const payloads: string[] = [];
  listener.on('notification', (m) => {
    if (m.channel === j.channel) payloads.push(m.payload ?? '');
  });
  await listener.query(`LISTEN "${j.channel}"`);
  await j.append(range(1, 3));
  await j.append([rec(4)]);
  for (let i = 0; i < 50 && payloads.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(payloads, ['3', '4']);
});
