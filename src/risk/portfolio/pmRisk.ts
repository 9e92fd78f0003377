// Portfolio margin of live accounts (issue 35), incremental: what order entry, the account summary,
// withdrawals and liquidation read for an account on a portfolio model.
//
// Per instrument and mark epoch, one vector of per-contract coin P&L over every scenario (Black-76
// at the shocked forward and vol; the expensive part, shared by every account holding the series).
// Per account and instrument, that vector times the position (and the open orders as if filled, the
// worse side) in integer minor units: losses rounded up, gains down, per leg. Per account, the sums
// of those integer vectors, moved by the difference when one leg changes. An order check then costs
// one leg's vector and a max over the scenarios, not a revaluation of the book.
//
// Deterministic whatever the history: every figure is a function of the state (index price and
// time, mark IV, positions, open lots, parameters) and the sums are of integers, so a running total
// equals the full sum exactly and a restored engine computes the same margins as the live one. The
// valuation instant is the index's time (state), not the command's. Rounding per leg makes these
// figures differ from private/pme/simulate (which rounds each scenario's total once) by at most a
// minor unit per leg, always towards more margin.
//
// Sliced (issue 35: no engine turn over 2 ms from PM work): after an index tick every account's sums
// are stale. `refresh` rebuilds them a bounded amount of work at a time (work units: positions x
// scenarios, see WORK below; never wall time: the engine reads no clock), the liquidation scan
// calling it between its yields (src/engine/liquidation.ts), so that an account of thousands of
// legs, or the first accounts of an epoch that revalue every series, spread over several turns.
// A rebuild in progress is the same integers as a full one whatever happens between its slices:
// a leg it has added moves by the difference as in valid sums, a leg it has not reached yet is read
// when reached, and a new epoch (index, marks, parameters) starts it again.
//
// Resting combo orders (issue 34) count as open orders do, as if filled, the worse side, each combo
// a unit of its own (pmCombos.ts); the types of the sums are in pmSums.ts.
import { CURRENCIES, type CurrencyCode } from '../../domain/currency.ts';
import { ceilDiv, pow10 } from '../../domain/decimal.ts';
import { AMOUNT_SCALE, type Instrument } from '../../domain/instrument.ts';
import { black76Greeks, coinPrice, yearFraction } from '../../domain/pricing.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { User } from '../../engine/types.ts';
import type { SideLots } from '../../combos/openOrders.ts';
import { MAX_EXTENDED_MOVES, PM_PARAM_BOUNDS, priceMoves, type PortfolioMarginParams } from './params.ts';
import { pnlMinor, shockedVol, up } from './scenarios.ts';
import { applyComboLots, comboVectorOf, lotsAfter, type ComboChange, type ComboVector } from './pmCombos.ts';
import { moveStrike, type Leg, type SeriesVector, type Sums } from './pmSums.ts';

const MS_PER_DAY = 24 * 3600 * 1000;
const VOLS = ['up', 'same', 'down'] as const;
const AMOUNT_UNIT = 10 ** AMOUNT_SCALE;

/**
 * Work units of the recompute, counted in `PmRisk.work`: one scenario of one leg added to (or taken
 * from) an account's sums is 1; one revaluation (a Black-76 price of a series in one scenario) is
 * `revaluation`: measured at 4.5 to 13 sums on this machine (bench/pmBench.ts prints both costs in
 * its calibration line; 0.12-0.19 us against 0.014-0.028 us), taken near the top so that a step
 * full of revaluations stays within its share of time.
 */
export const WORK = Object.freeze({ revaluation: 12 });

/** The most recompute work one step of the liquidation scan does (work units): ~0.3 ms of CPU here
 * (bench/pmBench.ts), so that a turn of the scan (steps until SCAN_SLICE_MS, src/app/marketTimers.ts)
 * stays well under 2 ms. Above one leg's cost with its series revalued under the largest table the
 * parameters allow (maxLegUnits: 41 x 3 + 16 scenarios), so every step makes progress. */
