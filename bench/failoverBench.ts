// Failover time on PostgreSQL (issue 18, docs/operations.md): a leader under a light order load is
// SIGKILLed with a hot standby running; measured from the kill to the first order the standby
// accepts. The reference, in the same run: the same kill without a standby, and a fresh server
// started on the database at once (a supervisor's restart), to its first accepted order.
// Needs PostgreSQL (BENCH_DATABASE_URL, default the tests' database); each run has its own schema.
// Alone: `node --import tsx bench/failoverBench.ts` (BENCH_FAILOVER_ROUNDS, default 5).
import { mkdtempSync, rmSync } from 'node:fs';
import type { ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { BOOTSTRAP, call, freePort, runIfMain, spawnStrikebook, stopGracefully } from './support.ts';

const DATABASE_URL = process.env.BENCH_DATABASE_URL || process.env.STRIKEBOOK_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const ROUNDS = Number(process.env.BENCH_FAILOVER_ROUNDS || 5);
const RESTART_ROUNDS = 3;
const LOAD_MS = 1_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Server {
  url: string;
  proc: ChildProcess;
  dir: string;
}

async function start(dbUrl: string): Promise<Server> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'strikebook-failover-'));
  const proc = spawnStrikebook(port, dir, [], { DATABASE_URL: dbUrl, STRIKEBOOK_STANDBY_POLL_MS: '200', LOG_LEVEL: 'error' });
  const url = `http://127.0.0.1:${port}`;
  for (const deadline = performance.now() + 30_000; performance.now() < deadline; ) {
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}`);
    try {
      if ((await fetch(`${url}/health`)).ok) return { url, proc, dir };
    } catch {
      // not listening yet
    }
    await sleep(20);
  }
  throw new Error('server did not start');
}

/** Places orders until `stop()`, as fast as one client in a loop can. */
function load(url: string, token: string, instrument: string, price: number): { stop(): Promise<number> } {
  let stopped = false;
  let acked = 0;
  const loop = (async () => {
    while (!stopped) {
      try {
        await call(url, 'private/buy', { instrument_name: instrument, amount: 0.1, price }, token);
        acked++;
      } catch {
        // the kill
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return acked;
    },
  };
}

/** Sends an order every 10 ms until one is accepted; ms since `from`. */
async function firstAccepted(url: string, token: string, instrument: string, price: number, from: number): Promise<number> {
  for (;;) {
    try {
      await call(url, 'private/buy', { instrument_name: instrument, amount: 0.1, price }, token);
      return performance.now() - from;
    } catch (e) {
      if (performance.now() - from > 120_000) throw new Error(`no order accepted within 120 s; the last answer: ${e instanceof Error ? e.message : String(e)}`);
      await sleep(10);
    }
  }
}

function stats(xs: number[]): string {
  const s = [...xs].sort((a, b) => a - b);
  const p50 = s.length % 2 === 1 ? s[s.length >> 1]! : (s[(s.length >> 1) - 1]! + s[s.length >> 1]!) / 2;
  return `p50 ${p50.toFixed(0)} ms, max ${s[s.length - 1]!.toFixed(0)} ms (${xs.map((x) => x.toFixed(0)).join(', ')})`;
}

export async function runFailoverBench(): Promise<{ lines: string[]; ok: boolean }> {
  const admin = new pg.Client({ connectionString: DATABASE_URL, connectionTimeoutMillis: 3_000 });
  try {
    await admin.connect();
  } catch (e) {
    return { lines: [`skipped: PostgreSQL not reachable at ${DATABASE_URL}: ${e instanceof Error ? e.message : String(e)}`], ok: true };
  }
  const schema = `strikebook_bench_${randomBytes(6).toString('hex')}`;
  await admin.query(`CREATE SCHEMA ${schema}`);
  const u = new URL(DATABASE_URL);
  u.searchParams.set('options', `-c search_path=${schema}`);
  const dbUrl = u.toString();
  const servers: Server[] = [];
  const spawn = async () => {
    const s = await start(dbUrl);
    servers.push(s);
    return s;
  };
  try {
    let leader = await spawn();
    await call(leader.url, 'private/create_admin', { email: 'admin@example.com', password: 'admin-password-1', bootstrap_token: BOOTSTRAP });
    const adminToken = (await call(leader.url, 'public/auth', { grant_type: 'password', username: 'admin@example.com', password: 'admin-password-1' })).access_token;
    const inst = (await call(leader.url, 'public/get_instruments', { currency: 'BTC' })).find((i: any) => i.option_type === 'call' && i.state === 'open');
    const book = await call(leader.url, 'public/get_order_book', { instrument_name: inst.instrument_name });
    const price = Math.ceil(book.min_price / inst.tick_size) * inst.tick_size + 10 * inst.tick_size;
    const tokens: string[] = [];
    const newUser = async (n: number) => {
      const inv = await call(leader.url, 'private/generate_invite_code', {}, adminToken);
      await call(leader.url, 'private/create_user', { email: `u${n}@example.com`, password: 'user-password-1', invite_code: inv.code });
      const token = (await call(leader.url, 'public/auth', { grant_type: 'password', username: `u${n}@example.com`, password: 'user-password-1' })).access_token;
      await call(leader.url, 'private/deposit_collateral', { currency: 'BTC', amount: 1000 }, token);
      tokens.push(token);
      return token;
    };

    const hot: number[] = [];
    const lines: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // fresh accounts: the load's and the probe's, so that the load's resting orders (it can reach
      // the per-instrument open-order limit on a quiet machine) never refuse the probe
      const token = await newUser(2 * round);
      const probe = await newUser(2 * round + 1);
      const standby = await spawn();
      const l = load(leader.url, token, inst.instrument_name, Number(price.toFixed(4)));
      await sleep(LOAD_MS);
      leader.proc.kill('SIGKILL');
      const killed = performance.now();
      hot.push(await firstAccepted(standby.url, probe, inst.instrument_name, Number(price.toFixed(4)), killed));
      await l.stop();
      leader = standby;
    }
    lines.push(`hot standby, kill -> first accepted order: ${stats(hot)}`);

    const cold: number[] = [];
    for (let round = 0; round < RESTART_ROUNDS; round++) {
      const token = await newUser(2 * (ROUNDS + round));
      const probe = await newUser(2 * (ROUNDS + round) + 1);
      const l = load(leader.url, token, inst.instrument_name, Number(price.toFixed(4)));
      await sleep(LOAD_MS);
      leader.proc.kill('SIGKILL');
      const killed = performance.now();
      leader = await spawn();
      cold.push(await firstAccepted(leader.url, probe, inst.instrument_name, Number(price.toFixed(4)), killed));
      await l.stop();
    }
    lines.push(`reference, no standby: kill -> restarted server's first accepted order: ${stats(cold)}`);
    const p50 = [...hot].sort((a, b) => a - b)[hot.length >> 1]!;
    lines.push(`hot standby p50 <= 3 s: ${p50 <= 3_000 ? 'yes' : 'NO'}`);
    return { lines, ok: p50 <= 3_000 };
  } finally {
    for (const s of servers) {
      await stopGracefully(s.proc);
      rmSync(s.dir, { recursive: true, force: true });
    }
    await admin.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => undefined);
    await admin.end();
  }
}

runIfMain(import.meta.url, runFailoverBench);
