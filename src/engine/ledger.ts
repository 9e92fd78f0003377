// Account logs: every balance movement as an entry with its type, signed amount and the balance
// after it, per user and for the insurance account: trades (premium and fee in one entry per side
// and fill), deposits, withdrawals, deliveries at expiry, liquidation trades and fees, and the money
// that moves in a default (a takeover at mark, a conversion of other currencies, an insurance cover,
// a socialized loss and its compensation), so an account's owner can see why its balance changed.
// Part of the engine state (snapshotted, replayed).
import { CURRENCY_CODES, type CurrencyCode } from '../domain/currency.ts';

export type LedgerType =
  /** one side of a fill: the premium paid or received, less the fee (`fee`) */
  | 'trade'
  /** a fill of a liquidation order, on the liquidated account's side */
  | 'liquidation'
  | 'deposit'
  | 'withdrawal'
  /** a position settled at expiry (payout less delivery fee, or a short's debit) */
  | 'delivery'
  /** a position taken over by the insurance account at mark (Deribit's liquidation by the insurance fund) */
  | 'takeover'
  /** a liquidation fee, paid to the insurance account */
  | 'liquidation_fee'
  /** another currency of a defaulting account exchanged at index to cover its deficit */
  | 'conversion'
  /** the insurance account covers what a defaulting account cannot */
  | 'insurance_cover'
  /** a settlement payout cut to cover a deficit the insurance account could not */
  | 'socialized_loss'
  /** what a cut payout received in the insurance account's other currencies, at index */
  | 'socialized_loss_compensation'
  /** money moved to or from another account of the same main account (src/accounts/transfers.ts) */
  | 'transfer'
  /** one leg of a position move between two accounts of one main account (src/accounts/movePositions.ts) */
  | 'position_move';

export interface LedgerEntry {
  id: number;
  ts: number;
  type: LedgerType;
  currency: CurrencyCode;
  /** Signed change in minor units. */
  amount: number;
  /** Balance of that account in that currency after the change, minor units. */
  balance: number;
  /** The instrument concerned, if any. */
  instrument: string | null;
  /** The other party: the defaulting or covered user for insurance entries, null otherwise. */
  userId: number | null;
  /** Trades: the fill's signed size in lots (+ bought); deliveries: the position settled; else null. */
  size: number | null;
  /** Trades: the fill's price units; else null. */
  price: number | null;
  /** Fee inside `amount` (trade commission or delivery fee), minor units; 0 when none. */
  fee: number;
  /** Trades: the trade id; else null. */
  ref: number | null;
  // Deribit's transaction log fields (issue 31). Optional when logging: an entry that leaves one
  // out holds null there; `userSeq` is set by the log itself.
  /** Trades: the order filled; else null. */
  orderId?: number | null;
  /** Trades: the side's role in the fill; else null. */
  role?: 'maker' | 'taker' | null;
  /** Trades: the position in the instrument after the fill, signed lots; else null. */
  position?: number | null;
  /** The currency's index at the time (USD), null without one. */
  index?: number | null;
  /** Entries on an instrument: its mark (coin) at the time; else null. */
  mark?: number | null;
  /** The account's equity in the currency after the entry, minor units; null where not computed. */
  equity?: number | null;
  /** The entry's number in this log: 1 for the first entry ever logged, +1 per entry (Deribit's
   *  `user_seq`); given by `push`. */
  userSeq?: number;
}

/** Entries kept per log; older ones leave memory and snapshots (trimmed in steps: amortised O(1)). */
export const LEDGER_KEPT = 1000;

const TYPES: readonly LedgerType[] = ['trade', 'liquidation', 'deposit', 'withdrawal', 'delivery', 'takeover', 'liquidation_fee', 'conversion', 'insurance_cover', 'socialized_loss', 'socialized_loss_compensation', 'transfer', 'position_move'];
const TYPE_CODE = new Map(TYPES.map((t, i) => [t, i]));
const CURRENCY_LIST: readonly CurrencyCode[] = CURRENCY_CODES;
const CURRENCY_INDEX = new Map(CURRENCY_LIST.map((c, i) => [c, i]));

// The numeric columns of an entry, in one Float64Array row (null is NaN: every value is an integer
// below 2^53, so a double holds it exactly). Type and currency share a column as codes.
const ID = 0;
const TS = 1;
const AMOUNT = 2;
const BALANCE = 3;
const USER = 4;
const SIZE = 5;
const PRICE = 6;
const FEE = 7;
const REF = 8;
const KIND = 9;
const ORDER = 10;
const ROLE = 11;
const POSITION = 12;
const INDEX = 13;
const MARK = 14;
const EQUITY = 15;
const USEQ = 16;
const WIDTH = 17;
const ROLES = [null, 'maker', 'taker'] as const;
const FIRST_CAPACITY = 8;

const orNull = (v: number): number | null => (Number.isNaN(v) ? null : v);
const orNaN = (v: number | null): number => (v === null ? Number.NaN : v);

/**
 * One account's log, oldest entry first, in columns rather than one object per entry: every fill
 * adds two entries, and objects kept alive by the thousand are what each young-generation GC
 * copies and each full GC marks (issue 16: the log was 23% of what a crossing order left alive).
 * Holds the last LEDGER_KEPT to 2 x LEDGER_KEPT entries, growing its storage as it fills.
 */
