// Test harness: a real Strikebook server on a free port with its own data directory, either
// in this process (fast) or as a child process (for crash tests), plus a tiny JSON-RPC client.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/app/config.ts';
import { startExchange, type RunningExchange } from '../../src/app/services.ts';
import pino from 'pino';
import type { TestContext } from 'node:test';
import { trackServer } from './liveServers.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BOOTSTRAP = 'test-bootstrap-token-0123456789';

export function tempDir(prefix = 'strikebook-test-'): string {
  return mkdtempSync(path.join(tmpdir(), prefix));
}

/** A started exchange on the embedded SQLite journal (the default: no DATABASE_URL). */
export type SqliteExchange = Extract<RunningExchange, { storage: 'sqlite' }>;

/** `app` narrowed to its SQLite journal handles; throws when it runs on another storage. */
export function sqliteOf(app: RunningExchange): SqliteExchange {
  if (app.storage !== 'sqlite') throw new Error(`the server runs on ${app.storage}, not on SQLite`);
  return app;
}

/**
 * Where every test server's clock starts: `TEST_CLOCK_START` in the test runner's environment (an
 * ISO time, or `real` for the wall clock; test/clockEdges.ts runs the time-sensitive files at the
 * hours that break things), else a quiet Tuesday noon, far from any expiry. Pinned, a test's
 * catalog, marks, bands and expiries are the same on every run.
 */
export const DEFAULT_TEST_START = '2026-03-10T12:00:00Z';
export const TEST_START: string | null = process.env.TEST_CLOCK_START === 'real' ? null : process.env.TEST_CLOCK_START || DEFAULT_TEST_START;
/** The pinned start in ms, or null on the wall clock. */
export const TEST_START_MS: number | null = TEST_START === null ? null : Date.parse(TEST_START);

/**
 * The test clock settings a server starts with unless the test chooses its own: the test clock on
 * (so `private/set_test_time` works), from TEST_START. A test that turns the test clock off, or runs
 * in production mode (where it is refused), runs on the wall clock.
 */
function clockEnv(env: Record<string, string>): Record<string, string> {
  if (env.STRIKEBOOK_MODE === 'production' || env.STRIKEBOOK_TEST_CLOCK === '0') return { STRIKEBOOK_TEST_CLOCK: '0', STRIKEBOOK_TEST_START: '' };
  return { STRIKEBOOK_TEST_CLOCK: '1', STRIKEBOOK_TEST_START: TEST_START ?? '' };
}

