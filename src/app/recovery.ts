// Recovery (DESIGN.md rule 4): the latest snapshot, then every journal record after it, through the
// same apply path as live commands. Two forms of one procedure: synchronous for the embedded
// journal (no await per record: it is the faster path), asynchronous for a network database.
import type { Sequenced } from '../engine/commands.ts';
import { Exchange } from '../engine/exchange.ts';
import { restore } from '../engine/snapshot.ts';
import type { AsyncJournal, Journal, JournalRecord, RawRecord } from '../journal/journal.ts';
import { applyCommand } from '../sequencer/sequencer.ts';
import { decodeCommand } from '../journal/commandCodec.ts';
import { MarketViews } from '../views/marketViews.ts';
import { MARKET_VIEWS_META } from './plannedStop.ts';

export interface Recovered {
  ex: Exchange;
  /** Journal records applied after the snapshot. */
  replayed: number;
  /** The size of the snapshot text recovery started from (null without one). */
  snapshotBytes: number | null;
}

type OnCommandError = (err: unknown, cmd: Sequenced) => void;

function fromSnapshot(snap: { seq: number; data: string } | null, views?: MarketViews, savedViews?: string | null): Exchange {
  const ex = snap ? restore(snap.data) : new Exchange();
  // the read models saved at a planned stop, only beside the snapshot of their own seq (src/app/plannedStop.ts)
  if (views !== undefined && snap !== null && savedViews != null && MarketViews.savedSeq(savedViews) === snap.seq) views.load(savedViews);
  views?.attach(ex);
  return ex;
}

/** Applies journal records in order through the live apply path; returns how many. */
export function replayRecords(ex: Exchange, records: Iterable<JournalRecord>, onError?: OnCommandError): number {
  let replayed = 0;
  for (const rec of records) {
    applyCommand(ex, decodeCommand(rec.cmd, rec.seq, rec.ts), onError);
    replayed++;
  }
  return replayed;
}

/** The same from pages of raw rows (no record object per row); returns how many. */
export function replayPages(ex: Exchange, pages: Iterable<readonly RawRecord[]>, onError?: OnCommandError): number {
  let replayed = 0;
  for (const rows of pages) {
    for (const r of rows) applyCommand(ex, decodeCommand(r[2], r[0], r[1]), onError);
    replayed += rows.length;
  }
  return replayed;
}

/** Replays a journal's records after `afterSeq`, by pages when it offers them (bench/replayBench.ts times this). */
export function replayJournal(ex: Exchange, journal: Journal, afterSeq: number, onError?: OnCommandError): number {
  return journal.readPagesAfter !== undefined ? replayPages(ex, journal.readPagesAfter(afterSeq), onError) : replayRecords(ex, journal.readAfter(afterSeq), onError);
}

export function recover(journal: Journal, onError?: OnCommandError, views?: MarketViews): Recovered {
  const snap = journal.latestSnapshot();
  const ex = fromSnapshot(snap, views, views !== undefined && snap !== null ? journal.getMeta(MARKET_VIEWS_META) : null);
  const replayed = replayJournal(ex, journal, snap ? snap.seq : 0, onError);
  return { ex, replayed, snapshotBytes: snap?.data.length ?? null };
}

export async function recoverAsync(journal: AsyncJournal, onError?: OnCommandError, views?: MarketViews): Promise<Recovered> {
  const snap = await journal.latestSnapshot();
  const ex = fromSnapshot(snap, views, views !== undefined && snap !== null ? await journal.getMeta(MARKET_VIEWS_META) : null);
  let replayed = 0;
  for await (const rec of journal.readAfter(snap ? snap.seq : 0)) {
    applyCommand(ex, decodeCommand(rec.cmd, rec.seq, rec.ts), onError);
    replayed++;
  }
  return { ex, replayed, snapshotBytes: snap?.data.length ?? null };
}
