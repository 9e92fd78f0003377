// The runbook's backup and point-in-time restore (docs/operations.md, "Backup and restore"), done the
// way it says: an online copy of the running exchange (sqlite3 .backup; pg_dump), more trading after
// it, then a restore cut back to a chosen seq. The restored journal replays to the state hash the
// live exchange had at that seq, and a server started on it recovers that state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { Exchange } from '../../src/engine/exchange.ts';
import { stateHash } from '../../src/engine/snapshot.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';
import { DB_FILE_NAME } from '../../src/journal/sqliteJournal.ts';
import { applyCommand } from '../../src/sequencer/sequencer.ts';
import { atmCall } from '../helpers/market.ts';
import { TEST_DATABASE_URL, freshSchema } from '../helpers/postgres.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { adminToken, login, ok, startServer, tempDir, userToken, type TestServer } from '../helpers/server.ts';

const has = (tool: string) => spawnSync(tool, ['--version']).status === 0;

/** Some trading: a trader's deposit and a few resting orders (each a journaled command). */
async function trade(server: TestServer, admin: string, email: string): Promise<void> {
  const trader = await userToken(server.url, admin, email, { currency: 'BTC', amount: 5 });
  const m = await atmCall(server.url);
  for (let i = 0; i < 4; i++) await ok(server.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[i] }, trader);
}

/** Replays a PostgreSQL journal table from seq 1, ignoring snapshots, up to `upto`. */
async function replayPg(url: string, schema: string, upto = Number.MAX_SAFE_INTEGER): Promise<{ seq: number; hash: string; errors: unknown[] }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const rows = (await c.query<{ seq: string; ts: string; cmd: string }>(`SELECT seq, ts, cmd FROM ${schema}.journal WHERE seq <= $1 ORDER BY seq`, [upto])).rows;
    const ex = new Exchange();
    const errors: unknown[] = [];
    for (const r of rows) applyCommand(ex, decodeCommand(r.cmd, Number(r.seq), Number(r.ts)), (err) => errors.push(err));
    return { seq: ex.seq, hash: stateHash(ex), errors };
  } finally {
    await c.end();
  }
}

/** The point-in-time cut of the runbook: no journal record and no snapshot after `target.seq`; then the replay matches. */
async function cutAndReplay(url: string, schema: string, target: { seq: number; state_hash: string }): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`DELETE FROM ${schema}.journal WHERE seq > $1`, [target.seq]);
    await c.query(`DELETE FROM ${schema}.snapshots WHERE seq > $1`, [target.seq]);
  } finally {
    await c.end();
  }
  const r = await replayPg(url, schema);
  assert.deepEqual(r.errors, []);
  assert.equal(r.seq, target.seq);
  assert.equal(r.hash, target.state_hash, 'the restored journal replays to the state hash the live exchange had at that seq');
}

test('a SQLite online backup, restored to a chosen seq, replays to the state hash of that seq', async (t) => {
  if (!has('sqlite3')) {
    t.skip('the sqlite3 command-line tool (Debian sqlite3) is not installed: the runbook backs up with it');
    return;
  }
  const live = tempDir();
  const restored = tempDir();
  t.after(() => {
    rmSync(live, { recursive: true, force: true });
    rmSync(restored, { recursive: true, force: true });
  });
  // snapshots every 10 records: the restore must drop those after the chosen seq too
  const server = await startServer({ STRIKEBOOK_SNAPSHOT_EVERY: '10' }, live);
  let target: { seq: number; state_hash: string };
  try {
    const admin = await adminToken(server.url);
    await trade(server, admin, 'first@example.com');
    target = await ok(server.url, 'private/get_state_hash', {}, admin);
    // more trading, then the online copy (WAL: consistent while the server writes), then more again
    await trade(server, admin, 'second@example.com');
    execFileSync('sqlite3', [path.join(live, DB_FILE_NAME), `.backup '${path.join(restored, DB_FILE_NAME)}'`]);
    await trade(server, admin, 'third@example.com');
  } finally {
    await server.stop({ keepData: true });
  }
  // point in time: keep the journal up to the chosen seq, and no snapshot after it
  execFileSync('sqlite3', [path.join(restored, DB_FILE_NAME), `DELETE FROM journal WHERE seq > ${target.seq}; DELETE FROM snapshots WHERE seq > ${target.seq};`]);
  const replay = cleanReplay(restored);
  assert.deepEqual(replay.errors, []);
  assert.equal(replay.seq, target.seq);
  assert.equal(replay.hash, target.state_hash, 'the restored journal replays to the state hash the live exchange had at that seq');
  assert.ok(replay.snapshotSeq > 0 && replay.snapshotSeq <= target.seq, `a snapshot at or before the seq is kept (${replay.snapshotSeq})`);
  assert.ok(cleanReplay(live).seq > target.seq, 'the live journal went on past it');

  // a server on the restored copy recovers that state (snapshot + replay), then goes on from it
  const again = await startServer({}, restored);
  try {
    const admin = await login(again.url, 'admin@example.com', 'admin-password-1');
    const h = await ok(again.url, 'private/get_state_hash', {}, admin);
    assert.ok(h.seq >= target.seq);
    assert.equal(h.state_hash, cleanReplay(restored, h.seq).hash, 'recovery equals a clean replay of the restored journal');
  } finally {
    await again.stop({ keepData: true });
  }
});

test('a pg_dump of the schema, restored into another database to a chosen seq, replays to the state hash of that seq', { timeout: 120_000 }, async (t) => {
  if (!has('pg_dump') || !has('pg_restore')) {
    t.skip('pg_dump/pg_restore (Debian postgresql-client) are not installed: the runbook backs up with them');
    return;
  }
  const db = await freshSchema(t);
  if (!db) return;
  const dir = tempDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const dump = path.join(dir, 'strikebook.dump');
  const server = await startServer({ DATABASE_URL: db.url, STRIKEBOOK_SNAPSHOT_EVERY: '10' }, path.join(dir, 'unused'));
  let target: { seq: number; state_hash: string };
  try {
    const admin = await adminToken(server.url);
    await trade(server, admin, 'first@example.com');
    target = await ok(server.url, 'private/get_state_hash', {}, admin);
    await trade(server, admin, 'second@example.com');
    // online and consistent: pg_dump reads one snapshot of the database while the leader writes
    execFileSync('pg_dump', ['--format=custom', `--schema=${db.name}`, `--file=${dump}`, TEST_DATABASE_URL]);
    await trade(server, admin, 'third@example.com');
  } finally {
    await server.stop();
  }
  // restore into a database of its own (the live one untouched), then cut back to the chosen seq
  const name = `strikebook_restore_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  t.after(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });
  const restoredUrl = new URL(TEST_DATABASE_URL);
  restoredUrl.pathname = `/${name}`;
  execFileSync('pg_restore', ['--no-owner', `--dbname=${restoredUrl}`, dump]);
  await cutAndReplay(restoredUrl.toString(), db.name, target);
  // a server on the restored database recovers that state
  restoredUrl.searchParams.set('options', `-c search_path=${db.name}`);
  mkdirSync(path.join(dir, 'unused2'));
  const again = await startServer({ DATABASE_URL: restoredUrl.toString() }, path.join(dir, 'unused2'));
  try {
    const token = await login(again.url, 'admin@example.com', 'admin-password-1');
    const h = await ok(again.url, 'private/get_state_hash', {}, token);
    assert.ok(h.seq >= target.seq);
    assert.equal(h.state_hash, (await replayPg(restoredUrl.toString(), db.name, h.seq)).hash, 'recovery equals a clean replay of the restored journal');
  } finally {
    await again.stop();
  }
});
