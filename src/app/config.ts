// Configuration from the environment (API.md section 9). The environment always wins.
import path from 'node:path';

export type Mode = 'sandbox' | 'production';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | null;
  mode: Mode;
  bootstrapToken: string | null;
  indexFeed: 'simulated' | 'manual';
  demoMaker: boolean;
  /** The demo market's shape (src/app/demoMaker.ts): levels a side, taker orders a minute, ms between requotes. */
  demo?: { levels: number; takersPerMinute: number; requoteMs: number };
  testClock: boolean;
  /** Where the test clock starts (ms), or null for the wall clock; only with `testClock`. */
  testStart: number | null;
  catalogPath: string | null;
  logLevel: string;
  accessTokenTtlSec: number;
  refreshTokenTtlSec: number;
  snapshotEvery: number;
  /** A snapshot up to this size is serialized on the engine thread; larger ones in the background. */
  snapshotInlineMaxBytes: number;
  /** Seed of the simulated index feed (deterministic demo markets). */
  indexSeed: number;
  indexAnnualVol: number;
  /** WebSocket: a connection whose unsent bytes would pass this is disconnected. */
  wsMaxBufferedBytes?: number;
  /** WebSocket: smallest `public/set_heartbeat` interval accepted, seconds (Deribit: 10). */
  wsMinHeartbeatSec?: number;
  wsMaxConnectionsPerIp?: number;
  /** Credit rate limits (src/app/credits.ts) on or off; off for tests and benches that flood. */
  rateLimits: boolean;
  /** The matching-engine tier of users an administrator has not set (1..4, Deribit's table). */
  rateLimitTier: 1 | 2 | 3 | 4;
  /** The longest a 10028 is held before it is answered, for clients that resend while refused (credits.ts refusalHold). */
  rateLimitHoldMaxMs: number;
  /** Signed requests remembered for replay refusal (src/auth/replayGuard.ts): in all, and per API key. */
  signatureReplayMax: number;
  signatureReplayPerKey: number;
  /** WebSocket: requests of one connection waiting for their answer; more are refused (10028). */
  wsMaxQueuedRequests?: number;
  /** WebSocket: a connection silent this long (no frame, no pong to our pings) is closed, ms. */
  wsIdleTimeoutMs?: number;
  /** TCP connections (HTTP and WebSocket) open from one IP address; more are refused. */
  maxConnectionsPerIp?: number;
  /** TCP connections open in total; more are refused. Keep it below the process's `ulimit -n`. */
  maxConnections?: number;
  /** A request's line and headers must arrive within this, from the connection's start or the previous answer, ms. */
  headersTimeoutMs?: number;
  /** A whole request, body included, must arrive within this, ms (slowloris). */
  requestTimeoutMs?: number;
  /** A kept-alive HTTP connection with no request for this long is closed, ms. */
  keepAliveTimeoutMs?: number;
  /** Bytes the read cache (books, rendered big answers) may hold. */
  readCacheBytes?: number;
  /** Expensive reads (big answers not cached) started per event-loop turn. */
  heavyReadsPerTurn?: number;
  /** Below this many free bytes on the data directory's disk, new risk is refused (0: off). */
  diskFloorBytes?: number;
  /** How often the free disk space is read, ms. */
  diskCheckMs?: number;
  /** Journal records before the second-to-last snapshot: kept, deleted, or archived to files then deleted (SQLite). */
  journalRetention?: 'keep' | 'delete' | 'archive';
  /** Where `archive` writes them (default `<dataDir>/archive`). */
  journalArchiveDir?: string;
  /**
   * With DATABASE_URL, a server that finds the writer lock taken becomes a hot standby (true, the
   * default) instead of waiting for it and then refusing to start (false).
   */
  standby: boolean;
  /** How often a standby reads the journal when no notification came, ms. */
  standbyPollMs: number;
  /** The URL clients reach this server at, written for standbys to name as the leader (default: the listening URL). */
  advertisedUrl: string | null;
  /** GET /metrics answers every client, not only loopback ones (the metrics show users and orders). */
  metricsPublic: boolean;
  /** NATS JetStream events (src/app/natsEvents.ts): null = not published. */
  natsUrl?: string | null;
  natsStream?: string;
  natsSubjectPrefix?: string;
  natsBacklogMax?: number;
  natsMaxAgeSec?: number;
}

export class ConfigError extends Error {}

