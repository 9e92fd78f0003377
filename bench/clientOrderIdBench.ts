// client_order_id memory (issue 14 finding 2): 1,000,000 orders with fresh client_order_ids
// through the engine (the command path of the sequencer, without HTTP or the journal), heap after a
// full gc() before and after. Each id used to stay in memory for 24 h (heap 41 -> 257 MB after 450k
// orders over HTTP); now a user keeps the newest `clientOrderIdsKept` (10,000) and its newest
// `closedOrdersKept` (10,000) closed orders, so the heap must stay within HEAP_GROWTH_BOUND_MB.
import type { Sequenced } from '../src/engine/commands.ts';
import { DEFAULT_LIMITS, Exchange } from '../src/engine/exchange.ts';
import { instrumentName } from '../src/domain/instrument.ts';
import { applyCommand } from '../src/sequencer/sequencer.ts';

const ORDERS = 1_000_000;
/** The stated bound: heap growth after 1,000,000 fresh ids, after a full gc. */
export const HEAP_GROWTH_BOUND_MB = 48;

function heapMb(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

export async function runClientOrderIdBench(): Promise<{ lines: string[]; ok: boolean }> {
  const T0 = Date.UTC(2026, 0, 5, 12);
  const expiry = Date.UTC(2026, 0, 30, 8);
  const name = instrumentName('BTC', expiry, 130000, 'call');
  const ex = new Exchange();
  let seq = 0;
  const apply = (cmd: object, ts = T0): unknown => applyCommand(ex, { ...cmd, ts, seq: ++seq } as Sequenced);
  apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null });
  apply({
    t: 'list',
    instruments: [{ currency: 'BTC', name, optionType: 'call', strike: 130000, expiry, settlementPeriod: 'month', tick: 1, tickSteps: [{ abovePrice: 50, tick: 5 }], lotScaled: 10_000_000, makerCommission: 30_000, takerCommission: 30_000, contractSize: 1 }],
  });
  const user = apply({ t: 'create_user', email: 'bench@example.com', passwordHash: 'x', role: 'user', inviteCode: null, by: null }) as { id: number };
  apply({ t: 'deposit', userId: user.id, currency: 'BTC', amount: 10 ** 10, depositId: null, by: 0 });
  const before = heapMb();
  const t0 = performance.now();
  for (let i = 0; i < ORDERS; i++) {
    // an IOC bid with nothing to take: placed and closed at once, as a retrying client's orders are
    const r = apply(
      { t: 'place', userId: user.id, side: 0, instrument: name, price: 50, advanced: null, advPrice: null, lots: 10_000_000, type: 'limit', tif: 'immediate_or_cancel', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: `bench-${i}` },
      T0 + Math.floor(i / 100),
    ) as { order?: unknown };
    if (i === 0 && r.order === undefined) throw new Error(`the bench order was refused: ${JSON.stringify(r)}`);
  }
  const seconds = (performance.now() - t0) / 1000;
  const afterMb = heapMb();
  const u = ex.users.get(user.id)!;
  const growth = afterMb - before;
  const ok = growth <= HEAP_GROWTH_BOUND_MB && u.clientOrderIds.size <= DEFAULT_LIMITS.clientOrderIdsKept;
  const gcNote = (globalThis as { gc?: unknown }).gc ? '' : ' (no --expose-gc: figures include garbage)';
  return {
    ok,
    lines: [
      `${ORDERS.toLocaleString('en-US')} orders with fresh client_order_ids in ${seconds.toFixed(1)} s${gcNote}`,
      `heap after gc: before ${before.toFixed(1)} MB, after ${afterMb.toFixed(1)} MB, growth ${growth.toFixed(1)} MB (bound ${HEAP_GROWTH_BOUND_MB} MB) ${growth <= HEAP_GROWTH_BOUND_MB ? 'OK' : 'OVER'}`,
      `ids remembered: ${u.clientOrderIds.size} (bound ${DEFAULT_LIMITS.clientOrderIdsKept}); orders kept: ${u.orders.size}`,
    ],
  };
}
