// The storage interface of the sequencer's durable log, declared here by the side that uses it
// (DESIGN.md: "storage adapters implement interfaces declared by the side that uses them").
// Adapters: sqliteJournal.ts (embedded, synchronous: `Journal`) and postgresJournal.ts (a network
// database, asynchronous: `AsyncJournal`). Both keep the same rules: contiguous seqs, one
// transaction per batch, durable before the write completes, every write refused after a failed one.

export interface JournalRecord {
  seq: number;
  ts: number;
  /** Compact JSON text of the command. */
  cmd: string;
  /**
   * PostgreSQL reads only: the transaction that wrote the record (its xmin). Each leader batch is
   * one INSERT, so records sharing it are one batch of the leader: a standby applies and renders
   * them as that batch, and the stream events it may republish after a takeover carry the same
   * dedupe ids as the leader's (src/app/natsEvents.ts).
   */
  tx?: string;
}

/**
 * What the sequencer writes through. A write either completes before it returns (void) or later
 * (a Promise); asynchronous writes complete in the order they were issued, and a failed one leaves
 * every later write refused. `Journal` below is the synchronous form.
 */
export interface JournalWriter {
  append(records: JournalRecord[]): void | Promise<void>;
  saveSnapshot(seq: number, data: string): void | Promise<void>;
  /**
   * The same snapshot as UTF-8 parts built on another thread (src/journal/snapshotParts.ts), written
   * without their text being made on the caller's thread. Optional: the sequencer joins the parts
   * into one string for a journal without it.
   */
  saveSnapshotParts?(seq: number, parts: Uint8Array[]): Promise<void>;
  lastSeq(): number;
}

/** The journal's small key/value metadata, as either adapter offers it (SQLite sync, PostgreSQL async). */
export interface MetaStore {
  getMeta(key: string): string | null | Promise<string | null>;
  setMeta(key: string, value: string): void | Promise<void>;
}

/** A journal record as the embedded journal reads it: seq, ts and command text, no object made. */
export type RawRecord = readonly [seq: number, ts: number, cmd: string];

export interface Journal extends JournalWriter {
  /**
   * Appends a batch in ONE transaction and returns only after it is durable (fsync). Throws on any
   * failure: the caller treats that as fatal. seqs must be contiguous after lastSeq().
   */
  append(records: JournalRecord[]): void;
  /** Records with seq > afterSeq, ascending, streamed (do not load all in memory). */
  readAfter(afterSeq: number): IterableIterator<JournalRecord>;
  /**
   * The same records as readAfter, a page of raw rows at a time (src/app/recovery.ts replays from
   * these: one generator step per page and no record object per row, issue 16). Optional: a
   * journal without it is replayed through readAfter.
   */
  readPagesAfter?(afterSeq: number): IterableIterator<readonly RawRecord[]>;
  /** 0 when empty. */
  lastSeq(): number;
  /** Stores a snapshot of the state as of `seq` (atomically; older snapshots may be pruned keeping the last 2). */
  saveSnapshot(seq: number, data: string): void;
  latestSnapshot(): { seq: number; data: string } | null;
  /** Key/value for small server metadata (e.g. a generated server key), durable. */
  getMeta(key: string): string | null;
  setMeta(key: string, value: string): void;
  close(): void;
}

/**
 * The same contract as `Journal` for a store reached over the network: every call that touches the
 * database returns a Promise. Writes complete in the order they were issued. `lastSeq()` stays
 * synchronous (the sequencer reads it in its constructor): the adapter, being the only writer,
 * keeps it in memory.
 */
export interface AsyncJournal extends JournalWriter {
  /** Resolves once the batch is committed durably; rejects on any failure (fatal for the caller). */
  append(records: JournalRecord[]): Promise<void>;
  /** Records with seq > afterSeq, ascending, fetched page by page (never all at once). */
  readAfter(afterSeq: number): AsyncIterableIterator<JournalRecord>;
  /** The last committed seq; 0 when empty. */
  lastSeq(): number;
  saveSnapshot(seq: number, data: string): Promise<void>;
  latestSnapshot(): Promise<{ seq: number; data: string } | null>;
  getMeta(key: string): Promise<string | null>;
  setMeta(key: string, value: string): Promise<void>;
  /** Lets the writes already issued finish, then closes the connections. */
  close(): Promise<void>;
}

/** Snapshots kept by every journal; older ones (and their parts) are removed when a new one completes. */
export const SNAPSHOTS_KEPT = 2;

/**
 * A write refused before anything reached the database, or rolled back cleanly: the connection is
 * in a known state, so it does not make the journal refuse later writes.
 */
export class RejectedWrite extends Error {
  override name = 'RejectedWrite';
}
