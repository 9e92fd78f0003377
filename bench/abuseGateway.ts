// The abuse section's gateway flood (issue 29 item 3; run by bench/abuseBench.ts, or alone:
// `node --import tsx bench/abuseGateway.ts`, needs NATS at NATS_URL or 127.0.0.1:4222). A leader
// (credit limits on) and one stream gateway in front of it. The victim, from another address
// (127.0.0.2), is logged in through the gateway and places an IOC bid every 10 ms on a fixed schedule
// (latency from the scheduled start) alone, then while 256 connections from one address flood the
// same gateway (bench/abuseGatewayFlood.ts: logins, then one request in flight each for good), then
// alone again. Printed: victim p50/p99 per phase, a fresh login's time during the flood, and
// PASS/FAIL on the flood p99 / baseline p99 (both baselines pooled), target <= 3x.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { BOOTSTRAP, call, freePort, runIfMain, spawnNode, spawnStrikebook, waitHttp } from './support.ts';

const TARGET_RATIO = 3;
const VICTIM_INTERVAL_MS = 10;
const PHASE_MS = 10_000;
const WARMUP_MS = 3_000;
const NATS_URL = process.env.NATS_URL || 'nats://127.0.0.1:4222';

function pct(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

/** A logged-in WebSocket through the gateway from 127.0.0.2; resolves with its call function and the login's time. */
async function victimSocket(gateway: string, email: string): Promise<{ ws: WebSocket; call: (method: string, params: object) => Promise<any>; loginMs: number }> {
  const ws = new WebSocket(`${gateway.replace(/^http/, 'ws')}/ws/api/v2`, { localAddress: '127.0.0.2' });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  let id = 0;
  const pending = new Map<number, (m: any) => void>();
  ws.on('message', (raw) => {
    const msg = JSON.parse(raw.toString()) as { id?: number };
    if (typeof msg.id === 'number') {
      pending.get(msg.id)?.(msg);
      pending.delete(msg.id);
    }
  });
  // an answer that never comes is an error after 10 s (the gateway before issue 29 left calls unanswered)
  const rpc = (method: string, params: object) =>
    new Promise<any>((resolve) => {
      const k = ++id;
      const timer = setTimeout(() => {
        pending.delete(k);
        resolve({ error: { code: 0, message: 'no answer within 10 s' } });
      }, 10_000);
      pending.set(k, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: k, method, params }));
    });
  const t0 = performance.now();
  const auth = await rpc('public/auth', { grant_type: 'password', username: email, password: 'bench-password' });
  const loginMs = performance.now() - t0;
  if (!auth.result?.access_token) throw new Error(`victim login through the gateway failed: ${JSON.stringify(auth.error)}`);
  return { ws, call: rpc, loginMs };
}