function int(env: NodeJS.ProcessEnv, key: string, def: number, min: number, max: number): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${key} must be an integer in [${min}, ${max}], got "${raw}"`);
  return n;
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, key: string, values: readonly T[], def: T): T {
  const raw = env[key];
  if (raw === undefined || raw === '') return def;
  if (!(values as readonly string[]).includes(raw)) throw new ConfigError(`${key} must be one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
}

/** An ISO 8601 instant with its zone (`2026-03-27T07:59:30Z`) or integer milliseconds since the epoch. */
function parseTestStart(raw: string | undefined): number | null {
  if (raw === undefined || raw === '') return null;
  const ms = /^\d+$/.test(raw) ? Number(raw) : /^\d{4}-\d\d-\d\dT[\d:.]+(Z|[+-]\d\d:\d\d)$/.test(raw) ? Date.parse(raw) : NaN;
  if (!Number.isSafeInteger(ms)) throw new ConfigError(`STRIKEBOOK_TEST_START must be an ISO 8601 time with a zone or milliseconds, got "${raw}"`);
  return ms;
}

/** A stream name or subject token: letters, digits, `_` and `-` (no dots, wildcards or spaces). */
function natsName(env: NodeJS.ProcessEnv, key: string, def: string): string {
  const raw = env[key];
  if (raw === undefined || raw === '') return def;
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(raw)) throw new ConfigError(`${key} must be 1-64 letters, digits, _ or -, got "${raw}"`);
  return raw;
}

