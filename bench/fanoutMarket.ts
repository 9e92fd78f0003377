// The market both fan-out benches stream (wsBench.ts: the single process; gatewayBench.ts: through
// gateways): a maker and a taker, the `count` BTC calls nearest the index, a standing book of five
// bids and five asks on each, and a steady flow that every `everyMs` adds an ask and takes the best
// ask on every instrument. Commands go to the sequencer directly, so the load is the fan-out, not
// order entry.
import type { Services } from '../src/app/services.ts';
import { roundToTick, stepTick, type Instrument } from '../src/domain/instrument.ts';
import type { Command } from '../src/engine/commands.ts';
import type { User } from '../src/engine/types.ts';

export interface Ladder {
  inst: Instrument;
  mid: number;
  asks: number[];
  /** the highest of `asks`: the taker's IOC price, so it always finds an ask */
  top: number;
}

export interface FanoutMarket {
  ladders: Ladder[];
  /** Starts the order flow; returns its stop. */
  startFlow(everyMs: number): () => void;
}

export async function fanoutMarket(s: Services, count: number): Promise<FanoutMarket> {
  const submit = (cmd: Command) => s.seq.submit(cmd, (r) => r);
  const mk = async (email: string) => {
    const u = (await submit({ t: 'create_user', email, passwordHash: 'x', role: 'user', inviteCode: null, by: null })) as User;
    await submit({ t: 'deposit', userId: u.id, currency: 'BTC', amount: 1e14, depositId: null, by: u.id });
    return u.id;
  };
  const maker = await mk('bench-maker@example.com');
  const taker = await mk('bench-taker@example.com');
  const index = s.ex.indexPrice('BTC');
  const insts: Instrument[] = [...s.ex.instruments.values()]
    .filter((i) => i.currency === 'BTC' && i.optionType === 'call' && i.state === 'open')
    .sort((a, b) => Math.abs(a.strike - index) - Math.abs(b.strike - index) || b.expiry - a.expiry)
    .slice(0, count);
  const place = (userId: number, side: 0 | 1, inst: Instrument, price: number, lots: number, tif: 'good_til_cancelled' | 'immediate_or_cancel' = 'good_til_cancelled'): Command => ({
    t: 'place', userId, side, instrument: inst.name, price, advanced: null, advPrice: null, lots, type: 'limit', tif,
    postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null,
  });
  const ladders = insts.map((inst): Ladder => {
    const m = s.ex.markets.get(inst.id)!;
    const mid = Math.min(Math.max(roundToTick(inst, m.markCoin * 1e4, 'nearest'), m.minPrice + 20 * inst.tick), m.maxPrice - 20 * inst.tick);
    const asks: number[] = [];
    let p = mid;
    for (let k = 0; k < 5; k++) asks.push((p = stepTick(inst, p, 1)));
    return { inst, mid, asks, top: asks[asks.length - 1]! };
  });
  // a standing book: five bids and five asks per instrument
  for (const l of ladders) {
    let p = l.mid;
    for (let k = 0; k < 5; k++) void submit(place(maker, 0, l.inst, (p = stepTick(l.inst, p, -1)), l.inst.lotScaled * 2));
    for (const a of l.asks) void submit(place(maker, 1, l.inst, a, l.inst.lotScaled));
  }
  await s.seq.read(() => undefined);
  return {
    ladders,
    startFlow(everyMs) {
      let step = 0;
      const timer = setInterval(() => {
        for (const l of ladders) {
          void submit(place(maker, 1, l.inst, l.asks[step % l.asks.length]!, l.inst.lotScaled)).catch(() => undefined);
          void submit(place(taker, 0, l.inst, l.top, l.inst.lotScaled, 'immediate_or_cancel')).catch(() => undefined);
        }
        step++;
      }, everyMs);
      return () => clearInterval(timer);
    },
  };
}
