// Abuse benchmark (issue 14): a victim places orders open-loop (one every VICTIM_INTERVAL_MS on a
// fixed schedule, latency measured from the scheduled start, so a stalled server cannot hide its
// stall by slowing the victim down) alone, then during each flood, each flood from its own child
// process (bench/abuseFlood.ts):
//   (a) 16 unauthenticated connections asking get_instruments currency=any, get_all_order_books
//       depth 1000, book summaries and deep books;
//   (b) one WebSocket sending 700 heavy requests and disconnecting, over and over;
//   (c) 256 connections placing IOC orders as another user (limited by the per-user credit limits
//       where the server has them: it runs with whatever limits the server applies by default).
// Printed: victim p50/p99 per phase and the ratio flood p99 / baseline p99 (target <= 3x).
// Then the gateway flood (bench/abuseGateway.ts): 256 connections from one address through a stream
// gateway, the victim's p99 through the same gateway against its own baseline.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BOOTSTRAP, call, runIfMain, spawnNode, spawnStrikebook, waitHttp } from './support.ts';
import { runGatewayFlood } from './abuseGateway.ts';

export const TARGET_RATIO = 3;
const VICTIM_INTERVAL_MS = 10;
/** 1,000 victim orders per phase: a p99 over 600 (the 6th worst) swung the ratios 1.6-3.6x between
 *  two quiet runs with no server change. */
const PHASE_MS = 10_000;
const WARMUP_MS = 1_500;

interface Phase {
  name: string;
  p50: number;
  p99: number;
  n: number;
  errors: number;
  /** the phase's latencies, sorted */
  sorted: number[];
}

function pct(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

/** The victim: an IOC bid every VICTIM_INTERVAL_MS for `ms`, on schedule whatever the answers do. */
async function victim(base: string, token: string, instrument: string, price: number, ms: number): Promise<{ lat: number[]; errors: number }> {
  const lat: number[] = [];
  let errors = 0;
  const body = JSON.stringify({ instrument_name: instrument, amount: 0.1, price, time_in_force: 'immediate_or_cancel' });
  const start = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i * VICTIM_INTERVAL_MS < ms; i++) {
    const scheduled = start + i * VICTIM_INTERVAL_MS;
    const wait = scheduled - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    pending.push(
      fetch(`${base}/api/v2/private/buy`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body })
        .then(async (r) => {
          const j = (await r.json()) as { error?: unknown };
          if (j.error) errors++;
          lat.push(performance.now() - scheduled);
        })
        .catch(() => {
          errors++;
          lat.push(performance.now() - scheduled);
        }),
    );
  }
  await Promise.all(pending);
  return { lat, errors };
}

async function login(base: string, email: string): Promise<string> {
  return (await call(base, 'public/auth', { grant_type: 'password', username: email, password: 'bench-password' })).access_token;
}

export async function runAbuseBench(): Promise<{ lines: string[]; ok: boolean }> {
  const direct = await runDirectFloods();
  const gateway = await runGatewayFlood();
  return { lines: [...direct.lines, '', 'through a gateway:', ...gateway.lines], ok: direct.ok && gateway.ok };
}

