import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteJournal, pragmaState, DB_FILE_NAME, type SqliteJournal } from '../../src/journal/sqliteJournal.ts';
import type { JournalRecord } from '../../src/journal/journal.ts';
import { noopRecord as rec, noopRecords as range } from '../helpers/journalRecords.ts';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'strikebook-journal-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));

let dirCount = 0;
function freshDir(): string {
  return path.join(root, `j${++dirCount}`, 'nested'); // a missing parent too: the journal creates it
}


function withJournal(dir: string, fn: (j: SqliteJournal) => void): void {
  const j = openSqliteJournal(dir);
  try {
    fn(j);
  } finally {
    j.close();
  }
}

test('appended records read back in order after the journal is reopened', () => {
  const dir = freshDir();
  withJournal(dir, (j) => {
    j.append(range(1, 3));
    j.append([rec(4)]);
    j.append(range(5, 250));
  });
  assert.ok(fs.existsSync(path.join(dir, DB_FILE_NAME)));
  withJournal(dir, (j) => {
    assert.deepEqual([...j.readAfter(0)], range(1, 250));
    assert.deepEqual([...j.readAfter(247)], range(248, 250));
    assert.deepEqual([...j.readAfter(250)], []);
  });
});

test('a read-only journal reads beside the writer and refuses every write; it never creates one', () => {
  const dir = freshDir();
  assert.throws(() => openSqliteJournal(dir, { readOnly: true }), 'no journal to read: not created');
  assert.ok(!fs.existsSync(path.join(dir, DB_FILE_NAME)));
  withJournal(dir, (writer) => {
    writer.append(range(1, 5));
    writer.saveSnapshot(3, 'state at 3');
    const reader = openSqliteJournal(dir, { readOnly: true });
    try {
      assert.deepEqual([...reader.readAfter(0)], range(1, 5));
      assert.deepEqual(reader.latestSnapshot(), { seq: 3, data: 'state at 3' });
      assert.throws(() => reader.append([rec(6)]), /append refused, the journal was opened read-only/);
      assert.throws(() => reader.saveSnapshot(5, 'x'), /saveSnapshot refused, the journal was opened read-only/);
      assert.throws(() => reader.setMeta('k', 'v'), /setMeta refused/);
      // the writer goes on while the reader is open, and the reader sees it
      writer.append([rec(6)]);
      assert.deepEqual([...reader.readAfter(5)], [rec(6)]);
    } finally {
      reader.close();
    }
  });
});

test('readPagesAfter gives the records of readAfter as raw rows, in pages (recovery replays from these)', () => {
  withJournal(freshDir(), (j) => {
    j.append(range(1, 5000)); // more than one page of 2048 rows
    const pages = [...j.readPagesAfter(10)];
    assert.ok(pages.length > 1 && pages.every((p) => p.length > 0), 'several pages, none empty');
    const flat = pages.flat().map(([seq, ts, cmd]) => ({ seq, ts, cmd }));
    assert.deepEqual(flat, range(11, 5000));
    assert.deepEqual([...j.readPagesAfter(5000)], [], 'no page at the end');
    assert.equal(j.connections().length, 1, 'the read connection is released');
  });
});

test('readAfter streams: a consumer can stop early and the read connection is released', () => {
  withJournal(freshDir(), (j) => {
    j.append(range(1, 10));
    const seen: number[] = [];
    for (const r of j.readAfter(0)) {
      seen.push(r.seq);
      if (r.seq === 3) break;
    }
    assert.deepEqual(seen, [1, 2, 3]);
    assert.equal(j.connections().length, 1);
  });
});

test('appends proceed while a readAfter iteration is open, which sees the journal as of its start', () => {
  withJournal(freshDir(), (j) => {
    j.append(range(1, 3));
    const it = j.readAfter(0);
    assert.equal(it.next().value?.seq, 1);
    j.append(range(4, 5));
    assert.equal(j.lastSeq(), 5);
    assert.deepEqual([...it].map((r) => r.seq), [2, 3]);
    assert.deepEqual([...j.readAfter(3)].map((r) => r.seq), [4, 5]);
  });
});

