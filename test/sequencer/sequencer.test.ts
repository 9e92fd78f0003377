import { test } from 'node:test';
import assert from 'node:assert/strict';
import { recover } from '../../src/app/services.ts';
import { ERR, Reject, isReject } from '../../src/domain/errors.ts';
import { instrumentName } from '../../src/domain/instrument.ts';
import type { Command, Sequenced } from '../../src/engine/commands.ts';
import { Exchange } from '../../src/engine/exchange.ts';
import { BUY, SELL } from '../../src/engine/orderBook.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { instrumentFields, loadCatalogConfig } from '../../src/market/catalog.ts';
import { DEFERRED, MAX_WRITES_IN_FLIGHT, Sequencer, applyCommand, type SequencerOptions } from '../../src/sequencer/sequencer.ts';
import type { JournalRecord, JournalWriter } from '../../src/journal/journal.ts';
import { MemoryJournal } from '../helpers/memoryJournal.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';

const T0 = Date.UTC(2030, 0, 2, 12);
const EXPIRY = Date.UTC(2030, 2, 29, 8);
const BTC = 1e8; // minor units per coin
const LOT = 10_000_000; // 0.1 contract at AMOUNT_SCALE 8

/** A clock that moves 1 ms per reading: deterministic, and every command gets its own time. */
function fakeClock(start = T0) {
  let t = start;
  return { now: () => t++ };
}

interface Rig {
  ex: Exchange;
  journal: MemoryJournal;
  seq: Sequencer;
  fatal: unknown[];
  commandErrors: unknown[];
}

