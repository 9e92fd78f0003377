// Account logs: every balance movement as an entry with its type, signed amount and the balance
// after it, per user and for the insurance account: trades (premium and fee in one entry per side
// and fill), deposits, withdrawals, deliveries at expiry, liquidation trades and fees, and the money
// that moves in a default (a takeover at mark, a conversion of other currencies, an insurance cover,
// a socialized loss and its compensation), so an account's owner can see why its balance changed.
// Part of the engine state (snapshotted, replayed).
import type { CurrencyCode } from '../domain/currency.ts';

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
  | 'socialized_loss_compensation';

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
}

/** Entries kept per log; older ones leave memory and snapshots (trimmed in steps: amortised O(1)). */
export const LEDGER_KEPT = 1000;

export function appendEntry(log: LedgerEntry[], entry: LedgerEntry): void {
  log.push(entry);
  if (log.length > LEDGER_KEPT * 2) log.splice(0, log.length - LEDGER_KEPT);
}

export function ledgerToJson(log: readonly LedgerEntry[]): unknown[] {
  return log.map((e) => [e.id, e.ts, e.type, e.currency, e.amount, e.balance, e.instrument, e.userId, e.size, e.price, e.fee, e.ref]);
}

export function ledgerFromJson(rows: unknown[] | undefined): LedgerEntry[] {
  return (rows ?? []).map((r) => {
    // snapshots from before trades were logged have 8 fields
    const [id, ts, type, currency, amount, balance, instrument, userId, size = null, price = null, fee = 0, ref = null] = r as never[];
    return { id, ts, type, currency, amount, balance, instrument, userId, size, price, fee, ref };
  });
}

