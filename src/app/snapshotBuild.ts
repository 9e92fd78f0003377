// Builds a background snapshot's text (snapshotProcess.ts runs it): the state as of one durable seq,
// rebuilt from the journal itself (the latest snapshot, then the records after it, through the same
// apply path as recovery).
//
// Why `stillWanted` (issue 36): the replay runs for seconds without yielding (SQLite reads are
// synchronous), so the process never sees its IPC channel close when the server is killed. An orphan
// then spends the rest of its build taking a core from the server's successor for a snapshot nobody
// can save (measured: 6.5-7.0 s after a SIGKILL of its parent). Asked between stretches of records,
// it stops within 0.02-0.04 s.
import { Exchange } from '../engine/exchange.ts';
import { restore, serialize } from '../engine/snapshot.ts';
import type { AsyncJournal, Journal } from '../journal/journal.ts';
import { openPostgresJournal } from '../journal/postgresJournal.ts';
import { openSqliteJournal } from '../journal/sqliteJournal.ts';
import { decodeCommand } from '../journal/commandCodec.ts';
import { applyCommand } from '../sequencer/sequencer.ts';

export interface SnapshotJob {
  /** Where the journal is: PostgreSQL when `databaseUrl` is set, else SQLite under `dataDir`. */
  dataDir: string;
  databaseUrl: string | null;
  /** The state to snapshot: as of this seq, which must be durable already. */
  seq: number;
  /** The text is sent in parts of at most this many UTF-16 code units (snapshotParts.ts). */
  partChars: number;
}

/** How many records are applied between two `stillWanted` checks: ~10 ms of replay. */
export const RECORDS_PER_WANTED_CHECK = 1024;

/** Thrown when `stillWanted` says no: the build stopped and nothing is to be sent. */
export class SnapshotNoLongerWanted extends Error {
  constructor() {
    super('the snapshot is no longer wanted (the server that asked for it is gone)');
  }
}

/**
 * The snapshot's text as of `job.seq`, or null when a snapshot at or past it exists already.
 * `stillWanted` is asked before and after the restore, every RECORDS_PER_WANTED_CHECK records and
 * before the serialize; a false stops the build with SnapshotNoLongerWanted.
 */
export async function buildSnapshot(job: SnapshotJob, stillWanted: () => boolean): Promise<string | null> {
  const check = (): void => {
    if (!stillWanted()) throw new SnapshotNoLongerWanted();
  };
  check();
  const journal: Journal | AsyncJournal =
    job.databaseUrl !== null ? await openPostgresJournal(job.databaseUrl, { readOnly: true }) : openSqliteJournal(job.dataDir, { readOnly: true });
  try {
    const snap = await journal.latestSnapshot();
    if (snap !== null && snap.seq >= job.seq) return null;
    const ex = snap !== null ? restore(snap.data) : new Exchange();
    check();
    let sinceCheck = 0;
    for await (const rec of journal.readAfter(snap?.seq ?? 0)) {
      if (rec.seq > job.seq) break;
      // an engine exception is an internal-error reply live and in recovery alike: the same here
      applyCommand(ex, decodeCommand(rec.cmd, rec.seq, rec.ts));
      if (++sinceCheck === RECORDS_PER_WANTED_CHECK) {
        sinceCheck = 0;
        check();
      }
    }
    if (ex.seq !== job.seq) throw new Error(`the journal ends at seq ${ex.seq}, before seq ${job.seq}`);
    check();
    return serialize(ex);
  } finally {
    await journal.close();
  }
}