async function runDirectFloods(): Promise<{ lines: string[]; ok: boolean }> {
  const lines: string[] = [];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-abusebench-'));
  const port = 21000 + Math.floor(Math.random() * 10000);
  const base = `http://127.0.0.1:${port}`;
  // the credit limits on, as in production: they are what keeps a flooder from taking everyone's turn
  const server = spawnStrikebook(port, dataDir, [], { STRIKEBOOK_RATE_LIMITS: '1' });
  let flood: ChildProcess | null = null;
  try {
    await waitHttp(`${base}/health`);
    await call(base, 'private/create_admin', { email: 'bench-admin@example.com', password: 'bench-password', bootstrap_token: BOOTSTRAP });
    const admin = await login(base, 'bench-admin@example.com');
    const users: Record<string, string> = {};
    for (const who of ['victim', 'flooder', 'maker']) {
      const u = await call(base, 'private/create_user', { email: `bench-${who}@example.com`, password: 'bench-password' }, admin);
      await call(base, 'private/deposit_collateral', { currency: 'BTC', amount: 1000, user_id: u.user_id }, admin);
      // the victim's 100 orders/s and the maker's setup are above the default tier: an operator
      // raises such accounts (the flooder keeps the default)
      if (who !== 'flooder') {
        await call(base, 'private/set_rate_limits', { user_id: u.user_id, matching_max_credits: 1e9, matching_refill_per_sec: 1e9, non_matching_max_credits: 1e9, non_matching_refill_per_sec: 1e9 }, admin);
      }
      users[who] = await login(base, `bench-${who}@example.com`);
    }
    const instruments = (await call(base, 'public/get_instruments', { currency: 'BTC' })) as any[];
    const index = (await call(base, 'public/get_index_price', { index_name: 'btc_usd' })).index_price;
    const lastExpiry = Math.max(...instruments.map((i) => i.expiration_timestamp));
    const inst = instruments.filter((i) => i.expiration_timestamp === lastExpiry && i.option_type === 'call').sort((a, b) => Math.abs(a.strike - index) - Math.abs(b.strike - index))[0];
    const name: string = inst.instrument_name;
    // a book 25 levels deep on each side; the victim's and the flooder's IOC bids sit below the best
    // ask, so they take nothing and the book stays as it is
    const b0 = await call(base, 'public/get_order_book', { instrument_name: name });
    const units: number[] = [];
    for (let u = Math.ceil(b0.min_price * 1e4 - 1e-6); u <= Math.floor(b0.max_price * 1e4 + 1e-6); u++) if (u % (u >= 50 ? 5 : 1) === 0) units.push(u);
    const mid = Math.floor(units.length / 2);
    for (let k = 1; k <= 25; k++) {
      await call(base, 'private/buy', { instrument_name: name, amount: 0.1, price: units[mid - k] / 1e4 }, users.maker);
      await call(base, 'private/sell', { instrument_name: name, amount: 0.1, price: units[mid + k] / 1e4 }, users.maker);
    }
    const bidPrice = units[mid - 30] / 1e4;
    const all = (await fetch(`${base}/api/v2/public/get_instruments?currency=any`).then((r) => r.text())).length;
    lines.push(`server: ${instruments.length} BTC series, get_instruments currency=any is ${(all / 1024).toFixed(0)} KiB; victim: an IOC bid every ${VICTIM_INTERVAL_MS} ms for ${PHASE_MS / 1000} s per phase`);

    const phases: Phase[] = [];
    const measure = async (label: string, mode: string | null): Promise<void> => {
      if (mode !== null) {
        flood = spawnNode(['--import', 'tsx', 'bench/abuseFlood.ts', base, mode, users.flooder, name, String(bidPrice)], {});
        await new Promise((r) => setTimeout(r, WARMUP_MS));
      }
      const { lat, errors } = await victim(base, users.victim, name, bidPrice, PHASE_MS);
      if (flood) {
        flood.kill('SIGKILL');
        await new Promise((r) => flood!.once('exit', r));
        flood = null;
        // let the server drain what the flood left queued before the next phase
        await new Promise((r) => setTimeout(r, 1000));
      }
      const sorted = lat.sort((a, b) => a - b);
      phases.push({ name: label, p50: pct(sorted, 0.5), p99: pct(sorted, 0.99), n: sorted.length, errors, sorted });
    };
    await measure('baseline (victim alone)', null);
    await measure('(a) 16 connections of big unauthenticated reads', 'reads');
    await measure('(b) one WebSocket: 700 heavy requests, disconnect, repeat', 'ws');
    await measure('(c) 256 connections of IOC orders from another user', 'orders');
    await measure('baseline again (victim alone)', null);

    // the baseline is both victim-alone phases pooled (2,000 samples): taking the lower of the two
    // p99s, as this bench did, picked the luckier run and biased every ratio upwards
    const baseline = [...phases[0].sorted, ...phases[phases.length - 1].sorted].sort((a, b) => a - b);
    const base99 = pct(baseline, 0.99);
    let ok = true;
    for (const p of phases) {
      const ratio = p.p99 / base99;
      const isFlood = p.name.startsWith('(');
      if (isFlood && !(ratio <= TARGET_RATIO)) ok = false;
      lines.push(
        `${p.name.padEnd(60)} victim p50 ${p.p50.toFixed(1).padStart(7)} ms  p99 ${p.p99.toFixed(1).padStart(7)} ms  (${p.n} orders, ${p.errors} errors)` +
          (isFlood ? `  p99 ratio ${ratio.toFixed(1)}x (target <= ${TARGET_RATIO}x) ${ratio <= TARGET_RATIO ? 'OK' : 'OVER'}` : ''),
      );
    }
    lines.push(`baseline p99 for the ratios: both victim-alone phases pooled (${baseline.length} orders), ${base99.toFixed(1)} ms`);
    return { lines, ok };
  } finally {
    if (flood) (flood as ChildProcess).kill('SIGKILL');
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, () => runAbuseBench());
