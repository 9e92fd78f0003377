// The one schema of every setting (environment variable) of the server and the gateway: its type,
// range, default, who reads it, and whether production requires it. loadConfig (config.ts) and the
// gateway check their values through it; the README's configuration table is generated from it
// (configTable(); test/app/config.test.ts fails when the README differs and prints the table).
// Adding a setting is adding one entry here and one field in loadConfig.
import { VENUE_NAMES } from '../market/venueIndex.ts';
import { parseCidrList } from '../api/http/clientAddress.ts';

export type Role = 'server' | 'gateway';

/** How a raw value is checked: an error text (what was expected) or null when it is good. */
export type Check = (raw: string) => string | null;

export interface Setting {
  name: string;
  /** Raw default ('' = unset); the README shows `shownDefault` instead when set. */
  def: string;
  /** The gateway's default where it differs from the server's. */
  gatewayDef?: string;
  shownDefault?: string;
  roles: readonly Role[];
  check: Check;
  /** Production mode refuses to start without it (server only). */
  requiredInProduction?: boolean;
  /** The gateway refuses to start without it. */
  requiredForGateway?: boolean;
  /** Never echoed in an error (it may hold a password or a token). */
  secret?: boolean;
  doc: string;
}

export const int =
  (min: number, max: number): Check =>
  (raw) => {
    const n = Number(raw);
    return /^-?\d+$/.test(raw.trim()) && Number.isSafeInteger(n) && n >= min && n <= max ? null : `an integer in [${min}, ${max}]`;
  };

export const num =
  (min: number, max: number): Check =>
  (raw) => {
    const n = Number(raw);
    return raw.trim() !== '' && Number.isFinite(n) && n >= min && n <= max ? null : `a number in [${min}, ${max}]`;
  };

export const oneOf =
  (...values: string[]): Check =>
  (raw) =>
    values.includes(raw) ? null : `one of ${values.join(', ')}`;

const flag = oneOf('0', '1');

const pattern =
  (re: RegExp, what: string): Check =>
  (raw) =>
    re.test(raw) ? null : what;

/** Comma-separated IP addresses or CIDR blocks (STRIKEBOOK_TRUSTED_PROXIES). */
const cidrList: Check = (raw) => {
  try {
    parseCidrList(raw);
    return null;
  } catch (err) {
    return `comma-separated IP addresses or CIDR blocks (${(err as Error).message})`;
  }
};

/** An absolute URL of one of `protocols`; `noCredentials` refuses user:password@ in it. */
const url =
  (protocols: string[], noCredentials: boolean): Check =>
  (raw) => {
    const what = `a ${protocols.map((p) => p.replace(':', '')).join('/')} URL${noCredentials ? ' without credentials' : ''}`;
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      return what;
    }
    if (!protocols.includes(u.protocol)) return what;
    if (noCredentials && (u.username !== '' || u.password !== '')) return what;
    return null;
  };

/** NATS takes a comma-separated list of servers. */
const natsUrls: Check = (raw) => (raw.split(',').every((p) => url(['nats:', 'tls:'], false)(p.trim()) === null) ? null : 'nats://host:port (comma-separated for several)');

/** The gateway's leader and standbys: comma-separated http(s) URLs (src/gateway/leaderLocator.ts). */
const serverUrls: Check = (raw) => (raw.split(',').every((p) => url(['http:', 'https:'], true)(p.trim()) === null) ? null : 'http(s) URLs without credentials, comma-separated (the leader and its standbys)');

const path: Check = (raw) => (raw.includes('\0') ? 'a file system path' : null);

/** An ISO 8601 instant with its zone (`2026-03-27T07:59:30Z`) or integer milliseconds since the epoch. */
export function parseInstant(raw: string): number {
  return /^\d+$/.test(raw) ? Number(raw) : /^\d{4}-\d\d-\d\dT[\d:.]+(Z|[+-]\d\d:\d\d)$/.test(raw) ? Date.parse(raw) : NaN;
}

/** `venue` or `venue=http(s)://base` items, comma-separated (src/market/venueIndex.ts). */
const indexSources: Check = (raw) => {
  const what = `comma-separated venues (${VENUE_NAMES.join(', ')}), each optionally =http(s)://base-url`;
  const seen = new Set<string>();
  for (const item of raw.split(',')) {
    const eq = item.indexOf('=');
    const venue = (eq < 0 ? item : item.slice(0, eq)).trim();
    if (!(VENUE_NAMES as readonly string[]).includes(venue) || seen.has(venue)) return what;
    seen.add(venue);
    if (eq >= 0 && url(['http:', 'https:'], true)(item.slice(eq + 1).trim()) !== null) return what;
  }
  return seen.size > 20 ? what : null;
};

