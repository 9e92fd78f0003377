// The journal writer thread (see workerJournal.ts): owns the SQLite connection that appends and
// snapshots, so the commit's fsync waits here instead of on the engine's thread. It does what it
// is told in the order it is told, and answers each request in that order.
import { parentPort, workerData } from 'node:worker_threads';
import { openSqliteJournal, pragmaState } from './sqliteJournal.ts';
import type { WriterReply, WriterRequest } from './workerJournal.ts';

const port = parentPort!;
const journal = openSqliteJournal((workerData as { dir: string }).dir);

let failed = false;

function answer(reply: WriterReply): void {
  if (!reply.ok) failed = true;
  port.postMessage(reply);
}

port.on('message', (req: WriterRequest) => {
  // after a failed write nothing more is written, whatever the journal would still accept: the
  // engine thread stops on the failure, and writes handed over before it learned of it must not land
  if (failed && (req.op === 'append' || req.op === 'snapshot')) {
    answer({ ok: false, message: `${req.op} refused, an earlier write failed; restart and recover` });
    return;
  }
  try {
    switch (req.op) {
      case 'append':
        journal.append(req.records);
        answer({ ok: true });
        break;
      case 'snapshot':
        journal.saveSnapshot(req.seq, req.data);
        answer({ ok: true });
        break;
      case 'pragmas':
        answer({ ok: true, pragmas: pragmaState(journal.connections()[0]!) });
        break;
      case 'close':
        journal.close();
        answer({ ok: true });
        port.close();
        break;
    }
  } catch (err) {
    // The journal itself refuses every write after a failed one; the engine side stops on this.
    answer({ ok: false, message: err instanceof Error ? err.message : String(err) });
  }
});

answer({ ok: true, pragmas: pragmaState(journal.connections()[0]!) });
