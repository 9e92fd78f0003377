// A background snapshot's build (src/app/snapshotBuild.ts): the text it returns is the state at the
// job's seq; it asks whether it is still wanted between stretches of records and stops on a no (an
// orphan whose server was killed must not keep a core busy); it builds nothing when a snapshot at or
// past the seq is saved already.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { RECORDS_PER_WANTED_CHECK, SnapshotNoLongerWanted, buildSnapshot } from '../../src/app/snapshotBuild.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { openSqliteJournal, type SqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { recordedEngine } from '../helpers/engine.ts';
import { recordsOf } from '../helpers/journalRecords.ts';
import { tempDir } from '../helpers/server.ts';

/** A SQLite journal of an engine's story with `orders` orders, each pair a trade; its hash at the last seq. */
function journalOf(orders: number): { dir: string; journal: SqliteJournal; last: number; hash: string } {
  const { h, story } = recordedEngine();
  const users = [h.user('1000'), h.user('1000')];
  for (let i = 0; i < orders; i++) h.ok(users[i % 2]!, i % 2 ? 'sell' : 'buy', 'BTC-30JAN26-130000-C', '0.0100', '0.1');
  const dir = tempDir('strikebook-snapbuild-');
  const journal = openSqliteJournal(dir);
  journal.append(recordsOf(story));
  assert.equal(journal.lastSeq(), h.ex.seq);
  return { dir, journal, last: h.ex.seq, hash: stateHash(h.ex) };
}

test('the build is the state at the seq, and it asks whether it is wanted every RECORDS_PER_WANTED_CHECK records', async () => {
  const { dir, journal, last, hash } = journalOf(3 * RECORDS_PER_WANTED_CHECK);
  try {
    let asked = 0;
    const text = await buildSnapshot({ dataDir: dir, databaseUrl: null, seq: last, partChars: 1 << 20 }, () => (asked++, true));
    assert.ok(text !== null);
    assert.equal(stateHash(restore(text)), hash);
    // before the journal opens, after the restore, once per full stretch of records, before the serialize
    assert.equal(asked, 3 + Math.floor(last / RECORDS_PER_WANTED_CHECK));
  } finally {
    journal.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a build no longer wanted stops within one stretch of records and returns nothing', async () => {
  const { dir, journal, last } = journalOf(4 * RECORDS_PER_WANTED_CHECK);
  try {
    for (const wantedFor of [0, 1, 2, 3]) {
      let asked = 0;
      await assert.rejects(
        buildSnapshot({ dataDir: dir, databaseUrl: null, seq: last, partChars: 1 << 20 }, () => asked++ < wantedFor),
        SnapshotNoLongerWanted,
      );
      assert.equal(asked, wantedFor + 1, 'not asked again after the no');
    }
    // the journal is untouched and still readable by a build that is wanted
    assert.ok((await buildSnapshot({ dataDir: dir, databaseUrl: null, seq: last, partChars: 1 << 20 }, () => true)) !== null);
  } finally {
    journal.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with a snapshot at or past the seq saved already, nothing is built; past it, the build reaches the live state', async () => {
  const { h, story } = recordedEngine();
  const u = h.user('10');
  h.ok(u, 'buy', 'BTC-30JAN26-130000-C', '0.0100', '0.1');
  const middle = h.ex.seq;
  const atMiddle = serialize(h.ex);
  h.ok(u, 'buy', 'BTC-30JAN26-130000-C', '0.0105', '0.1');
  const dir = tempDir('strikebook-snapbuild-');
  const journal = openSqliteJournal(dir);
  try {
    journal.append(recordsOf(story));
    journal.saveSnapshot(middle, atMiddle);
    const job = { dataDir: dir, databaseUrl: null, partChars: 1 << 20 };
    assert.equal(await buildSnapshot({ ...job, seq: middle }, () => true), null);
    assert.equal(await buildSnapshot({ ...job, seq: middle - 1 }, () => true), null);
    const text = await buildSnapshot({ ...job, seq: h.ex.seq }, () => true);
    assert.equal(stateHash(restore(text!)), stateHash(h.ex));
  } finally {
    journal.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