export class Ledger {
  private rows = new Float64Array(FIRST_CAPACITY * WIDTH);
  /** instrument names, by entry (interned strings, shared with the instruments) */
  private names: Array<string | null> = [];
  private count = 0;
  /** `userSeq` of the newest entry ever pushed (0 before the first) */
  private lastSeq = 0;

  get length(): number {
    return this.count;
  }

  push(e: LedgerEntry): void {
    if ((this.count + 1) * WIDTH > this.rows.length) {
      const grown = new Float64Array(Math.min(this.rows.length * 2, (2 * LEDGER_KEPT + 1) * WIDTH));
      grown.set(this.rows);
      this.rows = grown;
    }
    const r = this.rows;
    const o = this.count * WIDTH;
    r[o + ID] = e.id;
    r[o + TS] = e.ts;
    r[o + AMOUNT] = e.amount;
    r[o + BALANCE] = e.balance;
    r[o + USER] = orNaN(e.userId);
    r[o + SIZE] = orNaN(e.size);
    r[o + PRICE] = orNaN(e.price);
    r[o + FEE] = e.fee;
    r[o + REF] = orNaN(e.ref);
    r[o + KIND] = TYPE_CODE.get(e.type)! * 16 + CURRENCY_INDEX.get(e.currency)!;
    r[o + ORDER] = orNaN(e.orderId ?? null);
    r[o + ROLE] = e.role === 'maker' ? 1 : e.role === 'taker' ? 2 : 0;
    r[o + POSITION] = orNaN(e.position ?? null);
    r[o + INDEX] = orNaN(e.index ?? null);
    r[o + MARK] = orNaN(e.mark ?? null);
    r[o + EQUITY] = orNaN(e.equity ?? null);
    // a restored entry keeps its number; a new one takes the next
    this.lastSeq = e.userSeq ?? this.lastSeq + 1;
    r[o + USEQ] = this.lastSeq;
    this.names[this.count] = e.instrument;
    this.count++;
    if (this.count > LEDGER_KEPT * 2) {
      // keep the newest LEDGER_KEPT
      const drop = this.count - LEDGER_KEPT;
      r.copyWithin(0, drop * WIDTH, this.count * WIDTH);
      this.names.splice(0, drop);
      this.count = LEDGER_KEPT;
    }
  }

  idAt(i: number): number {
    return this.rows[i * WIDTH + ID]!;
  }

  tsAt(i: number): number {
    return this.rows[i * WIDTH + TS]!;
  }

  typeAt(i: number): LedgerType {
    return TYPES[Math.floor(this.rows[i * WIDTH + KIND]! / 16)]!;
  }

  currencyAt(i: number): CurrencyCode {
    return CURRENCY_LIST[this.rows[i * WIDTH + KIND]! % 16]!;
  }

  /** Entry `i` (0 is the oldest held) as an object: for reads, not kept. */
  at(i: number): LedgerEntry {
    const r = this.rows;
    const o = i * WIDTH;
    return {
      id: r[o + ID]!,
      ts: r[o + TS]!,
      type: this.typeAt(i),
      currency: this.currencyAt(i),
      amount: r[o + AMOUNT]!,
      balance: r[o + BALANCE]!,
      instrument: this.names[i]!,
      userId: orNull(r[o + USER]!),
      size: orNull(r[o + SIZE]!),
      price: orNull(r[o + PRICE]!),
      fee: r[o + FEE]!,
      ref: orNull(r[o + REF]!),
      orderId: orNull(r[o + ORDER]!),
      role: ROLES[r[o + ROLE]!]!,
      position: orNull(r[o + POSITION]!),
      index: orNull(r[o + INDEX]!),
      mark: orNull(r[o + MARK]!),
      equity: orNull(r[o + EQUITY]!),
      userSeq: r[o + USEQ]!,
    };
  }

  /** Every entry held, oldest first (tests, snapshots). */
  entries(): LedgerEntry[] {
    const out: LedgerEntry[] = [];
    for (let i = 0; i < this.count; i++) out.push(this.at(i));
    return out;
  }
}

export function appendEntry(log: Ledger, entry: LedgerEntry): void {
  log.push(entry);
}

export function ledgerToJson(log: Ledger): unknown[] {
  return log.entries().map((e) => [e.id, e.ts, e.type, e.currency, e.amount, e.balance, e.instrument, e.userId, e.size, e.price, e.fee, e.ref, e.orderId, e.role, e.position, e.index, e.mark, e.equity, e.userSeq]);
}

export function ledgerFromJson(rows: unknown[] | undefined): Ledger {
  const log = new Ledger();
  for (const r of rows ?? []) {
    // snapshots from before trades were logged have 8 fields, from before issue 31's fields 12
    // (their entries are numbered from 1 here)
    const [id, ts, type, currency, amount, balance, instrument, userId, size = null, price = null, fee = 0, ref = null, orderId = null, role = null, position = null, index = null, mark = null, equity = null, userSeq] = r as never[];
    log.push({ id, ts, type, currency, amount, balance, instrument, userId, size, price, fee, ref, orderId, role, position, index, mark, equity, userSeq });
  }
  return log;
}