const S: Role[] = ['server'];
const G: Role[] = ['gateway'];
const SG: Role[] = ['server', 'gateway'];

export const SETTINGS: readonly Setting[] = [
  { name: 'PORT', def: '8080', gatewayDef: '8090', shownDefault: '`8080` (gateway `8090`)', roles: SG, check: int(0, 65535), doc: 'TCP port to listen on' },
  { name: 'HOST', def: '127.0.0.1', roles: SG, check: pattern(/^[A-Za-z0-9.:%-]{1,255}$/, 'a host name or IP address'), doc: 'address to listen on (`0.0.0.0` for every interface)' },
  { name: 'LOG_LEVEL', def: 'info', roles: SG, check: oneOf('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'), doc: 'pino level' },
  { name: 'STRIKEBOOK_ACCESS_LOG', def: '0', roles: S, check: flag, doc: '`1` logs one line per HTTP request (method, path, status, time, request id); docs/operations.md "Logs"' },
  { name: 'STRIKEBOOK_MODE', def: 'sandbox', roles: S, check: oneOf('sandbox', 'production'), doc: '`sandbox` (self-service deposits, `testnet:true`) or `production` (an administrator credits deposits)' },
  { name: 'STRIKEBOOK_DATA_DIR', def: './data', roles: S, check: path, doc: 'embedded database (journal + snapshots); must be writable' },
  { name: 'DATABASE_URL', def: '', shownDefault: 'unset', roles: S, check: url(['postgres:', 'postgresql:'], false), secret: true, doc: '`postgres://...`: journal, snapshots and meta in PostgreSQL instead ("Production")' },
  { name: 'STRIKEBOOK_STANDBY', def: '1', roles: S, check: flag, doc: 'with `DATABASE_URL`, a server that finds the writer lock taken becomes a hot standby (`0`: waits, then refuses to start)' },
  { name: 'STRIKEBOOK_STANDBY_POLL_MS', def: '1000', roles: S, check: int(10, 60_000), doc: 'how often a standby reads the journal when no notification came' },
  { name: 'STRIKEBOOK_LEASE_MS', def: '5000', roles: S, check: int(300, 600_000), doc: 'with `DATABASE_URL`: the leadership lease; a standby takes over once the leader has not renewed it for this long (docs/operations.md "Leadership lease")' },
  { name: 'STRIKEBOOK_LEASE_RENEW_MS', def: '1000', roles: S, check: int(100, 200_000), doc: 'how often the leader renews its lease; it stops acknowledging when a renewal is this late past its deadline' },
  { name: 'STRIKEBOOK_ADVERTISED_URL', def: '', shownDefault: 'listening URL', roles: S, check: url(['http:', 'https:'], true), doc: 'the URL clients reach this server at (standbys name it as the leader); required in production on PostgreSQL with a wildcard `HOST`' },
  { name: 'STRIKEBOOK_BOOTSTRAP_TOKEN', def: '', shownDefault: 'generated', roles: S, check: pattern(/^[A-Za-z0-9_.~+/=-]{16,256}$/, '16-256 letters, digits or _.~+/=-'), secret: true, doc: 'token for the first `create_admin` (a generated one is printed to the terminal, never to the log)' },
  { name: 'STRIKEBOOK_CATALOG', def: '', shownDefault: '`config/catalog.json`', roles: S, check: path, doc: 'currencies, grids and expiry schedule (checked at start)' },
  { name: 'STRIKEBOOK_INDEX_FEED', def: 'simulated', shownDefault: '`simulated` (required in production)', roles: S, check: oneOf('simulated', 'manual', 'venues'), requiredInProduction: true, doc: '`venues` (median of public spot tickers, docs/operations.md "Index"), `manual` (admin `set_index_price`) or `simulated` (seeded GBM; production needs `STRIKEBOOK_ALLOW_SIMULATED_INDEX=1`)' },
  { name: 'STRIKEBOOK_ALLOW_SIMULATED_INDEX', def: '0', roles: S, check: flag, doc: '`1` lets production mode run on the simulated index (a rehearsal, never a real market)' },
  { name: 'STRIKEBOOK_INDEX_SOURCES', def: '', shownDefault: 'unset (required with `venues`)', roles: S, check: indexSources, doc: 'venues of the `venues` index, e.g. `coinbase,kraken,bitstamp`; `venue=https://base` points one at another URL' },
  { name: 'STRIKEBOOK_INDEX_MIN_SOURCES', def: '2', roles: S, check: int(1, 20), doc: 'fresh sources needed for an index print; fewer and no print is made (the index goes stale, trading is refused)' },
  { name: 'STRIKEBOOK_INDEX_MAX_AGE_MS', def: '10000', roles: S, check: int(500, 600_000), doc: 'a source whose last good price is older than this is left out of the median' },
  { name: 'STRIKEBOOK_INDEX_POLL_MS', def: '1000', roles: S, check: int(100, 60_000), doc: 'how often each venue is asked for its ticker' },
  { name: 'STRIKEBOOK_INDEX_TIMEOUT_MS', def: '2000', roles: S, check: int(100, 60_000), doc: 'a venue request not answered within this fails' },
  { name: 'STRIKEBOOK_INDEX_SEED', def: '42', roles: S, check: int(0, 2 ** 31 - 1), doc: 'simulated index seed' },
  { name: 'STRIKEBOOK_INDEX_VOL', def: '0.5', roles: S, check: num(0, 10), doc: 'simulated index annual vol' },
  { name: 'STRIKEBOOK_DEMO_MAKER', def: '', shownDefault: '`1` in sandbox, `0` in production', roles: S, check: flag, doc: 'the demo market (makers quoting every series on several levels, and simulated takers); refused in production' },
  { name: 'STRIKEBOOK_DEMO_LEVELS', def: '3', roles: S, check: int(1, 10), doc: 'demo market: price levels each maker quotes a side (docs/operations.md "The sandbox demo market")' },
  { name: 'STRIKEBOOK_DEMO_TAKERS_PER_MIN', def: '30', roles: S, check: int(0, 6000), doc: 'demo market: simulated taker orders a minute (a Poisson stream on the exchange clock)' },
  { name: 'STRIKEBOOK_DEMO_REQUOTE_MS', def: '1000', roles: S, check: int(100, 60_000), doc: 'demo market: the shortest time between two requotes' },
  { name: 'STRIKEBOOK_TEST_CLOCK', def: '0', roles: S, check: flag, doc: '`1` enables the admin `private/set_test_time` (refused in production)' },
  { name: 'STRIKEBOOK_TEST_START', def: '', shownDefault: 'wall clock', roles: S, check: (raw) => (Number.isSafeInteger(parseInstant(raw)) ? null : 'an ISO 8601 time with a zone or milliseconds'), doc: 'where the test clock starts (only with `STRIKEBOOK_TEST_CLOCK=1`)' },
  { name: 'STRIKEBOOK_ACCESS_TOKEN_TTL', def: '3600', roles: S, check: int(60, 31_536_000), doc: 'access token lifetime, seconds' },
  { name: 'STRIKEBOOK_MAX_ACCESS_TOKEN_TTL', def: '604800', roles: S, check: int(60, 31_536_000), doc: 'the longest access-token lifetime a client may ask for with `expires:NUMBER` in its `public/auth` scope, seconds' },
  { name: 'STRIKEBOOK_REFRESH_TOKEN_TTL', def: '2592000', roles: S, check: int(60, 31_536_000), doc: 'refresh token lifetime, seconds' },
  { name: 'STRIKEBOOK_SNAPSHOT_EVERY', def: '', shownDefault: '`500000` (`20000` while the demo market runs)', roles: S, check: int(1, 1e9), doc: 'journal records between snapshots' },
  { name: 'STRIKEBOOK_SNAPSHOT_INLINE_MAX_BYTES', def: '1048576', roles: S, check: int(0, 2 ** 40), doc: 'a smaller state is snapshotted on the engine thread; a larger one by a background thread (`0`: always in the background)' },
  { name: 'STRIKEBOOK_JOURNAL_RETENTION', def: '', shownDefault: '`delete` in sandbox, `keep` in production', roles: S, check: oneOf('keep', 'delete', 'archive'), doc: 'journal records before the second-to-last snapshot: `keep`, `delete`, or `archive` (to JSON-lines files, then deleted)' },
  { name: 'STRIKEBOOK_JOURNAL_ARCHIVE_DIR', def: '', shownDefault: '`<data dir>/archive`', roles: S, check: path, doc: 'where `archive` writes them' },
  { name: 'STRIKEBOOK_WS_MAX_BUFFERED', def: '4194304', roles: SG, check: int(1024, 2 ** 30), doc: 'bytes a WebSocket client may leave unread before it is disconnected' },
  { name: 'STRIKEBOOK_WS_MAX_CONNECTIONS_PER_IP', def: '256', roles: SG, check: int(1, 1e6), doc: 'open WebSocket connections allowed from one address' },
  { name: 'STRIKEBOOK_WS_MIN_HEARTBEAT', def: '10', roles: SG, check: int(1, 3600), doc: 'smallest `public/set_heartbeat` interval, seconds' },
  { name: 'STRIKEBOOK_WS_MAX_QUEUED', def: '100', roles: S, check: int(1, 1e6), doc: 'requests one WebSocket may have waiting for their answers; more are answered `10028`' },
  { name: 'STRIKEBOOK_WS_IDLE_TIMEOUT_MS', def: '60000', roles: SG, check: int(0, 86_400_000), doc: 'a WebSocket silent this long (no frame, no pong) is closed; `0` never' },
  { name: 'STRIKEBOOK_WS_CREDENTIAL_SWEEP_MS', def: '1000', roles: S, check: int(10, 60_000), doc: 'how often the tokens behind live private subscriptions are checked: a revoked or expired one ends its streams (docs/security.md)' },
  { name: 'STRIKEBOOK_RATE_LIMITS', def: '1', roles: S, check: flag, doc: '`0` turns the credit rate limits off (test servers and benches that flood; docs/security.md)' },
  { name: 'STRIKEBOOK_RATE_LIMIT_TIER', def: '4', roles: S, check: int(1, 4), doc: "matching-engine tier (1..4, Deribit's table) of users an administrator has not set" },
  { name: 'STRIKEBOOK_RATE_LIMIT_HOLD_MAX_MS', def: '1000', roles: S, check: int(0, 60_000), doc: 'longest a 10028 is held for a client that resends while refused (docs/security.md); `0` never holds' },
  { name: 'STRIKEBOOK_SIGNATURE_REPLAY_MAX', def: '100000', roles: S, check: int(1, 1e8), doc: 'signed requests remembered for replay refusal, in all' },
  { name: 'STRIKEBOOK_SIGNATURE_REPLAY_PER_KEY', def: '10000', roles: S, check: int(1, 1e8), doc: 'signed requests remembered for replay refusal, per API key' },
  { name: 'STRIKEBOOK_MAX_COMBOS', def: '1000', roles: S, check: int(2, 100000), doc: 'combos the venue holds at most: a hard limit on `private/create_combo` (src/combos/)' },
  { name: 'STRIKEBOOK_MAX_ACTIVE_COMBOS', def: '200', roles: S, check: int(1, 100000), doc: 'active combo books: past it, `create_combo` deactivates the least traded combo and cancels its orders (a soft limit; create_combo activates one again)' },
  { name: 'STRIKEBOOK_MAX_SUBACCOUNTS', def: '20', roles: S, check: int(0, 1000), doc: 'subaccounts one main account may hold (`private/create_subaccount`; Deribit: 20)' },
  { name: 'STRIKEBOOK_USER_TRANSFER_HOLD_SECONDS', def: '60', roles: S, check: int(0, 604_800), doc: 'a transfer to another user (`private/submit_transfer_to_user`) stays `prepared`, cancellable by its sender, this long before it is confirmed; `0` confirms at once' },
  { name: 'STRIKEBOOK_BLOCK_TRADE_MIN_BTC', def: '25', roles: S, check: num(0, 1e6), doc: 'smallest amount of one leg of a block trade in a BTC option, in BTC (Deribit: 25)' },
  { name: 'STRIKEBOOK_BLOCK_TRADE_MIN_ETH', def: '250', roles: S, check: num(0, 1e7), doc: 'smallest amount of one leg of a block trade in an ETH option, in ETH (Deribit: 250)' },
  { name: 'STRIKEBOOK_BLOCK_TRADE_BAND_PCT', def: '50', roles: S, check: int(0, 1000), doc: 'block-trade price band: a leg\'s price within the mark +- this percent of it + 0.01 coin (the order band is 25%)' },
  { name: 'STRIKEBOOK_BLOCK_TRADE_SIGNATURE_TTL_MS', def: '300000', roles: S, check: int(1000, 3_600_000), doc: 'a block-trade signature executes until its shared timestamp + this (Deribit: 5 minutes around it)' },
  { name: 'STRIKEBOOK_BLOCK_RFQ_TTL_MS', def: '300000', roles: S, check: int(1000, 3_600_000), doc: 'a block RFQ expires this long after it was created (Deribit: 5 minutes)' },
  { name: 'STRIKEBOOK_WITHDRAWAL_ADDRESS_BOOK_ONLY', def: '1', roles: S, check: flag, doc: '`1`: `private/withdraw` only to a `withdrawal` address of the caller\'s address book past its waiting period; `0`: to any address' },
  { name: 'STRIKEBOOK_ADDRESS_BOOK_WAIT_MS', def: '86400000', roles: S, check: int(0, 365 * 86_400_000), doc: 'a new address-book entry can receive withdrawals this long after it was added, ms' },
  { name: 'STRIKEBOOK_ADDRESS_BOOK_MAX', def: '100', roles: S, check: int(1, 10_000), doc: 'address-book entries one account may hold' },
  { name: 'STRIKEBOOK_MAX_PENDING_WITHDRAWALS', def: '10', roles: S, check: int(1, 1000), doc: 'pending withdrawals one account may have at once' },
  { name: 'STRIKEBOOK_MAX_DEPOSIT_ADDRESSES', def: '10', roles: S, check: int(1, 1000), doc: 'deposit addresses one account may take per currency (`private/create_deposit_address`)' },
  { name: 'STRIKEBOOK_WITHDRAWAL_AUTO_COMPLETE_MS', def: '60000', roles: S, check: int(0, 30 * 86_400_000), doc: 'sandbox only: a pending withdrawal completes by itself this long after it was made; `0` never (production never does: an operator completes it)' },
  { name: 'STRIKEBOOK_MAX_CONNECTIONS_PER_IP', def: '512', roles: S, check: int(1, 1e6), doc: 'open TCP connections (HTTP and WebSocket) from one address; one more is answered 429 and closed' },
  { name: 'STRIKEBOOK_MAX_CONNECTIONS', def: '8192', roles: S, check: int(1, 1e7), doc: 'open TCP connections in total; one more is answered 503 and closed (keep it below `ulimit -n`)' },
  { name: 'STRIKEBOOK_HEADERS_TIMEOUT_MS', def: '10000', roles: S, check: int(10, 3_600_000), doc: 'a request line and headers must arrive within this' },
  { name: 'STRIKEBOOK_REQUEST_TIMEOUT_MS', def: '30000', roles: S, check: int(10, 3_600_000), doc: 'a whole request, body included, must arrive within this (408, then closed)' },
  { name: 'STRIKEBOOK_KEEP_ALIVE_TIMEOUT_MS', def: '72000', roles: S, check: int(10, 3_600_000), doc: 'a kept-alive HTTP connection idle this long is closed' },
  { name: 'STRIKEBOOK_READ_CACHE_BYTES', def: '67108864', roles: S, check: int(0, 2 ** 40), doc: 'bytes the read cache (books, rendered big answers) may hold' },
  { name: 'STRIKEBOOK_HEAVY_READS_PER_TURN', def: '2', roles: S, check: int(1, 1000), doc: 'big answers (every instrument, every book, summaries, deep books) sent per event-loop turn' },
  { name: 'STRIKEBOOK_DISK_FLOOR_BYTES', def: '536870912', roles: S, check: int(0, 2 ** 53), doc: 'below this much free space on the data directory\'s disk, orders that add risk are refused (`11030`); `0` off; not checked with PostgreSQL' },
  { name: 'STRIKEBOOK_DISK_CHECK_MS', def: '5000', roles: S, check: int(10, 3_600_000), doc: 'how often the free space is read' },
  { name: 'STRIKEBOOK_METRICS_PUBLIC', def: '0', roles: S, check: flag, doc: '`1` serves `/metrics` on the API listener to every client (not with `STRIKEBOOK_METRICS_PORT`)' },
  { name: 'STRIKEBOOK_METRICS_TOKEN', def: '', shownDefault: 'unset', roles: S, check: pattern(/^[\x21-\x7e]{16,256}$/, '16-256 visible ASCII characters without spaces'), secret: true, doc: '`/metrics` on the API listener answers only `Authorization: Bearer <token>`, from any host; also required on the metrics listener when set' },
  { name: 'STRIKEBOOK_METRICS_PORT', def: '', shownDefault: 'unset', roles: S, check: int(0, 65535), doc: 'serves `/metrics` on a listener of its own; the API listener then never serves it' },
  { name: 'STRIKEBOOK_METRICS_HOST', def: '127.0.0.1', roles: S, check: pattern(/^[A-Za-z0-9.:%-]{1,255}$/, 'a host name or IP address'), doc: 'where the metrics listener listens' },
  { name: 'STRIKEBOOK_TRUSTED_PROXIES', def: '', shownDefault: 'empty', roles: S, check: cidrList, doc: 'comma-separated IPs or CIDR blocks (IPv4, IPv6) of reverse proxies and gateways whose forwarding header names the client (docs/operations.md "Behind a reverse proxy or a gateway")' },
  { name: 'STRIKEBOOK_PROXY_HEADER', def: 'x-forwarded-for', roles: S, check: oneOf('x-forwarded-for', 'forwarded'), doc: 'the header those proxies write: `x-forwarded-for` or `forwarded` (RFC 7239); the other is ignored' },
  { name: 'NATS_URL', def: '', shownDefault: 'unset (required for a gateway)', roles: SG, check: natsUrls, requiredForGateway: true, doc: 'events on NATS JetStream for stream gateways ("Production")' },
  { name: 'STRIKEBOOK_NATS_STREAM', def: 'STRIKEBOOK', roles: SG, check: pattern(/^[A-Za-z0-9_-]{1,64}$/, '1-64 letters, digits, _ or -'), doc: 'JetStream stream name' },
  { name: 'STRIKEBOOK_NATS_SUBJECT_PREFIX', def: 'strikebook', roles: SG, check: pattern(/^[A-Za-z0-9_-]{1,64}$/, '1-64 letters, digits, _ or -'), doc: 'first token of every subject' },
  { name: 'STRIKEBOOK_NATS_BACKLOG_MAX', def: '100000', roles: S, check: int(10, 1e8), doc: 'messages the leader keeps while NATS is out of reach (older ones are dropped)' },
  { name: 'STRIKEBOOK_NATS_MAX_AGE', def: '3600', roles: S, check: int(1, 365 * 86400), doc: 'seconds a message is kept in the stream' },
  { name: 'STRIKEBOOK_LEADER_URL', def: '', shownDefault: 'unset (required for a gateway)', roles: G, check: serverUrls, requiredForGateway: true, doc: 'gateway: the leader and its standbys, comma-separated (the gateway follows whichever leads), or a load balancer in front of them' },
  { name: 'STRIKEBOOK_GATEWAY_RECHECK_MS', def: '10000', roles: G, check: int(100, 3_600_000), doc: "gateway: how often it confirms each private subscription's credential with the leader (a revoked one ends its streams)" },
  { name: 'STRIKEBOOK_GATEWAY_MAX_UPSTREAMS', def: '1024', roles: G, check: int(1, 1e6), doc: 'gateway: upstream WebSockets to the leader in all (one per logged-in client); past it `10028`' },
  { name: 'STRIKEBOOK_GATEWAY_MAX_UPSTREAMS_PER_IP', def: '32', roles: G, check: int(1, 1e6), doc: 'gateway: upstream WebSockets for the clients of one address; past it `10028`' },
  { name: 'STRIKEBOOK_GATEWAY_POOL_SOCKETS', def: '32', roles: G, check: int(1, 4096), doc: "gateway: kept-alive HTTP connections to the leader shared by anonymous calls, taken by client address in turn" },
  { name: 'STRIKEBOOK_GATEWAY_POOL_QUEUE_PER_IP', def: '256', roles: G, check: int(1, 1e6), doc: 'gateway: anonymous calls of one address waiting for the pool; past it `10028`' },
  { name: 'STRIKEBOOK_GATEWAY_FRAMES_PER_SEC_PER_IP', def: '1000', roles: G, check: int(1, 1e7), doc: "gateway: WebSocket frames read per second from one address (burst twice that); past it its connections wait unread" },
  { name: 'STRIKEBOOK_GATEWAY_FORWARD_TIMEOUT_MS', def: '5000', roles: G, check: int(100, 600_000), doc: 'gateway: a forwarded call unanswered this long is `10040` and the gateway looks for the leader again' },
];

