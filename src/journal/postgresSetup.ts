// What the PostgreSQL journal checks and prepares on its writer connection before the first write:
// the server's durability settings, the schema (its identity, its writer's advisory lock key) and
// its migration; the lease is postgresLease.ts. Each refuses to start with a message an operator
// can act on, and none of them ever prints the password of DATABASE_URL.
import type pg from 'pg';
import { LEASE_TABLE_SQL } from './postgresLease.ts';

/**
 * 2: the leadership lease table (src/journal/postgresLease.ts). 3: snapshots in parts (the part
 * count and `snapshot_parts`, src/journal/postgresSnapshots.ts); a server of version 2 would read a
 * snapshot in parts as empty, so it must refuse the schema. An older schema is migrated by adding
 * what it lacks.
 */
const SCHEMA_VERSION = 3;
const SCHEMA_VERSION_KEY = 'schema_version';
/**
 * High half of the advisory lock key ('STRK'). The low half is the oid of the schema the journal
 * lives in: one writer per journal, while exchanges in different schemas of one database (the tests
 * run that way, in parallel) do not block each other. Advisory locks are per database, not per schema.
 */
const LOCK_KEY_HIGH = 0x5354524b;
/** High half of the key of the transaction lock that lets one server at a time migrate a schema ('STRM'). */
const MIGRATE_KEY_HIGH = 0x5354524d;

/** The schema the journal lives in, and the advisory lock key of its single writer. */
export interface SchemaLock {
  schema: string;
  /** The bigint key (as text: it passes 2^53) of the writer lock: fixed high half, schema oid low half. */
  key: string;
  /** The schema's oid: also names the journal's LISTEN/NOTIFY channel (journalChannel). */
  oid: number;
}

/**
 * The channel the writer notifies after each committed batch (payload: its last seq) and standbys
 * LISTEN on. Per schema, so that exchanges in other schemas of the database do not wake them.
 */
export function journalChannel(oid: number): string {
  return `strikebook_journal_${oid}`;
}

/** The server settings a commit's durability rests on, as `SHOW` prints them. */
export interface PostgresDurability {
  fsync: string;
  synchronousCommit: string;
  fullPageWrites: string;
}

/**
 * `postgres://user@host:port/db` of a connection string: no password, no query string (which may
 * hold one too, `?password=`). For log lines and error messages.
 */
export function describeDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    const user = u.username ? `${decodeURIComponent(u.username)}@` : '';
    return `${u.protocol}//${user}${u.host}${u.pathname}`;
  } catch {
    return '(DATABASE_URL that is not a URL)';
  }
}

/**
 * Why these settings cannot hold DESIGN.md rule 3 (a reply only after its record is durable), or
 * null when they can. fsync=off lets a commit return before its WAL is on disk and can corrupt the
 * whole cluster on an OS crash; synchronous_commit=off returns before the WAL flush, so an
 * acknowledged batch can vanish. `local`, `remote_write`, `on` and `remote_apply` all flush locally.
 * full_page_writes=off leaves a page torn by an OS crash mid-write beyond what WAL replay can
 * repair (PostgreSQL's manual: "unrecoverable data corruption, or silent data corruption").
 */
export function durabilityProblem(d: PostgresDurability): string | null {
  if (d.fsync !== 'on') return `fsync is ${d.fsync}; it must be on`;
  if (d.synchronousCommit === 'off') return 'synchronous_commit is off; it must not be (on, local, remote_write or remote_apply)';
  if (d.fullPageWrites !== 'on') return `full_page_writes is ${d.fullPageWrites}; it must be on`;
  return null;
}

export async function readDurability(client: pg.ClientBase): Promise<PostgresDurability> {
  const res = await client.query<{ fsync: string; synchronous_commit: string; full_page_writes: string }>(
    `SELECT current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS synchronous_commit,
            current_setting('full_page_writes') AS full_page_writes`,
  );
  const row = res.rows[0]!;
  return { fsync: row.fsync, synchronousCommit: row.synchronous_commit, fullPageWrites: row.full_page_writes };
}