export const PM_STEP_UNITS = 20_000;

/** The most one leg can cost (its series revalued, its sums) under the largest table the parameters
 *  allow: below PM_STEP_UNITS, so that a step of the scan always makes progress. */
export function maxLegUnits(): number {
  const scenarios = PM_PARAM_BOUNDS.priceBuckets[1] * 3 + MAX_EXTENDED_MOVES;
  return scenarios + vectorUnits(scenarios);
}

/** A series vector's revaluations: every scenario, its base price and its delta. */
function vectorUnits(scenarios: number): number {
  return WORK.revaluation * (scenarios + 2);
}

export type { ComboChange } from './pmCombos.ts';

export interface PmFigures {
  /** Maintenance margin of the positions: worst counted loss + contingencies. */
  maintenanceMargin: number;
  /** Initial margin of the positions (MM x the IM factor), and with the open orders as if filled. */
  initialMargin: number;
  initialMarginWithOrders: number;
}

export class PmRisk {
  private readonly series = new Map<number, SeriesVector>();
  private readonly comboVectors = new Map<string, ComboVector>();
  private readonly sums = new WeakMap<User, Map<CurrencyCode, Sums>>();
  /** Scenario count of the parameters in force, and where the extended ones start. */
  private shape = { generation: -1, standard: 0, total: 0, moves: [] as number[] };
  /** Recompute work done so far, in work units (WORK): series revalued and legs summed. A running
   *  count the liquidation scan budgets its steps by and tests read; never part of any figure. */
  work = 0;

  constructor(private readonly ex: Exchange) {}

  private get params(): Readonly<PortfolioMarginParams> {
    return this.ex.pm.params;
  }

  private layout(): { standard: number; total: number; moves: number[] } {
    const g = this.ex.pm.generation;
    if (this.shape.generation !== g) {
      const moves = priceMoves(this.params);
      this.shape = { generation: g, standard: moves.length * 3, total: moves.length * 3 + this.params.extendedMoves.length, moves };
    }
    return this.shape;
  }

  /** Whether the series' vector must be computed before use (its inputs moved). */
  private vectorStale(inst: Instrument): boolean {
    const m = this.ex.markets.get(inst.id);
    const idx = this.ex.index[inst.currency];
    if (m === undefined || idx === undefined || !(idx.price > 0) || !Number.isFinite(m.markIv)) return false;
    const c = this.series.get(inst.id);
    return !(c !== undefined && c.index === idx.price && c.ts === idx.ts && c.iv === m.markIv && c.generation === this.ex.pm.generation);
  }

  /** The scenario vector of a series, from the cache when its inputs did not move. */
  seriesVector(inst: Instrument): SeriesVector | null {
    const m = this.ex.markets.get(inst.id);
    const idx = this.ex.index[inst.currency];
    if (m === undefined || idx === undefined || !(idx.price > 0) || !Number.isFinite(m.markIv)) return null;
    const g = this.ex.pm.generation;
    const c = this.series.get(inst.id);
    if (c !== undefined && c.index === idx.price && c.ts === idx.ts && c.iv === m.markIv && c.generation === g) return c;
    const p = this.params;
    this.work += vectorUnits(this.layout().total);
    const { standard, total, moves } = this.layout();
    const F = idx.price;
    const T = Math.max(yearFraction(idx.ts, inst.expiry), 0);
    const days = Math.max((inst.expiry - idx.ts) / MS_PER_DAY, 0);
    const iv = m.markIv;
    const base = coinPrice(inst.optionType, F, inst.strike, T, iv);
    const du = new Float64Array(total);
    let i = 0;
    for (const move of moves) {
      for (const vol of VOLS) {
        du[i++] = move === 0 && vol === 'same' ? 0 : coinPrice(inst.optionType, F * (1 + move), inst.strike, T, shockedVol(p, iv, days, vol)) - base;
      }
    }
    const far = inst.optionType === 'call' ? inst.strike >= F * (1 + p.priceRange) : inst.strike <= F * (1 - p.priceRange);
    if (far) {
      const ivUp = shockedVol(p, iv, days, 'up');
      for (let k = 0; k < total - standard; k++) du[standard + k] = coinPrice(inst.optionType, F * (1 + p.extendedMoves[k]!), inst.strike, T, ivUp) - base;
    }
    const delta = black76Greeks(inst.optionType, F, inst.strike, T, iv, 0).delta - base;
    const v: SeriesVector = { index: F, ts: idx.ts, iv, generation: g, du, delta, strikeKey: c?.strikeKey ?? `${inst.expiry}:${inst.strike}` };
    this.series.set(inst.id, v);
    return v;
  }

