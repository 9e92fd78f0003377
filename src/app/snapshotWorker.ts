// A background snapshot's thread (see backgroundSnapshots.ts): rebuilds the state as of one durable
// seq from the journal itself (the latest snapshot, then the records after it, through the same
// apply path as recovery), serializes it and hands the text back. It reads on connections of its
// own and writes nothing: the snapshot is saved by the journal's one writer.
import { parentPort, workerData } from 'node:worker_threads';
import { Exchange } from '../engine/exchange.ts';
import { restore, serialize } from '../engine/snapshot.ts';
import type { AsyncJournal, Journal } from '../journal/journal.ts';
import { openPostgresJournal } from '../journal/postgresJournal.ts';
import { openSqliteJournal } from '../journal/sqliteJournal.ts';
import { decodeCommand } from '../journal/commandCodec.ts';
import { encodeSnapshotParts } from '../journal/snapshotParts.ts';
import { applyCommand } from '../sequencer/sequencer.ts';
import { lowerThisThreadsPriority } from './threadPriority.ts';

export interface SnapshotJob {
  /** Where the journal is: PostgreSQL when `databaseUrl` is set, else SQLite under `dataDir`. */
  dataDir: string;
  databaseUrl: string | null;
  /** The state to snapshot: as of this seq, which must be durable already. */
  seq: number;
  /** The text is handed back in parts of at most this many UTF-16 code units (snapshotParts.ts). */
  partChars: number;
}

/**
 * The thread's one message: the snapshot text as UTF-8 parts whose buffers are transferred with it
 * (so the engine thread, which only passes them on to the journal's writer, copies nothing), and
 * its length in UTF-16 code units; `parts` is null when a snapshot at or past `seq` exists already.
 * `nice` is the priority the thread ran at (null: the platform could not lower it).
 */
export type SnapshotOutcome =
  | { ok: true; seq: number; parts: Uint8Array[] | null; chars: number; nice: number | null }
  | { ok: false; message: string };

async function snapshotAt(job: SnapshotJob): Promise<string | null> {
  const journal: Journal | AsyncJournal =
    job.databaseUrl !== null ? await openPostgresJournal(job.databaseUrl, { readOnly: true }) : openSqliteJournal(job.dataDir, { readOnly: true });
  try {
    const snap = await journal.latestSnapshot();
    if (snap !== null && snap.seq >= job.seq) return null;
    const ex = snap !== null ? restore(snap.data) : new Exchange();
    for await (const rec of journal.readAfter(snap?.seq ?? 0)) {
      if (rec.seq > job.seq) break;
      // an engine exception is an internal-error reply live and in recovery alike: the same here
      applyCommand(ex, decodeCommand(rec.cmd, rec.seq, rec.ts));
    }
    if (ex.seq !== job.seq) throw new Error(`the journal ends at seq ${ex.seq}, before seq ${job.seq}`);
    return serialize(ex);
  } finally {
    await journal.close();
  }
}

const job = workerData as SnapshotJob;
// no deadline: the replay takes only what the engine thread and the journal's writer leave idle
const nice = lowerThisThreadsPriority();
snapshotAt(job).then(
  (data) => {
    const parts = data === null ? null : encodeSnapshotParts(data, job.partChars);
    const outcome: SnapshotOutcome = { ok: true, seq: job.seq, parts, chars: data?.length ?? 0, nice };
    parentPort!.postMessage(outcome, parts?.map((p) => p.buffer as ArrayBuffer) ?? []);
  },
  (err: unknown) => parentPort!.postMessage({ ok: false, message: err instanceof Error ? err.message : String(err) } satisfies SnapshotOutcome),
);
