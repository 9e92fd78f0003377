// The journal on PostgreSQL (DATABASE_URL): the same tables and rules as the SQLite adapter
// (sqliteJournal.ts), reached asynchronously. DESIGN.md rules 3 and 4 rest on it: a command is
// acknowledged only after append() resolved, so append() resolves only once its batch is committed
// with the server's WAL flushed (checked at open: fsync on, synchronous_commit not off).
//
// Two kinds of connection:
// - one writer client, owned for the journal's whole life: it holds the leadership lease (renewed on
//   it, src/journal/postgresLease.ts) and the advisory lock beside it (session-level, so it must be
//   the same session), and runs every write, one after the other, in the order they were issued;
// - a small pool for reads (recovery, meta, snapshots), so that a long catch-up read never waits
//   behind writes and never runs inside one of the writer's transactions.
import { KEEP_ALL, archiveRecords, type JournalRetention } from './retention.ts';
import { hostname } from 'node:os';
import type pg from 'pg';
import { RejectedWrite, SNAPSHOTS_KEPT, type AsyncJournal, type JournalRecord } from './journal.ts';
import { checkDurability, describeDatabaseUrl, detectDeadClient, int8, journalChannel, migrate, readDurability, schemaLockOf, type PostgresDurability, type SchemaLock } from './postgresSetup.ts';
import { DEFAULT_LEASE, acquireLease, leaseTimingProblem, releaseLease, type LeaseGrant, type LeaseStatus, type LeaseTiming } from './postgresLease.ts';
import { LeaseKeeper } from './leaseKeeper.ts';
import { finishSnapshot, readLatestSnapshot, saveSnapshotPart, saveWholeSnapshot } from './postgresSnapshots.ts';
import { utf8Slices } from './snapshotParts.ts';

export { describeDatabaseUrl, durabilityProblem, type PostgresDurability } from './postgresSetup.ts';
export { WriterLockTaken, type LeaseStatus, type LeaseTiming } from './postgresLease.ts';

export interface PostgresJournal extends AsyncJournal {
  /** A snapshot built elsewhere, as UTF-8 parts (src/journal/snapshotParts.ts): sent as bytes. */
  saveSnapshotParts(seq: number, parts: Uint8Array[]): Promise<void>;
  /** The schema the tables live in (the first existing schema of the connection's search_path). */
  readonly schema: string;
  /** The writer connection's backend process id (for diagnostics, and tests that cut it off). */
  readonly writerPid: number;
  /** The LISTEN/NOTIFY channel each committed batch is announced on (payload: its last seq). */
  readonly channel: string;
  /** The advisory lock key of the schema's single writer (bigint as text). */
  readonly lockKey: string;
  /** The term of the leadership lease this journal writes under (0 when opened read-only). */
  readonly term: number;
  /** The lease as this server holds it now, or null when opened read-only (/health, /ready). */
  lease(): LeaseStatus | null;
  /** The durability settings as the writer connection sees them now. */
  durability(): Promise<PostgresDurability>;
  /**
   * One retention step (src/journal/retention.ts), in order with the writes: removes (archives
   * first) up to `retention.stepRecords` of the oldest records up to the second-to-last snapshot;
   * resolves with how many. After a snapshot the journal runs steps by itself until none is left.
   */
  compactStep(): Promise<number>;
}