  /** The account's leg in `inst` now, with open lots or the position moved by the extras; null when flat. */
  private legOf(user: User, inst: Instrument, extraBuy = 0, extraSell = 0, extraPos = 0): Leg | null {
    const pos = (user.positions.get(inst.id)?.size ?? 0) + extraPos;
    const e = user.exposures.get(inst.id);
    const buy = (e?.buyOpenLots ?? 0) + extraBuy;
    const sell = (e?.sellOpenLots ?? 0) + extraSell;
    if (pos === 0 && buy === 0 && sell === 0) return null;
    return { inst, pos, buy, sell };
  }

  private empty(currency: CurrencyCode): Sums {
    const n = this.layout().total;
    return {
      currency,
      marginVersion: this.ex.marginVersion,
      generation: this.ex.pm.generation,
      pos: new Float64Array(n),
      ord: new Float64Array(n),
      strikes: new Map(),
      shortPos: 0,
      shortWithSells: 0,
      dPos: 0,
      dBuys: 0,
      dSells: 0,
      legs: new Map(),
      combos: new Map(),
      dCombo: 0,
      unpriced: 0,
      pending: null,
    };
  }

  /**
   * Adds (sign 1) or removes (sign -1) a leg's share, computed from its lots and the series vector:
   * within one epoch the same lots give the same integers, so removing undoes adding exactly.
   */
  private apply(s: Sums, leg: Leg, sign: 1 | -1): void {
    const inst = leg.inst;
    const v = this.seriesVector(inst);
    if (v === null) {
      s.unpriced += sign;
      return;
    }
    const d = CURRENCIES[inst.currency].decimals;
    const pos = (leg.pos * inst.lotScaled) / AMOUNT_UNIT;
    const buy = (leg.buy * inst.lotScaled) / AMOUNT_UNIT;
    const sell = (leg.sell * inst.lotScaled) / AMOUNT_UNIT;
    const du = v.du;
    this.work += du.length;
    const withOrders = buy !== 0 || sell !== 0;
    for (let i = 0; i < du.length; i++) {
      const x = du[i]!;
      if (x === 0) continue;
      const p = pos === 0 ? 0 : pnlMinor(pos * x, d);
      s.pos[i] += sign * p;
      // the position's P&L and the worse side's, rounded once, less the position's alone
      if (withOrders) s.ord[i] += sign * (pnlMinor(pos * x + Math.min(buy * x, -sell * x), d) - p);
    }
    moveStrike(s, v.strikeKey, sign * leg.pos * inst.lotScaled, sign * (leg.pos - leg.sell) * inst.lotScaled);
    const scale = pow10(d);
    s.dPos += sign * Math.round(pos * v.delta * scale);
    s.dBuys += sign * Math.round(buy * v.delta * scale);
    s.dSells += sign * Math.round(-sell * v.delta * scale);
  }

  /** The per-combo-lot vector of a combo, from the cache while its legs' vectors did not move; null: a leg has no value. */
  private comboVector(comboId: string): ComboVector | null {
    return comboVectorOf(this.ex, this.comboVectors, comboId, (inst) => this.seriesVector(inst), this.layout().total);
  }

