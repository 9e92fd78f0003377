// An order load whose acknowledged orders and trades are then looked for on the NATS event stream
// (the gateway and takeover tests): every one present exactly once, and each book's changes chained
// without a gap up to the leader's current change_id.
import assert from 'node:assert/strict';
import { instruments, market, type Market } from './market.ts';
import type { StoredEvent } from './nats.ts';
import { ok } from './server.ts';

/** Three BTC calls of the latest expiry, with their price grids. */
export async function threeMarkets(url: string): Promise<Market[]> {
  const list = (await instruments(url)).filter((i) => i.option_type === 'call');
  const last = Math.max(...list.map((i) => i.expiration_timestamp));
  const series = list.filter((i) => i.expiration_timestamp === last).slice(0, 3);
  return Promise.all(series.map((i) => market(url, i)));
}

export interface OrderLoad {
  stop(): Promise<void>;
  /** order ids acknowledged, trade ids acknowledged */
  orders: string[];
  trades: string[];
}

/**
 * Orders from a maker and a taker over HTTP, round-robin over the markets, until stopped. With
 * `endsOnError`, a loop whose request fails (its server killed) just ends: that request's outcome
 * is unknown, and only what was acknowledged counts.
 */
export function orderLoad(url: string, maker: string, taker: string, ms: Market[], endsOnError = false): OrderLoad {
  const orders: string[] = [];
  const trades: string[] = [];
  let running = true;
  const loop = async (who: string, side: 'sell' | 'buy', offset: number) => {
    for (let i = offset; running; i++) {
      const m = ms[i % ms.length]!;
      const n = m.prices.length;
      // the maker rests in the upper half; the taker sometimes crosses it, sometimes rests low
      const price = side === 'sell' ? m.prices[n - 1 - (i % 8)] : i % 3 === 0 ? m.prices[n - 1 - (i % 8)] : m.prices[i % 8];
      try {
        const r = await ok(url, `private/${side}`, { instrument_name: m.name, amount: 0.1, price }, who);
        orders.push(r.order.order_id);
        for (const t of r.trades) trades.push(t.trade_id);
        if (i % 10 === 9) await ok(url, 'private/cancel_all', {}, who);
      } catch (err) {
        if (endsOnError) return;
        throw err;
      }
    }
  };
  const done = Promise.all([loop(maker, 'sell', 0), loop(taker, 'buy', 1)]);
  return {
    orders,
    trades,
    async stop() {
      running = false;
      await done;
    },
  };
}

/**
 * The stream `all` (subjects under `prefix`) holds every acknowledged trade and order of `load`,
 * no message twice, no trade twice, and each market's book changes chain on up to `leaderUrl`'s
 * get_order_book.
 */
export async function assertStreamHoldsLoad(all: StoredEvent[], prefix: string, load: Pick<OrderLoad, 'orders' | 'trades'>, ms: Market[], leaderUrl: string): Promise<void> {
  assert.ok(!all.some((e) => e.subject === `${prefix}.control.gap`), 'the backlog never overflowed');
  const ids = all.map((e) => e.msgId);
  assert.equal(new Set(ids).size, ids.length, 'no message stored twice');
  const publicTrades = all.filter((e) => e.subject.startsWith(`${prefix}.public.trades.`)).flatMap((e) => e.data.map((x: any) => x.trade_id));
  assert.equal(new Set(publicTrades).size, publicTrades.length, 'no trade twice');
  const missingTrades = load.trades.filter((id) => !publicTrades.includes(id));
  assert.deepEqual(missingTrades, [], 'every acknowledged trade on the stream');
  const orderIds = new Set(all.filter((e) => e.subject.startsWith(`${prefix}.private.`)).flatMap((e) => e.data.orders.map((o: any) => o.order_id)));
  const missingOrders = load.orders.filter((id) => !orderIds.has(id));
  assert.deepEqual(missingOrders, [], "every acknowledged order in its owner's events");
  for (const m of ms) {
    const changes = all.filter((e) => e.subject === `${prefix}.public.book.${m.name}`).map((e) => e.data);
    for (let i = 1; i < changes.length; i++) assert.equal(changes[i].prev_change_id, changes[i - 1].change_id, `${m.name} chain at ${i}`);
    const leader = await ok(leaderUrl, 'public/get_order_book', { instrument_name: m.name, depth: 1000 });
    assert.equal(changes[changes.length - 1].change_id, leader.change_id, `${m.name} stream reaches the leader's change_id`);
  }
}
