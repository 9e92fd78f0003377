// The rig the sequencer tests run on: a Sequencer over an Exchange and a MemoryJournal with a clock
// that ticks per reading, event-loop helpers, a full replay of a journal, and a trading scenario.
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import { instrumentName } from '../../src/domain/instrument.ts';
import type { Command } from '../../src/engine/commands.ts';
import { Exchange } from '../../src/engine/exchange.ts';
import { BUY, SELL } from '../../src/engine/orderBook.ts';
import { serialize } from '../../src/engine/snapshot.ts';
import { instrumentFields, loadCatalogConfig } from '../../src/market/catalog.ts';
import { Sequencer, applyCommand, type SequencerOptions } from '../../src/sequencer/sequencer.ts';
import { MemoryJournal } from '../helpers/memoryJournal.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';

const T0 = Date.UTC(2030, 0, 2, 12);
export const EXPIRY = Date.UTC(2030, 2, 29, 8);
const BTC = 1e8; // minor units per coin
export const LOT = 10_000_000; // 0.1 contract at AMOUNT_SCALE 8

/** A clock that moves 1 ms per reading: deterministic, and every command gets its own time. */
export function fakeClock(start = T0) {
  let t = start;
  return { now: () => t++ };
}

export interface Rig {
  ex: Exchange;
  journal: MemoryJournal;
  seq: Sequencer;
  fatal: unknown[];
  commandErrors: unknown[];
}

export function rig(opts: Partial<SequencerOptions> = {}, journal = new MemoryJournal(), ex = new Exchange()): Rig {
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

export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
export const index = (price: number): Command => ({ t: 'index', currency: 'BTC', price, manual: true, by: null });

/** Settles `p` if it settles within a few event-loop turns; 'pending' otherwise. */
export async function settledWithin<T>(p: Promise<T>, turns = 5): Promise<{ value: T } | { error: unknown } | 'pending'> {
  let out: { value: T } | { error: unknown } | 'pending' = 'pending';
  p.then(
    (value) => (out = { value }),
    (error: unknown) => (out = { error }),
  );
  for (let i = 0; i < turns; i++) await nextTurn();
  return out;
}

export function fullReplay(journal: MemoryJournal, uptoSeq = Infinity): Exchange {
  const ex = new Exchange();
  for (const r of journal.readAfter(0)) {
    if (r.seq > uptoSeq) break;
    applyCommand(ex, decodeCommand(r.cmd, r.seq, r.ts));
  }
  return ex;
}

/** Lists one BTC call, creates two funded users, then trades, rests and cancels between them; with
 *  `fresh`, every order is submitted as its caller's own object (as private/buy and sell do). */
export async function tradingScenario(seq: Sequencer, ex: Exchange, fresh = false): Promise<void> {
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
