// What crossing orders leave on the heap (issue 36): the JS heap still alive, after a full GC, per
// crossing order once the engine's bounded lists are full. The crossing workload of the HTTP
// section on the engine alone: 10 accounts, each on one side of one of 5 calls, one-lot orders at
// one price, so every other order fills against a resting one. Every live byte is what each major
// GC marks and the old generation grows by until its caps, so this is the figure the open loop's
// mark-compacts scale with. Deterministic (the engine's clock is the harness's), so A/B runs of two
// trees compare on any machine:
//
//   node --import tsx --expose-gc bench/retainedHeap.ts [orders=600000]
import { EXP_MAR, Harness, spec } from '../test/helpers/engine.ts';
import { markPrice } from '../test/risk/portfolio/pmHarness.ts';
import { runIfMain } from './support.ts';

const CALLS = [90000, 95000, 100000, 105000, 110000].map((k) => spec('BTC', EXP_MAR, k, 'call'));
const ACCOUNTS = 10;

export function retainedHeap(orders: number): { mib: number; bytesPerOrder: number; trades: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc');
  const h = Harness.market(CALLS);
  const users = Array.from({ length: ACCOUNTS }, () => h.user('1000000'));
  const prices = CALLS.map((c) => markPrice(h, c.name));
  gc();
  const before = process.memoryUsage().heapUsed;
  let trades = 0;
  for (let i = 0; i < orders; i++) {
    const k = i % CALLS.length;
    // account 2k sells and 2k+1 buys call k: an account never meets itself
    const buyer = (i / CALLS.length) % 2 < 1;
    const user = users[(2 * k + (buyer ? 1 : 0)) % ACCOUNTS]!;
    const r = h.ok(user, buyer ? 'buy' : 'sell', CALLS[k]!.name, prices[k]!, '0.1');
    trades += r.trades.length;
    // the engine's clock moves 1 ms per 20 orders (20,000 orders/s), so time-based sweeps run as live
    if (i % 20 === 19) h.ts += 1;
  }
  gc();
  gc();
  const live = process.memoryUsage().heapUsed - before;
  return { mib: live / 2 ** 20, bytesPerOrder: live / orders, trades };
}

runIfMain(import.meta.url, async () => {
  const orders = Number(process.argv[2] ?? 600_000);
  const r = retainedHeap(orders);
  return {
    lines: [`retained JS heap after ${orders} crossing orders (${r.trades} trades), full GC: ${r.mib.toFixed(1)} MiB = ${r.bytesPerOrder.toFixed(0)} B per order`],
    ok: true,
  };
});
