// The journal writer thread (src/journal/workerJournal.ts): writes land in the same SQLite file the
// engine thread reads, in the order they were handed over, with the durability pragmas; a refused
// write refuses every later one (DESIGN.md rule 3: crash and recover, never carry on); close ends it;
// the WAL is checkpointed by the checkpointer thread, so it stays bounded under steady appends.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import fc from 'fast-check';
import { CHECKPOINT_AFTER_WAL_BYTES, packRecords, startJournalWriter, unpackRecords } from '../../src/journal/workerJournal.ts';
import type { JournalRecord } from '../../src/journal/journal.ts';
import { encodeSnapshotParts } from '../../src/journal/snapshotParts.ts';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'strikebook-writer-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));

const rec = (seq: number): JournalRecord => ({ seq, ts: 1_700_000_000_000 + seq, cmd: JSON.stringify({ t: 'noop', n: seq, text: 'line\nbreak' }) });

test('appends and a snapshot handed over together land in order, readable on the engine thread', async () => {
  const dir = path.join(root, 'ok');
  const reader = openSqliteJournal(dir);
  const writer = await startJournalWriter(dir, () => reader.lastSeq());
  try {
    assert.deepEqual(await writer.pragmas(), { journalMode: 'wal', synchronous: 2 });
    assert.deepEqual(await writer.checkpointerPragmas(), { journalMode: 'wal', synchronous: 2 }, 'checkpoints fsync the database file too');
    // not awaited one by one: the thread must keep their order
    await Promise.all([writer.append([rec(1), rec(2)]), writer.append([rec(3)]), writer.saveSnapshot(3, 'state-at-3'), writer.append([rec(4)])]);
    assert.equal(writer.lastSeq(), 4);
    assert.deepEqual([...reader.readAfter(0)], [rec(1), rec(2), rec(3), rec(4)]);
    assert.deepEqual(reader.latestSnapshot(), { seq: 3, data: 'state-at-3' });
  } finally {
    await writer.close();
    reader.close();
  }
});

test('a refused write rejects, and every write after it is refused too', async () => {
  const dir = path.join(root, 'broken');
  const reader = openSqliteJournal(dir);
  const writer = await startJournalWriter(dir, () => reader.lastSeq());
  try {
    await writer.append([rec(1)]);
    const gap = writer.append([rec(3)]); // seq 2 missing
    const next = writer.append([rec(2)]);
    await assert.rejects(gap, /does not follow/);
    await assert.rejects(next);
    await assert.rejects(writer.saveSnapshot(1, 'x'));
    assert.equal(reader.lastSeq(), 1, 'nothing after the refused write reached the file');
  } finally {
    await writer.close();
    reader.close();
  }
});

test('close ends the thread after the writes handed over, and later writes are refused', async () => {
  const dir = path.join(root, 'close');
  const reader = openSqliteJournal(dir);
  const writer = await startJournalWriter(dir, () => reader.lastSeq());
  const pending = writer.append([rec(1)]);
  await writer.close();
  await pending;
  assert.equal(reader.lastSeq(), 1);
  await assert.rejects(writer.append([rec(2)]), /exited/);
  reader.close();
});

test('under steady appends the WAL is checkpointed off the commit path and stays bounded', async () => {
  const dir = path.join(root, 'checkpoints');
  const reader = openSqliteJournal(dir);
  const writer = await startJournalWriter(dir, () => reader.lastSeq());
  const wal = path.join(dir, 'strikebook.db-wal');
  const text = 'x'.repeat(2_000);
  let seq = 0;
  let walMax = 0;
  try {
    // about 10x the checkpoint threshold in record text alone, one batch at a time as the sequencer does
    const batches = Math.ceil((10 * CHECKPOINT_AFTER_WAL_BYTES) / (20 * text.length));
    for (let b = 0; b < batches; b++) {
      const records: JournalRecord[] = [];
      for (let i = 0; i < 20; i++) {
        seq++;
        records.push({ seq, ts: 1_700_000_000_000 + seq, cmd: JSON.stringify({ t: 'noop', n: seq, text }) });
      }
      await writer.append(records);
      walMax = Math.max(walMax, fs.statSync(wal).size);
    }
    assert.equal(reader.lastSeq(), seq);
    // SQLite's automatic checkpoint is off on the writer; without the checkpointer thread the WAL
    // would hold every page written (over 10x the threshold). With it, the WAL starts over from its
    // beginning after each checkpoint, so the file stays near the threshold: 1-2.5x on a quiet
    // machine, ~3x at load 20 where the checkpointer's thread waits for a core while the writer
    // goes on (so the bound here is half of what was written, not a speed)
    assert.ok(walMax <= 5 * CHECKPOINT_AFTER_WAL_BYTES, `WAL grew to ${walMax} bytes`);
    const rows = [...reader.readAfter(seq - 3)];
    assert.deepEqual(rows.map((r) => r.seq), [seq - 2, seq - 1, seq]);
  } finally {
    await writer.close();
    reader.close();
  }
});