test('closing the journal mid-iteration makes the iteration throw instead of ending quietly', () => {
  const j = openSqliteJournal(freshDir());
  j.append(range(1, 3));
  const it = j.readAfter(0);
  it.next();
  j.close();
  assert.equal(j.connections().length, 0);
  assert.throws(() => it.next(), /closed/);
});

test('lastSeq is 0 when empty and the highest seq afterwards, also after reopening', () => {
  const dir = freshDir();
  withJournal(dir, (j) => {
    assert.equal(j.lastSeq(), 0);
    j.append(range(1, 7));
    assert.equal(j.lastSeq(), 7);
    j.append([]);
    assert.equal(j.lastSeq(), 7);
  });
  withJournal(dir, (j) => assert.equal(j.lastSeq(), 7));
});

test('batches of every size read back exactly, whatever statements they are inserted in', () => {
  const dir = freshDir();
  // sizes around the multi-row INSERTs (64, 16, 4, 1 rows) and mixtures of them
  const sizes = [1, 3, 4, 5, 15, 16, 17, 63, 64, 65, 84, 159, 300, 1000];
  const all: JournalRecord[] = [];
  withJournal(dir, (j) => {
    let seq = 1;
    for (const n of sizes) {
      const batch: JournalRecord[] = [];
      for (let k = 0; k < n; k++, seq++) batch.push({ seq, ts: 1_700_000_000_000 + seq * 7, cmd: `b|${seq}|é€😀|${'x'.repeat(seq % 50)}` });
      j.append(batch);
      all.push(...batch);
      assert.equal(j.lastSeq(), seq - 1);
    }
  });
  withJournal(dir, (j) => assert.deepEqual([...j.readAfter(0)], all));
});

test('a batch whose seqs are not contiguous after lastSeq is rejected', () => {
  withJournal(freshDir(), (j) => {
    assert.throws(() => j.append([rec(2)]), /does not follow 0/);
    j.append(range(1, 2));
    assert.throws(() => j.append([rec(4)]), /does not follow 2/); // gap
    assert.throws(() => j.append([rec(2)]), /does not follow 2/); // repeat
    assert.throws(() => j.append([rec(3), rec(5)]), /does not follow 3/); // gap inside the batch
    assert.throws(() => j.append([{ seq: 3.5, ts: 1, cmd: '{}' }]), /safe integer/);
    assert.throws(() => j.append([{ seq: 3, ts: Number.NaN, cmd: '{}' }]), /safe integer/);
    assert.equal(j.lastSeq(), 2);
    j.append([rec(3)]); // a rejected batch does not stop the journal
    assert.equal(j.lastSeq(), 3);
  });
});

test('a batch with a duplicate seq leaves nothing of the batch behind', () => {
  const dir = freshDir();
  withJournal(dir, (j) => {
    j.append(range(1, 3));
    // the repeated 5 fails the batch: nothing of it, 4 and 5 included, may stay
    assert.throws(() => j.append([rec(4), rec(5), rec(5), rec(6)]), /does not follow 5/);
    assert.equal(j.lastSeq(), 3);
    assert.deepEqual([...j.readAfter(0)], range(1, 3));
  });
  withJournal(dir, (j) => assert.deepEqual([...j.readAfter(0)], range(1, 3)));
});

test('a storage failure mid-batch rolls back the whole batch and refuses every later write', () => {
  const dir = freshDir();
  withJournal(dir, (j) => {
    j.append(range(1, 2));
    // Fault injection: a connection-local trigger makes SQLite itself fail the third insert.
    j.connections()[0]!.exec(
      `CREATE TEMP TRIGGER fail_seq_5 BEFORE INSERT ON main.journal WHEN NEW.seq = 5
       BEGIN SELECT RAISE(ABORT, 'injected storage failure'); END`,
    );
    assert.throws(() => j.append(range(3, 6)), /injected storage failure/);
    assert.equal(j.lastSeq(), 2);
    assert.throws(() => j.append([rec(3)]), /earlier write failed/);
    assert.throws(() => j.saveSnapshot(2, 'x'), /earlier write failed/);
    assert.throws(() => j.setMeta('k', 'v'), /earlier write failed/);
    assert.deepEqual([...j.readAfter(0)], range(1, 2)); // reads stay available for diagnosis
  });
  withJournal(dir, (j) => {
    assert.deepEqual([...j.readAfter(0)], range(1, 2));
    j.append([rec(3)]); // recovery: a fresh open writes again
    assert.equal(j.lastSeq(), 3);
  });
});

