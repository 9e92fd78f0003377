// Configuration from the environment (API.md section 9). The environment always wins. Every setting
// is an entry of the schema in configSchema.ts, checked there before any value is read here.
import path from 'node:path';
import { parseCidrList, type ProxyTrust } from '../api/http/clientAddress.ts';
import { checkEnvironment, parseInstant, rawValue } from './configSchema.ts';
import type { IndexSourceSpec } from '../market/venueIndex.ts';
import { leaseTimingProblem } from '../journal/postgresLease.ts';

export type Mode = 'sandbox' | 'production';

/** The wallet's settings (src/wallet/). */
export interface WalletConfig {
  addressBookOnly: boolean;
  addressBookWaitMs: number;
  addressBookMax: number;
  maxPendingWithdrawals: number;
  maxDepositAddresses: number;
  /** sandbox only; 0 never */
  autoCompleteMs: number;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | null;
  mode: Mode;
  bootstrapToken: string | null;
  indexFeed: 'simulated' | 'manual' | 'venues';
  /** The `venues` feed (src/app/venueFeed.ts): its sources and the rules of its median. */
  indexSources: IndexSourceSpec[];
  indexMinSources: number;
  indexMaxAgeMs: number;
  indexPollMs: number;
  indexTimeoutMs: number;
  demoMaker: boolean;
  /** The demo market's shape (src/app/demoMaker.ts): levels a side, taker orders a minute, ms between requotes. */
  demo?: { levels: number; takersPerMinute: number; requoteMs: number };
  testClock: boolean;
  /** Where the test clock starts (ms), or null for the wall clock; only with `testClock`. */
  testStart: number | null;
  catalogPath: string | null;
  logLevel: string;
  /** One log line per HTTP request (STRIKEBOOK_ACCESS_LOG). */
  accessLog: boolean;
  accessTokenTtlSec: number;
  /** The longest access-token lifetime a client may ask for with `expires:NUMBER` in its auth scope. */
  maxAccessTokenTtlSec: number;
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
  /** WebSocket: private subscriptions whose token was revoked or expired end within this, ms. */
  wsCredentialSweepMs?: number;
  /** Subaccounts per main account (src/accounts/subaccounts.ts); absent: 20. */
  maxSubaccounts?: number;
  /** combos held at most (hard) and active combo books (soft; src/combos/) */
  maxCombos?: number;
  maxActiveCombos?: number;
  /** Seconds a transfer to another user is held (`prepared`, cancellable) before it is confirmed; absent: 60. */
  userTransferHoldSeconds?: number;
  /** Block trades (src/blocktrades/): smallest leg per currency (coin), price band (% of mark), signature lifetime (ms). */
  blockTradeMinBtc?: number;
  blockTradeMinEth?: number;
  blockTradeBandPct?: number;
  blockTradeSignatureTtlMs?: number;
  /** Block RFQs (src/blockrfq/): lifetime of an RFQ (ms); absent: 5 minutes. */
  blockRfqTtlMs?: number;
  /** The wallet (src/wallet/; docs/api-notes.md "Wallet"); absent: the schema's defaults. */
  wallet?: WalletConfig;
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
  /**
   * The leadership lease on PostgreSQL (src/journal/postgresLease.ts): how long it lasts past a
   * renewal (a standby takes over once it expired), and how often the leader renews it, ms.
   */
  leaseMs: number;
  leaseRenewMs: number;
  /** The URL clients reach this server at, written for standbys to name as the leader (default: the listening URL). */
  advertisedUrl: string | null;
  /** GET /metrics answers every client, not only loopback ones (the metrics show users and orders). */
  metricsPublic: boolean;
  /** GET /metrics answers a request bearing this token (`Authorization: Bearer`), from any peer; null: no token. */
  metricsToken?: string | null;
  /** A listener of its own for GET /metrics (null: none), on `metricsHost`; the API listener then never serves it. */
  metricsPort?: number | null;
  metricsHost?: string;
  /** Proxies whose forwarding header names the client (src/api/http/clientAddress.ts); none by default. */
  proxyTrust?: ProxyTrust;
  /** NATS JetStream events (src/app/natsEvents.ts): null = not published. */
  natsUrl?: string | null;
  natsStream?: string;
  natsSubjectPrefix?: string;
  natsBacklogMax?: number;
  natsMaxAgeSec?: number;
}

