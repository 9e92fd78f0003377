// The journal writer thread (src/journal/workerJournal.ts): writes land in the same SQLite file the
// engine thread reads, in the order they were handed over, with the durability pragmas; a refused
// write refuses every later one (DESIGN.md rule 3: crash and recover, never carry on); close ends it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { startJournalWriter } from '../../src/journal/workerJournal.ts';
import type { JournalRecord } from '../../src/journal/journal.ts';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'strikebook-writer-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));

const rec = (seq: number): JournalRecord => ({ seq, ts: 1_700_000_000_000 + seq, cmd: JSON.stringify({ t: 'noop', n: seq, text: 'line\nbreak' }) });

test('appends and a snapshot handed over together land in order, readable on the engine thread', async () => {
  const dir = path.join(root, 'ok');
  const reader = openSqliteJournal(dir);
  const writer = await startJournalWriter(dir, () => reader.lastSeq());
  try {
    assert.deepEqual(await writer.pragmas(), { journalMode: 'wal', synchronous: 2 });
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