test('snapshots save, load the latest, keep only the last two, and survive a reopen', () => {
  const dir = freshDir();
  withJournal(dir, (j) => {
    assert.equal(j.latestSnapshot(), null);
    j.saveSnapshot(0, 'genesis');
    assert.deepEqual(j.latestSnapshot(), { seq: 0, data: 'genesis' });
    j.append(range(1, 30));
    j.saveSnapshot(10, 's10');
    j.saveSnapshot(20, 's20');
    j.saveSnapshot(30, 's30');
    assert.deepEqual(j.latestSnapshot(), { seq: 30, data: 's30' });
    const kept = j.connections()[0]!.prepare('SELECT seq FROM snapshots ORDER BY seq').pluck().all();
    assert.deepEqual(kept, [20, 30]);
    j.saveSnapshot(30, 's30 again');
    assert.deepEqual(j.latestSnapshot(), { seq: 30, data: 's30 again' });
  });
  withJournal(dir, (j) => assert.deepEqual(j.latestSnapshot(), { seq: 30, data: 's30 again' }));
});

test('a snapshot past the last journaled seq is rejected', () => {
  withJournal(freshDir(), (j) => {
    j.append(range(1, 5));
    assert.throws(() => j.saveSnapshot(6, 'ahead'), /past the last journaled seq 5/);
    assert.throws(() => j.saveSnapshot(-1, 'negative'), /non-negative/);
    assert.equal(j.latestSnapshot(), null);
  });
});

test('meta values are stored, overwritten and kept across a reopen', () => {
  const dir = freshDir();
  withJournal(dir, (j) => {
    assert.equal(j.getMeta('server_key'), null);
    j.setMeta('server_key', 'abc');
    j.setMeta('server_key', 'def');
    j.setMeta('other', '');
    assert.equal(j.getMeta('server_key'), 'def');
    assert.equal(j.getMeta('other'), '');
  });
  withJournal(dir, (j) => {
    assert.equal(j.getMeta('server_key'), 'def');
    assert.equal(j.getMeta('missing'), null);
  });
});

test('every connection runs WAL with synchronous=FULL', () => {
  const dir = freshDir();
  const expected = { journalMode: 'wal', synchronous: 2 };
  withJournal(dir, (j) => j.append(range(1, 3))); // leaves a database already in WAL mode behind

  withJournal(dir, (j) => {
    const it = j.readAfter(0);
    it.next(); // the read connection opens with the first record
    j.append([rec(4)]); // and the settings hold after a write
    const conns = j.connections();
    assert.equal(conns.length, 2);
    for (const db of conns) assert.deepEqual(pragmaState(db), expected);
    it.return?.();
  });

  // Why this test exists: a bare better-sqlite3 connection to the same WAL file runs at NORMAL.
  const bare = new Database(path.join(dir, DB_FILE_NAME), { readonly: true });
  try {
    assert.deepEqual(pragmaState(bare), { journalMode: 'wal', synchronous: 1 });
  } finally {
    bare.close();
  }
});

test('a closed journal refuses every call', () => {
  const j = openSqliteJournal(freshDir());
  j.close();
  j.close(); // idempotent
  assert.throws(() => j.append([rec(1)]), /closed/);
  assert.throws(() => j.lastSeq(), /closed/);
  assert.throws(() => j.readAfter(0), /closed/);
  assert.throws(() => j.getMeta('k'), /closed/);
});