export async function runGatewayFlood(): Promise<{ lines: string[]; ok: boolean }> {
  try {
    const nc = await connect({ servers: NATS_URL, timeout: 2000, maxReconnectAttempts: 0 });
    await nc.close();
  } catch (err) {
    return { ok: false, lines: [`SKIPPED: NATS not reachable at ${NATS_URL} (${err instanceof Error ? err.message : String(err)})`] };
  }
  const lines: string[] = [];
  const tag = randomBytes(4).toString('hex');
  const natsEnv = { NATS_URL, STRIKEBOOK_NATS_STREAM: `SBABUSE_${tag}`, STRIKEBOOK_NATS_SUBJECT_PREFIX: `sbabuse_${tag}`, STRIKEBOOK_NATS_MAX_AGE: '300' };
  const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-gwabuse-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = spawnStrikebook(port, dataDir, [], { STRIKEBOOK_RATE_LIMITS: '1', ...natsEnv });
  let gw: ChildProcess | null = null;
  let flood: ChildProcess | null = null;
  const sockets: WebSocket[] = [];
  try {
    await waitHttp(`${base}/health`);
    await call(base, 'private/create_admin', { email: 'bench-admin@example.com', password: 'bench-password', bootstrap_token: BOOTSTRAP });
    const admin = (await call(base, 'public/auth', { grant_type: 'password', username: 'bench-admin@example.com', password: 'bench-password' })).access_token;
    for (const who of ['victim', 'flooder']) {
      const u = await call(base, 'private/create_user', { email: `bench-${who}@example.com`, password: 'bench-password' }, admin);
      await call(base, 'private/deposit_collateral', { currency: 'BTC', amount: 1000, user_id: u.user_id }, admin);
      // the victim's 100 orders/s are above the default tier (the flooder keeps the default)
      if (who === 'victim') await call(base, 'private/set_rate_limits', { user_id: u.user_id, matching_max_credits: 1e9, matching_refill_per_sec: 1e9, non_matching_max_credits: 1e9, non_matching_refill_per_sec: 1e9 }, admin);
    }
    const instruments = (await call(base, 'public/get_instruments', { currency: 'BTC' })) as Array<{ instrument_name: string; expiration_timestamp: number; option_type: string; strike: number }>;
    const index = (await call(base, 'public/get_index_price', { index_name: 'btc_usd' })).index_price as number;
    const lastExpiry = Math.max(...instruments.map((i) => i.expiration_timestamp));
    const inst = instruments.filter((i) => i.expiration_timestamp === lastExpiry && i.option_type === 'call').sort((a, b) => Math.abs(a.strike - index) - Math.abs(b.strike - index))[0]!;
    const book = await call(base, 'public/get_order_book', { instrument_name: inst.instrument_name });
    // an IOC bid on the price grid (abuseBench.ts's) in an empty book takes nothing: the book stays as it is
    const units: number[] = [];
    for (let u = Math.ceil(book.min_price * 1e4 - 1e-6); u <= Math.floor(book.max_price * 1e4 + 1e-6); u++) if (u % (u >= 50 ? 5 : 1) === 0) units.push(u);
    const bid = units[Math.floor(units.length / 4)]! / 1e4;

    const gwPort = await freePort();
    const gateway = `http://127.0.0.1:${gwPort}`;
    gw = spawnNode(['--import', 'tsx', 'src/gateway/main.ts'], { ...natsEnv, STRIKEBOOK_LEADER_URL: base, PORT: String(gwPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn' });
    await waitHttp(`${gateway}/health`);
    lines.push(`leader + 1 gateway (defaults: 256 connections and 32 upstreams per address); victim from 127.0.0.2: an IOC bid every ${VICTIM_INTERVAL_MS} ms for ${PHASE_MS / 1000} s per phase`);

    const victim = await victimSocket(gateway, 'bench-victim@example.com');
    sockets.push(victim.ws);
    const params = { instrument_name: inst.instrument_name, amount: 0.1, price: bid, time_in_force: 'immediate_or_cancel' };
    let firstError: unknown = null;
    const phase = async (): Promise<{ sorted: number[]; errors: number }> => {
      const lat: number[] = [];
      let errors = 0;
      const start = performance.now();
      const pending: Promise<void>[] = [];
      for (let i = 0; i * VICTIM_INTERVAL_MS < PHASE_MS; i++) {
        const scheduled = start + i * VICTIM_INTERVAL_MS;
        const wait = scheduled - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        pending.push(
          victim.call('private/buy', params).then((a) => {
            if (a.error) {
              errors++;
              firstError ??= a.error;
            }
            lat.push(performance.now() - scheduled);
          }),
        );
      }
      await Promise.all(pending);
      return { sorted: lat.sort((a, b) => a - b), errors };
    };
    const report = (name: string, p: { sorted: number[]; errors: number }, extra = '') =>
      lines.push(`${name.padEnd(52)} victim p50 ${pct(p.sorted, 0.5).toFixed(1).padStart(7)} ms  p99 ${pct(p.sorted, 0.99).toFixed(1).padStart(7)} ms  (${p.sorted.length} orders, ${p.errors} errors)${extra}`);

    const before = await phase();
    report('baseline (victim alone)', before);
    flood = spawnNode(['--import', 'tsx', 'bench/abuseGatewayFlood.ts', gateway, 'bench-flooder@example.com', 'bench-password', inst.instrument_name], {});
    await new Promise((r) => setTimeout(r, WARMUP_MS));
    const fresh = await victimSocket(gateway, 'bench-victim@example.com');
    sockets.push(fresh.ws);
    const during = await phase();
    const health = (await fetch(`${gateway}/health`).then((r) => r.json())) as { connections: number; upstreams: number };
    flood.kill('SIGKILL');
    await new Promise((r) => flood!.once('exit', r));
    flood = null;
    await new Promise((r) => setTimeout(r, 1000));
    const after = await phase();
    report('baseline again (victim alone)', after);

    const pooled = [...before.sorted, ...after.sorted].sort((a, b) => a - b);
    const base99 = pct(pooled, 0.99);
    const ratio = pct(during.sorted, 0.99) / base99;
    const ok = ratio <= TARGET_RATIO && during.errors === 0;
    report('256 connections from one address through the gateway', during, `  p99 ratio ${ratio.toFixed(2)}x (target <= ${TARGET_RATIO}x) ${ok ? 'PASS' : 'FAIL'}`);
    lines.push(`during the flood: the gateway held ${health.connections} client connections and ${health.upstreams} upstreams; a fresh victim login took ${fresh.loginMs.toFixed(1)} ms`);
    lines.push(`baseline p99 for the ratio: both victim-alone phases pooled (${pooled.length} orders), ${base99.toFixed(1)} ms`);
    if (firstError !== null) lines.push(`first victim error: ${JSON.stringify(firstError)}`);
    return { lines, ok };
  } finally {
    for (const s of sockets) s.terminate();
    if (flood) (flood as ChildProcess).kill('SIGKILL');
    if (gw) {
      const g = gw as ChildProcess;
      g.kill('SIGTERM');
      await new Promise((r) => g.once('exit', r));
    }
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
    const nc = await connect({ servers: NATS_URL }).catch(() => null);
    if (nc) {
      await (await jetstreamManager(nc)).streams.delete(natsEnv.STRIKEBOOK_NATS_STREAM).catch(() => undefined);
      await nc.close();
    }
  }
}

runIfMain(import.meta.url, () => runGatewayFlood());
