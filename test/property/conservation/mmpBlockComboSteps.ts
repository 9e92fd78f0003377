// The market-maker, block trade and combo parts of the conservation stream: mass quotes and their
// MMP settings, block trades and their approvals, combos and their orders (generator.ts mixes them in).
import { roundToTick } from '../../../src/domain/instrument.ts';
import type { Command, InstrumentSpec } from '../../../src/engine/commands.ts';
import type { Exchange } from '../../../src/engine/exchange.ts';
import { BUY, SELL } from '../../../src/engine/orderBook.ts';
import type { Rand } from '../accountsSteps.ts';
import { CURRENCIES } from './streamParams.ts';

/** What these steps take from the generator: its random draws (the generator's own PRNG, so the
 *  stream stays the same draw for draw), its pick of an account, the series orders may name and the
 *  stream time. */
export interface StreamPicks {
  readonly rand: Rand;
  user(): number;
  readonly active: InstrumentSpec[];
  readonly ts: number;
}

export function mmpConfig(g: Rand, userId: number, indexName: string, group: string | null): Command {
  return {
    t: 'set_mmp_config', userId, indexName, group, interval: g.chance(0.05) ? 0 : 1 + g.int(10), frozenTime: g.int(6),
    quantityLimit: (1 + g.int(20)) * 1e8, deltaLimit: g.chance(0.5) ? 0 : 0.5 + 5 * g.r(), maxQuoteQuantity: g.chance(0.7) ? 0 : (1 + g.int(10)) * 1e8,
  };
}

/** Mass quotes (sometimes with bad prices and amounts), their cancels, MMP resets and config changes. */
export function mmpCommand(gen: StreamPicks, ex: Exchange): Command {
  const g = gen.rand;
  const userId = gen.user();
  const y = g.r();
  if (y < 0.7) {
    const names = new Set<string>();
    const n = 1 + g.int(6);
    for (let i = 0; i < n; i++) names.add(g.pick(gen.active).name);
    const side = (name: string) => {
      if (g.chance(0.2)) return null;
      const inst = ex.instruments.get(name)!;
      const market = ex.markets.get(inst.id)!;
      const mark = Number.isFinite(market.markCoin) ? market.markCoin * 1e4 : 100;
      let price = roundToTick(inst, Math.min(Math.max(mark * (0.8 + 0.4 * g.r()), market.minPrice), market.maxPrice), 'nearest');
      if (g.chance(0.03)) price = market.maxPrice + 5; // outside the band
      const lots = g.chance(0.1) ? 0 : (1 + g.int(6)) * inst.lotScaled;
      return { price: Math.max(1, price), lots, postOnly: g.chance(0.1), rejectPostOnly: false };
    };
    return {
      t: 'mass_quote', userId, quoteId: `q${g.int(100)}`, group: g.chance(0.95) ? 'g' : 'h',
      quotes: [...names].map((name) => ({ instrument: name, quoteSetId: g.pick(['A', 'B', null]), bid: side(name), ask: side(name) })),
    };
  }
  if (y < 0.85) {
    const type = g.pick(['all', 'instrument', 'currency', 'quote_set_id', 'delta', 'kind'] as const);
    return { t: 'cancel_quotes', userId, cancelType: type, instrument: g.pick(gen.active).name, currency: g.pick(CURRENCIES), quoteSetId: g.pick(['A', 'B']), minDelta: -1 + g.r(), maxDelta: g.r() };
  }
  if (y < 0.95) return { t: 'reset_mmp', userId, indexName: g.pick(['btc_usd', 'eth_usd']), group: g.pick([null, 'g']) };
  return mmpConfig(g, userId, g.pick(['btc_usd', 'eth_usd']), g.pick([null, 'g']));
}

/**
 * A block trade (src/blocktrades/): 1-3 legs of one currency between two accounts (sometimes the
 * same), prices around the mark (sometimes outside the block band or off the grid), agreements
 * that repeat (executed once), signatures past their expiry or invalidated.
 */
