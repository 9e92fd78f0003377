// Account logs: every balance movement outside trading (trades and their fees are in the trade
// history) as an entry with its type, signed amount and the balance after it, per user and for the
// insurance account. Money that moves in a default (a takeover at mark, a conversion of other
// currencies, an insurance cover, a socialized loss and its compensation) is always logged, so an
// account's owner can see why its balance changed. Part of the engine state (snapshotted, replayed).
import type { CurrencyCode } from '../domain/currency.ts';

export type LedgerType =
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
}

/** Entries kept per log; older ones leave memory and snapshots (trimmed in steps: amortised O(1)). */
export const LEDGER_KEPT = 1000;

export function appendEntry(log: LedgerEntry[], entry: LedgerEntry): void {
  log.push(entry);
  if (log.length > LEDGER_KEPT * 2) log.splice(0, log.length - LEDGER_KEPT);
}

export function ledgerToJson(log: readonly LedgerEntry[]): unknown[] {
  return log.map((e) => [e.id, e.ts, e.type, e.currency, e.amount, e.balance, e.instrument, e.userId]);
}

export function ledgerFromJson(rows: unknown[] | undefined): LedgerEntry[] {
  return (rows ?? []).map((r) => {
    const [id, ts, type, currency, amount, balance, instrument, userId] = r as never[];
    return { id, ts, type, currency, amount, balance, instrument, userId };
  });
}