/** Bad settings: `problems` holds one line each, naming the variable. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string | string[]) {
    const list = typeof problems === 'string' ? [problems] : problems;
    super(list.join('; '));
    this.problems = list;
  }
}

/**
 * An integer setting read without a schema entry; for a setting that has none yet (configSchema.ts
 * PENDING_NAMES). Prefer an entry in SETTINGS: it is documented and checked with the others.
 */
export function int(env: NodeJS.ProcessEnv, key: string, def: number, min: number, max: number): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${key} must be an integer in [${min}, ${max}], got "${raw}"`);
  return n;
}

/** `venue` or `venue=base-url` items (checked by the schema). */
function indexSources(raw: string): IndexSourceSpec[] {
  if (raw === '') return [];
  return raw.split(',').map((item) => {
    const eq = item.indexOf('=');
    const venue = (eq < 0 ? item : item.slice(0, eq)).trim() as IndexSourceSpec['venue'];
    return eq < 0 ? { venue, baseUrl: null } : { venue, baseUrl: item.slice(eq + 1).trim().replace(/\/+$/, '') };
  });
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems = checkEnvironment(env, 'server');
  if (problems.length > 0) throw new ConfigError(problems);
  const get = (name: string) => rawValue(env, name);
  const n = (name: string) => Number(get(name));
  const on = (name: string) => get(name) === '1';
  const orNull = (name: string) => get(name) || null;

  const mode = get('STRIKEBOOK_MODE') as Mode;
  const production = mode === 'production';
  const testClock = on('STRIKEBOOK_TEST_CLOCK');
  const testStart = get('STRIKEBOOK_TEST_START') === '' ? null : parseInstant(get('STRIKEBOOK_TEST_START'));
  const demoMaker = (get('STRIKEBOOK_DEMO_MAKER') || (production ? '0' : '1')) === '1';
  const indexFeed = get('STRIKEBOOK_INDEX_FEED') as Config['indexFeed'];
  const sources = indexSources(get('STRIKEBOOK_INDEX_SOURCES'));
  const minSources = n('STRIKEBOOK_INDEX_MIN_SOURCES');
  // rules between settings, each one line naming the variable to change
  if (testClock && production) problems.push('STRIKEBOOK_TEST_CLOCK=1 is not allowed in production mode');
  if (testStart !== null && !testClock) problems.push('STRIKEBOOK_TEST_START needs STRIKEBOOK_TEST_CLOCK=1');
  if (demoMaker && production) problems.push('STRIKEBOOK_DEMO_MAKER=1: the demo market maker cannot run in production mode');
  if (production && indexFeed === 'simulated' && !on('STRIKEBOOK_ALLOW_SIMULATED_INDEX')) {
    problems.push('STRIKEBOOK_INDEX_FEED=simulated is refused in production mode: use venues (with STRIKEBOOK_INDEX_SOURCES) or manual, or set STRIKEBOOK_ALLOW_SIMULATED_INDEX=1 for a rehearsal');
  }
  if (indexFeed === 'venues' && sources.length === 0) problems.push('STRIKEBOOK_INDEX_SOURCES is required with STRIKEBOOK_INDEX_FEED=venues');
  if (indexFeed === 'venues' && sources.length > 0 && sources.length < minSources) {
    problems.push(`STRIKEBOOK_INDEX_MIN_SOURCES=${minSources} is more than the ${sources.length} venues of STRIKEBOOK_INDEX_SOURCES`);
  }
  // standbys hand the leader's advertised URL to every client they refuse: http://0.0.0.0:8080 reaches nobody
  if (production && get('DATABASE_URL') !== '' && /^(0\.0\.0\.0|::|\[::\])$/.test(get('HOST')) && get('STRIKEBOOK_ADVERTISED_URL') === '') {
    problems.push('STRIKEBOOK_ADVERTISED_URL is required in production mode with DATABASE_URL when HOST is a wildcard address (standbys name it to clients)');
  }
  const leaseMs = n('STRIKEBOOK_LEASE_MS');
  const leaseRenewMs = n('STRIKEBOOK_LEASE_RENEW_MS');
  const leaseProblem = leaseTimingProblem({ leaseMs, renewMs: leaseRenewMs });
  if (leaseProblem !== null) problems.push(`STRIKEBOOK_LEASE_MS / STRIKEBOOK_LEASE_RENEW_MS: ${leaseProblem}`);
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    port: n('PORT'),
    host: get('HOST'),
    dataDir: path.resolve(get('STRIKEBOOK_DATA_DIR')),
    databaseUrl: orNull('DATABASE_URL'),
    mode,
    bootstrapToken: orNull('STRIKEBOOK_BOOTSTRAP_TOKEN'),
    indexFeed,
    indexSources: sources,
    indexMinSources: minSources,
    indexMaxAgeMs: n('STRIKEBOOK_INDEX_MAX_AGE_MS'),
    indexPollMs: n('STRIKEBOOK_INDEX_POLL_MS'),
    indexTimeoutMs: n('STRIKEBOOK_INDEX_TIMEOUT_MS'),
    demoMaker,
    demo: { levels: n('STRIKEBOOK_DEMO_LEVELS'), takersPerMinute: n('STRIKEBOOK_DEMO_TAKERS_PER_MIN'), requoteMs: n('STRIKEBOOK_DEMO_REQUOTE_MS') },
    testClock,
    testStart,
    catalogPath: orNull('STRIKEBOOK_CATALOG'),
    logLevel: get('LOG_LEVEL'),
    accessLog: on('STRIKEBOOK_ACCESS_LOG'),
    accessTokenTtlSec: n('STRIKEBOOK_ACCESS_TOKEN_TTL'),
    maxAccessTokenTtlSec: n('STRIKEBOOK_MAX_ACCESS_TOKEN_TTL'),
    refreshTokenTtlSec: n('STRIKEBOOK_REFRESH_TOKEN_TTL'),
    // the demo market writes a record a second or so: snapshots often enough that retention bounds the journal
    snapshotEvery: get('STRIKEBOOK_SNAPSHOT_EVERY') === '' ? (demoMaker ? 20_000 : 500_000) : n('STRIKEBOOK_SNAPSHOT_EVERY'),
    snapshotInlineMaxBytes: n('STRIKEBOOK_SNAPSHOT_INLINE_MAX_BYTES'),
    indexSeed: n('STRIKEBOOK_INDEX_SEED'),
    indexAnnualVol: n('STRIKEBOOK_INDEX_VOL'),
    wsMaxBufferedBytes: n('STRIKEBOOK_WS_MAX_BUFFERED'),
    wsMinHeartbeatSec: n('STRIKEBOOK_WS_MIN_HEARTBEAT'),
    wsMaxConnectionsPerIp: n('STRIKEBOOK_WS_MAX_CONNECTIONS_PER_IP'),
    rateLimits: on('STRIKEBOOK_RATE_LIMITS'),
    rateLimitTier: n('STRIKEBOOK_RATE_LIMIT_TIER') as 1 | 2 | 3 | 4,
    rateLimitHoldMaxMs: n('STRIKEBOOK_RATE_LIMIT_HOLD_MAX_MS'),
    signatureReplayMax: n('STRIKEBOOK_SIGNATURE_REPLAY_MAX'),
    signatureReplayPerKey: n('STRIKEBOOK_SIGNATURE_REPLAY_PER_KEY'),
    wsMaxQueuedRequests: n('STRIKEBOOK_WS_MAX_QUEUED'),
    wsIdleTimeoutMs: n('STRIKEBOOK_WS_IDLE_TIMEOUT_MS'),
    wsCredentialSweepMs: n('STRIKEBOOK_WS_CREDENTIAL_SWEEP_MS'),
    maxSubaccounts: n('STRIKEBOOK_MAX_SUBACCOUNTS'),
    maxCombos: n('STRIKEBOOK_MAX_COMBOS'),
    maxActiveCombos: n('STRIKEBOOK_MAX_ACTIVE_COMBOS'),
    userTransferHoldSeconds: n('STRIKEBOOK_USER_TRANSFER_HOLD_SECONDS'),
    blockTradeMinBtc: n('STRIKEBOOK_BLOCK_TRADE_MIN_BTC'),
    blockTradeMinEth: n('STRIKEBOOK_BLOCK_TRADE_MIN_ETH'),
    blockTradeBandPct: n('STRIKEBOOK_BLOCK_TRADE_BAND_PCT'),
    blockTradeSignatureTtlMs: n('STRIKEBOOK_BLOCK_TRADE_SIGNATURE_TTL_MS'),
    blockRfqTtlMs: n('STRIKEBOOK_BLOCK_RFQ_TTL_MS'),
    wallet: {
      addressBookOnly: on('STRIKEBOOK_WITHDRAWAL_ADDRESS_BOOK_ONLY'),
      addressBookWaitMs: n('STRIKEBOOK_ADDRESS_BOOK_WAIT_MS'),
      addressBookMax: n('STRIKEBOOK_ADDRESS_BOOK_MAX'),
      maxPendingWithdrawals: n('STRIKEBOOK_MAX_PENDING_WITHDRAWALS'),
      maxDepositAddresses: n('STRIKEBOOK_MAX_DEPOSIT_ADDRESSES'),
      autoCompleteMs: n('STRIKEBOOK_WITHDRAWAL_AUTO_COMPLETE_MS'),
    },
    maxConnectionsPerIp: n('STRIKEBOOK_MAX_CONNECTIONS_PER_IP'),
    maxConnections: n('STRIKEBOOK_MAX_CONNECTIONS'),
    headersTimeoutMs: n('STRIKEBOOK_HEADERS_TIMEOUT_MS'),
    requestTimeoutMs: n('STRIKEBOOK_REQUEST_TIMEOUT_MS'),
    keepAliveTimeoutMs: n('STRIKEBOOK_KEEP_ALIVE_TIMEOUT_MS'),
    readCacheBytes: n('STRIKEBOOK_READ_CACHE_BYTES'),
    heavyReadsPerTurn: n('STRIKEBOOK_HEAVY_READS_PER_TURN'),
    diskFloorBytes: n('STRIKEBOOK_DISK_FLOOR_BYTES'),
    diskCheckMs: n('STRIKEBOOK_DISK_CHECK_MS'),
    // a sandbox's history is not an audit trail: what is behind two snapshots goes (production keeps it all)
    journalRetention: (get('STRIKEBOOK_JOURNAL_RETENTION') || (production ? 'keep' : 'delete')) as 'keep' | 'delete' | 'archive',
    journalArchiveDir: get('STRIKEBOOK_JOURNAL_ARCHIVE_DIR') ? path.resolve(get('STRIKEBOOK_JOURNAL_ARCHIVE_DIR')) : undefined,
    standby: on('STRIKEBOOK_STANDBY'),
    standbyPollMs: n('STRIKEBOOK_STANDBY_POLL_MS'),
    leaseMs,
    leaseRenewMs,
    // standbys hand it to every client they refuse: one form, without a trailing slash
    advertisedUrl: get('STRIKEBOOK_ADVERTISED_URL') ? get('STRIKEBOOK_ADVERTISED_URL').replace(/\/+$/, '') : null,
    metricsPublic: on('STRIKEBOOK_METRICS_PUBLIC'),
    metricsToken: orNull('STRIKEBOOK_METRICS_TOKEN'),
    metricsPort: get('STRIKEBOOK_METRICS_PORT') ? n('STRIKEBOOK_METRICS_PORT') : null,
    metricsHost: get('STRIKEBOOK_METRICS_HOST'),
    proxyTrust: { proxies: parseCidrList(get('STRIKEBOOK_TRUSTED_PROXIES')), header: get('STRIKEBOOK_PROXY_HEADER') as ProxyTrust['header'] },
    natsUrl: orNull('NATS_URL'),
    natsStream: get('STRIKEBOOK_NATS_STREAM'),
    natsSubjectPrefix: get('STRIKEBOOK_NATS_SUBJECT_PREFIX'),
    natsBacklogMax: n('STRIKEBOOK_NATS_BACKLOG_MAX'),
    natsMaxAgeSec: n('STRIKEBOOK_NATS_MAX_AGE'),
  };
}