export interface TestServer {
  url: string;
  dataDir: string;
  app: RunningExchange;
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

/** Starts a server in this process. Manual index feed by default, so prices stay put. */
export async function startServer(env: Record<string, string> = {}, dataDir = tempDir()): Promise<TestServer> {
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    STRIKEBOOK_DATA_DIR: dataDir,
    STRIKEBOOK_BOOTSTRAP_TOKEN: BOOTSTRAP,
    STRIKEBOOK_INDEX_FEED: 'manual',
    STRIKEBOOK_DEMO_MAKER: '0',
    // the crash tests read the whole journal; sandbox's own default (delete) is tested in test/app/demoJournal.test.ts
    STRIKEBOOK_JOURNAL_RETENTION: 'keep',
    LOG_LEVEL: 'silent',
    // tests send requests as fast as they can; test/api/rateLimits.test.ts turns the limits on
    STRIKEBOOK_RATE_LIMITS: '0',
    ...clockEnv(env),
    ...env,
  });
  const app = await startExchange(config, pino({ level: 'silent' }));
  const untrack = trackServer({ databaseUrl: config.databaseUrl, close: () => app.close() });
  return {
    url: app.url,
    dataDir,
    app,
    async stop(opts) {
      await app.close();
      untrack();
      if (!opts?.keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface ChildServer {
  url: string;
  proc: ChildProcess;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** Everything the process wrote to stdout and stderr so far (for failure messages). */
  output(): string;
}

/** A TCP port that was free a moment ago (the OS picks it, so parallel test files do not collide). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Child servers of one test, sharing `env` (a leader and its standbys on one DATABASE_URL). */
export interface ServerFleet {
  /** Starts one more, with a data directory of its own. */
  spawn(): Promise<ChildServer>;
  /** Every server started, in order. */
  readonly servers: ChildServer[];
}

/** Servers that are stopped (SIGTERM, waited for) and whose directories are removed when `t` ends. */
export function serverFleet(t: TestContext, env: Record<string, string>): ServerFleet {
  const servers: ChildServer[] = [];
  const dirs: string[] = [];
  t.after(async () => {
    for (const s of servers) {
      if (s.proc.exitCode === null && s.proc.signalCode === null) {
        s.proc.kill('SIGTERM');
        await s.exited;
      }
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return {
    servers,
    async spawn() {
      const dir = tempDir();
      dirs.push(dir);
      const s = await spawnServer(dir, env);
      servers.push(s);
      return s;
    },
  };
}

export interface SpawnOptions {
  /** Run the server bundle, as `npm start` does (dist/server/main.js, built first when stale), not the sources under tsx. */
  bundled?: boolean;
}

/** The server bundle's entry, built first when the sources are newer (scripts/buildServer.ts --if-stale). */
export function bundledEntry(): string {
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/buildServer.ts', '--if-stale'], { cwd: ROOT, stdio: 'ignore' });
  return path.join(ROOT, 'dist/server/main.js');
}

/**
 * Starts the server as a child process (its sources under tsx, or with `bundled` the bundle `npm
 * start` runs) and waits until it listens. A port that
 * freePort found free can be taken by another process before the child binds it (tests run in
 * parallel, and outgoing connections take ports of the same range): a start refused with
 * EADDRINUSE is tried again on another port.
 */
export async function spawnServer(dataDir: string, env: Record<string, string> = {}, opts: SpawnOptions = {}): Promise<ChildServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnServerOnce(dataDir, env, opts);
    } catch (err) {
      if (attempt >= 3 || !/EADDRINUSE/.test((err as Error).message) || env.PORT !== undefined) throw err;
    }
  }
}

async function spawnServerOnce(dataDir: string, env: Record<string, string>, opts: SpawnOptions): Promise<ChildServer> {
  const port = await freePort();
  const proc = spawn(process.execPath, opts.bundled ? [bundledEntry()] : ['--import', 'tsx', path.join(ROOT, 'src/app/main.ts')], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      STRIKEBOOK_DATA_DIR: dataDir,
      STRIKEBOOK_BOOTSTRAP_TOKEN: BOOTSTRAP,
      STRIKEBOOK_INDEX_FEED: 'manual',
      STRIKEBOOK_DEMO_MAKER: '0',
      STRIKEBOOK_JOURNAL_RETENTION: 'keep',
      LOG_LEVEL: 'warn',
      STRIKEBOOK_RATE_LIMITS: '0',
      // a DATABASE_URL in the test runner's environment must not move these servers to PostgreSQL
      DATABASE_URL: '',
      ...clockEnv(env),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-20_000));
  proc.stderr!.on('data', keep);
  proc.stdout!.on('data', keep);
  const output = () => out;
  const url = `http://127.0.0.1:${port}`;
  // a bound on a server that never starts, not a judgment of speed: at a load of ~10 on 2 cores a
  // start under tsx has taken over 30 s
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`server exited early (${proc.exitCode ?? proc.signalCode}): ${out}`);
    try {
      const r = await fetch(`${url}/health`);
      if (r.ok) return { url, proc, exited, output };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  proc.kill('SIGKILL');
  throw new Error(`server did not start: ${out}`);
}

export interface RpcResponse {
  status: number;
  body: any;
}

export interface RpcOptions {
  /** GET with a query string instead of POST with a JSON body. */
  get?: boolean;
  /** Path prefix, `/v1/` by default (`/api/v2/`, `/api/v1/`). */
  prefix?: string;
  /** POST a JSON-RPC request `{"jsonrpc":"2.0","id":<id>,"method":<method>,"params":{...}}`. */
  jsonrpc?: { id: unknown };
  headers?: Record<string, string>;
}

/** A query string as a Deribit client builds it: arrays as repeated keys, objects as JSON text. */
export function queryString(params: Record<string, unknown>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const x of v) q.append(k, typeof x === 'object' && x !== null ? JSON.stringify(x) : String(x));
    else q.append(k, typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));
  }
  return q.toString();
}

