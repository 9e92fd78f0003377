// Combos as instruments (issue 34, first slice): a combo is a named set of option legs with integer
// ratios (positive: bought, negative: sold), made by private/create_combo or found again by its legs.
// No combo book yet: this slice lists them (get_combos, get_combo_ids, get_combo_details). Engine
// state: created by a journaled `create_combo` command, snapshotted (absent while empty).
import { ERR, reject, type Reject } from '../domain/errors.ts';
import { expiryCode, type Instrument } from '../domain/instrument.ts';
import type { Command } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';

/** Legs one combo may have. */
export const MAX_COMBO_LEGS = 4;
/** Combos a venue holds at most (a hard limit on creation). */
export const MAX_COMBOS = 1000;
/** Active combo books (a soft limit; STRIKEBOOK_MAX_ACTIVE_COMBOS). */
export const DEFAULT_MAX_ACTIVE_COMBOS = 200;

export interface ComboLeg {
  instrument: string;
  /** signed integer ratio: > 0 bought, < 0 sold */
  ratio: number;
}

export interface ComboRecord {
  id: string;
  instrumentId: number;
  created: number;
  legs: ComboLeg[];
  /** combo trades so far (absent: none); the soft limit deactivates the least traded book */
  traded?: number;
  /** its book was deactivated by the soft limit on active books (create_combo activates it again) */
  deactivated?: true;
}

type CreateCmd = Extract<Command, { t: 'create_combo' }>;

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** The legs in their canonical form: sorted by instrument, ratios divided by their common divisor, the first leg bought. */
export function canonicalLegs(legs: readonly ComboLeg[]): ComboLeg[] {
  const sorted = [...legs].sort((a, b) => (a.instrument < b.instrument ? -1 : a.instrument > b.instrument ? 1 : 0));
  const g = sorted.reduce((acc, l) => gcd(acc, Math.abs(l.ratio)), 0);
  return sorted.map((l) => ({ instrument: l.instrument, ratio: l.ratio / g }));
}

/**
 * Deribit's combo names: a call spread `BTC-CS-27DEC26-100000_110000` (long the lower strike), a put
 * spread `-PS-`, a straddle `-STRD-<strike>`; any other set of legs `<currency>-COMBO-<instrument id>`.
 */
function comboName(legs: readonly ComboLeg[], insts: readonly Instrument[], instrumentId: number): string {
  const cur = insts[0]!.currency;
  if (legs.length === 2 && insts[0]!.expiry === insts[1]!.expiry && Math.abs(legs[0]!.ratio) === 1 && Math.abs(legs[1]!.ratio) === 1) {
    const [a, b] = insts[0]!.strike <= insts[1]!.strike ? [0, 1] : [1, 0];
    const [ia, ib] = [insts[a]!, insts[b]!];
    const day = expiryCode(ia.expiry);
    if (ia.optionType === ib.optionType && ia.strike !== ib.strike && legs[a]!.ratio === -legs[b]!.ratio) {
      return `${cur}-${ia.optionType === 'call' ? 'CS' : 'PS'}-${day}-${ia.strike}_${ib.strike}`;
    }
    if (ia.optionType !== ib.optionType && ia.strike === ib.strike && legs[0]!.ratio === legs[1]!.ratio) return `${cur}-STRD-${day}-${ia.strike}`;
  }
  return `${cur}-COMBO-${instrumentId}`;
}

export class Combos {
  readonly byId = new Map<string, ComboRecord>();
  /** canonical legs text -> combo id */
  private readonly byLegs = new Map<string, string>();

  constructor(private readonly ex: Exchange) {}

