// The embedded journal: one SQLite file `<dir>/strikebook.db` holding the command log, the snapshots
// and small server metadata. DESIGN.md rules 3 and 4 rest on it: a command is acknowledged only after
// append() returned, so append() must not return before the batch is on disk.

import { KEEP_ALL, archiveRecords, type JournalRetention } from './retention.ts';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { RejectedWrite, SNAPSHOTS_KEPT, type Journal, type JournalRecord, type RawRecord } from './journal.ts';
import { migrateSnapshotParts, snapshotStore } from './sqliteSnapshots.ts';

export type SqliteDatabase = Database.Database;

export interface SqliteJournal extends Journal {
  readPagesAfter(afterSeq: number): IterableIterator<readonly RawRecord[]>;
  /**
   * Removes (and with `archive` first archives) up to `retention.stepRecords` of the oldest records
   * up to the second-to-last snapshot; returns how many. Nothing with retention `keep`.
   */
  compactStep(): number;
  /**
   * Every connection this journal has open right now: the writer first, then one per readAfter()
   * iteration in progress. For tests and diagnostics (e.g. asserting the pragmas of each).
   */
  connections(): SqliteDatabase[];
  /**
   * Copies what the WAL holds into the database file without waiting for anyone (PASSIVE). With
   * `autoCheckpoint: false` the owner calls it; a failure refuses every later write, like one of
   * append's.
   */
  checkpoint(): CheckpointResult;
  /**
   * One part of a snapshot written in parts (src/journal/sqliteSnapshots.ts), in a transaction of
   * its own; the snapshot is read by nobody until finishSnapshot() names its parts.
   */
  saveSnapshotPart(seq: number, part: number, data: string): void;
  /** The snapshot at `seq`, whose `parts` parts are all written, becomes the latest. */
  finishSnapshot(seq: number, parts: number): void;
}

/** What `PRAGMA wal_checkpoint` reports: WAL frames in all (`log`) and copied (`checkpointed`). */
export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

export interface SqliteJournalOptions {
  /**
   * SQLite's own checkpoint after a commit that grew the WAL past 1000 pages (the default). It runs
   * inside that commit, so the batch's replies wait for it (several ms). The journal writer thread
   * turns it off and checkpoints from a thread of its own instead (src/journal/walCheckpointer.ts).
   */
  autoCheckpoint?: boolean;
  /**
   * Opens the existing journal to read it only (a background snapshot's thread, which replays it):
   * no migration and no write lock taken at open, and every write refused.
   */
  readOnly?: boolean;
  /** What happens to records before the second-to-last snapshot (src/journal/retention.ts). */
  retention?: JournalRetention;
}

export interface PragmaState {
  journalMode: string;
  /** 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA. */
  synchronous: number;
}

export const DB_FILE_NAME = 'strikebook.db';
const SYNCHRONOUS_FULL = 2;
/** 2: snapshots may be stored in parts (src/journal/sqliteSnapshots.ts). */
const SCHEMA_VERSION = 2;
// The WAL file never shrinks on its own; after a checkpoint, cut it back to this size so one large
// snapshot does not leave a large file behind for good.
const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * Reads back the durability pragmas of one connection. Through the pragma table-valued functions
 * because better-sqlite3 refuses `db.pragma()` on a connection with an open iterator, and a reader
 * connection has one for its whole life.
 */
export function pragmaState(db: SqliteDatabase): PragmaState {
  return {
    journalMode: String(db.prepare('SELECT journal_mode FROM pragma_journal_mode').pluck().get()),
    synchronous: Number(db.prepare('SELECT synchronous FROM pragma_synchronous').pluck().get()),
  };
}

