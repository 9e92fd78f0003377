// Snapshots built off the engine thread (src/app/backgroundSnapshots.ts, snapshotProcess.ts): a
// process rebuilds the state at a durable seq from the journal, and what it saves must be exactly
// the state the engine had at that seq; a small state is still snapshotted inline; a failure is
// reported and changes nothing. On SQLite always, and on PostgreSQL when one is reachable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import os from 'node:os';
import pino from 'pino';
import { BackgroundSnapshots } from '../../src/app/backgroundSnapshots.ts';
import { Exchange } from '../../src/engine/exchange.ts';
import { restore, stateHash } from '../../src/engine/snapshot.ts';
import type { AsyncJournal, Journal } from '../../src/journal/journal.ts';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { applyCommand, type Sequencer } from '../../src/sequencer/sequencer.ts';
import { recordedEngine } from '../helpers/engine.ts';
import { recordsOf } from '../helpers/journalRecords.ts';
import { atmCall } from '../helpers/market.ts';
import { freshSchema } from '../helpers/postgres.ts';
import { adminToken, ok, spawnServer, startServer, tempDir, userToken } from '../helpers/server.ts';
import { sleep } from '../helpers/drill.ts';
import { openPostgresJournal } from '../../src/journal/postgresJournal.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';
import { joinSnapshotParts } from '../../src/journal/snapshotParts.ts';
import { startJournalWriter } from '../../src/journal/workerJournal.ts';
import { startTsProcess } from '../../src/journal/tsWorker.ts';
import { once } from 'node:events';

/** The state after replaying the journal from seq 1 up to `seq`, ignoring every snapshot. */
async function replayHash(journal: Journal | AsyncJournal, seq: number): Promise<string> {
  const ex = new Exchange();
  for await (const rec of journal.readAfter(0)) {
    if (rec.seq > seq) break;
    applyCommand(ex, decodeCommand(rec.cmd, rec.seq, rec.ts));
  }
  assert.equal(ex.seq, seq);
  return stateHash(ex);
}

/** Rests `n` orders of one user on an at-the-money call (each one journal record). */
async function restOrders(server: { url: string }, n: number): Promise<void> {
  const admin = await adminToken(server.url);
  const trader = await userToken(server.url, admin, 'snapshots@example.com', { currency: 'BTC', amount: 100 });
  const call = await atmCall(server.url);
  for (let i = 0; i < n; i++) {
    const side = i % 2 === 0 ? 'buy' : 'sell';
    const price = side === 'buy' ? call.prices[0] : call.prices[call.prices.length - 1];
    await ok(server.url, `private/${side}`, { instrument_name: call.name, amount: 0.1, price, label: `o${i}` }, trader);
  }
}

/** Checks the latest saved snapshot against a clean replay to its seq; returns that seq. */
async function assertSnapshotIsReplay(journal: Journal | AsyncJournal): Promise<number> {
  const snap = await journal.latestSnapshot();
  assert.ok(snap !== null, 'a snapshot was saved');
  assert.equal(stateHash(restore(snap.data)), await replayHash(journal, snap.seq), `the snapshot at seq ${snap.seq} is not the state at that seq`);
  return snap.seq;
}

test('past the inline size, due snapshots are built off the engine thread and equal the state at their seq', { timeout: 60_000 }, async () => {
  const processNice = os.getPriority();
  const server = await startServer({ STRIKEBOOK_SNAPSHOT_EVERY: '25', STRIKEBOOK_SNAPSHOT_INLINE_MAX_BYTES: '0' });
  try {
    await restOrders(server, 60);
    const snapshots = server.app.services.snapshots;
    await snapshots.idle();
    assert.ok(snapshots.counts.background >= 1, `background snapshots: ${JSON.stringify(snapshots.counts)}`);
    assert.equal(snapshots.counts.inline, 0, 'nothing was serialized on the engine thread');
    assert.equal(snapshots.counts.failed, 0);
    // its replay, and the collection of its garbage, take only the cores the engine leaves idle
    // (src/app/threadPriority.ts): every thread of the snapshot's process, V8's own included
    if (process.platform === 'linux') assert.equal(snapshots.lastProcessNice, 19, 'every thread of the snapshot process ran at the lowest priority');
    assert.equal(os.getPriority(), processNice, 'the process (and the engine thread, this one) kept its priority');
    assert.equal(server.app.storage, 'sqlite');
    const snapSeq = await assertSnapshotIsReplay(server.app.journal);
    assert.ok(snapSeq >= 25, `snapshot at seq ${snapSeq}`);
  } finally {
    await server.stop({ keepData: true });
  }
  // and a restart recovers from it to the same state a full replay gives
  const again = await startServer({}, server.dataDir);
  try {
    const admin = await adminToken(again.url).catch(() => null);
    assert.equal(admin, null, 'the administrator from before the restart exists (no second bootstrap)');
    assert.equal(again.app.storage, 'sqlite');
    const seq = again.app.services.ex.seq;
    assert.equal(stateHash(again.app.services.ex), await replayHash(again.app.journal, seq));
  } finally {
    await again.stop();
  }
});

