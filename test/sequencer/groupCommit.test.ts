// The sequencer's group commit (src/sequencer/sequencer.ts): commands of one event-loop turn share
// one journal append, replies and reads wait until what they saw is durable, the live engine applies
// exactly what is journaled, and with an asynchronous journal a bounded number of batches are in flight.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ERR, Reject } from '../../src/domain/errors.ts';
import { instrumentName } from '../../src/domain/instrument.ts';
import type { Command, Sequenced } from '../../src/engine/commands.ts';
import { Exchange } from '../../src/engine/exchange.ts';
import { SELL } from '../../src/engine/orderBook.ts';
import { serialize, stateHash } from '../../src/engine/snapshot.ts';
import { instrumentFields, loadCatalogConfig } from '../../src/market/catalog.ts';
import { DEFERRED, MAX_WRITES_IN_FLIGHT, Sequencer } from '../../src/sequencer/sequencer.ts';
import type { JournalRecord, JournalWriter } from '../../src/journal/journal.ts';
import { MemoryJournal } from '../helpers/memoryJournal.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';
import { EXPIRY, LOT, fakeClock, fullReplay, index, nextTurn, rig, settledWithin, tradingScenario } from './rig.ts';

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