/**
 * Opens one connection with the durability settings every connection must have.
 *
 * Why synchronous=FULL on each connection: better-sqlite3 compiles SQLite with
 * SQLITE_DEFAULT_WAL_SYNCHRONOUS=1, so every connection that opens a database already in WAL mode
 * silently starts at synchronous=NORMAL. In WAL mode NORMAL does not fsync the WAL at commit (only at
 * checkpoints): a power loss or OS crash can then undo transactions whose commit already returned,
 * i.e. lose commands a client was told about (DESIGN.md rule 3). FULL fsyncs the WAL on every commit.
 * The setting lives in the connection, not in the file, so it is set on every open and read back,
 * and a connection that does not confirm it is refused rather than used.
 */
function openConnection(file: string, readonly: boolean): SqliteDatabase {
  const db = new Database(file, { readonly, fileMustExist: readonly });
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    const state = pragmaState(db);
    if (state.journalMode !== 'wal' || state.synchronous !== SYNCHRONOUS_FULL) {
      throw new Error(
        `journal: ${file} runs journal_mode=${state.journalMode} synchronous=${state.synchronous}; ` +
          `need wal and ${SYNCHRONOUS_FULL} (FULL) on every connection`,
      );
    }
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

/** fsync a directory so entries just created in it survive a power loss (no-op where unsupported). */
function fsyncDir(dir: string): void {
  if (process.platform === 'win32') return; // directories cannot be opened for fsync there
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Creates `dir` (and missing parents) durably: a new directory entry is only on disk once its parent
 * directory has been fsynced, and SQLite fsyncs only the directory holding the database.
 */
function ensureDir(dir: string): void {
  const abs = path.resolve(dir);
  const firstCreated = fs.mkdirSync(abs, { recursive: true });
  if (firstCreated === undefined) return;
  for (let d = abs; ; d = path.dirname(d)) {
    fsyncDir(path.dirname(d));
    if (d === firstCreated) break;
  }
}

function migrate(db: SqliteDatabase): void {
  const version = Number(db.pragma('user_version', { simple: true }));
  if (version > SCHEMA_VERSION) {
    throw new Error(`journal: database schema version ${version} is newer than this server understands (${SCHEMA_VERSION})`);
  }
  db.transaction(() => {
    db.exec(`
      CREATE TABLE IF NOT EXISTS journal (seq INTEGER PRIMARY KEY, ts INTEGER NOT NULL, cmd TEXT NOT NULL) STRICT;
      CREATE TABLE IF NOT EXISTS snapshots (seq INTEGER PRIMARY KEY, data TEXT NOT NULL) STRICT;
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
    `);
    migrateSnapshotParts(db);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}

function checkRecord(r: JournalRecord): void {
  if (!Number.isSafeInteger(r.seq) || r.seq < 1) throw new RejectedWrite(`journal: seq must be a positive safe integer, got ${String(r.seq)}`);
  if (!Number.isSafeInteger(r.ts)) throw new RejectedWrite(`journal: ts of seq ${r.seq} must be a safe integer, got ${String(r.ts)}`);
  if (typeof r.cmd !== 'string') throw new RejectedWrite(`journal: cmd of seq ${r.seq} must be a string`);
}

interface Reader {
  db: SqliteDatabase;
  abandoned: boolean;
}

/** Rows per INSERT of a batch's records (a power of 4: the rest go in statements of 16, 4, 1 rows). */
const INSERT_ROWS = 64;

/** Records per query of readAfter (one read transaction spans them all). */
const READ_PAGE_ROWS = 2048;

export function openSqliteJournal(dir: string, opts: SqliteJournalOptions = {}): SqliteJournal {
  const file = path.join(path.resolve(dir), DB_FILE_NAME);
  if (!opts.readOnly) ensureDir(dir);
  const db = openConnection(file, opts.readOnly === true);
  try {
    if (opts.readOnly) {
      const version = Number(db.pragma('user_version', { simple: true }));
      if (version !== SCHEMA_VERSION) throw new Error(`journal: ${file} has schema version ${version}, not ${SCHEMA_VERSION}`);
    } else {
      db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
      if (opts.autoCheckpoint === false) db.pragma('wal_autocheckpoint = 0');
      migrate(db);
      fsyncDir(path.dirname(file)); // the database file's own directory entry
    }
  } catch (e) {
    db.close();
    throw e;
  }

  const maxSeq = db.prepare<[], number>('SELECT COALESCE(MAX(seq), 0) FROM journal').pluck();
  const insertRecord = db.prepare<[number, number, string]>('INSERT INTO journal (seq, ts, cmd) VALUES (?, ?, ?)');
  // COALESCE makes the row always present; `?? 0` only satisfies the type.
  const lastSeqInDb = (): number => maxSeq.get() ?? 0;
  const snapshots = snapshotStore(db, lastSeqInDb);
  const selectMeta = db.prepare<[string], string>('SELECT value FROM meta WHERE key = ?').pluck();
  const upsertMeta = db.prepare<[string, string]>(
    'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
  );

  // A batch's records go in INSERTs of up to INSERT_ROWS rows each: one statement run per record
  // was most of the journal writer thread's CPU under the WebSocket orders bench (~1.4 us a record
  // alone, ~0.95 in statements of 32-128 rows). The rows are the same, so every reader is unchanged.
  const insertRows = new Map<number, Database.Statement<unknown[]>>([[1, insertRecord as Database.Statement<unknown[]>]]);
  const insertOf = (rows: number): Database.Statement<unknown[]> => {
    let stmt = insertRows.get(rows);
    if (stmt === undefined) {
      stmt = db.prepare<unknown[]>(`INSERT INTO journal (seq, ts, cmd) VALUES ${'(?, ?, ?), '.repeat(rows - 1)}(?, ?, ?)`);
      insertRows.set(rows, stmt);
    }
    return stmt;
  };
  // Contiguity is checked against the table under the write lock (BEGIN IMMEDIATE), record by record;
  // a mismatch anywhere rolls back the whole batch.
  const appendTx = db.transaction((records: JournalRecord[]) => {
    let expected = lastSeqInDb() + 1;
    for (const r of records) {
      if (r.seq !== expected) throw new RejectedWrite(`journal: seq ${r.seq} does not follow ${expected - 1}`);
      expected++;
    }
    // statements of INSERT_ROWS rows, then of a quarter of that, and so on: a few statements per size
    const args: unknown[] = [];
    let at = 0;
    for (let rows = INSERT_ROWS; rows >= 1; rows >>= 2) {
      const stmt = records.length - at >= rows ? insertOf(rows) : null;
      while (stmt !== null && records.length - at >= rows) {
        args.length = 0;
        for (let i = at; i < at + rows; i++) {
          const r = records[i]!;
          args.push(r.seq, r.ts, r.cmd);
        }
        stmt.run(args);
        at += rows;
      }
    }
  });

  // retention: records up to the second-to-last snapshot may go (when two are kept)
  const retention = opts.retention ?? KEEP_ALL;
  const retainFrom = db.prepare<[number], number>('SELECT CASE WHEN COUNT(*) >= ? THEN MIN(seq) ELSE 0 END FROM snapshots').pluck();
  const firstSeq = db.prepare<[], number>('SELECT COALESCE(MIN(seq), 0) FROM journal').pluck();
  const selectRange = db.prepare<[number, number], JournalRecord>('SELECT seq, ts, cmd FROM journal WHERE seq >= ? AND seq <= ? ORDER BY seq');
  const deleteRange = db.prepare<[number, number]>('DELETE FROM journal WHERE seq >= ? AND seq <= ?');
  const deleteTx = db.transaction((from: number, to: number) => deleteRange.run(from, to));

  const readers = new Set<Reader>();
  let closed = false;
  // After a write fails inside SQLite (I/O error, failed fsync, ...) the state on disk is unknown.
  // DESIGN.md rule 3: crash and recover, never retry and carry on; so every later write is refused.
  let broken: unknown = null;

  function ensureOpen(): void {
    if (closed) throw new Error('journal: closed');
  }

  function write(what: string, fn: () => void): void {
    ensureOpen();
    if (opts.readOnly) throw new RejectedWrite(`journal: ${what} refused, the journal was opened read-only`);
    if (broken !== null) throw new Error(`journal: ${what} refused, an earlier write failed; restart and recover`, { cause: broken });
    try {
      fn();
    } catch (e) {
      if (!(e instanceof RejectedWrite)) broken = e;
      throw e;
    }
  }

  // Streams on a connection of its own, opened per call, because:
  // - on the writer, better-sqlite3 refuses every write while an iterator is open ("connection is
  //   busy"), so a long catch-up read would stall the sequencer;
  // - iterators sharing one read connection share its read transaction, so a second readAfter could
  //   see the journal as of the first one's start and miss newer records.
  // A WAL reader never blocks the writer; each call sees the journal as of its first record (one
  // read transaction for all its pages).
  // Read in pages of raw rows rather than row by row through an iterator: one call into SQLite per
  // READ_PAGE_ROWS records instead of one per record, and no row object built by the driver (replay
  // speed, issue 16). Recovery takes the pages as they are (readPagesAfter); readAfter hands out
  // one record object per row.
  function* pages(afterSeq: number): Generator<readonly RawRecord[], void, undefined> {
    ensureOpen();
    const reader: Reader = { db: openConnection(file, true), abandoned: false };
    readers.add(reader);
    try {
      const page = reader.db.prepare<[number, number], RawRecord>('SELECT seq, ts, cmd FROM journal WHERE seq > ? ORDER BY seq LIMIT ?').raw();
      reader.db.exec('BEGIN');
      let after = afterSeq;
      while (true) {
        // An iteration cut short by close() must not look like the end of the journal.
        if (reader.abandoned) throw new Error('journal: closed during readAfter');
        const rows = page.all(after, READ_PAGE_ROWS);
        if (rows.length > 0) yield rows;
        if (rows.length < READ_PAGE_ROWS) return;
        after = rows[rows.length - 1]![0];
      }
    } finally {
      readers.delete(reader);
      closeReader(reader);
    }
  }

  function* stream(afterSeq: number): Generator<JournalRecord, void, undefined> {
    for (const rows of pages(afterSeq)) {
      for (const r of rows) {
        // the rest of a page read before close() is not handed out either
        if (closed) throw new Error('journal: closed during readAfter');
        yield { seq: r[0], ts: r[1], cmd: r[2] };
      }
    }
  }

  function closeReader(reader: Reader): void {
    // closing ends the read transaction
    if (reader.db.open) reader.db.close();
  }

  return {
    append(records: JournalRecord[]): void {
      write('append', () => {
        if (records.length === 0) return;
        for (const r of records) checkRecord(r);
        appendTx.immediate(records);
      });
    },

    readAfter(afterSeq: number): IterableIterator<JournalRecord> {
      if (!Number.isSafeInteger(afterSeq)) throw new RangeError(`journal: afterSeq must be a safe integer, got ${afterSeq}`);
      ensureOpen();
      return stream(afterSeq);
    },

    readPagesAfter(afterSeq: number): IterableIterator<readonly RawRecord[]> {
      if (!Number.isSafeInteger(afterSeq)) throw new RangeError(`journal: afterSeq must be a safe integer, got ${afterSeq}`);
      ensureOpen();
      return pages(afterSeq);
    },

    lastSeq(): number {
      ensureOpen();
      return lastSeqInDb();
    },

    saveSnapshot(seq: number, data: string): void {
      write('saveSnapshot', () => {
        if (!Number.isSafeInteger(seq) || seq < 0) throw new RejectedWrite(`journal: snapshot seq must be a non-negative safe integer, got ${seq}`);
        if (typeof data !== 'string') throw new RejectedWrite('journal: snapshot data must be a string');
        snapshots.save(seq, data);
      });
    },

    saveSnapshotPart(seq: number, part: number, data: string): void {
      write('saveSnapshotPart', () => {
        if (!Number.isSafeInteger(seq) || seq < 0 || !Number.isSafeInteger(part) || part < 0) throw new RejectedWrite(`journal: snapshot part ${part} of seq ${seq} is not a valid position`);
        if (typeof data !== 'string') throw new RejectedWrite('journal: snapshot data must be a string');
        snapshots.savePart(seq, part, data);
      });
    },

    finishSnapshot(seq: number, parts: number): void {
      write('finishSnapshot', () => {
        if (!Number.isSafeInteger(seq) || seq < 0 || !Number.isSafeInteger(parts) || parts < 1) throw new RejectedWrite(`journal: snapshot ${seq} of ${parts} parts is not valid`);
        snapshots.finish(seq, parts);
      });
    },

    compactStep(): number {
      if (retention.mode === 'keep') return 0;
      let removed = 0;
      write('compact', () => {
        const floor = retainFrom.get(SNAPSHOTS_KEPT) ?? 0;
        const first = firstSeq.get() ?? 0;
        if (floor === 0 || first === 0 || first > floor) return;
        const to = Math.min(floor, first + retention.stepRecords - 1);
        // archived (durably) before deleted: a crash in between leaves them in both places, and
        // the next step writes the same file again
        if (retention.mode === 'archive') {
          try {
            archiveRecords(retention.archiveDir, selectRange.all(first, to));
          } catch (e) {
            // the records stay in the journal; the next step tries again (no reason to stop trading)
            throw new RejectedWrite(`journal: archiving records ${first}-${to} failed: ${e instanceof Error ? e.message : String(e)}`);
          }
        }
        removed = deleteTx.immediate(first, to).changes;
      });
      return removed;
    },

    latestSnapshot(): { seq: number; data: string } | null {
      ensureOpen();
      return snapshots.latest();
    },

    getMeta(key: string): string | null {
      ensureOpen();
      return selectMeta.get(key) ?? null;
    },

    setMeta(key: string, value: string): void {
      write('setMeta', () => {
        if (typeof key !== 'string' || typeof value !== 'string') throw new RejectedWrite('journal: meta key and value must be strings');
        upsertMeta.run(key, value);
      });
    },

    checkpoint(): CheckpointResult {
      let result: CheckpointResult | undefined;
      write('checkpoint', () => {
        result = passiveCheckpoint(db);
      });
      return result!;
    },

    connections(): SqliteDatabase[] {
      return closed ? [] : [db, ...[...readers].map((r) => r.db)];
    },

    close(): void {
      if (closed) return;
      closed = true;
      for (const reader of readers) {
        reader.abandoned = true;
        closeReader(reader);
      }
      readers.clear();
      db.close();
    },
  };
}

function passiveCheckpoint(db: SqliteDatabase): CheckpointResult {
  const [row] = db.pragma('wal_checkpoint(PASSIVE)') as CheckpointResult[];
  return row!;
}

export interface SqliteCheckpointer {
  /** A PASSIVE checkpoint: copies committed WAL frames into the database file and fsyncs it. */
  checkpoint(): CheckpointResult;
  connection(): SqliteDatabase;
  close(): void;
}

/**
 * A second writable connection to the journal's database that only checkpoints, for a thread other
 * than the writer's: the copy into the database file and its fsync then run beside the commits
 * instead of inside one. With synchronous=FULL SQLite fsyncs the database file before it counts a
 * frame as copied, so the WAL is only reused once its content is durable in the database file.
 */
export function openSqliteCheckpointer(dir: string): SqliteCheckpointer {
  const db = openConnection(path.join(path.resolve(dir), DB_FILE_NAME), false);
  // this connection never commits, but keep SQLite from checkpointing on its own behalf all the same
  db.pragma('wal_autocheckpoint = 0');
  return {
    checkpoint: () => passiveCheckpoint(db),
    connection: () => db,
    close: () => db.close(),
  };
}