test('a small state is still snapshotted on the engine thread (below STRIKEBOOK_SNAPSHOT_INLINE_MAX_BYTES)', async () => {
  const server = await startServer({ STRIKEBOOK_SNAPSHOT_EVERY: '25' });
  try {
    await restOrders(server, 30);
    const { counts } = server.app.services.snapshots;
    assert.ok(counts.inline >= 1, JSON.stringify(counts));
    assert.equal(counts.background, 0);
    assert.equal(server.app.storage, 'sqlite');
    await assertSnapshotIsReplay(server.app.journal);
  } finally {
    await server.stop();
  }
});

test('a background snapshot the journal cannot reach is reported and saves nothing; one it can is saved', async () => {
  // a journal of an engine's whole story: index, listing, users, deposits, resting orders
  const { h, story } = recordedEngine();
  const users = [h.user('10'), h.user('10')];
  for (let i = 0; i < 20; i++) h.ok(users[i % 2]!, i % 2 ? 'sell' : 'buy', 'BTC-30JAN26-130000-C', i % 2 ? '0.0140' : '0.0100', '0.1');
  const dir = tempDir('strikebook-bgsnap-');
  const journal = openSqliteJournal(dir);
  journal.append(recordsOf(story));
  const last = journal.lastSeq();
  assert.equal(last, h.ex.seq);

  const saved: Array<{ seq: number; data: string }> = [];
  const sequencer = {
    saveSnapshotParts: (seq: number, parts: Uint8Array[]) => {
      // the engine thread is handed bytes to pass on, never the text (a copy of all of it)
      assert.ok(parts.length >= 1 && parts.every((p) => p instanceof Uint8Array));
      saved.push({ seq, data: joinSnapshotParts(parts) });
    },
    saveSnapshot: () => assert.fail('a background snapshot is handed over as parts'),
    takeSnapshot: () => assert.fail('a large state must not be serialized inline'),
  } as unknown as Sequencer;
  const snapshots = new BackgroundSnapshots(sequencer, { dataDir: dir, databaseUrl: null, inlineMaxBytes: 0, lastBytes: null, ex: new Exchange(), log: pino({ level: 'silent' }) });
  try {
    snapshots.due(last + 5);
    await snapshots.idle();
    assert.deepEqual(snapshots.counts, { inline: 0, background: 0, failed: 1 });
    assert.equal(saved.length, 0, "nothing was saved");

    snapshots.due(last - 4);
    await snapshots.idle();
    assert.deepEqual(snapshots.counts, { inline: 0, background: 1, failed: 1 });
    assert.deepEqual(saved.map((x) => x.seq), [last - 4]);
    assert.equal(stateHash(restore(saved[0]!.data)), await replayHash(journal, last - 4));
  } finally {
    await snapshots.close();
    journal.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a background snapshot stopped at shutdown is not counted or logged as a failure', async () => {
  const { h, story } = recordedEngine();
  const user = h.user('10');
  for (let i = 0; i < 10; i++) h.ok(user, 'buy', 'BTC-30JAN26-130000-C', '0.0100', '0.1');
  const dir = tempDir('strikebook-bgsnap-');
  const journal = openSqliteJournal(dir);
  journal.append(recordsOf(story));
  const logged: Array<{ level: number; msg: string }> = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line) as { level: number; msg: string }) });
  const sequencer = {
    saveSnapshotParts: () => assert.fail('a snapshot stopped at shutdown saves nothing'),
    takeSnapshot: () => assert.fail('a large state must not be serialized inline'),
  } as unknown as Sequencer;
  // no time to finish: close() stops the process it started a moment ago (its start alone takes longer)
  const snapshots = new BackgroundSnapshots(sequencer, { dataDir: dir, databaseUrl: null, inlineMaxBytes: 0, lastBytes: null, ex: new Exchange(), log, finishOnCloseMs: 0 });
  try {
    snapshots.due(journal.lastSeq());
    await snapshots.close();
    assert.deepEqual(snapshots.counts, { inline: 0, background: 0, failed: 0 });
    assert.deepEqual(logged.filter((l) => l.level >= 50), [], 'no error logged');
    assert.equal(logged.filter((l) => l.level === 40 && /stopped/.test(l.msg)).length, 1, 'the stop is said once, as a warning');
    // closed: nothing new starts
    snapshots.due(journal.lastSeq());
    await snapshots.idle();
    assert.deepEqual(snapshots.counts, { inline: 0, background: 0, failed: 0 });
  } finally {
    journal.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a background snapshot cut into small parts reaches the journal intact, labels outside the BMP included', async () => {
  const { h, story } = recordedEngine();
  const user = h.user('10');
  // labels that put an emoji's two halves at every offset of a 7-code-unit part
  for (let i = 0; i < 14; i++) h.ok(user, 'buy', 'BTC-30JAN26-130000-C', '0.0100', '0.1', { label: `${'x'.repeat(i)}\ud83d\ude00\ud834\udd1e\u00e9` });
  const dir = tempDir('strikebook-bgsnap-pairs-');
  const reader = openSqliteJournal(dir);
  reader.append(recordsOf(story));
  const writer = await startJournalWriter(dir, () => reader.lastSeq());
  const handed: Uint8Array[] = [];
  const sequencer = {
    saveSnapshotParts: (seq: number, parts: Uint8Array[]) => {
      handed.push(...parts);
      return writer.saveSnapshotParts(seq, parts);
    },
  } as unknown as Sequencer;
  const snapshots = new BackgroundSnapshots(sequencer, { dataDir: dir, databaseUrl: null, inlineMaxBytes: 0, lastBytes: null, ex: new Exchange(), log: pino({ level: 'silent' }), partChars: 7 });
  try {
    snapshots.due(reader.lastSeq());
    await snapshots.idle();
    assert.deepEqual(snapshots.counts, { inline: 0, background: 1, failed: 0 });
    assert.ok(handed.length > 100, `${handed.length} parts`);
    assert.ok(handed.every((p) => p instanceof Uint8Array), 'the engine thread is handed bytes, never the text');
    const snap = reader.latestSnapshot()!;
    assert.equal(snapshots.last?.bytes, snap.data.length, 'the size reported is the text\'s');
    const restored = restore(snap.data);
    assert.equal(stateHash(restored), stateHash(h.ex), 'the saved snapshot is the state');
    const labels = [...restored.users.get(user)!.orders.values()].map((o) => o.label);
    assert.deepEqual(labels, [...h.u(user).orders.values()].map((o) => o.label));
    assert.ok(labels.every((l) => l.includes('\ud83d\ude00\ud834\udd1e')));
  } finally {
    await snapshots.close();
    await writer.close();
    reader.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the server bundle (what npm start runs) builds its background snapshots with the bundled snapshot process', { timeout: 180_000 }, async (t) => {
  const dir = tempDir('strikebook-bgsnap-bundle-');
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const server = await spawnServer(dir, { STRIKEBOOK_SNAPSHOT_EVERY: '25', STRIKEBOOK_SNAPSHOT_INLINE_MAX_BYTES: '0' }, { bundled: true });
  try {
    await restOrders(server, 60);
    // the snapshot due at seq 50-ish is built while the orders go on: wait for /health to count one
    let snapshots: { taken: number; failed: number } = { taken: 0, failed: 0 };
    for (const deadline = performance.now() + 60_000; snapshots.taken === 0 && performance.now() < deadline; await sleep(100)) {
      snapshots = ((await (await fetch(`${server.url}/health`)).json()) as { snapshots: typeof snapshots }).snapshots;
    }
    assert.ok(snapshots.taken >= 1, `no snapshot was taken: ${server.output()}`);
    assert.equal(snapshots.failed, 0, server.output());
  } finally {
    server.proc.kill('SIGTERM');
    await server.exited;
  }
  const journal = openSqliteJournal(dir, { readOnly: true });
  try {
    await assertSnapshotIsReplay(journal);
  } finally {
    journal.close();
  }
});