/**
 * Names that are no setting of the server or the gateway but are read by the tests, the benches and
 * the development tools (README "Development"): present in a developer's shell, they are not typos.
 */
export const TOOLING_NAMES: readonly string[] = [
  'STRIKEBOOK_TEST_DATABASE_URL',
  'STRIKEBOOK_TEST_NATS_URL',
  'STRIKEBOOK_WS_TARGETS',
  'STRIKEBOOK_PROP_SEED',
  'STRIKEBOOK_PROP_VERBOSE',
  'STRIKEBOOK_PROP_COMMANDS',
  'STRIKEBOOK_DURABILITY_SEED',
  'STRIKEBOOK_CHROMIUM',
];

/**
 * Settings other work in progress adds (the leadership lease, trusted proxies, the metrics token):
 * known, so that the unknown-variable check does not refuse them before their entries land here;
 * each is checked by the code that reads it until it has an entry in SETTINGS.
 */
export const PENDING_NAMES: readonly string[] = [
];

export const SETTING_BY_NAME: ReadonlyMap<string, Setting> = new Map(SETTINGS.map((s) => [s.name, s]));

const KNOWN = new Set<string>([...SETTINGS.map((s) => s.name), ...TOOLING_NAMES, ...PENDING_NAMES]);

/** Levenshtein distance, for "did you mean". */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length];
}