export function blockTrade(gen: StreamPicks, ex: Exchange): Command {
  const g = gen.rand;
  const executor = gen.user();
  const signer = g.chance(0.03) ? executor : gen.user();
  const sig = `s${g.int(40)}`;
  if (g.chance(0.05)) return { t: 'block_invalidate', userId: signer, sig, expiry: gen.ts + 60_000 };
  // approvals (src/blocktrades/approval.ts): the setting, and answers to held requests (sometimes
  // by the wrong party or in the wrong role, after the expiry, or after a rejection)
  if (g.chance(0.04)) return { t: 'block_approval', userId: executor, required: g.chance(0.5) };
  const held = [...ex.blockTrades.requests.values()];
  if (held.length > 0 && g.chance(0.25)) {
    const r = g.pick(held);
    const wrong = g.chance(0.1);
    const role = g.pick(['maker', 'taker'] as const);
    const party = (r.role === role) === !wrong ? r.executor : r.signer;
    return { t: g.chance(0.75) ? 'block_approve' : 'block_reject', userId: g.chance(0.05) ? executor : party, timestamp: r.timestamp, nonce: r.nonce, role };
  }
  const currency = g.pick(CURRENCIES);
  const names = new Set<string>();
  const n = 1 + g.int(3);
  for (let i = 0; i < n; i++) {
    const choices = gen.active.filter((sp) => sp.currency === currency);
    names.add(g.pick(choices).name);
  }
  const legs = [...names].map((name) => {
    const inst = ex.instruments.get(name)!;
    const market = ex.markets.get(inst.id)!;
    const mark = Number.isFinite(market.markCoin) ? market.markCoin * 1e4 : 100;
    let price = Math.max(inst.tick, roundToTick(inst, mark * (0.5 + g.r()), 'nearest'));
    if (g.chance(0.03)) price += 1; // off the grid above 0.005
    const lots = (1 + g.int(8)) * inst.lotScaled + (g.chance(0.02) ? 1 : 0);
    return { instrument: name, side: g.pick([BUY, SELL] as const), price, lots };
  });
  const timestamp = gen.ts - g.int(400_000);
  return {
    t: 'block_trade', executor, signer, role: g.pick(['maker', 'taker'] as const), timestamp, nonce: `b${g.int(300)}`,
    expiry: timestamp + 300_000, sig, legs, rules: { bandPct: 50, minAmount: {} },
  };
}

/**
 * Combos (src/combos/): a new combo of 2 legs of one currency (ratios 1-2, either sign; at most 8
 * active, 40 in all), or an order on a known one at a price around its net mark (sometimes outside
 * its band), or a cancel of an open combo order.
 */
export function comboCommand(gen: StreamPicks, ex: Exchange): Command {
  const g = gen.rand;
  const userId = gen.user();
  const combos = [...ex.combos.byId.values()].filter((r) => ex.combos.isActive(r));
  if (combos.length === 0 || g.chance(0.1)) {
    const currency = g.pick(CURRENCIES);
    const choices = gen.active.filter((sp) => sp.currency === currency);
    const a = g.pick(choices).name;
    const b = g.pick(choices).name;
    return { t: 'create_combo', userId, legs: [{ instrument: a, ratio: 1 + g.int(2) }, { instrument: b, ratio: (g.chance(0.5) ? 1 : -1) * (1 + g.int(2)) }], max: 40, maxActive: 8 };
  }
  const open = ex.comboBooks.openOf(userId);
  if (open.length > 0 && g.chance(0.15)) return { t: 'cancel', userId, orderId: g.pick(open).id };
  const r = g.pick(combos);
  let net = 0;
  for (const l of r.legs) {
    const m = ex.markets.get(ex.instruments.get(l.instrument)!.id)!;
    net += l.ratio * (Number.isFinite(m.markCoin) ? m.markCoin * 1e4 : 100);
  }
  const price = Math.round(net * (0.85 + 0.3 * g.r())) + g.int(21) - 10;
  return {
    t: 'place', userId, side: g.pick([BUY, SELL] as const), instrument: r.id, price, advanced: null, advPrice: null,
    lots: (1 + g.int(5)) * ex.instruments.get(r.legs[0]!.instrument)!.lotScaled, type: g.chance(0.1) ? 'market' : 'limit',
    tif: g.pick(['good_til_cancelled', 'immediate_or_cancel'] as const), postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null,
  };
}
