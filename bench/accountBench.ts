// Account-query benchmark (issue 3): the account management operations (API.md 3.4) for a user with
// 200 positions and 500 open orders must answer within 2 ms at the 99th percentile. Each sample is
// the operation's real handler (src/api/methods/account.ts) on a real engine state plus the JSON
// serialization of its result, i.e. everything but the HTTP transport (measured in httpBench.ts).
import { loadavg } from 'node:os';
import type { Services } from '../src/app/services.ts';
import { accountMethods } from '../src/api/methods/account.ts';
import type { CallContext } from '../src/api/rpc/registry.ts';
import { instrumentName, roundToTick } from '../src/domain/instrument.ts';
import { isReject } from '../src/domain/errors.ts';
import type { Command, InstrumentSpec, Sequenced } from '../src/engine/commands.ts';
import { Exchange } from '../src/engine/exchange.ts';
import { runIfMain } from './support.ts';
import { CreditLimiter } from '../src/app/credits.ts';

export const TARGET_P99_MS = 2;
const POSITIONS = 200;
const OPEN_ORDERS = 500;

const T0 = Date.UTC(2026, 0, 5, 12);
const EXPIRIES = [Date.UTC(2026, 0, 30, 8), Date.UTC(2026, 1, 27, 8), Date.UTC(2026, 2, 27, 8), Date.UTC(2026, 5, 26, 8)];

function specs(): InstrumentSpec[] {
  const out: InstrumentSpec[] = [];
  for (const expiry of EXPIRIES) {
    for (let strike = 70_000; strike <= 138_000; strike += 2_000) {
      for (const optionType of ['call', 'put'] as const) {
        out.push({
          currency: 'BTC', name: instrumentName('BTC', expiry, strike, optionType), optionType, strike, expiry, settlementPeriod: 'month',
          tick: 1, tickSteps: [{ abovePrice: 50, tick: 5 }], lotScaled: 10_000_000, makerCommission: 30_000, takerCommission: 30_000, contractSize: 1,
        });
      }
    }
  }
  return out;
}

/** The engine state: user 1 holds 200 positions (half long, half short) and 500 open orders. */
export function buildState(): Exchange {
  const ex = new Exchange();
  let seq = 0;
  const apply = (c: Command): unknown => {
    const r = ex.apply({ ...c, ts: T0, seq: ++seq } as Sequenced);
    if (isReject(r)) throw new Error(`setup command ${c.t} refused: ${r.code} ${r.reason ?? ''}`);
    return r;
  };
  apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null });
  const list = specs();
  apply({ t: 'list', instruments: list });
  for (const email of ['p@bench.io', 'q@bench.io']) {
    apply({ t: 'create_user', email, passwordHash: 'h', role: 'user', inviteCode: null, by: null });
  }
  apply({ t: 'deposit', userId: 1, currency: 'BTC', amount: 10_000 * 1e8, depositId: null, by: 1 });
  apply({ t: 'deposit', userId: 2, currency: 'BTC', amount: 10_000 * 1e8, depositId: null, by: 2 });
  const order = (userId: number, side: 0 | 1, name: string, price: number, lots: number) =>
    apply({ t: 'place', userId, side, instrument: name, price, advanced: null, advPrice: null, lots: lots * 10_000_000, type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null });
  const insts = list.map((s) => ex.instruments.get(s.name)!);
  for (let i = 0; i < POSITIONS; i++) {
    const inst = insts[i];
    const m = ex.markets.get(inst.id)!;
    const price = Math.max(m.minPrice, roundToTick(inst, m.markCoin * 1e4, 'nearest'));
    const pSide = i % 2 === 0 ? 0 : 1;
    order(2, pSide === 0 ? 1 : 0, inst.name, price, 1 + (i % 3));
    order(1, pSide, inst.name, price, 1 + (i % 3));
  }
  for (let i = 0; i < OPEN_ORDERS; i++) {
    const inst = insts[i % insts.length];
    const m = ex.markets.get(inst.id)!;
    order(1, 0, inst.name, roundToTick(inst, m.minPrice, 'up'), 1);
  }
  const user = ex.users.get(1)!;
  let positions = 0;
  for (const p of user.positions.values()) if (p.size !== 0) positions++;
  if (positions !== POSITIONS || user.openOrderCount !== OPEN_ORDERS) throw new Error(`setup: ${positions} positions, ${user.openOrderCount} open orders`);
  return ex;
}

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

