// Resting combo orders (issue 34) in the portfolio-margin engine (pmRisk.ts) count as open orders
// do, as if filled, the worse side: per combo, the account's bid lots and ask lots, and one vector
// per combo lot (the legs' vectors times their ratios), so a combo order that hedges the book adds
// little and one that adds risk adds its scenario loss. Each combo is a unit of its own (its worse
// side per scenario, as each instrument's ordinary orders are): a spread's legs offset each other
// inside the combo, never across units. A rebuild adds the combos once every leg is in (a few per
// account: not counted in its work units). private/pme/simulate counts them the same way
// (scenarios.ts, rounded per scenario total).
import { CURRENCIES } from '../../domain/currency.ts';
import { AMOUNT_SCALE, type Instrument } from '../../domain/instrument.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { SideLots } from '../../combos/openOrders.ts';
import { moveStrike, type SeriesVector, type Sums } from './pmSums.ts';
import { pnlMinor } from './scenarios.ts';
import { pow10 } from '../../domain/decimal.ts';

const AMOUNT_UNIT = 10 ** AMOUNT_SCALE;

/** Per-combo-lot coin P&L of a combo (its legs' vectors times their ratios), valid while its legs' vectors are. */
export interface ComboVector {
  legs: SeriesVector[];
  du: Float64Array;
  /** Coin delta per combo lot. */
  delta: number;
  /** Per leg: its instrument, ratio and strike key (the short-option contingency). */
  insts: Instrument[];
  ratios: number[];
}

/** A move of an account's open lots in one combo, on one side (combo lots; negative: fewer). */
export interface ComboChange {
  id: string;
  side: 0 | 1;
  lots: number;
}

/** A combo's open lots after `change` (its side moved by its lots). */
export function lotsAfter(old: SideLots, change: ComboChange): SideLots {
  return { bid: old.bid + (change.side === 0 ? change.lots : 0), ask: old.ask + (change.side === 0 ? 0 : change.lots) };
}

/**
 * The per-combo-lot vector of a combo from `cache` while its legs' vectors did not move, else made
 * anew from `seriesVector` (the engine's, which caches and counts its work); null: a leg has no value.
 * `total`: the scenario count of the parameters in force.
 */
export function comboVectorOf(
  ex: Exchange,
  cache: Map<string, ComboVector>,
  comboId: string,
  seriesVector: (inst: Instrument) => SeriesVector | null,
  total: number,
): ComboVector | null {
  const c = cache.get(comboId);
  if (c !== undefined) {
    let fresh = true;
    for (let i = 0; i < c.insts.length && fresh; i++) fresh = seriesVector(c.insts[i]!) === c.legs[i];
    if (fresh) return c;
  }
  const r = ex.combos.byId.get(comboId);
  if (r === undefined) return null;
  const insts = c?.insts ?? [...ex.comboBooks.legInsts(r)];
  const ratios = c?.ratios ?? r.legs.map((l) => l.ratio);
  const legs: SeriesVector[] = [];
  for (const inst of insts) {
    const v = seriesVector(inst);
    if (v === null) return null;
    legs.push(v);
  }
  const du = new Float64Array(total);
  let delta = 0;
  legs.forEach((v, l) => {
    // contracts per combo lot: |ratio| leg lots (legFills), signed
    const k = (ratios[l]! * insts[l]!.lotScaled) / AMOUNT_UNIT;
    for (let i = 0; i < du.length; i++) du[i] += k * v.du[i]!;
    delta += k * v.delta;
  });
  const made: ComboVector = { legs, du, delta, insts, ratios };
  cache.set(comboId, made);
  return made;
}

/**
 * Adds (1) or removes (-1) a combo's open lots (some open) to the sums, its vector `v` (null: a leg
 * has no value, the sums unpriced): its worse side per scenario, its sells in the short contingency.
 */
export function applyComboLots(s: Sums, v: ComboVector | null, lots: SideLots, sign: 1 | -1): void {
  if (v === null) {
    s.unpriced += sign;
    return;
  }
  const d = CURRENCIES[s.currency].decimals;
  const { bid, ask } = lots;
  const du = v.du;
  for (let i = 0; i < du.length; i++) {
    const x = du[i]!;
    if (x === 0) continue;
    s.ord[i] += sign * pnlMinor(Math.min(bid * x, -ask * x), d);
  }
  // the short-option contingency counts every sell as if filled: the legs either side sells
  for (let l = 0; l < v.insts.length; l++) {
    const r = v.ratios[l]!;
    const sells = r < 0 ? -r * bid : r * ask;
    if (sells > 0) moveStrike(s, v.legs[l]!.strikeKey, 0, -sign * sells * v.insts[l]!.lotScaled);
  }
  s.dCombo += sign * Math.round(Math.max(bid, ask) * Math.abs(v.delta) * pow10(d));
}