  /** Adds (1) or removes (-1) a combo's open lots: its worse side per scenario, its sells in the short contingency. */
  private applyCombo(s: Sums, comboId: string, lots: SideLots, sign: 1 | -1): void {
    if (lots.bid === 0 && lots.ask === 0) return; // nothing open: counts for nothing (priced or not)
    applyComboLots(s, this.comboVector(comboId), lots, sign);
  }

  /** Full sums over the account's positions and open orders in one currency; `comboChange`: a combo's open lots moved. */
  private build(user: User, currency: CurrencyCode, comboChange?: ComboChange): Sums {
    const s = this.start(user, currency);
    this.advance(user, s, Infinity);
    if (comboChange !== undefined && comboChange.lots !== 0) {
      const old = s.combos.get(comboChange.id) ?? { bid: 0, ask: 0 };
      const now = lotsAfter(old, comboChange);
      this.applyCombo(s, comboChange.id, old, -1);
      this.applyCombo(s, comboChange.id, now, 1);
      s.combos.set(comboChange.id, now);
    }
    return s;
  }

  /** Adds the account's open combo lots in the sums' currency (once every leg is in). */
  private addCombos(user: User, s: Sums): void {
    for (const [id, lots] of this.ex.comboBooks.sideLotsOf(user.id)) {
      if (this.ex.comboBooks.inst(this.ex.combos.byId.get(id)!).currency !== s.currency) continue;
      const copy = { bid: lots.bid, ask: lots.ask };
      s.combos.set(id, copy);
      this.applyCombo(s, id, copy, 1);
    }
  }

  /** Empty sums with every instrument the account holds or quotes in `currency` queued (none added yet). */
  private start(user: User, currency: CurrencyCode): Sums {
    const s = this.empty(currency);
    const waiting = new Set<number>();
    const queue: Instrument[] = [];
    const add = (inst: Instrument) => {
      if (inst.currency !== currency || waiting.has(inst.id)) return;
      waiting.add(inst.id);
      queue.push(inst);
    };
    for (const p of user.positions.values()) add(p.inst);
    for (const e of user.exposures.values()) add(e.inst);
    s.pending = { queue, next: 0, waiting };
    return s;
  }

  /**
   * Adds queued legs while the next one's cost (its sums, and its series' revaluation when stale)
   * keeps the work of this call within `budget` units. True once every leg is in (the sums complete).
   */
  private advance(user: User, s: Sums, budget: number): boolean {
    const q = s.pending;
    if (q === null) return true;
    const from = this.work;
    const scenarios = this.layout().total;
    while (q.next < q.queue.length) {
      const inst = q.queue[q.next]!;
      const cost = scenarios + (this.vectorStale(inst) ? vectorUnits(scenarios) : 0);
      if (this.work - from + cost > budget) return false;
      q.next++;
      q.waiting.delete(inst.id);
      const leg = this.legOf(user, inst);
      if (leg === null) continue;
      s.legs.set(inst.id, leg);
      this.apply(s, leg, 1);
    }
    this.addCombos(user, s);
    s.pending = null;
    return true;
  }

  private valid(s: Sums | undefined): s is Sums {
    return s !== undefined && s.marginVersion === this.ex.marginVersion && s.generation === this.ex.pm.generation;
  }

  /** The account's sums in `currency` as stored (valid or not, complete or not), made on first use. */
  private slot(user: User): Map<CurrencyCode, Sums> {
    let byCurrency = this.sums.get(user);
    if (byCurrency === undefined) {
      byCurrency = new Map();
      this.sums.set(user, byCurrency);
    }
    return byCurrency;
  }

  private current(user: User, currency: CurrencyCode): Sums {
    const byCurrency = this.slot(user);
    let s = byCurrency.get(currency);
    if (!this.valid(s)) {
      s = this.start(user, currency);
      byCurrency.set(currency, s);
    }
    // a rebuild the scan left halfway is finished here: what it added stays valid
    this.advance(user, s, Infinity);
    return s;
  }

