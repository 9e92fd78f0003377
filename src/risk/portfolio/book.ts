// An account's book in one settlement currency as the scenario engine takes it: its positions, open
// orders and resting combo orders read from the engine's state, with what-if positions added (simulate_portfolio).
// Reads only: nothing here changes the exchange.
import type { CurrencyCode } from '../../domain/currency.ts';
import type { Instrument } from '../../domain/instrument.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { User } from '../../engine/types.ts';
import { contractsOf } from '../accountRisk.ts';
import type { PmCombo, PmLeg, PmPortfolio } from './types.ts';

export interface BookOptions {
  /** Whether the account's own positions and open orders count (Deribit's `add_positions`). */
  includeAccount: boolean;
  /** What-if positions in lots, added to the account's (all of the book's currency). */
  simulated: ReadonlyMap<Instrument, number>;
}

/**
 * The book, or null when an option of it has no mark (no index price yet for the currency). The
 * forward is the index, as for marks (src/market/marks.ts); each option keeps its mark IV, the
 * smile's vol at its strike.
 */
export function bookOf(ex: Exchange, user: User, currency: CurrencyCode, opts: BookOptions): PmPortfolio | null {
  const legs: PmLeg[] = [];
  const combos: PmCombo[] = [];
  const seriesOf = (inst: Instrument, positionLots: number, buyLots: number, sellLots: number): PmLeg | null => {
    const m = ex.markets.get(inst.id);
    if (m === undefined || !Number.isFinite(m.markIv)) return null;
    return {
      instrument: inst.name,
      optionType: inst.optionType,
      strike: inst.strike,
      expiry: inst.expiry,
      iv: m.markIv,
      position: contractsOf(inst, positionLots),
      buyOpen: contractsOf(inst, buyLots),
      sellOpen: contractsOf(inst, sellLots),
    };
  };
  const add = (inst: Instrument, positionLots: number, buyLots: number, sellLots: number): boolean => {
    const leg = seriesOf(inst, positionLots, buyLots, sellLots);
    if (leg !== null) legs.push(leg);
    return leg !== null;
  };
  if (opts.includeAccount) {
    for (const p of user.positions.values()) {
      if (p.inst.currency !== currency || p.size === 0) continue;
      const e = user.exposures.get(p.inst.id);
      if (!add(p.inst, p.size, e?.buyOpenLots ?? 0, e?.sellOpenLots ?? 0)) return null;
    }
    for (const e of user.exposures.values()) {
      if (e.inst.currency !== currency || (user.positions.get(e.inst.id)?.size ?? 0) !== 0) continue;
      if (e.buyOpenLots === 0 && e.sellOpenLots === 0) continue;
      if (!add(e.inst, 0, e.buyOpenLots, e.sellOpenLots)) return null;
    }
    // resting combo orders (issue 34): per combo, its open lots either side and one combo lot's legs
    for (const [id, lots] of ex.comboBooks.sideLotsOf(user.id)) {
      const r = ex.combos.byId.get(id);
      if (r === undefined || ex.comboBooks.inst(r).currency !== currency) continue;
      const insts = ex.comboBooks.legInsts(r);
      const comboLegs: PmCombo['legs'][number][] = [];
      for (let i = 0; i < insts.length; i++) {
        const series = seriesOf(insts[i]!, 0, 0, 0);
        if (series === null) return null;
        comboLegs.push({ series, perLot: contractsOf(insts[i]!, r.legs[i]!.ratio) });
      }
      combos.push({ combo: id, legs: comboLegs, bid: lots.bid, ask: lots.ask });
    }
  }
  for (const [inst, lots] of opts.simulated) if (inst.currency === currency && !add(inst, lots, 0, 0)) return null;
  const forward = ex.indexPrice(currency);
  if (!(forward > 0)) return legs.length === 0 && combos.length === 0 ? { currency, forward: 1, now: ex.now, legs } : null;
  return { currency, forward, now: ex.now, legs, combos };
}