export interface PostgresJournalOptions {
  /** Records fetched per page by readAfter (keyset pagination on seq). */
  pageSize?: number;
  /** How long one statement may run before it fails (and the journal with it); 30 s by default. */
  statementTimeoutMs?: number;
  /**
   * Opens the existing journal to read it only, beside the server that writes it (a background
   * snapshot's thread, which replays it): no single-writer lock, no migration, every write refused.
   */
  readOnly?: boolean;
  /** What happens to records before the second-to-last snapshot (src/journal/retention.ts). */
  retention?: JournalRetention;
  /**
   * How long to wait for the single-writer lock when another session holds it; 60 s by default,
   * longer than the server takes to end the session of a writer that died (see detectDeadClient).
   */
  lockWaitMs?: number;
  /** How often the lock is tried again while waiting for it; 500 ms by default (a standby: less). */
  lockRetryMs?: number;
  /** Gives up waiting for the lock (a standby shutting down). */
  signal?: AbortSignal;
  /** The leadership lease's timing (src/journal/postgresLease.ts); 5 s renewed every 1 s by default. */
  lease?: LeaseTiming;
  /**
   * The lease is lost (not renewed within its deadline, or taken over): every later write is refused
   * already, and so is the acknowledgement of any write still in flight. The server must step down.
   */
  onLeaseLost?: (err: Error) => void;
  /** Called after each row of a snapshot in parts is written (tests: a crash between parts). */
  onSnapshotPart?: (seq: number, part: number, parts: number) => void;
}

const DEFAULT_PAGE_SIZE = 5_000;
/**
 * A snapshot's row at most, in bytes: an append waits behind one row at most (postgresSnapshots.ts).
 * Measured with a 40 MB snapshot written beside an append every 2 ms (one PostgreSQL on the same 2
 * cores): rows of 1 MiB, 256 KiB and 64 KiB held appends p50 21, 7.2-7.8 and 3.6-3.8 ms (p99 45-53,
 * 23-25 and 12-13 ms), the snapshot taking 1.4, 1.5 and 1.9-2.1 s; uncompressed rows (`STORAGE
 * EXTERNAL`) were slower at every size (more WAL).
 */
const PG_SNAPSHOT_ROW_BYTES = 64 * 1024;
/** A snapshot text short enough to fit one row whatever its characters (a UTF-16 unit is at most 3 UTF-8 bytes). */
const WHOLE_SNAPSHOT_CHARS = Math.floor(PG_SNAPSHOT_ROW_BYTES / 3);
const READ_POOL_SIZE = 2;
const CONNECT_TIMEOUT_MS = 10_000;
const KEEPALIVE_IDLE_MS = 10_000;
const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;
const DEFAULT_LOCK_WAIT_MS = 60_000;
const LOCK_RETRY_MS = 500;
/** How much longer the client waits than the server's own timeout before it gives up on the network. */
const CLIENT_TIMEOUT_SLACK_MS = 5_000;

/**
 * One statement, so one transaction: outside BEGIN, PostgreSQL commits it at the protocol's Sync and
 * answers ReadyForQuery only after the commit (and its WAL flush) returned; pg resolves the query on
 * ReadyForQuery. One round trip per batch instead of three for BEGIN / INSERT / COMMIT.
 * The WHERE clause is the fence against a second writer (a standby that took over, docs/operations.md):
 * the database confirms that its journal ends where ours does, and that the lease is still of our
 * term ($5) (its expiry decides takeovers; acknowledgements are held by src/journal/leaseKeeper.ts
 * while it may have run out). FOR SHARE on the lease row serializes the append with a
 * takeover (which updates the row): either the append commits first, and the new leader reads it
 * after taking over, or it waits and then sees the new term. If either check fails nothing is
 * inserted and the adapter stops. The seq primary key refuses a seq written twice whatever happens.
 * The NOTIFY is delivered when the transaction commits, never before: standbys LISTEN for it.
 */
export const APPEND_SQL = `
  WITH lease AS (SELECT 1 FROM leader_lease WHERE id = 1 AND term = $5::bigint FOR SHARE),
  ins AS (
    INSERT INTO journal (seq, ts, cmd)
    SELECT r.seq, r.ts, r.cmd FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS r(seq, ts, cmd)
    WHERE (SELECT COALESCE(MAX(seq), 0) FROM journal) = $4 AND EXISTS (SELECT 1 FROM lease)
    RETURNING seq)
  SELECT count(*)::int AS n, pg_notify($6, COALESCE(MAX(seq), 0)::text)::text AS notified FROM ins`;