export async function checkDurability(client: pg.ClientBase, where: string): Promise<PostgresDurability> {
  const d = await readDurability(client);
  const problem = durabilityProblem(d);
  if (problem !== null) throw new Error(`journal: PostgreSQL at ${where} is not durable: ${problem}`);
  return d;
}

/**
 * How the server notices that the writer's client is gone (the session's own settings, so they
 * need no change to the server's configuration): keepalive probes after 10 s of silence, every 5 s,
 * 3 unanswered ones end the session, and so do 30 s of unacknowledged data. The server's defaults
 * (2 hours of silence, then 9 probes 75 s apart) would hold the single-writer lock of a client cut
 * off by the network that long, refusing every restart meanwhile.
 */
export async function detectDeadClient(client: pg.ClientBase): Promise<void> {
  await client.query('SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3');
  try {
    await client.query('SET tcp_user_timeout = 30000');
  } catch (e) {
    // PostgreSQL before 12 has no such setting (42704 undefined_object): the keepalives still work
    if ((e as { code?: string }).code !== '42704') throw e;
  }
}

/** The schema and lock key of the journal `client`'s search_path points at, without locking. */
export async function schemaLockOf(client: pg.ClientBase, where: string): Promise<SchemaLock> {
  const res = await client.query<{ schema: string | null; key: string | null; oid: string | null }>(
    `SELECT current_schema() AS schema, n.oid::bigint::text AS oid, ((($1::bigint << 32) | n.oid::bigint))::text AS key
       FROM (SELECT 1) AS one LEFT JOIN pg_namespace n ON n.nspname = current_schema()`,
    [LOCK_KEY_HIGH],
  );
  const { schema, key, oid } = res.rows[0]!;
  if (schema === null || key === null || oid === null) throw new Error(`journal: no schema of search_path exists in the database at ${where}`);
  return { schema, key, oid: Number(oid) };
}

/**
 * Creates the tables if missing and records the schema version, refusing a newer one. Every server
 * that may write runs it before it takes the lease (it needs the lease table), standbys included, so
 * a transaction lock per schema keeps two of them from creating the same tables at once.
 */
export async function migrate(client: pg.ClientBase, lock: SchemaLock): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(($1::bigint << 32) | $2::bigint)', [MIGRATE_KEY_HIGH, lock.oid]);
    await client.query(`
      CREATE TABLE IF NOT EXISTS journal (seq bigint PRIMARY KEY, ts bigint NOT NULL, cmd text NOT NULL);
      CREATE TABLE IF NOT EXISTS snapshots (seq bigint PRIMARY KEY, data text NOT NULL);
      CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value text NOT NULL);
    `);
    await client.query(LEASE_TABLE_SQL);
    const res = await client.query<{ value: string }>('SELECT value FROM meta WHERE key = $1', [SCHEMA_VERSION_KEY]);
    const version = res.rows.length === 0 ? 0 : Number(res.rows[0]!.value);
    if (!(version <= SCHEMA_VERSION)) {
      throw new Error(`journal: database schema version ${res.rows[0]!.value} is newer than this server understands (${SCHEMA_VERSION})`);
    }
    // only when missing: ALTER TABLE locks the table out of every read, snapshots' included, even
    // when the column is there already (a standby starting beside a leader)
    if (version < 3) {
      await client.query(`
        ALTER TABLE snapshots ADD COLUMN IF NOT EXISTS parts integer NOT NULL DEFAULT 0;
        CREATE TABLE IF NOT EXISTS snapshot_parts (seq bigint NOT NULL, part integer NOT NULL, data text NOT NULL, PRIMARY KEY (seq, part));
      `);
    }
    if (version !== SCHEMA_VERSION) {
      await client.query('INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value', [SCHEMA_VERSION_KEY, String(SCHEMA_VERSION)]);
    }
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/** An int8 column as pg returns it (text, to keep 64 bits) turned into a checked safe integer. */
export function int8(value: unknown, what: string): number {
  const n = typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : typeof value === 'number' ? value : NaN;
  if (!Number.isSafeInteger(n)) throw new Error(`journal: ${what} ${String(value)} is not a safe integer`);
  return n;
}
