// A clean replay of a data directory's journal: every record from seq 1 on a fresh engine, ignoring
// snapshots, so a test can compare the state a server recovered with the state its journal means.
import { Exchange } from '../../src/engine/exchange.ts';
import { stateHash } from '../../src/engine/snapshot.ts';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { applyCommand } from '../../src/sequencer/sequencer.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';

export interface Replay {
  seq: number;
  hash: string;
  ex: Exchange;
  /** Engine exceptions met on the way (a correct journal has none). */
  errors: unknown[];
  /** Seq of the latest snapshot in the journal (0 without one). */
  snapshotSeq: number;
}

/** Replays the journal up to `uptoSeq` (all of it by default). WAL: safe beside a running server. */
export function cleanReplay(dataDir: string, uptoSeq = Number.MAX_SAFE_INTEGER): Replay {
  const journal = openSqliteJournal(dataDir);
  try {
    const ex = new Exchange();
    const errors: unknown[] = [];
    for (const rec of journal.readAfter(0)) {
      if (rec.seq > uptoSeq) break;
      applyCommand(ex, decodeCommand(rec.cmd, rec.seq, rec.ts), (err) => errors.push(err));
    }
    return { seq: ex.seq, hash: stateHash(ex), ex, errors, snapshotSeq: journal.latestSnapshot()?.seq ?? 0 };
  } finally {
    journal.close();
  }
}
