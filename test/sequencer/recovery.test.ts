// The sequencer's snapshots and recovery (src/sequencer/sequencer.ts, src/app/services.ts recover):
// snapshots every snapshotEvery records, recovery from the latest snapshot plus the journal tail, an
// engine exception journaled and replayed alike, and a standby that follows the leader's records.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { recover } from '../../src/app/services.ts';
import { ERR, isReject } from '../../src/domain/errors.ts';
import type { Command } from '../../src/engine/commands.ts';
import { Exchange } from '../../src/engine/exchange.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { Sequencer } from '../../src/sequencer/sequencer.ts';
import type { JournalWriter } from '../../src/journal/journal.ts';
import { MemoryJournal } from '../helpers/memoryJournal.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';
import { fakeClock, fullReplay, index, rig, tradingScenario } from './rig.ts';

// ---- snapshots and recovery --------------------------------------------------------------------

test('a snapshot is taken every snapshotEvery records, of the state at its seq', async () => {
  const { seq, journal, ex } = rig({ snapshotEvery: 5 });
  // one command per turn, so each batch holds one record and snapshots fall on multiples of 5
  for (let i = 1; i <= 23; i++) await seq.submit(index(100_000 + i), () => null);
  assert.deepEqual(journal.snapshots.map((s) => s.seq), [5, 10, 15, 20]);
  for (const s of journal.snapshots) {
    assert.equal(stateHash(restore(s.data)), stateHash(fullReplay(journal, s.seq)), `snapshot ${s.seq} is the state after seq ${s.seq}`);
  }
  assert.equal(ex.seq, 23);
});

test('with snapshotDue, a due snapshot is handed the last durable seq instead of being serialized here', async () => {
  const due: number[] = [];
  const ex = new Exchange();
  const journal = new MemoryJournal();
  const seq = new Sequencer(ex, journal, fakeClock(), { snapshotEvery: 5, onFatal: (err) => assert.fail(String(err)), onCommandError: (err) => assert.fail(String(err)), snapshotDue: (s) => due.push(s) }, () =>
    assert.fail('the state must not be serialized on this thread'),
  );
  for (let i = 1; i <= 12; i++) await seq.submit(index(100_000 + i), () => null);
  // three commands in one turn: one batch, durable up to its last seq
  await Promise.all([1, 2, 3].map((i) => seq.submit(index(200_000 + i), () => null)));
  assert.deepEqual(due, [5, 10, 15]);
  assert.equal(journal.snapshots.length, 0);
  // a snapshot built elsewhere is written through the sequencer, after the records it covers
  seq.saveSnapshot(10, serialize(fullReplay(journal, 10)));
  assert.deepEqual(journal.snapshots.map((s) => s.seq), [10]);
});

test('recovery from the latest snapshot plus the journal tail equals a full replay and the live state', async () => {
  const { seq, journal, ex, fatal } = rig({ snapshotEvery: 7 });
  await tradingScenario(seq, ex);
  assert.deepEqual(fatal, []);
  const snap = journal.latestSnapshot();
  assert.ok(snap && snap.seq > 0 && snap.seq < journal.lastSeq(), 'there is a snapshot and a tail after it');

  const live = stateHash(ex);
  const { ex: recovered, replayed } = recover(journal);
  assert.equal(replayed, journal.lastSeq() - snap.seq);
  assert.equal(stateHash(recovered), live);
  assert.equal(stateHash(fullReplay(journal)), live);

  // and a sequencer on the recovered state carries on with the next seq
  const again = rig({}, journal, recovered);
  await again.seq.submit(index(99_000), () => null);
  assert.equal(journal.lastSeq(), ex.seq + 1);
  assert.equal(stateHash(recover(journal).ex), stateHash(recovered));
});

test('records replayed at start count towards the next snapshot', async () => {
  const journal = new MemoryJournal();
  const first = rig({ snapshotEvery: 10 }, journal);
  for (let i = 1; i <= 8; i++) await first.seq.submit(index(i), () => null);
  assert.equal(journal.snapshots.length, 0);
  const { ex, replayed } = recover(journal);
  const second = rig({ snapshotEvery: 10, recordsSinceSnapshot: replayed }, journal, ex);
  await second.seq.submit(index(9), () => null);
  await second.seq.submit(index(10), () => null);
  assert.deepEqual(journal.snapshots.map((s) => s.seq), [10]);
});

