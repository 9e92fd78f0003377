// Combo orders (issue 34): what a combo fill costs the engine against the same engine's single-leg
// orders. N crossing pairs (a resting sell, then an immediate-or-cancel buy that fills it) on one leg,
// then N on a two-leg call spread (each fill: the split, both accounts' margin over both legs, two leg
// trades): microseconds per pair and the ratio. Engine only, without HTTP or the journal.
import type { Sequenced } from '../src/engine/commands.ts';
import { Exchange } from '../src/engine/exchange.ts';
import { instrumentName } from '../src/domain/instrument.ts';
import { legQuotes } from '../src/combos/legPrices.ts';
import type { ComboRecord } from '../src/combos/combos.ts';

const T0 = Date.UTC(2026, 0, 5, 12);
const EXPIRY = Date.UTC(2026, 2, 27, 8);

export function runComboBench(pairs = Number(process.env.COMBO_BENCH_PAIRS ?? 20_000)): Record<string, number> {
  const ex = new Exchange();
  let seq = 0;
  const apply = (cmd: object): unknown => ex.apply({ ...cmd, ts: T0 + seq, seq: ++seq } as Sequenced);
  apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null });
  const names = [100_000, 110_000].map((k) => instrumentName('BTC', EXPIRY, k, 'call'));
  apply({ t: 'list', instruments: names.map((name, i) => ({ currency: 'BTC', name, optionType: 'call', strike: i === 0 ? 100_000 : 110_000, expiry: EXPIRY, settlementPeriod: 'month', tick: 1, tickSteps: [{ abovePrice: 50, tick: 5 }], lotScaled: 10_000_000, makerCommission: 30_000, takerCommission: 30_000, contractSize: 1 })) });
  for (let u = 0; u < 2; u++) {
    apply({ t: 'create_user', email: `b${u}@x.io`, passwordHash: 'x', role: 'user', inviteCode: null, by: null });
    apply({ t: 'deposit', userId: u + 1, currency: 'BTC', amount: 1e14, depositId: null, by: u + 1 });
  }
  const combo = apply({ t: 'create_combo', userId: 1, legs: [{ instrument: names[0], ratio: 1 }, { instrument: names[1], ratio: -1 }] }) as ComboRecord;
  const q = legQuotes(ex, combo.legs)!;
  const comboPrice = Math.round(q[0]!.mark - q[1]!.mark);
  const legPrice = Math.round(q[0]!.mark / 5) * 5;
  const order = (userId: number, side: 0 | 1, instrument: string, price: number, tif: string) => ({ t: 'place', userId, side, instrument, price, advanced: null, advPrice: null, lots: 10_000_000, type: 'limit', tif, postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null });
  const run = (instrument: string, price: number): number => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < pairs; i++) {
      // alternate directions so positions stay small
      const s: 0 | 1 = i % 2 === 0 ? 1 : 0;
      apply(order(1, s, instrument, price, 'good_til_cancelled'));
      apply(order(2, s === 1 ? 0 : 1, instrument, price, 'immediate_or_cancel'));
    }
    return Number(process.hrtime.bigint() - t0) / 1000 / pairs;
  };
  run(names[0]!, legPrice); // warm-up
  const single = run(names[0]!, legPrice);
  const comboUs = run(combo.id, comboPrice);
  return { single_leg_us_per_pair: Number(single.toFixed(2)), combo_us_per_pair: Number(comboUs.toFixed(2)), ratio: Number((comboUs / single).toFixed(2)) };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(runComboBench());
