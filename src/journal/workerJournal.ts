// The journal's writes on a thread of their own. The engine thread hands each group-commit batch
// over and goes on applying commands while the batch is fsynced; the sequencer releases the
// batch's replies when the worker says it is durable (src/sequencer/sequencer.ts, pipelining).
// Reads (recovery, replay, meta) stay on the engine thread's own connection to the same file:
// WAL lets them run beside the writer.
import type { JournalRetention } from './retention.ts';
import { snapshotTextParts } from './snapshotParts.ts';
import { threadRequests } from './threadRequests.ts';
import { startTsWorker } from './tsWorker.ts';
import type { JournalRecord, JournalWriter } from './journal.ts';
import type { PragmaState } from './sqliteJournal.ts';

/**
 * WAL size (estimated by the writer thread) after which it has the checkpointer thread copy the WAL
 * into the database file: SQLite's own default, 1000 pages of 4 KiB.
 */
export const CHECKPOINT_AFTER_WAL_BYTES = 4 * 1024 * 1024;

/**
 * A snapshot longer than this (UTF-16 code units; about as many bytes for its ASCII text) is
 * written in parts of this size, each its own transaction, with the order batches in between
 * (src/journal/sqliteSnapshots.ts): a batch waits behind one part's write and fsync, a few ms, not
 * behind the whole snapshot (issue 36). Larger parts: fewer commits; smaller: shorter waits.
 */
export const SNAPSHOT_PART_CHARS = 1024 * 1024;

export type WriterRequest =
  | { op: 'append'; batch: PackedRecords }
  | { op: 'snapshot'; seq: number; data: string }
  | { op: 'snapshotPart'; seq: number; part: number; data: string }
  /** A part as UTF-8 bytes (snapshotParts.ts), transferred: built on another thread, never copied here. */
  | { op: 'snapshotBytesPart'; seq: number; part: number; data: Uint8Array }
  | { op: 'snapshotDone'; seq: number; parts: number }
  | { op: 'pragmas' }
  | { op: 'checkpointerPragmas' }
  | { op: 'close' };

/**
 * A batch as it crosses to the writer thread: every command text in one string, seqs and
 * timestamps in one array. Copying a message of N record objects costs the engine thread ~2 us per
 * record (structured clone); this costs one copy of the text and of the array.
 */
export interface PackedRecords {
  /** seq, ts, command length (UTF-16 code units) for each record, in order */
  numbers: Float64Array;
  /** the command texts, one after the other */
  text: string;
}

export function packRecords(records: JournalRecord[]): PackedRecords {
  const numbers = new Float64Array(records.length * 3);
  let text = '';
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    numbers[i * 3] = r.seq;
    numbers[i * 3 + 1] = r.ts;
    numbers[i * 3 + 2] = r.cmd.length;
    text += r.cmd;
  }
  return { numbers, text };
}

export function unpackRecords(batch: PackedRecords): JournalRecord[] {
  const { numbers, text } = batch;
  const records: JournalRecord[] = [];
  let at = 0;
  for (let i = 0; i < numbers.length; i += 3) {
    const end = at + numbers[i + 2]!;
    records.push({ seq: numbers[i]!, ts: numbers[i + 1]!, cmd: text.slice(at, end) });
    at = end;
  }
  return records;
}

/** `writeMs`: for an append, how long the writer thread took to write and sync it. */
export type WriterReply = { ok: true; pragmas?: PragmaState; writeMs?: number } | { ok: false; message: string };

export interface WorkerJournalWriter extends JournalWriter {
  append(records: JournalRecord[]): Promise<void>;
  /**
   * Called once per appended batch with the seconds the writer thread spent on it, from its arrival
   * there to the end of its commit (fsync included): the journal-write histogram. The sequencer's
   * commit time is longer by the hand-over both ways, which a busy engine thread delays.
   */
  onAppendWritten: ((seconds: number) => void) | null;
  saveSnapshot(seq: number, data: string): Promise<void>;
  saveSnapshotParts(seq: number, parts: Uint8Array[]): Promise<void>;
  /** The durability settings of the writer connection, read in the worker now (for tests). */
  pragmas(): Promise<PragmaState>;
  /** The same for the connection of the WAL checkpointer thread (src/journal/walCheckpointer.ts). */
  checkpointerPragmas(): Promise<PragmaState>;
  /** Finishes the writes handed over, closes the connections and ends the threads. */
  close(): Promise<void>;
}