test('a batch packed for the writer thread unpacks to the same records (any text, any length)', () => {
  const record = fc.record({ seq: fc.nat({ max: Number.MAX_SAFE_INTEGER }), ts: fc.integer({ min: -1e15, max: 1e15 }), cmd: fc.string({ unit: 'binary', maxLength: 300 }) }).map((r) => ({ seq: r.seq, ts: r.ts, cmd: r.cmd }));
  fc.assert(
    fc.property(fc.array(record, { maxLength: 50 }), (records) => {
      assert.deepEqual(unpackRecords(packRecords(records)), records);
    }),
    { numRuns: 2_000 },
  );
  assert.deepEqual(unpackRecords(packRecords([{ seq: 1, ts: 2, cmd: '' }, { seq: 2, ts: 3, cmd: '{"a":"\u00e9\ud83d\ude00"}' }])), [
    { seq: 1, ts: 2, cmd: '' },
    { seq: 2, ts: 3, cmd: '{"a":"\u00e9\ud83d\ude00"}' },
  ]);
});

test('a snapshot in parts: a batch handed over during it is written after the part in progress, not after the whole snapshot', async () => {
  const dir = path.join(root, 'parts');
  const reader = openSqliteJournal(dir);
  const written: number[] = [];
  // the batches handed over while the snapshot is written, and how many parts were written when each became durable
  const during: Array<Promise<number>> = [];
  let seq = 1;
  const writer = await startJournalWriter(dir, () => reader.lastSeq(), {
    snapshotPartChars: 1_000,
    onSnapshotPart: (_seq, part) => {
      written.push(part);
      // one batch after every other part, as the sequencer hands them over while orders arrive
      if (part % 2 === 0) during.push(writer.append([rec(++seq)]).then(() => written.length));
    },
  });
  try {
    await writer.append([rec(1)]);
    const data = 'abcdefghij'.repeat(1_000); // 10 parts
    const saved = writer.saveSnapshot(1, data);
    // handed over together with it: queued ahead of its first part
    const first = writer.append([rec(++seq)]).then(() => written.length);
    assert.equal(await first, 0, 'the batch handed over with the snapshot was written before any part');
    await saved;
    // counted, not timed: each batch is durable once the part before it is, never behind the rest
    assert.deepEqual(await Promise.all(during), [1, 3, 5, 7, 9]);
    assert.deepEqual(written, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.deepEqual(reader.latestSnapshot(), { seq: 1, data });
    assert.equal(reader.lastSeq(), seq);
    const parts = reader.connections()[0]!.prepare('SELECT COUNT(*) FROM snapshot_parts WHERE seq = 1').pluck().get();
    assert.equal(parts, 10);
  } finally {
    await writer.close();
    reader.close();
  }
});

test('close waits for a snapshot being written in parts, and a later snapshot replaces the parts of the pruned ones', async () => {
  const dir = path.join(root, 'parts-close');
  const reader = openSqliteJournal(dir);
  let writer = await startJournalWriter(dir, () => reader.lastSeq(), { snapshotPartChars: 100 });
  await writer.append([rec(1), rec(2), rec(3)]);
  void writer.saveSnapshot(1, '1'.repeat(1_000));
  await writer.close();
  assert.equal(reader.latestSnapshot()?.seq, 1, 'finished before the thread closed');
  writer = await startJournalWriter(dir, () => reader.lastSeq(), { snapshotPartChars: 100 });
  try {
    await writer.saveSnapshot(2, '2'.repeat(1_000));
    await writer.saveSnapshot(3, '3'.repeat(250));
    const seqs = reader.connections()[0]!.prepare('SELECT DISTINCT seq FROM snapshot_parts ORDER BY seq').pluck().all();
    assert.deepEqual(seqs, [2, 3], 'two snapshots kept, with their parts only');
    assert.deepEqual(reader.latestSnapshot(), { seq: 3, data: '3'.repeat(250) });
  } finally {
    await writer.close();
    reader.close();
  }
});

test('a snapshot in parts keeps a character outside the BMP that a cut would have split (an emoji in a label)', async () => {
  const dir = path.join(root, 'parts-pairs');
  const reader = openSqliteJournal(dir);
  const writer = await startJournalWriter(dir, () => reader.lastSeq(), { snapshotPartChars: 10 });
  try {
    await writer.append([rec(1), rec(2)]);
    // the first emoji's two halves are code units 9 and 10: a cut at 10 would have stored U+FFFD twice
    const data = JSON.stringify({ label: 'abc\ud83d\ude00def\ud83d\ude00ghijklmnop\u00e9' });
    await writer.saveSnapshot(1, data);
    assert.equal(reader.latestSnapshot()?.data, data);
    // the same text built elsewhere and handed over as UTF-8 parts, moved to the writer thread
    const parts = encodeSnapshotParts(data, 7);
    await writer.saveSnapshotParts(2, parts);
    assert.deepEqual(reader.latestSnapshot(), { seq: 2, data });
    assert.ok(parts.every((p) => p.byteLength === 0), 'the parts were transferred, not copied');
  } finally {
    await writer.close();
    reader.close();
  }
});
