// Snapshots written in parts (src/journal/sqliteSnapshots.ts, issue 36): a process killed between
// two parts recovers from the snapshot before, to the same state hash as the live engine had; a
// completed one is restored whole; an interrupted attempt's parts are never read, and go once a
// later snapshot completes.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { recover } from '../../src/app/recovery.ts';
import { instrumentName } from '../../src/domain/instrument.ts';
import type { Command } from '../../src/engine/commands.ts';
import { Exchange } from '../../src/engine/exchange.ts';
import { BUY, SELL } from '../../src/engine/orderBook.ts';
import { serialize, stateHash } from '../../src/engine/snapshot.ts';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { instrumentFields, loadCatalogConfig } from '../../src/market/catalog.ts';
import { Sequencer } from '../../src/sequencer/sequencer.ts';
import { tempDir } from '../helpers/server.ts';

const T0 = Date.UTC(2030, 0, 2, 12);
const EXPIRY = Date.UTC(2030, 2, 29, 8);
const LOT = 10_000_000;
const ROOT = path.resolve(import.meta.dirname, '../..');
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A traded journal with a whole snapshot half way; returns the state at its end (hash and text). */
async function journalWithState(): Promise<{ dir: string; firstSnap: number; seq: number; hash: string; text: string }> {
  const dir = tempDir('strikebook-snapparts-');
  dirs.push(dir);
  const journal = openSqliteJournal(dir);
  const ex = new Exchange();
  let t = T0;
  const seq = new Sequencer(ex, journal, { now: () => t++ }, { snapshotEvery: 1e9, onFatal: (e) => assert.fail(String(e)), onCommandError: (e) => assert.fail(String(e)) }, () => serialize(ex));
  const run = (cmd: Command) => seq.submit(cmd, (r) => r);
  const name = instrumentName('BTC', EXPIRY, 100_000, 'call');
  const fields = instrumentFields(loadCatalogConfig().currencies.find((c) => c.currency === 'BTC')!);
  await run({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null });
  await run({ t: 'list', instruments: [{ currency: 'BTC', name, optionType: 'call', strike: 100_000, expiry: EXPIRY, settlementPeriod: 'month', ...fields }] });
  for (const email of ['a@example.com', 'b@example.com']) await run({ t: 'create_user', email, passwordHash: 'x', role: 'user', inviteCode: null, by: null });
  for (const userId of [1, 2]) await run({ t: 'deposit', userId, currency: 'BTC', amount: 50e8, depositId: null, by: userId });
  const m = ex.markets.get(ex.instruments.get(name)!.id)!;
  const mid = Math.round((m.minPrice + m.maxPrice) / 2 / 5) * 5;
  const place = (userId: number, side: 0 | 1, price: number): Command => ({
    t: 'place', userId, side, instrument: name, price, advanced: null, advPrice: null, lots: LOT, type: 'limit',
    tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null,
  });
  let firstSnap = 0;
  for (let i = 0; i < 40; i++) {
    await run(place(1, SELL, mid + 5 * (i % 3)));
    await run(place(2, BUY, mid - 20));
    await run(place(2, BUY, mid + 10));
    if (i === 19) firstSnap = seq.takeSnapshot()!.seq;
  }
  journal.close();
  return { dir, firstSnap, seq: ex.seq, hash: stateHash(ex), text: serialize(ex) };
}

/** Writes the state's snapshot in parts of `partChars` from a child process that SIGKILLs itself after part `killAfter` (-1: once complete). */
function writeAndDie(dir: string, text: string, seq: number, partChars: number, killAfter: number): void {
  const file = path.join(dir, `snapshot-${seq}.txt`);
  writeFileSync(file, text);
  try {
    execFileSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/helpers/snapshotPartsChild.ts'), dir, file, String(seq), String(partChars), String(killAfter)], { cwd: ROOT, stdio: 'pipe' });
    assert.fail('the child was to kill itself');
  } catch (err) {
    assert.equal((err as { signal?: string }).signal, 'SIGKILL', `the child died by SIGKILL: ${String((err as { stderr?: Buffer }).stderr ?? err)}`);
  }
}

function partsOf(dir: string): number[][] {
  const j = openSqliteJournal(dir);
  try {
    return j.connections()[0]!.prepare<[], number[]>('SELECT seq, part FROM snapshot_parts ORDER BY seq, part').raw().all();
  } finally {
    j.close();
  }
}

test('killed mid-snapshot-write: recovery uses the snapshot before and reaches the same state hash; a completed one is restored whole', { timeout: 60_000 }, async () => {
  const s = await journalWithState();
  const partChars = Math.ceil(s.text.length / 8);
  assert.ok(s.text.length > 4 * partChars, 'the snapshot takes several parts');

  writeAndDie(s.dir, s.text, s.seq, partChars, 3);
  assert.equal(partsOf(s.dir).length, 4, 'parts 0-3 were committed before the kill');
  let j = openSqliteJournal(s.dir);
  try {
    assert.equal(j.latestSnapshot()!.seq, s.firstSnap, 'the interrupted snapshot is not the latest');
    const r = recover(j);
    assert.equal(r.replayed, s.seq - s.firstSnap);
    assert.equal(stateHash(r.ex), s.hash, 'recovered to the live state');
  } finally {
    j.close();
  }

  // the same snapshot again, this time to the end (a first part clears the interrupted attempt's)
  writeAndDie(s.dir, s.text, s.seq, partChars, -1);
  j = openSqliteJournal(s.dir);
  try {
    const snap = j.latestSnapshot()!;
    assert.equal(snap.seq, s.seq);
    assert.equal(snap.data, s.text, 'the parts put back together are the text');
    const r = recover(j);
    assert.equal(r.replayed, 0);
    assert.equal(stateHash(r.ex), s.hash);
  } finally {
    j.close();
  }
  assert.equal(partsOf(s.dir).length, Math.ceil(s.text.length / partChars));
});

test('parts a crash left behind are never read and go once a later snapshot completes', { timeout: 60_000 }, async () => {
  const s = await journalWithState();
  const partChars = Math.ceil(s.text.length / 6);
  // an attempt at an earlier seq, interrupted: its parts stay, unnamed
  writeAndDie(s.dir, s.text.slice(0, 3 * partChars), s.seq - 1, partChars, 1);
  assert.deepEqual(partsOf(s.dir).map((p) => p[0]), [s.seq - 1, s.seq - 1]);
  writeAndDie(s.dir, s.text, s.seq, partChars, -1);
  assert.ok(partsOf(s.dir).every((p) => p[0] === s.seq), 'only the completed snapshot\'s parts are left');
  const j = openSqliteJournal(s.dir);
  try {
    assert.equal(stateHash(recover(j).ex), s.hash);
  } finally {
    j.close();
  }
});