function checkRecord(r: JournalRecord): void {
  if (!Number.isSafeInteger(r.seq) || r.seq < 1) throw new RejectedWrite(`journal: seq must be a positive safe integer, got ${String(r.seq)}`);
  if (!Number.isSafeInteger(r.ts)) throw new RejectedWrite(`journal: ts of seq ${r.seq} must be a safe integer, got ${String(r.ts)}`);
  if (typeof r.cmd !== 'string') throw new RejectedWrite(`journal: cmd of seq ${r.seq} must be a string`);
}

/**
 * Connects to `url` (its search_path, e.g. `?options=-c%20search_path%3Dname`, picks the schema),
 * refuses a server that would not make commits durable or a journal another server is writing,
 * and creates the tables if missing.
 */
export async function openPostgresJournal(url: string, opts: PostgresJournalOptions = {}): Promise<PostgresJournal> {
  const pageSize = opts.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1) throw new RangeError(`journal: pageSize must be a positive integer, got ${pageSize}`);
  const statementTimeout = opts.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const timing = opts.lease ?? DEFAULT_LEASE;
  const timingProblem = leaseTimingProblem(timing);
  if (timingProblem !== null) throw new RangeError(`journal: ${timingProblem}`);
  if (!Number.isSafeInteger(statementTimeout) || statementTimeout < 1) {
    throw new RangeError(`journal: statementTimeoutMs must be a positive integer, got ${statementTimeout}`);
  }
  const where = describeDatabaseUrl(url);
  // A write that never answers would hold every reply of the exchange without a word in the log:
  // a batch stuck behind a lock, a server stalled on its disk, a peer gone from the network. So
  // each statement has a deadline: the server cancels it at statement_timeout (rolled back, the
  // connection still usable), and the client gives up a little later in case the server cannot be
  // reached at all (query_timeout; TCP keepalive alone takes the kernel's ~11 minutes to notice).
  // A timed-out write fails like any other: the journal refuses every later write and the process
  // stops and recovers from what the database holds (DESIGN.md rule 3).
  // application_name shows the connections in pg_stat_activity (a name in the URL wins).
  const config: pg.ClientConfig = {
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_IDLE_MS,
    statement_timeout: statementTimeout,
    query_timeout: statementTimeout + CLIENT_TIMEOUT_SLACK_MS,
    application_name: 'strikebook',
  };

  // pg is loaded here, not at the module's top: a server on SQLite never loads it (part of ~50 ms
  // of every start, with the NATS client: issue 36, restart to serving)
  const { default: pgModule } = await import('pg');
  const client = new pgModule.Client(config);
  // After a write fails (connection lost, disk full, failed WAL flush...) whether it committed is
  // unknown. DESIGN.md rule 3: crash and recover, never retry and carry on; so every later write is
  // refused. A connection lost while idle also lost the advisory lock: nothing may be written then.
  let broken: unknown = null;
  client.on('error', (err) => {
    broken ??= err;
  });
  try {
    await client.connect();
  } catch (e) {
    throw new Error(`journal: cannot connect to PostgreSQL at ${where}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }

  let committedSeq: number;
  let lock: SchemaLock;
  let grant: LeaseGrant | null = null;
  let writerPid: number;
  let pool: pg.Pool;
  try {
    await checkDurability(client, where);
    lock = await schemaLockOf(client, where);
    if (!opts.readOnly) {
      await detectDeadClient(client);
      await migrate(client, lock);
      grant = await acquireLease(client, lock.key, `${hostname()}:${process.pid}`, timing, {
        waitMs: opts.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS,
        retryMs: opts.lockRetryMs ?? LOCK_RETRY_MS,
        signal: opts.signal,
        where,
        schema: lock.schema,
      });
    }
    const last = await client.query<{ last: string; pid: number }>('SELECT COALESCE(MAX(seq), 0) AS last, pg_backend_pid() AS pid FROM journal');
    committedSeq = int8(last.rows[0]!.last, 'last journal seq');
    writerPid = last.rows[0]!.pid;
    pool = new pgModule.Pool({ ...config, max: READ_POOL_SIZE });
    // an idle pooled connection that drops is discarded by the pool; without a listener it would
    // be an unhandled 'error' event and end the process
    pool.on('error', () => undefined);
  } catch (e) {
    await client.end().catch(() => undefined);
    throw e;
  }

  const schema = lock.schema;
  const channel = journalChannel(lock.oid);
  let closed = false;
  let closing: Promise<void> | null = null;
  // Writes run one at a time, in the order issued: each starts when the previous one settled.
  let tail: Promise<unknown> = Promise.resolve();

  function ensureOpen(): void {
    if (closed) throw new Error('journal: closed');
  }

  /** Runs `fn` on the writer connection after everything issued before it. */
  function serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = tail.then(fn);
    tail = run.catch(() => undefined);
    return run;
  }

  // The lease (none when read-only), renewed on the writer connection in order with the writes
  // (src/journal/leaseKeeper.ts): a renewal that cannot get through (a hung connection, a stalled
  // database or thread) suspends the acknowledgements at the renew deadline, before any standby
  // may take the lease.
  const keeper =
    grant === null
      ? null
      : new LeaseKeeper({
          client,
          serial,
          grant,
          lockKey: lock.key,
          timing,
          broken: () => broken !== null || closed,
          onLost(err) {
            broken ??= err;
            opts.onLeaseLost?.(err);
          },
        });

  function write(what: string, fn: () => Promise<void>): Promise<void> {
    if (closed) return Promise.reject(new Error('journal: closed'));
    if (opts.readOnly) return Promise.reject(new Error(`journal: ${what} refused, the journal was opened read-only`));
    return serial(async () => {
      // checked when the write's turn comes: a write issued before an earlier one failed is refused too
      if (broken !== null) throw new Error(`journal: ${what} refused, an earlier write failed; restart and recover`, { cause: broken });
      try {
        await fn();
      } catch (e) {
        if (!(e instanceof RejectedWrite)) broken ??= e;
        throw e;
      }
    });
  }

  async function appendBatch(records: JournalRecord[]): Promise<void> {
    if (records.length === 0) return;
    let expected = committedSeq + 1;
    for (const r of records) {
      checkRecord(r);
      if (r.seq !== expected) throw new RejectedWrite(`journal: seq ${r.seq} does not follow ${expected - 1}`);
      expected++;
    }
    const n = records.length;
    const seqs = new Array<number>(n);
    const tss = new Array<number>(n);
    const cmds = new Array<string>(n);
    for (let i = 0; i < n; i++) {
      const r = records[i]!;
      seqs[i] = r.seq;
      tss[i] = r.ts;
      cmds[i] = r.cmd;
    }
    const term = keeper!.term;
    const res = await client.query<{ n: number }>({ name: 'strikebook_journal_append', text: APPEND_SQL, values: [seqs, tss, cmds, committedSeq, term, channel] });
    if (res.rows[0]?.n !== n) {
      keeper!.lose('an append was fenced: another server took the lease over, or the journal moved on');
      throw new Error(`journal: the journal table in schema "${schema}" does not end at seq ${committedSeq}, or the lease of term ${term} has been taken over; another server writes to it`);
    }
    committedSeq = expected - 1;
  }

  /** A read on the pool; after close() it says so instead of the pool's own error. */
  async function read<R extends pg.QueryResultRow>(query: pg.QueryConfig): Promise<R[]> {
    ensureOpen();
    try {
      return (await pool.query<R>(query)).rows;
    } catch (e) {
      if (closed) throw new Error('journal: closed', { cause: e });
      throw e;
    }
  }

  // Keyset pagination: each page is one short statement (WHERE seq > last seen, by the primary
  // key), so memory stays at one page and no transaction or cursor stays open across pages.
  // The writer commits batches in seq order on one connection, so every page sees a prefix of
  // the journal and the pages join without a gap.
  async function* stream(afterSeq: number): AsyncGenerator<JournalRecord, void, undefined> {
    let cursor = afterSeq;
    while (true) {
      if (closed) throw new Error('journal: closed during readAfter');
      const rows = await read<{ seq: string; ts: string; cmd: string; tx: string }>({
        name: 'strikebook_journal_page',
        text: 'SELECT seq, ts, cmd, xmin::text AS tx FROM journal WHERE seq > $1 ORDER BY seq LIMIT $2',
        values: [cursor, pageSize],
      });
      for (const row of rows) {
        // An iteration cut short by close() must not look like the end of the journal.
        if (closed) throw new Error('journal: closed during readAfter');
        const rec: JournalRecord = { seq: int8(row.seq, 'journal seq'), ts: int8(row.ts, 'journal ts'), cmd: row.cmd, tx: row.tx };
        cursor = rec.seq;
        yield rec;
      }
      if (rows.length < pageSize) return;
    }
  }

  // The snapshot being written in parts (postgresSnapshots.ts): each part is a write of its own,
  // issued once the previous one is written, so that the appends issued meanwhile go between them.
  let snapshotsInFlight: Promise<unknown> = Promise.resolve();
  let snapshotsPending = 0;
  async function writeParts(seq: number, given: Uint8Array[]): Promise<void> {
    const rows = given.flatMap((p) => utf8Slices(p, PG_SNAPSHOT_ROW_BYTES));
    for (let i = 0; i < rows.length; i++) {
      const p = rows[i]!;
      // a view of the part's bytes, not a copy: node-postgres sends a Buffer as a binary parameter
      const bytes = Buffer.from(p.buffer, p.byteOffset, p.byteLength);
      await write('saveSnapshot', () => saveSnapshotPart(client, committedSeq, seq, i, bytes));
      opts.onSnapshotPart?.(seq, i, rows.length);
    }
    await write('saveSnapshot', () => finishSnapshot(client, committedSeq, seq, rows.length));
  }

  /** One snapshot after the other: the rows of two never interleave; each is followed by retention. */
  function queueSnapshot(writeIt: () => Promise<void>): Promise<void> {
    snapshotsPending++;
    const saved = snapshotsInFlight.then(writeIt).finally(() => snapshotsPending--);
    snapshotsInFlight = saved.catch(() => undefined);
    void saved.then(compactAll, () => undefined);
    return saved;
  }

  async function shutDown(): Promise<void> {
    closed = true;
    keeper?.close();
    // the writes issued before close() land (or fail) first; ending the session frees the lock
    await tail;
    // a clean stop hands over at once: a standby need not wait for the lease to expire
    if (keeper !== null && keeper.lost === null && broken === null) await releaseLease(client, keeper.term).catch(() => undefined);
    await client.end().catch(() => undefined);
    await pool.end().catch(() => undefined);
  }

  const retention = opts.retention ?? KEEP_ALL;
  async function compactOnce(): Promise<number> {
    const floorRow = await client.query<{ floor: string | null }>('SELECT CASE WHEN COUNT(*) >= $1 THEN MIN(seq) END AS floor FROM snapshots', [SNAPSHOTS_KEPT]);
    const firstRow = await client.query<{ first: string | null }>('SELECT MIN(seq) AS first FROM journal');
    const floor = floorRow.rows[0]?.floor == null ? 0 : int8(floorRow.rows[0].floor, 'snapshot seq');
    const first = firstRow.rows[0]?.first == null ? 0 : int8(firstRow.rows[0].first, 'journal seq');
    if (floor === 0 || first === 0 || first > floor) return 0;
    const to = Math.min(floor, first + retention.stepRecords - 1);
    if (retention.mode === 'archive') {
      const rows = await client.query<{ seq: string; ts: string; cmd: string }>('SELECT seq, ts, cmd FROM journal WHERE seq >= $1 AND seq <= $2 ORDER BY seq', [first, to]);
      try {
        archiveRecords(retention.archiveDir, rows.rows.map((r) => ({ seq: int8(r.seq, 'journal seq'), ts: int8(r.ts, 'journal ts'), cmd: r.cmd })));
      } catch (e) {
        // the records stay in the journal; the next snapshot tries again
        throw new RejectedWrite(`journal: archiving records ${first}-${to} failed: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    const res = await client.query('DELETE FROM journal WHERE seq >= $1 AND seq <= $2', [first, to]);
    return res.rowCount ?? 0;
  }
  function compactStep(): Promise<number> {
    if (retention.mode === 'keep') return Promise.resolve(0);
    let removed = 0;
    return write('compact', async () => {
      removed = await compactOnce();
    }).then(() => removed);
  }
  /** Steps until nothing is left, each queued behind the writes issued meanwhile. */
  function compactAll(): void {
    if (retention.mode === 'keep' || closed) return;
    compactStep().then(
      (n) => {
        if (n > 0) setImmediate(compactAll);
      },
      () => undefined, // a failed delete breaks the journal and the next append reports it
    );
  }

  return {
    schema,
    writerPid,
    channel,
    lockKey: lock.key,
    term: grant?.term ?? 0,
    compactStep,

    lease(): LeaseStatus | null {
      return keeper?.status() ?? null;
    },

    append(records: JournalRecord[]): Promise<void> {
      // Durable once written; acknowledged (the caller's replies wait on this promise) only while
      // the lease is held: past its renew deadline the batch waits for a renewal, or fails with the
      // lease. Outside `serial`, so that the renewal it waits for is not queued behind it.
      return write('append', () => appendBatch(records)).then(() => (keeper === null || keeper.valid() ? undefined : keeper.whenValid()));
    },

    readAfter(afterSeq: number): AsyncIterableIterator<JournalRecord> {
      if (!Number.isSafeInteger(afterSeq)) throw new RangeError(`journal: afterSeq must be a safe integer, got ${afterSeq}`);
      ensureOpen();
      return stream(afterSeq);
    },

    lastSeq(): number {
      ensureOpen();
      return committedSeq;
    },

    saveSnapshot(seq: number, data: string): Promise<void> {
      // a small one in one statement; a larger one (the snapshot of a planned stop, an inline one
      // of up to STRIKEBOOK_SNAPSHOT_INLINE_MAX_BYTES) in the rows of its UTF-8 bytes, as one
      // built elsewhere: a 1 MB statement held the appends behind it ~20-35 ms
      if (data.length <= WHOLE_SNAPSHOT_CHARS) return queueSnapshot(() => write('saveSnapshot', () => saveWholeSnapshot(client, committedSeq, seq, data)));
      return queueSnapshot(() => writeParts(seq, [Buffer.from(data, 'utf8')]));
    },

    saveSnapshotParts(seq: number, parts: Uint8Array[]): Promise<void> {
      return queueSnapshot(() => writeParts(seq, parts));
    },

    latestSnapshot(): Promise<{ seq: number; data: string } | null> {
      return readLatestSnapshot(read);
    },

    async getMeta(key: string): Promise<string | null> {
      const rows = await read<{ value: string }>({ text: 'SELECT value FROM meta WHERE key = $1', values: [key] });
      return rows[0]?.value ?? null;
    },

    setMeta(key: string, value: string): Promise<void> {
      return write('setMeta', async () => {
        if (typeof key !== 'string' || typeof value !== 'string') throw new RejectedWrite('journal: meta key and value must be strings');
        await client.query('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [key, value]);
      });
    },

    durability(): Promise<PostgresDurability> {
      if (closed) return Promise.reject(new Error('journal: closed'));
      return serial(() => readDurability(client));
    },

    close(): Promise<void> {
      // a snapshot being written in parts is finished first, as the embedded journal's writer does:
      // its later parts are not issued yet, and would meet a closed journal
      closing ??= snapshotsPending === 0 ? shutDown() : snapshotsInFlight.then(shutDown);
      return closing;
    },
  };
}
