// Records of the accounts subsystem (subaccounts and transfers): plain data owned by the single
// writer, snapshotted with the engine (src/engine/snapshot.ts) and covered by the state hash.
import type { CurrencyCode } from '../domain/currency.ts';

/** A subaccount: a user of its own for the engine, linked to the main account that created it. */
export interface SubaccountRecord {
  id: number;
  mainId: number;
  /** Deribit's `username` of a subaccount (changed by private/change_subaccount_name). */
  username: string;
  /** Whether sessions of the subaccount may exist (private/toggle_subaccount_login). */
  loginEnabled: boolean;
  created: number;
  /** private/set_email_for_subaccount: its own contact email (absent: its main account's) */
  email?: string;
  /** private/toggle_notifications_from_subaccount (absent: off) */
  notifications?: boolean;
}

/** One transfer between two accounts of one main account, applied whole by one command. */
export interface TransferRecord {
  id: number;
  ts: number;
  from: number;
  to: number;
  /** usernames at the time of the transfer: a removed subaccount's name still shows in history */
  fromName: string;
  toName: string;
  /** the account that asked for it (the main account, or the sender itself) */
  by: number;
  currency: CurrencyCode;
  /** minor units, > 0 */
  amount: number;
  /** the client's idempotency key (Deribit `nonce`), null when none */
  nonce: string | null;
}

/** Deribit's states of a transfer to another user: held (`prepared`) until confirmed or cancelled. */
export type UserTransferState = 'prepared' | 'confirmed' | 'cancelled';

/**
 * One transfer to another user of the venue (private/submit_transfer_to_user). The amount leaves the
 * sender when it is submitted and is held (counted by conservation) while `prepared`; it reaches the
 * receiver when confirmed (at `due`) or goes back to the sender when cancelled.
 */
export interface UserTransferRecord {
  id: number;
  ts: number;
  updated: number;
  from: number;
  to: number;
  fromName: string;
  toName: string;
  currency: CurrencyCode;
  /** minor units, > 0 */
  amount: number;
  nonce: string | null;
  state: UserTransferState;
  /** when a prepared transfer is confirmed (engine time, ms) */
  due: number;
}

/** One leg of private/move_positions: `lots` (> 0) of the source's position in `instrument` at `price` units. */
export interface MoveLeg {
  instrument: string;
  lots: number;
  /** price units; null: the mark rounded to the tick */
  price: number | null;
}

/** One leg as moved, from the source's side (Deribit's `direction`). */
export interface MovedLeg {
  instrument: string;
  side: 'buy' | 'sell';
  lots: number;
  price: number;
}