export async function runAccountBench(opts: { samples?: number } = {}): Promise<{ lines: string[]; ok: boolean }> {
  const samples = opts.samples ?? 2_000;
  const t0 = performance.now();
  const ex = buildState();
  const lines = [`user with ${POSITIONS} positions and ${OPEN_ORDERS} open orders over ${ex.instruments.size} instruments (built in ${(performance.now() - t0).toFixed(0)} ms); ${samples} samples per operation, handler + JSON`];
  // the handlers need only the engine and a read barrier (nothing pending here)
  // and the rate limits (get_account_summary extended shows them)
  const services = { ex, seq: { read: <R>(fn: () => R) => Promise.resolve(fn()) }, credits: new CreditLimiter(() => 0, false, 1) } as unknown as Services;
  const ctx: CallContext = { services, caller: { userId: 1, role: 'user', scopes: new Set(['account:read', 'trade:read']), tokenHash: null }, ip: '127.0.0.1' };
  const firstName = [...ex.users.get(1)!.positions.values()][0].inst.name;
  const params: Record<string, Record<string, unknown>> = {
    'public/get_account_balance': { currency: 'BTC' },
    'public/get_account_collateral': { currency: 'BTC' },
    'public/get_account_summary': { currency: 'BTC', extended: true },
    'public/get_all_account_balances': {},
    'private/get_account_summaries': { extended: false },
    'public/get_position': { instrument_name: firstName },
    'public/get_positions': { currency: 'any' },
    'public/get_positions_with_mints': { currency: 'any' },
    'public/get_exercisable_options': { currency: 'any' },
  };
  let ok = true;
  for (const def of accountMethods) {
    const p = params[def.name];
    if (p === undefined) throw new Error(`no bench params for ${def.name}`);
    const times: number[] = [];
    const cpu: number[] = [];
    let bytes = 0;
    // each operation starts from a clean heap (`npm run bench` runs with --expose-gc)
    (globalThis as { gc?: () => void }).gc?.();
    for (let i = 0; i < samples + 200; i++) {
      const c0 = process.cpuUsage();
      const s = performance.now();
      const result = await def.handler(ctx, p as never);
      bytes = JSON.stringify(result).length;
      const dt = performance.now() - s;
      const c = process.cpuUsage(c0);
      if (i >= 200) {
        // the first 200 warm the JIT up
        times.push(dt);
        cpu.push((c.user + c.system) / 1000);
      }
    }
    times.sort((a, b) => a - b);
    cpu.sort((a, b) => a - b);
    const p50 = percentile(times, 0.5);
    const p99 = percentile(times, 0.99);
    const pass = p99 <= TARGET_P99_MS;
    ok &&= pass;
    lines.push(`${def.name.padEnd(34)} p50 ${p50.toFixed(3)} ms  p99 ${p99.toFixed(3)} ms  max ${times[times.length - 1].toFixed(3)} ms  cpu p99 ${percentile(cpu, 0.99).toFixed(3)} ms  (${bytes} bytes)  ${pass ? 'ok' : `OVER ${TARGET_P99_MS} ms`}`);
  }
  // wall-clock p99 is what counts; on a machine busy with other work it measures the scheduler as
  // much as the code, so the load and this process's own CPU time per call are shown beside it
  lines.push(`target: wall-clock p99 <= ${TARGET_P99_MS} ms for every operation: ${ok ? 'met' : 'NOT met'} (load average ${loadavg()[0].toFixed(2)})`);
  return { lines, ok };
}

runIfMain(import.meta.url, () => runAccountBench());
