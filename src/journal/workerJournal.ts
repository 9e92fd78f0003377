// The journal's writes on a thread of their own. The engine thread hands each group-commit batch
// over and goes on applying commands while the batch is fsynced; the sequencer releases the
// batch's replies when the worker says it is durable (src/sequencer/sequencer.ts, pipelining).
// Reads (recovery, replay, meta) stay on the engine thread's own connection to the same file:
// WAL lets them run beside the writer.
import { Worker } from 'node:worker_threads';
import type { JournalRecord, JournalWriter } from './journal.ts';
import type { PragmaState } from './sqliteJournal.ts';

export type WriterRequest =
  | { op: 'append'; records: JournalRecord[] }
  | { op: 'snapshot'; seq: number; data: string }
  | { op: 'pragmas' }
  | { op: 'close' };

export type WriterReply = { ok: true; pragmas?: PragmaState } | { ok: false; message: string };

export interface WorkerJournalWriter extends JournalWriter {
  append(records: JournalRecord[]): Promise<void>;
  saveSnapshot(seq: number, data: string): Promise<void>;
  /** The durability settings of the writer connection, read in the worker now (for tests). */
  pragmas(): Promise<PragmaState>;
  /** Finishes the writes handed over, closes the connection and ends the thread. */
  close(): Promise<void>;
}

interface Waiter {
  resolve: (reply: WriterReply & { ok: true }) => void;
  reject: (err: Error) => void;
}

/**
 * Starts the writer thread on `dir` (which must already hold the journal: open it on this thread
 * first, for recovery) and resolves once its connection is open with the durability settings.
 * `lastSeq` answers from the caller's own connection.
 */
export async function startJournalWriter(dir: string, lastSeq: () => number): Promise<WorkerJournalWriter> {
  // A worker does not inherit the TypeScript loader the process was started with (`--import tsx`),
  // so its entry registers tsx first and then imports the TypeScript module.
  const entry = new URL('./journalWorker.ts', import.meta.url).href;
  const tsxApi = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`;
  const worker = new Worker(bootstrap, { eval: true, workerData: { dir } });
  // Replies come in request order, so one FIFO of waiters matches them up.
  const waiters: Waiter[] = [];
  let broken: Error | null = null;
  let exited = false;

  const breakAll = (err: Error) => {
    broken ??= err;
    for (const w of waiters.splice(0)) w.reject(broken);
  };
  worker.on('message', (reply: WriterReply) => {
    const w = waiters.shift();
    if (!w) return;
    if (reply.ok) w.resolve(reply);
    else {
      // after a failed write the journal's state on disk is unknown: nothing more is written
      const err = new Error(`journal writer: ${reply.message}`);
      broken ??= err;
      w.reject(err);
    }
  });
  worker.on('error', (err) => breakAll(new Error('journal writer thread failed', { cause: err })));
  worker.on('exit', (code) => {
    exited = true;
    breakAll(new Error(`journal writer thread exited (code ${code})`));
  });

  const request = (req: WriterRequest): Promise<WriterReply & { ok: true }> => {
    if (broken) return Promise.reject(broken);
    return new Promise((resolve, reject) => {
      waiters.push({ resolve, reject });
      worker.postMessage(req);
    });
  };

  // the first message is the worker's own: its connection is open (or it failed to open)
  await new Promise<void>((resolve, reject) => {
    waiters.push({ resolve: () => resolve(), reject });
  });

  return {
    async append(records) {
      await request({ op: 'append', records });
    },
    async saveSnapshot(seq, data) {
      await request({ op: 'snapshot', seq, data });
    },
    lastSeq,
    async pragmas() {
      const reply = await request({ op: 'pragmas' });
      return reply.pragmas!;
    },
    async close() {
      if (exited) return;
      const gone = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      if (!broken) await request({ op: 'close' }).catch(() => undefined);
      else await worker.terminate();
      await gone;
    },
  };
}