/**
 * Starts the writer thread on `dir` (which must already hold the journal: open it on this thread
 * first, for recovery) and resolves once its connection is open with the durability settings.
 * `lastSeq` answers from the caller's own connection.
 */
export interface JournalWriterOptions {
  retention?: JournalRetention;
  /** Snapshot part size (SNAPSHOT_PART_CHARS by default). */
  snapshotPartChars?: number;
  /** Called after each snapshot part is written (tests: a crash between parts). */
  onSnapshotPart?: (seq: number, part: number, parts: number) => void;
}

export async function startJournalWriter(dir: string, lastSeq: () => number, opts: JournalWriterOptions = {}): Promise<WorkerJournalWriter> {
  const { retention } = opts;
  const partChars = opts.snapshotPartChars ?? SNAPSHOT_PART_CHARS;
  const thread = threadRequests<WriterRequest, WriterReply & { ok: true }>(startTsWorker(new URL('./journalWorker.ts', import.meta.url), { dir, retention }), 'journal writer');
  // the first message is the worker's own: its connections are open (or it failed to open them)
  await thread.ready;
  const request = thread.request;
  /** The snapshots being written, one after the other: the parts of two never interleave. */
  let snapshotting: Promise<void> = Promise.resolve();

  /**
   * Part by part, each handed over only once the one before is written: whatever batches the
   * sequencer hands over meanwhile are queued ahead of the next part (the thread answers in order),
   * so no batch waits behind more than one part. A snapshot that fits in one part is one request.
   */
  async function writeSnapshot(seq: number, data: string): Promise<void> {
    if (data.length <= partChars) {
      await request({ op: 'snapshot', seq, data });
      return;
    }
    const parts = snapshotTextParts(data, partChars);
    for (let part = 0; part < parts.length; part++) {
      await request({ op: 'snapshotPart', seq, part, data: parts[part]! });
      opts.onSnapshotPart?.(seq, part, parts.length);
    }
    await request({ op: 'snapshotDone', seq, parts: parts.length });
  }

  /**
   * The same for parts built elsewhere (their cut is the builder's): each buffer is transferred. A
   * part that is a view into a larger buffer (as parts read from an IPC channel are: one buffer per
   * read, shared by the messages in it) is copied first, so that the transfer takes nothing else.
   */
  async function writeSnapshotParts(seq: number, parts: Uint8Array[]): Promise<void> {
    for (let part = 0; part < parts.length; part++) {
      const given = parts[part]!;
      const data = given.byteOffset === 0 && given.byteLength === given.buffer.byteLength ? given : given.slice();
      await request({ op: 'snapshotBytesPart', seq, part, data }, [data.buffer as ArrayBuffer]);
      opts.onSnapshotPart?.(seq, part, parts.length);
    }
    await request({ op: 'snapshotDone', seq, parts: parts.length });
  }

  /** One snapshot after the other: the parts of two never interleave. */
  function queueSnapshot(write: () => Promise<void>): Promise<void> {
    const written = snapshotting.then(write);
    // a failed one rejects its own caller; the next one meets the broken thread by itself
    snapshotting = written.catch(() => undefined);
    return written;
  }

  const writer: WorkerJournalWriter = {
    async append(records) {
      const reply = await request({ op: 'append', batch: packRecords(records) });
      if (reply.writeMs !== undefined) writer.onAppendWritten?.(reply.writeMs / 1000);
    },
    onAppendWritten: null,
    saveSnapshot(seq, data) {
      return queueSnapshot(() => writeSnapshot(seq, data));
    },
    saveSnapshotParts(seq, parts) {
      return queueSnapshot(() => writeSnapshotParts(seq, parts));
    },
    lastSeq,
    async pragmas() {
      const reply = await request({ op: 'pragmas' });
      return reply.pragmas!;
    },
    async checkpointerPragmas() {
      const reply = await request({ op: 'checkpointerPragmas' });
      return reply.pragmas!;
    },
    // a snapshot being written is finished first: its later parts would meet a closed thread
    close: () => snapshotting.then(() => thread.close({ op: 'close' })),
  };
  return writer;
}
