// Issue 16: journal records of the hot commands are compact text now (src/journal/commandCodec.ts).
// A journal written before (every record JSON) must still recover to the same state, and so must
// one that holds both forms (a server upgraded in the middle of its journal).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { recover } from '../../src/app/recovery.ts';
import { isReject } from '../../src/domain/errors.ts';
import { instrumentName } from '../../src/domain/instrument.ts';
import type { Command } from '../../src/engine/commands.ts';
import { Exchange } from '../../src/engine/exchange.ts';
import { BUY, SELL } from '../../src/engine/orderBook.ts';
import { serialize, stateHash } from '../../src/engine/snapshot.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';
import type { JournalRecord } from '../../src/journal/journal.ts';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { instrumentFields, loadCatalogConfig } from '../../src/market/catalog.ts';
import { Sequencer } from '../../src/sequencer/sequencer.ts';
import { tempDir } from '../helpers/server.ts';

const T0 = Date.UTC(2030, 0, 2, 12);
const EXPIRY = Date.UTC(2030, 2, 29, 8);
const LOT = 10_000_000;
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Runs a trading scenario through a sequencer on a fresh SQLite journal; returns its dir and live hash. */
async function liveJournal(): Promise<{ dir: string; hash: string; records: JournalRecord[] }> {
  const dir = tempDir('strikebook-oldjournal-');
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
  // in the key order the API builds it (src/api/methods/trading.ts)
  const place = (userId: number, side: 0 | 1, price: number, lots: number, label: string, clientOrderId: string | null): Command => ({
    t: 'place', userId, side, instrument: name, price, advanced: null, advPrice: null, lots: lots * LOT, type: 'limit',
    tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label, clientOrderId,
  });
  let trades = 0;
  for (let i = 0; i < 15; i++) {
    const rests = await Promise.all([
      run(place(1, SELL, mid + 5 * (i % 3), 1 + (i % 2), `a${i}`, `a${i}`)),
      // a label with the separator: this record stays JSON among compact ones
      run(place(2, BUY, mid - 20, 1, i % 5 === 0 ? `b|${i}` : '', null)),
    ]);
    for (const r of rests) assert.ok(!isReject(r), 'resting order accepted');
    const cross = (await run(place(2, BUY, mid + 10, 1, '', `b${i}`))) as { trades: unknown[] };
    trades += cross.trades.length;
    const restingBuy = (rests[1] as { order: { id: number } }).order.id;
    if (i % 4 === 1) await run({ t: 'edit', userId: 2, orderId: restingBuy, lots: 2 * LOT, price: mid - 25, postOnly: null, rejectPostOnly: null });
    if (i % 4 === 3) await run({ t: 'cancel', userId: 2, orderId: restingBuy });
    if (i % 6 === 5) await run({ t: 'index', currency: 'BTC', price: 100_000 + i, manual: true, by: 1 });
  }
  assert.ok(trades >= 10, `the scenario trades (${trades})`);
  const records = [...journal.readAfter(0)];
  journal.close();
  return { dir, hash: stateHash(ex), records };
}

/** A journal holding `records`, each written as `text` gives it. */
function journalOf(records: JournalRecord[], text: (r: JournalRecord, i: number) => string): string {
  const dir = tempDir('strikebook-oldjournal-');
  dirs.push(dir);
  const j = openSqliteJournal(dir);
  j.append(records.map((r, i) => ({ seq: r.seq, ts: r.ts, cmd: text(r, i) })));
  j.close();
  return dir;
}

function recoveredHash(dir: string): string {
  const j = openSqliteJournal(dir);
  try {
    const errors: unknown[] = [];
    const { ex } = recover(j, (e) => errors.push(e));
    assert.deepEqual(errors, []);
    return stateHash(ex);
  } finally {
    j.close();
  }
}

test('a journal written before the compact encoding (all JSON) recovers to the live state hash, as does one mixing both', async () => {
  const live = await liveJournal();
  const compact = live.records.filter((r) => !r.cmd.startsWith('{'));
  const kinds = new Set(compact.map((r) => decodeCommand(r.cmd, r.seq, r.ts).t));
  assert.deepEqual([...kinds].sort(), ['cancel', 'edit', 'index', 'place'], 'the new journal writes these compactly');
  assert.ok(live.records.some((r) => r.cmd.startsWith('{"t":"place"')), 'a place with a separator in its label stayed JSON');

  assert.equal(recoveredHash(live.dir), live.hash, 'the new journal recovers to the live state');
  // the old server wrote JSON.stringify of the sequenced command: the decoded command, key for key
  const asOld = (r: JournalRecord) => JSON.stringify(decodeCommand(r.cmd, r.seq, r.ts));
  const old = journalOf(live.records, asOld);
  assert.equal(recoveredHash(old), live.hash, 'the all-JSON journal recovers to the live state');
  const mixed = journalOf(live.records, (r, i) => (i % 2 === 0 ? asOld(r) : r.cmd));
  assert.equal(recoveredHash(mixed), live.hash, 'a journal of both forms recovers to the live state');
});