/** The known name nearest to `name`, or null when none is near enough to be a misspelling of it. */
export function nearestName(name: string): string | null {
  let best: string | null = null;
  let bestD = Infinity;
  for (const k of KNOWN) {
    const d = distance(name, k);
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  // a third of the name may differ (a missing word, a swapped pair of letters); beyond that, a guess misleads
  return bestD <= Math.max(3, Math.floor(name.length / 3)) ? best : null;
}

/** The one-line problems of `env` for `role`: unknown STRIKEBOOK_* names, bad values, missing required ones. */
export function checkEnvironment(env: NodeJS.ProcessEnv, role: Role): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(env).sort()) {
    if (!key.startsWith('STRIKEBOOK_') || KNOWN.has(key)) continue;
    const near = nearestName(key);
    problems.push(`unknown variable ${key}${near ? ` (did you mean ${near}?)` : ''}`);
  }
  const production = env.STRIKEBOOK_MODE === 'production';
  for (const s of SETTINGS) {
    if (!s.roles.includes(role)) continue;
    const raw = env[s.name];
    if (raw === undefined || raw === '') {
      if (role === 'gateway' && s.requiredForGateway) problems.push(`${s.name} is required for a gateway`);
      if (role === 'server' && production && s.requiredInProduction) problems.push(`${s.name} is required in production mode`);
      continue;
    }
    const expected = s.check(raw);
    if (expected !== null) problems.push(`${s.name} must be ${expected}${s.secret ? '' : `, got "${oneLine(raw)}"`}`);
  }
  return problems;
}

/** A value as it can be quoted in a one-line error: control characters escaped, long values cut. */
function oneLine(raw: string): string {
  // eslint-disable-next-line no-control-regex
  const s = raw.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** The value of a setting for `role`: the environment's, else its default ('' = unset). */
export function rawValue(env: NodeJS.ProcessEnv, name: string, role: Role = 'server'): string {
  const s = SETTING_BY_NAME.get(name);
  if (s === undefined) throw new Error(`no setting ${name} in the schema`);
  const raw = env[name];
  if (raw !== undefined && raw !== '') return raw;
  return role === 'gateway' && s.gatewayDef !== undefined ? s.gatewayDef : s.def;
}

/** The README's configuration table, generated from SETTINGS (test/app/configSchema.test.ts compares). */
export function configTable(): string {
  const rows = SETTINGS.map((s) => {
    const def = s.shownDefault ?? (s.def === '' ? 'unset' : `\`${s.def}\``);
    const who = s.roles.length === 2 ? 'both' : s.roles[0];
    return `| \`${s.name}\` | ${def} | ${who} | ${s.doc.replace(/\|/g, '\\|')} |`;
  });
  return ['| variable | default | read by | what it does |', '|---|---|---|---|', ...rows].join('\n');
}