  /** private/create_combo: the combo of these legs, made when it does not exist yet. */
  create(c: CreateCmd): ComboRecord | Reject {
    if (!this.ex.users.has(c.userId)) return reject(ERR.UNAUTHORIZED);
    if (c.legs.length < 2 || c.legs.length > MAX_COMBO_LEGS) return reject(ERR.INVALID_ARGUMENTS, 'combo_needs_2_to_4_legs', 'trades');
    const insts: Instrument[] = [];
    for (const l of c.legs) {
      const inst = this.ex.instruments.get(l.instrument);
      if (!inst || inst.state !== 'open' || inst.expiry <= this.ex.now) return reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
      if (insts.includes(inst)) return reject(ERR.INVALID_ARGUMENTS, 'instrument_repeated', 'trades');
      if (insts.length > 0 && inst.currency !== insts[0]!.currency) return reject(ERR.INVALID_ARGUMENTS, 'mixed_currencies', 'trades');
      if (!Number.isSafeInteger(l.ratio) || l.ratio === 0) return reject(ERR.INVALID_AMOUNT, 'ratio_not_integer', 'amount');
      insts.push(inst);
    }
    const legs = canonicalLegs(c.legs);
    const key = legs.map((l) => `${l.instrument}:${l.ratio}`).join('|');
    const known = this.byLegs.get(key);
    if (known !== undefined) {
      const r = this.byId.get(known)!;
      if (r.deactivated) {
        delete r.deactivated;
        this.softLimit(r, c.maxActive);
      }
      return r;
    }
    if (this.byId.size >= (c.max ?? MAX_COMBOS)) return reject(ERR.INVALID_ARGUMENTS, 'combo_limit_reached');
    const instrumentId = this.ex.nextInstrumentId++;
    const ordered = legs.map((l) => this.ex.instruments.get(l.instrument)!);
    const rec: ComboRecord = { id: comboName(legs, ordered, instrumentId), instrumentId, created: this.ex.now, legs };
    // two leg sets with one name (a spread and its reverse): the second takes the generic name
    if (this.byId.has(rec.id)) rec.id = `${ordered[0]!.currency}-COMBO-${instrumentId}`;
    this.add(rec, key);
    this.softLimit(rec, c.maxActive);
    return rec;
  }

  /**
   * The soft limit on active combo books: past `max` active combos, the least traded other active
   * combo (the oldest of equals) is deactivated, its orders cancelled; create_combo activates it again.
   */
  private softLimit(keep: ComboRecord, max: number | undefined): void {
    if (max === undefined) return;
    const active = [...this.byId.values()].filter((r) => this.isActive(r));
    for (let excess = active.length - max; excess > 0; excess--) {
      let victim: ComboRecord | null = null;
      for (const r of active) {
        if (r === keep || r.deactivated) continue;
        if (victim === null || (r.traded ?? 0) < (victim.traded ?? 0)) victim = r;
      }
      if (victim === null) return;
      victim.deactivated = true;
      this.ex.comboBooks.closeInactive('instrument_halted');
    }
  }

  /** Active while every leg is open and unexpired (an expiry of any leg ends the combo). */
  isActive(r: ComboRecord): boolean {
    if (r.deactivated) return false;
    for (const l of r.legs) {
      const inst = this.ex.instruments.get(l.instrument);
      if (!inst || inst.state !== 'open' || inst.expiry <= this.ex.now) return false;
    }
    return true;
  }

  /** When the combo's state last changed: its creation, or the first expiry of a leg once inactive. */
  stateTimestamp(r: ComboRecord): number {
    if (this.isActive(r)) return r.created;
    let first = Infinity;
    for (const l of r.legs) first = Math.min(first, this.ex.instruments.get(l.instrument)?.expiry ?? r.created);
    return Math.max(r.created, Math.min(first, this.ex.now));
  }

  currencyOf(r: ComboRecord): string {
    return r.id.slice(0, r.id.indexOf('-'));
  }

  isEmpty(): boolean {
    return this.byId.size === 0;
  }

  toJson(): unknown {
    return [...this.byId.values()];
  }

  restore(j: unknown): void {
    if (j === undefined || j === null) return;
    for (const r of j as ComboRecord[]) this.add(r, r.legs.map((l) => `${l.instrument}:${l.ratio}`).join('|'));
  }

  private add(r: ComboRecord, key: string): void {
    this.byId.set(r.id, r);
    this.byLegs.set(key, r.id);
  }
}
