// The trade volumes read model takes each command's new trades from the end of
// `Exchange.recentTrades` (O(new trades)) instead of scanning every instrument's trade list after
// each command that traded; when that list does not reach back far enough (a snapshot restore, a
// command with more trades than it keeps) it falls back to the scan. Either way every trade is
// counted once.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { roundToTick } from '../../src/domain/instrument.ts';
import { RECENT_TRADES_KEPT } from '../../src/engine/trading.ts';
import { MarketViews } from '../../src/views/marketViews.ts';
import { EXP_MAR, Harness, spec } from '../helpers/engine.ts';

const STRIKES = [90_000, 95_000, 100_000, 105_000, 110_000];

function market(): { h: Harness; views: MarketViews; names: string[] } {
  const specs = STRIKES.flatMap((k) => [spec('BTC', EXP_MAR, k, 'call'), spec('BTC', EXP_MAR, k, 'put')]);
  const h = Harness.market(specs);
  const views = new MarketViews();
  views.attach(h.ex);
  return { h, views, names: [...h.ex.instruments.keys()] };
}

/** The instrument's mark on its tick grid, as text: a price inside the band. */
function atMark(h: Harness, name: string): string {
  const inst = h.inst(name);
  return (roundToTick(inst, h.ex.markets.get(inst.id)!.markCoin * 1e4, 'nearest') / 1e4).toFixed(4);
}

/** Contracts x 10^8 of every trade the engine holds, by option type: what the views must count. */
function heldVolume(h: Harness): { calls: number; puts: number } {
  const out = { calls: 0, puts: 0 };
  for (const m of h.ex.markets.values()) {
    for (const t of m.trades) {
      const contracts = t.lots * t.inst.lotScaled * t.inst.contractSize;
      if (t.inst.optionType === 'call') out.calls += contracts;
      else out.puts += contracts;
    }
  }
  return out;
}

describe('trade volumes from the recent trades', () => {
  it('counts every trade once across many instruments, one command at a time', () => {
    const { h, views, names } = market();
    const maker = h.user('100');
    const taker = h.user('100');
    for (let round = 0; round < 30; round++) {
      const name = names[(round * 7) % names.length]!;
      h.ok(maker, 'sell', name, atMark(h, name), '0.3');
      h.ok(taker, 'buy', name, atMark(h, name), round % 2 === 0 ? '0.3' : '0.1');
    }
    const v = views.tradeVolumes('BTC', h.ts + 1);
    const held = heldVolume(h);
    assert.ok(held.calls > 0 && held.puts > 0, 'both kinds traded');
    assert.deepEqual([v.calls[0], v.puts[0]], [held.calls, held.puts]);
  });

  it('falls back to the scan when the recent trades do not reach back (cut after a restore)', () => {
    const { h, views, names } = market();
    const maker = h.user('100');
    const taker = h.user('100');
    const [a, b] = [names[0]!, names[1]!];
    h.ok(maker, 'sell', a, atMark(h, a), '0.5');
    h.ok(taker, 'buy', a, atMark(h, a), '0.2');
    // what a restore from a snapshot leaves: no recent trades, though the markets hold some
    h.ex.recentTrades.length = 0;
    h.ok(taker, 'buy', a, atMark(h, a), '0.2');
    h.ok(maker, 'sell', b, atMark(h, b), '0.4');
    h.ok(taker, 'buy', b, atMark(h, b), '0.4');
    const v = views.tradeVolumes('BTC', h.ts + 1);
    const held = heldVolume(h);
    assert.deepEqual([v.calls[0], v.puts[0]], [held.calls, held.puts]);
  });

  it('keeps at most twice RECENT_TRADES_KEPT trades, in id order', () => {
    const { h } = market();
    const maker = h.user('100000');
    const taker = h.user('100000');
    const name = [...h.ex.instruments.keys()][0]!;
    const price = atMark(h, name);
    for (let i = 0; i < 2 * RECENT_TRADES_KEPT + 10; i++) {
      h.ok(maker, 'sell', name, price, '0.1');
      h.ok(taker, 'buy', name, price, '0.1');
    }
    const recent = h.ex.recentTrades;
    assert.ok(recent.length <= 2 * RECENT_TRADES_KEPT && recent.length >= RECENT_TRADES_KEPT);
    for (let i = 1; i < recent.length; i++) assert.equal(recent[i]!.id, recent[i - 1]!.id + 1);
    assert.equal(recent[recent.length - 1]!.id, h.ex.nextTradeId - 1);
  });
});
