// How the sequencer fails and stops (src/sequencer/sequencer.ts): a failing journal append or
// snapshot write is fatal once and refuses what follows, a planned stop's snapshot or an unserializable
// state is not, stop() and takeSnapshot() write the pending batch first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Exchange } from '../../src/engine/exchange.ts';
import { restore, stateHash } from '../../src/engine/snapshot.ts';
import { Sequencer } from '../../src/sequencer/sequencer.ts';
import { MemoryJournal } from '../helpers/memoryJournal.ts';
import { fakeClock, index, nextTurn, rig, settledWithin } from './rig.ts';

test('a failing append calls onFatal once, resolves no reply, and refuses later commands and reads', async () => {
  const { seq, journal, fatal } = rig();
  const ioError = new Error('EIO: fsync failed');
  journal.beforeAppend = () => {
    throw ioError;
  };
  const replies = [seq.submit(index(1), () => 'a'), seq.submit(index(2), () => 'b')];
  const waitingRead = seq.read(() => 'read');
  for (const p of [...replies, waitingRead]) assert.equal(await settledWithin(p), 'pending');
  assert.deepEqual(fatal, [ioError]);
  assert.equal(journal.records.length, 0);
  await assert.rejects(seq.submit(index(3), () => 'c'), /journal write failed/);
  await assert.rejects(seq.read(() => 'x'), /journal write failed/);
  assert.equal(journal.appendCalls, 1, 'never retried');
  assert.equal(fatal.length, 1);
});

test('a failing snapshot write is fatal too, after the batch it followed was acknowledged', async () => {
  const journal = new MemoryJournal();
  journal.saveSnapshot = () => {
    throw new Error('SQLITE_IOERR');
  };
  const { seq, fatal } = rig({ snapshotEvery: 2 }, journal);
  assert.deepEqual(await Promise.all([seq.submit(index(1), () => 1), seq.submit(index(2), () => 2)]), [1, 2]);
  assert.equal(fatal.length, 1);
  assert.match(String(fatal[0]), /SQLITE_IOERR/);
  await assert.rejects(seq.submit(index(3), () => 3), /journal write failed/);
});

test('the snapshot of a planned stop (failureIsFatal false) that cannot be written rejects its promise and stops nothing', async () => {
  const journal = new MemoryJournal();
  const { seq, fatal } = rig({}, journal);
  assert.equal(await seq.submit(index(1), () => 1), 1);
  journal.saveSnapshot = () => {
    throw new Error('relation "snapshots" does not exist');
  };
  const taken = seq.takeSnapshot({ failureIsFatal: false });
  assert.ok(taken !== null);
  await assert.rejects(taken.saved, /does not exist/);
  // with the default the same failure is fatal (the test above): here nothing is
  assert.equal(fatal.length, 0);
  assert.equal(await seq.submit(index(2), () => 2), 2);
});

test('a state that cannot be serialized skips the snapshot without stopping the sequencer', async () => {
  const journal = new MemoryJournal();
  const snapshotErrors: unknown[] = [];
  const ex = new Exchange();
  const fatal: unknown[] = [];
  const seq = new Sequencer(ex, journal, fakeClock(), {
    snapshotEvery: 1,
    onFatal: (e) => fatal.push(e),
    onCommandError: () => undefined,
    onSnapshotError: (e) => snapshotErrors.push(e),
  }, () => {
    throw new Error('serialize bug');
  });
  await seq.submit(index(1), () => null);
  await seq.submit(index(2), () => null);
  assert.equal(snapshotErrors.length, 2);
  assert.deepEqual(fatal, []);
  assert.equal(journal.lastSeq(), 2);
});

test('stop() writes the pending batch and refuses further commands', async () => {
  const { seq, journal, fatal } = rig();
  const p = seq.submit(index(1), () => 'a');
  seq.stop();
  assert.equal(journal.lastSeq(), 1, 'written synchronously by stop');
  assert.equal(await p, 'a');
  await assert.rejects(seq.submit(index(2), () => 'b'), /stopped/);
  await nextTurn(); // the flush scheduled for the batch finds nothing left to write
  assert.equal(journal.appendCalls, 1);
  assert.deepEqual(fatal, []);
});

test('takeSnapshot() writes the pending batch first, so the snapshot never runs ahead of the journal', async () => {
  const { seq, journal, ex } = rig();
  const p = seq.submit(index(1), () => 'a');
  seq.takeSnapshot();
  assert.equal(journal.lastSeq(), 1);
  assert.deepEqual(journal.snapshots.map((s) => s.seq), [1]);
  assert.equal(stateHash(restore(journal.snapshots[0]!.data)), stateHash(ex));
  assert.equal(await p, 'a');
});