/** An http(s) URL without credentials: standbys hand it to every client they refuse. */
function advertisedUrl(raw: string | undefined): string | null {
  if (raw === undefined || raw === '') return null;
  let u: URL | null = null;
  try {
    u = new URL(raw);
  } catch {
    // reported below
  }
  if (u === null || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.username !== '' || u.password !== '') {
    throw new ConfigError(`STRIKEBOOK_ADVERTISED_URL must be an http(s) URL without credentials, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const mode = oneOf(env, 'STRIKEBOOK_MODE', ['sandbox', 'production'] as const, 'sandbox');
  const testClock = env.STRIKEBOOK_TEST_CLOCK === '1';
  if (testClock && mode === 'production') throw new ConfigError('STRIKEBOOK_TEST_CLOCK=1 is not allowed in production mode');
  const testStart = parseTestStart(env.STRIKEBOOK_TEST_START);
  if (testStart !== null && !testClock) throw new ConfigError('STRIKEBOOK_TEST_START needs STRIKEBOOK_TEST_CLOCK=1');
  const demoDefault = mode === 'sandbox' ? '1' : '0';
  const demoMaker = (env.STRIKEBOOK_DEMO_MAKER ?? demoDefault) === '1';
  if (demoMaker && mode === 'production') throw new ConfigError('the demo market maker cannot run in production mode');
  return {
    port: int(env, 'PORT', 8080, 0, 65535),
    host: env.HOST || '127.0.0.1',
    dataDir: path.resolve(env.STRIKEBOOK_DATA_DIR || './data'),
    databaseUrl: env.DATABASE_URL || null,
    mode,
    bootstrapToken: env.STRIKEBOOK_BOOTSTRAP_TOKEN || null,
    indexFeed: oneOf(env, 'STRIKEBOOK_INDEX_FEED', ['simulated', 'manual'] as const, 'simulated'),
    demoMaker,
    demo: { levels: int(env, 'STRIKEBOOK_DEMO_LEVELS', 3, 1, 10), takersPerMinute: int(env, 'STRIKEBOOK_DEMO_TAKERS_PER_MIN', 30, 0, 6000), requoteMs: int(env, 'STRIKEBOOK_DEMO_REQUOTE_MS', 1000, 100, 60_000) },
    testClock,
    testStart,
    catalogPath: env.STRIKEBOOK_CATALOG || null,
    logLevel: env.LOG_LEVEL || 'info',
    accessTokenTtlSec: int(env, 'STRIKEBOOK_ACCESS_TOKEN_TTL', 3600, 60, 31536000),
    refreshTokenTtlSec: int(env, 'STRIKEBOOK_REFRESH_TOKEN_TTL', 30 * 86400, 60, 31536000),
    snapshotEvery: int(env, 'STRIKEBOOK_SNAPSHOT_EVERY', 500_000, 1, 1e9),
    snapshotInlineMaxBytes: int(env, 'STRIKEBOOK_SNAPSHOT_INLINE_MAX_BYTES', 1024 * 1024, 0, 2 ** 40),
    indexSeed: int(env, 'STRIKEBOOK_INDEX_SEED', 42, 0, 2 ** 31 - 1),
    indexAnnualVol: Number(env.STRIKEBOOK_INDEX_VOL || 0.5),
    wsMaxBufferedBytes: int(env, 'STRIKEBOOK_WS_MAX_BUFFERED', 4 * 1024 * 1024, 1024, 2 ** 30),
    wsMinHeartbeatSec: int(env, 'STRIKEBOOK_WS_MIN_HEARTBEAT', 10, 1, 3600),
    wsMaxConnectionsPerIp: int(env, 'STRIKEBOOK_WS_MAX_CONNECTIONS_PER_IP', 256, 1, 1e6),
    rateLimits: oneOf(env, 'STRIKEBOOK_RATE_LIMITS', ['0', '1'] as const, '1') === '1',
    rateLimitTier: int(env, 'STRIKEBOOK_RATE_LIMIT_TIER', 4, 1, 4) as 1 | 2 | 3 | 4,
    rateLimitHoldMaxMs: int(env, 'STRIKEBOOK_RATE_LIMIT_HOLD_MAX_MS', 1000, 0, 60_000),
    signatureReplayMax: int(env, 'STRIKEBOOK_SIGNATURE_REPLAY_MAX', 100_000, 1, 1e8),
    signatureReplayPerKey: int(env, 'STRIKEBOOK_SIGNATURE_REPLAY_PER_KEY', 10_000, 1, 1e8),
    wsMaxQueuedRequests: int(env, 'STRIKEBOOK_WS_MAX_QUEUED', 100, 1, 1e6),
    wsIdleTimeoutMs: int(env, 'STRIKEBOOK_WS_IDLE_TIMEOUT_MS', 60_000, 0, 86_400_000),
    maxConnectionsPerIp: int(env, 'STRIKEBOOK_MAX_CONNECTIONS_PER_IP', 512, 1, 1e6),
    maxConnections: int(env, 'STRIKEBOOK_MAX_CONNECTIONS', 8192, 1, 1e7),
    headersTimeoutMs: int(env, 'STRIKEBOOK_HEADERS_TIMEOUT_MS', 10_000, 10, 3_600_000),
    requestTimeoutMs: int(env, 'STRIKEBOOK_REQUEST_TIMEOUT_MS', 30_000, 10, 3_600_000),
    keepAliveTimeoutMs: int(env, 'STRIKEBOOK_KEEP_ALIVE_TIMEOUT_MS', 72_000, 10, 3_600_000),
    readCacheBytes: int(env, 'STRIKEBOOK_READ_CACHE_BYTES', 64 * 1024 * 1024, 0, 2 ** 40),
    heavyReadsPerTurn: int(env, 'STRIKEBOOK_HEAVY_READS_PER_TURN', 2, 1, 1000),
    diskFloorBytes: int(env, 'STRIKEBOOK_DISK_FLOOR_BYTES', 512 * 1024 * 1024, 0, 2 ** 53),
    diskCheckMs: int(env, 'STRIKEBOOK_DISK_CHECK_MS', 5_000, 10, 3_600_000),
    journalRetention: oneOf(env, 'STRIKEBOOK_JOURNAL_RETENTION', ['keep', 'delete', 'archive'] as const, 'keep'),
    journalArchiveDir: env.STRIKEBOOK_JOURNAL_ARCHIVE_DIR ? path.resolve(env.STRIKEBOOK_JOURNAL_ARCHIVE_DIR) : undefined,
    standby: oneOf(env, 'STRIKEBOOK_STANDBY', ['0', '1'] as const, '1') === '1',
    standbyPollMs: int(env, 'STRIKEBOOK_STANDBY_POLL_MS', 1_000, 10, 60_000),
    advertisedUrl: advertisedUrl(env.STRIKEBOOK_ADVERTISED_URL),
    metricsPublic: oneOf(env, 'STRIKEBOOK_METRICS_PUBLIC', ['0', '1'] as const, '0') === '1',
    natsUrl: env.NATS_URL || null,
    natsStream: natsName(env, 'STRIKEBOOK_NATS_STREAM', 'STRIKEBOOK'),
    natsSubjectPrefix: natsName(env, 'STRIKEBOOK_NATS_SUBJECT_PREFIX', 'strikebook'),
    natsBacklogMax: int(env, 'STRIKEBOOK_NATS_BACKLOG_MAX', 100_000, 10, 1e8),
    natsMaxAgeSec: int(env, 'STRIKEBOOK_NATS_MAX_AGE', 3600, 1, 365 * 86400),
  };
}