  /**
   * Brings the account's sums in `currency` up to date with at most `budget` work units. True when
   * they are complete; false when work remains for the next call (none done when the next leg alone
   * costs more than `budget`: a call with PM_STEP_UNITS always makes progress, maxLegUnits() being
   * below it). The liquidation scan's slicing (src/engine/liquidation.ts).
   */
  refresh(user: User, currency: CurrencyCode, budget: number): boolean {
    const byCurrency = this.slot(user);
    let s = byCurrency.get(currency);
    if (!this.valid(s)) {
      s = this.start(user, currency);
      byCurrency.set(currency, s);
    }
    return this.advance(user, s, budget);
  }

  /** Whether the account's sums in `currency` are complete and current: a read or a check of them does no rebuild. */
  complete(user: User, currency: CurrencyCode): boolean {
    const s = this.sums.get(user)?.get(currency);
    return this.valid(s) && s.pending === null;
  }

  /** Call after an account's position or open orders in `inst` changed: moves the sums by the difference. */
  legChanged(user: User, inst: Instrument): void {
    const s = this.sums.get(user)?.get(inst.currency);
    if (!this.valid(s)) return; // rebuilt when next used
    // a rebuild in progress reads this leg when it reaches it (a leg it added, or one the account
    // took since it started, moves as in complete sums)
    if (s.pending?.waiting.has(inst.id) === true) return;
    const old = s.legs.get(inst.id);
    if (old !== undefined) this.apply(s, old, -1);
    const leg = this.legOf(user, inst);
    if (leg === null) s.legs.delete(inst.id);
    else {
      s.legs.set(inst.id, leg);
      this.apply(s, leg, 1);
    }
  }

  accountChanged(user: User): void {
    this.sums.delete(user);
  }

  /** Call after an account's open lots in combo `comboId` (of `currency`) changed: moves the sums by the difference. */
  comboChanged(user: User, currency: CurrencyCode, comboId: string): void {
    const s = this.sums.get(user)?.get(currency);
    if (!this.valid(s)) return; // rebuilt when next used
    if (s.pending !== null) return; // a rebuild in progress reads the combos once its legs are in
    const old = s.combos.get(comboId);
    if (old !== undefined) this.applyCombo(s, comboId, old, -1);
    const now = this.ex.comboBooks.sideLotsOf(user.id).get(comboId);
    if (now === undefined) s.combos.delete(comboId);
    else {
      const copy = { bid: now.bid, ask: now.ask };
      s.combos.set(comboId, copy);
      this.applyCombo(s, comboId, copy, 1);
    }
  }

  /** The account's figures in one currency (from the running sums). */
  figures(user: User, currency: CurrencyCode): PmFigures {
    return this.evaluate(this.current(user, currency), null);
  }

  /** The same from a full sum, touching no cache (for checks and tests); `comboChange`: a combo's open lots moved. */
  freshFigures(user: User, currency: CurrencyCode, comboChange?: ComboChange): PmFigures {
    return this.evaluate(this.build(user, currency, comboChange), null);
  }

  /** The figures were the account's open orders in `inst` larger by these lots (an order check). */
  withOrders(user: User, inst: Instrument, buyLots: number, sellLots: number): PmFigures {
    const s = this.current(user, inst.currency);
    return this.evaluate(s, this.legSwap(s, inst, this.legOf(user, inst, buyLots, sellLots)));
  }

  /** The figures were the account's position in `inst` changed by `lots` (a liquidation's choice). */
  withPosition(user: User, inst: Instrument, lots: number): PmFigures {
    const s = this.current(user, inst.currency);
    return this.evaluate(s, this.legSwap(s, inst, this.legOf(user, inst, 0, 0, lots)));
  }

