// The journal writer thread (see workerJournal.ts): owns the SQLite connection that appends and
// snapshots, so the commit's fsync waits here instead of on the engine's thread. It does what it
// is told in the order it is told, and answers each request in that order. It also decides when
// the WAL is checkpointed, and has that done on a thread of its own (walCheckpointer.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { openSqliteJournal, pragmaState } from './sqliteJournal.ts';
import type { JournalRetention } from './retention.ts';
import { decodeSnapshotPart } from './snapshotParts.ts';
import { threadRequests } from './threadRequests.ts';
import { startTsWorker } from './tsWorker.ts';
import type { CheckpointerReply, CheckpointerRequest } from './walCheckpointer.ts';
import { CHECKPOINT_AFTER_WAL_BYTES, unpackRecords, type WriterReply, type WriterRequest } from './workerJournal.ts';

/**
 * Besides the pages its text fills, a commit rewrites the b-tree's last leaf and an interior page:
 * counted so that many small commits (a quiet exchange) still trigger checkpoints. Overcounting
 * only checkpoints a little early.
 */
const PAGES_PER_COMMIT = 2;
/** Per journal record, besides its command text: seq, ts and the b-tree cell. */
const RECORD_OVERHEAD_BYTES = 32;

const port = parentPort!;
const { dir, retention } = workerData as { dir: string; retention?: JournalRetention };
const journal = openSqliteJournal(dir, { autoCheckpoint: false, retention });
const checkpointer = threadRequests<CheckpointerRequest, CheckpointerReply & { ok: true }>(
  startTsWorker(new URL('./walCheckpointer.ts', import.meta.url), { dir }),
  'WAL checkpointer',
);
// its connection's settings, read when it opened (they are set once per connection)
const checkpointerPragmas = (await checkpointer.ready).pragmas!;
const pageSize = Number(journal.connections()[0]!.pragma('page_size', { simple: true }));

/** Why writes are refused: an earlier write or checkpoint failed (DESIGN.md rule 3). */
let failure: string | null = null;
let closing = false;
/** WAL bytes written since the last checkpoint started (estimated). */
let sinceCheckpoint = 0;
let checkpointing = false;

function answer(reply: WriterReply): void {
  if (!reply.ok) failure ??= reply.message;
  port.postMessage(reply);
}

/** Counts what a commit of `bytes` added to the WAL; past the threshold, the checkpointer copies it. */
function committed(bytes: number): void {
  sinceCheckpoint += (Math.ceil(bytes / pageSize) + PAGES_PER_COMMIT) * pageSize;
  if (checkpointing || failure !== null || sinceCheckpoint < CHECKPOINT_AFTER_WAL_BYTES) return;
  checkpointing = true;
  sinceCheckpoint = 0;
  checkpointer.request({ op: 'checkpoint' }).then(
    () => {
      checkpointing = false;
      if (failure !== null || closing) return;
      // Much committed while it ran (a snapshot's parts, issue 36): the other thread copies that too,
      // rather than this one with every batch waiting behind the copy and its fsync.
      if (sinceCheckpoint >= CHECKPOINT_AFTER_WAL_BYTES) {
        committed(0);
        return;
      }
      // The other thread copied the frames committed when it started; the few committed since are
      // copied here. SQLite starts the WAL over from its beginning only when nothing in it is left
      // to copy; under steady load that never happens by itself, and the WAL file would grow.
      try {
        journal.checkpoint();
      } catch (err) {
        failure ??= `WAL checkpoint failed: ${err instanceof Error ? err.message : String(err)}`;
      }
    },
    (err: Error) => {
      checkpointing = false;
      failure ??= `WAL checkpoint failed: ${err.message}`;
    },
  );
}

/**
 * One retention step after a write was answered (src/journal/retention.ts): a few thousand old
 * records at most, so the next batch waits a few ms at worst. A failed archive is tried again at
 * the next write; a failed delete breaks the journal like any failed write, and the next append
 * reports it.
 */
function compact(): void {
  try {
    journal.compactStep();
  } catch {
    // see above
  }
}

port.on('message', (req: WriterRequest) => {
  // once closing, nothing more is answered: the engine thread sends nothing after close, and
  // whatever it did send is rejected there when this thread exits
  if (closing) return;
  // after a failed write nothing more is written, whatever the journal would still accept: the
  // engine thread stops on the failure, and writes handed over before it learned of it must not land
  if (failure !== null && (req.op === 'append' || req.op === 'snapshot' || req.op === 'snapshotPart' || req.op === 'snapshotBytesPart' || req.op === 'snapshotDone')) {
    answer({ ok: false, message: `${req.op} refused, an earlier write failed (${failure}); restart and recover` });
    return;
  }
  try {
    switch (req.op) {
      case 'append': {
        const records = unpackRecords(req.batch);
        const started = performance.now();
        journal.append(records);
        // this thread's own time for the batch (its insert, commit and fsync): the engine thread's
        // commit time adds the hand-over both ways and its own delay in noticing the reply
        answer({ ok: true, writeMs: performance.now() - started });
        committed(req.batch.text.length + records.length * RECORD_OVERHEAD_BYTES);
        compact();
        break;
      }
      case 'snapshot':
        journal.saveSnapshot(req.seq, req.data);
        answer({ ok: true });
        committed(req.data.length);
        compact();
        break;
      case 'snapshotPart': {
        journal.saveSnapshotPart(req.seq, req.part, req.data);
        answer({ ok: true });
        committed(req.data.length);
        break;
      }
      case 'snapshotBytesPart': {
        const text = decodeSnapshotPart(req.data);
        journal.saveSnapshotPart(req.seq, req.part, text);
        answer({ ok: true });
        committed(text.length);
        break;
      }
      case 'snapshotDone': {
        journal.finishSnapshot(req.seq, req.parts);
        answer({ ok: true });
        committed(0);
        compact();
        break;
      }
      case 'pragmas':
        answer({ ok: true, pragmas: pragmaState(journal.connections()[0]!) });
        break;
      case 'checkpointerPragmas':
        answer({ ok: true, pragmas: checkpointerPragmas });
        break;
      case 'close':
        closing = true;
        journal.close();
        // a checkpoint in progress finishes first: the close request queues behind it
        void checkpointer.close({ op: 'close' }).finally(() => {
          answer({ ok: true });
          port.close();
        });
        break;
    }
  } catch (err) {
    // The journal itself refuses every write after a failed one; the engine side stops on this.
    answer({ ok: false, message: err instanceof Error ? err.message : String(err) });
  }
});

answer({ ok: true, pragmas: pragmaState(journal.connections()[0]!) });
