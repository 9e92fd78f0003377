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