  /**
   * The figures were the account's positions moved by `positions` (instrument, lots; one entry per
   * instrument) and its open lots in a combo moved by `combo` (a combo fill's check: the legs'
   * positions after it, the filling resting order's lots gone), or a combo order added (lots > 0).
   * From the running sums, changed and put back.
   */
  withChanges(user: User, currency: CurrencyCode, positions: readonly { inst: Instrument; lots: number }[], combo: ComboChange | null): PmFigures {
    const s = this.current(user, currency);
    const swaps: ((sign: 1 | -1) => void)[] = [];
    for (const p of positions) swaps.push(this.legSwap(s, p.inst, this.legOf(user, p.inst, 0, 0, p.lots)));
    if (combo !== null && combo.lots !== 0) {
      const old = s.combos.get(combo.id) ?? { bid: 0, ask: 0 };
      const now = lotsAfter(old, combo);
      swaps.push((sign) => {
        this.applyCombo(s, combo.id, sign === 1 ? old : now, -1);
        this.applyCombo(s, combo.id, sign === 1 ? now : old, 1);
      });
    }
    return this.evaluate(s, (sign) => {
      if (sign === 1) for (const f of swaps) f(1);
      else for (let i = swaps.length - 1; i >= 0; i--) swaps[i]!(-1);
    });
  }

  /** A change of one leg that `evaluate` applies (1) and undoes (-1). */
  private legSwap(s: Sums, inst: Instrument, leg: Leg | null): (sign: 1 | -1) => void {
    const old = s.legs.get(inst.id);
    return (sign) => {
      const [out, into] = sign === 1 ? [old, leg] : [leg, old];
      if (out !== undefined && out !== null) this.apply(s, out, -1);
      if (into !== undefined && into !== null) this.apply(s, into, 1);
    };
  }

  /** Worst counted loss, contingencies, MM and IM of the sums, with `change` applied (1) while read and undone (-1) after. */
  private evaluate(s: Sums, change: ((sign: 1 | -1) => void) | null): PmFigures {
    // apply the change, read, and undo it: exact (integers), and cheaper than copying the sums
    if (change !== null) change(1);
    try {
      if (s.unpriced > 0) return { maintenanceMargin: NaN, initialMargin: NaN, initialMarginWithOrders: NaN };
      const p = this.params;
      const { standard } = this.layout();
      let worstPos = 0;
      let worstWith = 0;
      for (let i = 0; i < s.pos.length; i++) {
        let lossPos = Math.max(0, -s.pos[i]!);
        let lossWith = Math.max(0, -(s.pos[i]! + s.ord[i]!));
        if (i >= standard) {
          lossPos = ceilDiv(lossPos * p.extendedLossPercent, 100);
          lossWith = ceilDiv(lossWith * p.extendedLossPercent, 100);
        }
        if (lossPos > worstPos) worstPos = lossPos;
        if (lossWith > worstWith) worstWith = lossWith;
      }
      const d = CURRENCIES[s.currency].decimals;
      const mm = worstPos + shortContingency(p, s.shortPos, d) + deltaContingency(p, s.dPos);
      // the delta of the combo orders (each the worse of its sides, in absolute value) on top of the
      // worse of the ordinary buys or sells: an upper bound of every way they could fill
      const mmWith = worstWith + shortContingency(p, s.shortWithSells, d) + deltaContingency(p, Math.max(Math.abs(s.dPos + s.dBuys), Math.abs(s.dPos + s.dSells)) + s.dCombo);
      return {
        maintenanceMargin: mm,
        initialMargin: ceilDiv(mm * p.imFactorPercent, 100),
        initialMarginWithOrders: ceilDiv(Math.max(mm, mmWith) * p.imFactorPercent, 100),
      };
    } finally {
      if (change !== null) change(-1);
    }
  }
}

/** shortOptionContingency coin per net short contract (scaled by 10^AMOUNT_SCALE), rounded up. */
function shortContingency(p: Readonly<PortfolioMarginParams>, scaled: number, decimals: number): number {
  return up((scaled / AMOUNT_UNIT) * p.shortOptionContingency, decimals);
}

/** deltaContingency of an absolute net delta in minor units, rounded up. */
function deltaContingency(p: Readonly<PortfolioMarginParams>, minor: number): number {
  return Math.ceil(Math.abs(minor) * p.deltaContingency - 1e-6) + 0;
}