function rig(opts: Partial<SequencerOptions> = {}, journal = new MemoryJournal(), ex = new Exchange()): Rig {
  const fatal: unknown[] = [];
  const commandErrors: unknown[] = [];
  const seq = new Sequencer(
    ex,
    journal,
    fakeClock(),
    {
      snapshotEvery: 1_000_000,
      onFatal: (err) => fatal.push(err),
      onCommandError: (err) => commandErrors.push(err),
      ...opts,
    },
    () => serialize(ex),
  );
  return { ex, journal, seq, fatal, commandErrors };
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const index = (price: number): Command => ({ t: 'index', currency: 'BTC', price, manual: true, by: null });

/** Settles `p` if it settles within a few event-loop turns; 'pending' otherwise. */
async function settledWithin<T>(p: Promise<T>, turns = 5): Promise<{ value: T } | { error: unknown } | 'pending'> {
  let out: { value: T } | { error: unknown } | 'pending' = 'pending';
  p.then(
    (value) => (out = { value }),
    (error: unknown) => (out = { error }),
  );
  for (let i = 0; i < turns; i++) await nextTurn();
  return out;
}

function fullReplay(journal: MemoryJournal, uptoSeq = Infinity): Exchange {
  const ex = new Exchange();
  for (const r of journal.readAfter(0)) {
    if (r.seq > uptoSeq) break;
    applyCommand(ex, decodeCommand(r.cmd, r.seq, r.ts));
  }
  return ex;
}

// ---- group commit and visibility ---------------------------------------------------------------

test('commands submitted in one event-loop turn share one journal append, later turns get their own', async () => {
  const { seq, journal } = rig();
  const first = [1, 2, 3, 4, 5].map((i) => seq.submit(index(100_000 + i), () => i));
  assert.equal(journal.appendCalls, 0, 'nothing is written inside the turn');
  assert.deepEqual(await Promise.all(first), [1, 2, 3, 4, 5]);
  await seq.submit(index(100_010), () => 6);
  await Promise.all([seq.submit(index(100_011), () => 7), seq.submit(index(100_012), () => 8)]);
  assert.equal(journal.appendCalls, 3);
  assert.deepEqual(journal.batches, [[1, 2, 3, 4, 5], [6], [7, 8]]);
});

test('a reply is released only after the append holding its record has returned', async () => {
  const { seq, journal } = rig();
  const events: string[] = [];
  journal.beforeAppend = (records) => events.push(`append ${records.map((r) => r.seq).join(',')}`);
  const replies = [seq.submit(index(1), () => 'a'), seq.submit(index(2), () => 'b')].map((p) => p.then((v) => events.push(`reply ${v}`)));
  // Microtasks alone never release a reply: the write happens on the next turn.
  for (let i = 0; i < 10; i++) await Promise.resolve();
  assert.deepEqual(events, []);
  assert.equal(seq.pending, true);
  await Promise.all(replies);
  assert.deepEqual(events, ['append 1,2', 'reply a', 'reply b']);
  assert.equal(seq.pending, false);
});

test('a read issued while a command is pending runs only after that command is durable', async () => {
  const { seq, journal, ex } = rig();
  void seq.submit(index(123), () => null);
  assert.equal(ex.index.BTC?.price, 123, 'the command is applied at once');
  const seen = await seq.read(() => ({ durable: journal.lastSeq(), applied: ex.seq }));
  assert.deepEqual(seen, { durable: 1, applied: 1 });

  // with nothing pending, a read runs at once
  let ran = false;
  const p = seq.read(() => (ran = true));
  assert.equal(ran, true);
  await p;
});

test('a read waits again for a command that was submitted while it waited', async () => {
  const { seq, journal, ex } = rig();
  void seq.submit(index(1), () => null);
  // a callback of the same batch that submits another command (a read-then-write handler)
  const writer = seq.read(() => void seq.submit(index(2), () => null));
  const seen = await seq.read(() => ({ price: ex.index.BTC?.price, durable: journal.lastSeq() }));
  await writer;
  assert.deepEqual(seen, { price: 2, durable: 2 }, 'the state read is on disk');
});

test('a reply whose render throws (a rejection) is released after its record is durable and keeps the journal contiguous', async () => {
  const { seq, journal, fatal } = rig();
  const rejection = new Reject(ERR.ORDER_NOT_FOUND);
  let appendedBeforeReply = false;
  // a withdrawal for nobody: refused, and journaled (a refusal that is decided by applying it)
  const p = seq.submit({ t: 'withdraw', userId: 1, currency: 'BTC', amount: 1 }, () => {
    throw rejection;
  });
  const observed = p.then(
    () => assert.fail('should reject'),
    (err: unknown) => {
      appendedBeforeReply = journal.lastSeq() === 1;
      return err;
    },
  );
  assert.equal(await observed, rejection);
  assert.equal(appendedBeforeReply, true);
  // the next command follows without a gap (it used to kill the process with "seq 3 does not follow 1")
  assert.equal(await seq.submit(index(5), () => 'ok'), 'ok');
  assert.deepEqual(journal.records.map((r) => r.seq), [1, 2]);
  assert.deepEqual(fatal, []);
});

test('submitThen settles each sink once its record is durable, in submit order, with the reply or what render threw', async () => {
  const { seq, journal, fatal } = rig();
  const events: string[] = [];
  const sink = (name: string) => ({ settle: (reply: unknown, ok: boolean) => events.push(`${name} ${ok ? 'ok' : 'failed'} ${reply instanceof Reject ? reply.code : String(reply)} durable ${journal.lastSeq()}`) });
  journal.beforeAppend = (records) => events.push(`append ${records.map((r) => r.seq).join(',')}`);
  const rejection = new Reject(ERR.ORDER_NOT_FOUND);
  assert.equal(seq.submitThen(index(1), () => 'a', sink('a')), DEFERRED);
  const viaPromise = seq.submit(index(2), () => 'p').then((v) => events.push(`promise ${v}`));
  seq.submitThen({ t: 'withdraw', userId: 1, currency: 'BTC', amount: 1 }, () => {
    throw rejection;
  }, sink('b'));
  // refused without a change: settled through submit's path, once the state it saw is durable
  seq.submitThen({ t: 'cancel', userId: 1, orderId: 999 }, (r) => r, sink('c'));
  for (let i = 0; i < 10; i++) await Promise.resolve();
  assert.deepEqual(events, [], 'nothing settles before the write');
  await viaPromise;
  await nextTurn();
  assert.deepEqual(events, ['append 1,2,3', 'a ok a durable 3', 'b failed 10004 durable 3', 'promise p', `c ok ${ERR.ORDER_NOT_FOUND} durable 3`]);
  assert.deepEqual(journal.records.map((r) => r.seq), [1, 2, 3]);
  assert.deepEqual(fatal, []);
});

test('a cancel refused without changing anything is answered once the state it saw is durable, and never journaled', async () => {
  const { seq, journal, ex, fatal } = rig();
  const pending = seq.submit(index(5), () => 'indexed');
  let answered = false;
  const refused = seq.submit({ t: 'cancel', userId: 1, orderId: 999 }, (r) => r).then((r) => {
    answered = true;
    assert.equal(journal.lastSeq(), 1, 'the batch before it was durable first');
    return r;
  });
  assert.equal(answered, false);
  assert.equal(((await refused) as Reject).code, ERR.ORDER_NOT_FOUND);
  await pending;
  assert.equal(ex.seq, 1, 'no seq for the refusal');
  assert.equal(await seq.submit(index(6), () => 'ok'), 'ok');
  assert.deepEqual(journal.records.map((r) => r.seq), [1, 2]);
  assert.ok(journal.records.every((r) => decodeCommand(r.cmd, r.seq, r.ts).t !== 'cancel'));
  assert.deepEqual(fatal, []);
});

test('a command that cannot be serialized is refused whole and consumes no seq', async () => {
  const { seq, journal, ex, fatal } = rig();
  const bad = { t: 'index', currency: 'BTC', price: 10n, manual: true, by: null } as unknown as Command;
  assert.throws(() => seq.submit(bad, () => null), TypeError);
  assert.equal(ex.seq, 0, 'not applied');
  await seq.submit(index(7), () => null);
  assert.deepEqual(journal.records.map((r) => r.seq), [1]);
  assert.deepEqual(fatal, []);
});

test('the live engine applies the command as journaled, so a caller reusing its objects cannot make replay differ', async () => {
  const { seq, journal, ex } = rig();
  const fields = instrumentFields(loadCatalogConfig().currencies.find((c) => c.currency === 'BTC')!);
  const spec = { currency: 'BTC' as const, name: instrumentName('BTC', EXPIRY, 100_000, 'call'), optionType: 'call' as const, strike: 100_000, expiry: EXPIRY, settlementPeriod: 'month' as const, ...fields };
  await seq.submit(index(100_000), () => null);
  await seq.submit({ t: 'list', instruments: [spec] }, () => null);
  spec.tickSteps.push({ abovePrice: 1_000, tick: 10 }); // the caller edits its own object afterwards
  assert.equal(stateHash(ex), stateHash(fullReplay(journal)));
});

test('a flat command is applied as is only when its journal text gives it back unchanged', async () => {
  const seen: Sequenced[] = [];
  const ex = new Exchange();
  const apply = ex.apply.bind(ex);
  ex.apply = (cmd: Sequenced) => {
    seen.push(cmd);
    return apply(cmd);
  };
  const { seq } = rig({}, new MemoryJournal(), ex);
  // -0, NaN and undefined do not survive JSON: the engine must see what replay will see
  await seq.submit({ t: 'index', currency: 'BTC', price: -0, manual: true, by: null }, () => null).catch(() => null);
  await seq.submit({ t: 'index', currency: 'BTC', price: NaN, manual: true, by: null }, () => null).catch(() => null);
  await seq.submit({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: undefined as unknown as null }, () => null);
  assert.equal(Object.is(seen[0]!.t === 'index' && seen[0]!.price, 0), true, '-0 is applied as 0');
  assert.equal(seen[1]!.t === 'index' && seen[1]!.price, null, 'NaN is applied as null');
  assert.equal('by' in seen[2]!, false, 'an undefined field is applied absent');
  // and a command JSON keeps exactly is applied with the same fields and values
  await seq.submit(index(100_001), () => null);
  assert.deepEqual(seen[3], { t: 'index', currency: 'BTC', price: 100_001, manual: true, by: null, ts: seen[3]!.ts, seq: 4 });
});

test('an order submitted as its caller\'s own object (fresh) is journaled and applied exactly as a copied one', async () => {
  const copied = rig();
  const fresh = rig();
  await tradingScenario(copied.seq, copied.ex);
  await tradingScenario(fresh.seq, fresh.ex, true);
  assert.deepEqual(fresh.journal.records, copied.journal.records, 'the same records, text for text');
  assert.equal(stateHash(fresh.ex), stateHash(copied.ex));
  assert.equal(stateHash(fresh.ex), stateHash(fullReplay(fresh.journal)));
  // the optional keys an order may carry after its literal (mmp, cod) keep their place before ts and seq
  const name = [...fresh.ex.instruments.keys()][0]!;
  const order = (): Command => {
    const cmd: Extract<Command, { t: 'place' }> = {
      t: 'place', userId: 1, side: SELL, instrument: name, price: 1_000, advanced: null, advPrice: null, lots: LOT, type: 'limit',
      tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: 'q', clientOrderId: null,
    };
    cmd.mmp = true;
    cmd.cod = true;
    return cmd;
  };
  const own = order();
  await fresh.seq.submit(own, (r) => r, true);
  await copied.seq.submit(order(), (r) => r);
  assert.equal(fresh.journal.records.at(-1)!.cmd, copied.journal.records.at(-1)!.cmd);
  assert.deepEqual(Object.keys(own).slice(-4), ['mmp', 'cod', 'ts', 'seq'], 'the fresh command is the sequenced one');
});

// ---- failure -----------------------------------------------------------------------------------

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

// ---- snapshots and recovery --------------------------------------------------------------------

/** Lists one BTC call, creates two funded users, then trades, rests and cancels between them; with
 *  `fresh`, every order is submitted as its caller's own object (as private/buy and sell do). */
async function tradingScenario(seq: Sequencer, ex: Exchange, fresh = false): Promise<void> {
  const fields = instrumentFields(loadCatalogConfig().currencies.find((c) => c.currency === 'BTC')!);
  const name = instrumentName('BTC', EXPIRY, 100_000, 'call');
  const run = (cmd: Command) => seq.submit(cmd, (r) => r, fresh && cmd.t === 'place');
  await run(index(100_000));
  await run({ t: 'list', instruments: [{ currency: 'BTC', name, optionType: 'call', strike: 100_000, expiry: EXPIRY, settlementPeriod: 'month', ...fields }] });
  for (const email of ['a@example.com', 'b@example.com']) {
    await run({ t: 'create_user', email, passwordHash: 'x', role: 'user', inviteCode: null, by: null });
  }
  await run({ t: 'deposit', userId: 1, currency: 'BTC', amount: 50 * BTC, depositId: null, by: 1 });
  await run({ t: 'deposit', userId: 2, currency: 'BTC', amount: 50 * BTC, depositId: null, by: 2 });
  const m = ex.markets.get(ex.instruments.get(name)!.id)!;
  const mid = Math.round((m.minPrice + m.maxPrice) / 2 / 5) * 5; // on the 0.0005 grid
  const place = (userId: number, side: 0 | 1, price: number, lots: number, clientOrderId: string): Command => ({
    t: 'place', userId, side, instrument: name, price, advanced: null, advPrice: null, lots: lots * LOT, type: 'limit',
    tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId,
  });
  let trades = 0;
  for (let i = 0; i < 12; i++) {
    // a's asks rest; b crosses some of them; some commands share a batch
    const rests = await Promise.all([run(place(1, SELL, mid + 5 * (i % 3), 1 + (i % 2), `a${i}`)), run(place(2, BUY, mid - 20, 1, `b-rest${i}`))]);
    for (const r of rests) assert.ok(!isReject(r), `resting order refused: ${isReject(r) ? `${r.code} ${r.reason}` : ""}`);
    const cross = (await run(place(2, BUY, mid + 10, 1, `b${i}`))) as { trades: unknown[] };
    trades += cross.trades.length;
    if (i % 4 === 3) await run({ t: 'cancel', userId: 2, orderId: (rests[1] as { order: { id: number } }).order.id });
    if (i % 5 === 4) await run({ t: 'cancel', userId: 1, orderId: 424242 }); // a rejected command is journaled too
  }
  assert.ok(trades >= 10, `the scenario trades (${trades} trades)`);
}

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

// ---- pipelining with an asynchronous journal -------------------------------------------------------

/** An asynchronous journal whose writes complete only when the test says so, oldest first. */
class GatedJournal implements JournalWriter {
  readonly inner = new MemoryJournal();
  readonly inFlight: Array<{ records: JournalRecord[]; complete: () => void }> = [];
  append(records: JournalRecord[]): Promise<void> {
    return new Promise((resolve) => {
      this.inFlight.push({ records, complete: () => (this.inner.append(records), resolve()) });
    });
  }
  saveSnapshot(seq: number, data: string): void {
    this.inner.saveSnapshot(seq, data);
  }
  lastSeq(): number {
    return this.inner.lastSeq();
  }
  completeOldest(): void {
    this.inFlight.shift()!.complete();
  }
}

test(`with an asynchronous journal, up to ${MAX_WRITES_IN_FLIGHT} batches are written at once, and each releases only its own replies`, async () => {
  assert.equal(MAX_WRITES_IN_FLIGHT, 2);
  const journal = new GatedJournal();
  const ex = new Exchange();
  const seq = new Sequencer(ex, journal, fakeClock(), { snapshotEvery: 1_000_000, onFatal: (err) => assert.fail(String(err)), onCommandError: () => undefined }, () => serialize(ex));
  const a = seq.submit(index(100_000), () => 'a');
  await nextTurn();
  assert.equal(journal.inFlight.length, 1, 'the first batch is handed over at the end of its turn');
  const b = seq.submit(index(100_001), () => 'b');
  await nextTurn();
  assert.equal(journal.inFlight.length, 2, 'the next turn is handed over while the first is being written');
  const c1 = seq.submit(index(100_002), () => 'c1');
  await nextTurn();
  const c2 = seq.submit(index(100_003), () => 'c2');
  await nextTurn();
  assert.equal(journal.inFlight.length, 2, 'no third write: later turns wait, filling one batch');
  const read = seq.read(() => journal.lastSeq());
  for (const p of [a, b, c1, c2, read] as Array<Promise<unknown>>) assert.equal(await settledWithin(p, 2), 'pending');

  journal.completeOldest();
  assert.deepEqual(await settledWithin(a), { value: 'a' });
  assert.equal(await settledWithin(b, 2), 'pending', 'a later batch is not released by an earlier one');
  assert.equal(journal.inFlight.length, 2, 'the waiting commands went out as one batch when a write completed');
  assert.deepEqual(journal.inFlight[1]!.records.map((r) => r.seq), [3, 4]);

  journal.completeOldest();
  assert.deepEqual(await settledWithin(b), { value: 'b' });
  assert.equal(await settledWithin(c1, 2), 'pending');
  journal.completeOldest();
  assert.deepEqual(await settledWithin(c1), { value: 'c1' });
  assert.deepEqual(await settledWithin(c2), { value: 'c2' });
  assert.deepEqual(await settledWithin(read), { value: 4 }, 'a read waits for every batch handed over before it');
  assert.equal(seq.pending, false);
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