/** Calls a method by POST with a JSON body (or GET with a query string when `get` is set). */
export async function rpc(url: string, method: string, params: Record<string, unknown> = {}, token?: string, opts: RpcOptions = {}): Promise<RpcResponse> {
  const prefix = opts.prefix ?? '/v1/';
  const headers: Record<string, string> = { ...opts.headers };
  if (token) headers.authorization = `Bearer ${token}`;
  let res: Response;
  if (opts.get) {
    const qs = queryString(params);
    res = await fetch(`${url}${prefix}${method}${qs ? '?' + qs : ''}`, { headers });
  } else {
    headers['content-type'] = 'application/json';
    const body = opts.jsonrpc ? { jsonrpc: '2.0', id: opts.jsonrpc.id, method, params } : params;
    res = await fetch(`${url}${prefix}${method}`, { method: 'POST', headers, body: JSON.stringify(body) });
  }
  return { status: res.status, body: await res.json() };
}

/** A raw HTTP request to `path`; the body is parsed as JSON when it is JSON, else left as text. */
export async function request(url: string, path: string, init: RequestInit = {}): Promise<{ status: number; text: string; body: any }> {
  const res = await fetch(`${url}${path}`, init);
  const text = await res.text();
  let body: any = null;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: callers assert on `text`
  }
  return { status: res.status, text, body };
}

export interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body parsed as JSON, or null when it is not JSON. */
  body: any;
}

/** One request exactly as given (node:http, no URL normalization): the target and body are sent as they are. */
export function rawRequest(url: string, method: string, target: string, opts: { headers?: Record<string, string>; body?: string } = {}): Promise<RawReply> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.body !== undefined) headers['content-length'] = String(Buffer.byteLength(opts.body));
    const req = httpRequest({ host: '127.0.0.1', port: Number(port), method, path: target, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        let body: any = null;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON: callers assert on `text`
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
      });
    });
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

/** Like rpc, but fails loudly unless the call succeeded; returns `result`. */
export async function ok(url: string, method: string, params: Record<string, unknown> = {}, token?: string): Promise<any> {
  const r = await rpc(url, method, params, token);
  if (r.body.error) throw new Error(`${method} failed: ${JSON.stringify(r.body.error)}`);
  return r.body.result;
}

/** Bootstraps an admin and returns its access token. */
export async function adminToken(url: string, email = 'admin@example.com', password = 'admin-password-1'): Promise<string> {
  await ok(url, 'private/create_admin', { email, password, bootstrap_token: BOOTSTRAP });
  return login(url, email, password);
}

export async function login(url: string, email: string, password: string): Promise<string> {
  const r = await ok(url, 'public/auth', { grant_type: 'password', username: email, password });
  return r.access_token;
}

/** Creates a user through an invite code, logs in, optionally deposits; returns the token. */
export async function userToken(url: string, admin: string, email: string, deposit?: { currency: string; amount: number }): Promise<string> {
  const inv = await ok(url, 'private/generate_invite_code', {}, admin);
  await ok(url, 'private/create_user', { email, password: 'user-password-1', invite_code: inv.code });
  const token = await login(url, email, 'user-password-1');
  if (deposit) await ok(url, 'private/deposit_collateral', deposit, token);
  return token;
}