test('background snapshots on PostgreSQL equal the state at their seq', { timeout: 60_000 }, async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const server = await startServer({ DATABASE_URL: db.url, STRIKEBOOK_SNAPSHOT_EVERY: '25', STRIKEBOOK_SNAPSHOT_INLINE_MAX_BYTES: '0' });
  try {
    await restOrders(server, 60);
    const snapshots = server.app.services.snapshots;
    await snapshots.idle();
    assert.ok(snapshots.counts.background >= 1, `background snapshots: ${JSON.stringify(snapshots.counts)}`);
    assert.equal(snapshots.counts.inline, 0);
  } finally {
    await server.stop();
  }
  const journal = await openPostgresJournal(db.url, { readOnly: true });
  try {
    const seq = await assertSnapshotIsReplay(journal);
    assert.ok(seq >= 25, `snapshot at seq ${seq}`);
  } finally {
    await journal.close();
  }
});

test('the snapshot process ends by itself once the server is gone (its channel closed)', { timeout: 60_000 }, async () => {
  const child = startTsProcess(new URL('../../src/app/snapshotProcess.ts', import.meta.url));
  await once(child, 'spawn');
  const exited = once(child, 'exit');
  // what a SIGKILLed server leaves it: no job, and a channel closed from the other end
  child.disconnect();
  const [code] = (await exited) as [number | null];
  assert.equal(code, 0);
});
