// The WAL checkpointer thread, owned by the journal writer thread (journalWorker.ts).
//
// Why a thread of its own: with SQLite's automatic checkpoint, the commit that grows the WAL past
// 1000 pages also copies them into the database file and fsyncs it, and only then returns. Measured
// under the HTTP benchmark, that made one commit in ~60 take 5-15 ms instead of ~0.5 ms, and every
// reply waiting on it (all 100 connections at once) came late: it was most of the p99 latency. Here
// the copy and its fsync run beside the commits; the writer only finishes the last few frames.
import { parentPort, workerData } from 'node:worker_threads';
import { openSqliteCheckpointer, pragmaState, type CheckpointResult, type PragmaState } from './sqliteJournal.ts';

export type CheckpointerRequest = { op: 'checkpoint' } | { op: 'pragmas' } | { op: 'close' };
export type CheckpointerReply = { ok: true; result?: CheckpointResult; pragmas?: PragmaState } | { ok: false; message: string };

const port = parentPort!;
const checkpointer = openSqliteCheckpointer((workerData as { dir: string }).dir);

port.on('message', (req: CheckpointerRequest) => {
  let reply: CheckpointerReply;
  try {
    switch (req.op) {
      case 'checkpoint':
        reply = { ok: true, result: checkpointer.checkpoint() };
        break;
      case 'pragmas':
        reply = { ok: true, pragmas: pragmaState(checkpointer.connection()) };
        break;
      case 'close':
        checkpointer.close();
        port.postMessage({ ok: true } satisfies CheckpointerReply);
        port.close();
        return;
    }
  } catch (err) {
    reply = { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(reply);
});

port.postMessage({ ok: true, pragmas: pragmaState(checkpointer.connection()) } satisfies CheckpointerReply);