test('an exception inside apply becomes an 11094 result, is journaled, and replay reproduces the state', async () => {
  const { seq, journal, ex, commandErrors } = rig();
  await seq.submit({ t: 'create_user', email: 'a@example.com', passwordHash: 'x', role: 'user', inviteCode: null, by: null }, (r) => r);
  // Unreachable through the API (the schema allows known currencies only), so the engine throws a
  // TypeError on the missing account: the path every engine bug takes.
  const bad = { t: 'deposit', userId: 1, currency: 'DOGE', amount: 5, depositId: null, by: 1 } as unknown as Command;
  const result = await seq.submit(bad, (r) => r);
  assert.ok(isReject(result));
  assert.equal(result.code, ERR.INTERNAL);
  assert.equal(commandErrors.length, 1);
  assert.ok(commandErrors[0] instanceof TypeError);
  assert.deepEqual(journal.records.map((r) => decodeCommand(r.cmd, r.seq, r.ts).t), ['create_user', 'deposit']);

  await seq.submit(index(100_000), () => null); // and the sequencer carries on
  const replayErrors: unknown[] = [];
  const { ex: replayed } = recover(journal, (err) => replayErrors.push(err));
  assert.equal(replayErrors.length, 1, 'replay meets the same exception');
  assert.equal(stateHash(replayed), stateHash(ex));
});

// ---- standby (src/app/standby.ts) --------------------------------------------------------------

test('a standby sequencer refuses commands naming the leader, follows records to the leader state, and continues the seqs once promoted', async () => {
  const leader = rig();
  await tradingScenario(leader.seq, leader.ex);
  const records = [...leader.journal.records];

  // a stub writer, as a standby's storage has: never written to
  const stub: JournalWriter = { append: () => assert.fail('a standby writes nothing'), saveSnapshot: () => assert.fail('no snapshot'), lastSeq: () => 0 };
  const followed: Array<[number, boolean]> = [];
  const sb = { ex: new Exchange() };
  const standby = new Sequencer(sb.ex, stub, fakeClock(), { snapshotEvery: 1_000_000, onFatal: () => undefined, onCommandError: () => undefined, onCommitted: (cmds, _s, f) => followed.push([cmds.length, f]) }, () => serialize(sb.ex));
  standby.becomeStandby({ leaderUrl: () => 'https://a.example' });
  assert.equal(standby.isStandby, true);
  await assert.rejects(standby.submit(index(1), (r) => r), (e: Error & { leaderUrl?: string }) => e.name === 'StandbyRefusal' && e.leaderUrl === 'https://a.example');
  assert.throws(() => standby.assertLeader(), { name: 'StandbyRefusal' });
  assert.equal(sb.ex.seq, 0, 'a refused command changed nothing');

  standby.follow(records.slice(0, 10));
  assert.equal(stateHash(sb.ex), stateHash(fullReplay(leader.journal, 10)), 'the same state as the leader at seq 10');
  assert.throws(() => standby.follow(records.slice(11, 12)), /does not follow 10/, 'a gap is refused');
  standby.follow(records.slice(10));
  assert.equal(standby.appliedSeq, leader.journal.lastSeq());
  assert.equal(stateHash(sb.ex), stateHash(leader.ex), 'the same state as the leader at its last seq');
  assert.deepEqual(followed, [[10, true], [records.length - 10, true]], 'handed to onCommitted as followed batches');

  // promoted onto a journal that ends elsewhere: refused; onto the leader's journal: the next seq
  const short = new MemoryJournal();
  assert.throws(() => standby.promote(short), /ends at 0/);
  standby.promote(leader.journal);
  assert.equal(standby.isStandby, false);
  await standby.submit(index(100_001), (r) => r);
  assert.equal(leader.journal.lastSeq(), records.length + 1);
  assert.equal(sb.ex.seq, records.length + 1);
  assert.deepEqual(followed.at(-1), [1, false], 'its own batch is not a followed one');
});
