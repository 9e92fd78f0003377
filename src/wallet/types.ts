// Records and commands of the wallet (issue 32): withdrawals, deposits, deposit addresses and the
// address book. Plain data owned by the single writer, snapshotted with the engine
// (src/engine/snapshot.ts) and covered by the state hash.
import type { CurrencyCode } from '../domain/currency.ts';

/**
 * Deribit's withdrawal states. A withdrawal is pending while `unconfirmed` or `confirmed` (this venue
 * has no e-mail confirmation step: a new one is `confirmed` at once); `cancelled` (by its owner) and
 * `rejected` (by an operator) gave the money back; `completed` sent it out.
 */
export type WithdrawalState = 'unconfirmed' | 'confirmed' | 'cancelled' | 'completed' | 'interrupted' | 'rejected';

export const PRIORITIES = ['very_low', 'low', 'mid', 'high', 'very_high', 'extreme_high', 'insane'] as const;
export type Priority = (typeof PRIORITIES)[number];

export interface WithdrawalRecord {
  id: number;
  userId: number;
  currency: CurrencyCode;
  /** minor units, > 0; reserved (out of the balance) from creation until it ends */
  amount: number;
  address: string;
  priority: Priority;
  state: WithdrawalState;
  created: number;
  updated: number;
  /** when it was confirmed (at creation here), null before */
  confirmed: number | null;
  /** the chain's transaction id an operator gave when completing it */
  txid: string | null;
  nonce: string | null;
  /** sandbox only: completed automatically at or after this time; null never (production) */
  autoAt: number | null;
}

export interface WalletDeposit {
  currency: CurrencyCode;
  userId: number;
  /** the deposit address it was sent to ('' for a sandbox deposit) */
  address: string;
  amount: number;
  state: 'pending' | 'completed' | 'rejected' | 'replaced';
  /** the chain's transaction id: the idempotency key of a credited deposit */
  txid: string;
  received: number;
  updated: number;
}

export interface DepositAddress {
  currency: CurrencyCode;
  address: string;
  userId: number;
  created: number;
}

export type AddressBookType = 'transfer' | 'withdrawal' | 'deposit_source';

/** Deribit's beneficiary (travel-rule) fields, kept as given. */
export interface BeneficiaryInfo {
  beneficiary_vasp_name: string;
  beneficiary_vasp_did: string;
  beneficiary_vasp_website: string;
  beneficiary_first_name: string;
  beneficiary_last_name: string;
  beneficiary_company_name: string;
  beneficiary_address: string;
  agreed: boolean;
  personal: boolean;
}

export interface AddressBookEntry {
  currency: CurrencyCode;
  type: AddressBookType;
  address: string;
  label: string;
  info: BeneficiaryInfo;
  created: number;
  /** a withdrawal to it is allowed from this time on (created + the waiting period then in force) */
  readyAt: number;
}

/** The rules a withdrawal is decided under, carried in its command (settings at the time it was asked). */
export interface WithdrawRules {
  /** only to a `withdrawal` address of the caller's address book that is past its waiting period */
  bookOnly: boolean;
  /** pending withdrawals a user may have at once */
  maxPending: number;
  /** sandbox: completed automatically this long after creation; null never */
  autoCompleteMs: number | null;
}

export type WalletCommand =
  | { t: 'wallet_withdraw'; userId: number; currency: CurrencyCode; amount: number; address: string; priority: Priority; nonce: string | null; rules: WithdrawRules }
  | { t: 'wallet_cancel_withdrawal'; userId: number; id: number }
  /** An operator (`by`) completes a pending withdrawal with its chain transaction id, or rejects it. */
  | { t: 'wallet_settle_withdrawal'; id: number; by: number; outcome: 'completed' | 'rejected'; txid: string | null }
  /** Sandbox: completes every pending withdrawal whose automatic completion is due. */
  | { t: 'wallet_complete_due' }
  /** An operator (`by`) credits a deposit sent to a deposit address; once per (currency, txid). */
  | { t: 'wallet_credit_deposit'; currency: CurrencyCode; address: string; amount: number; txid: string; by: number }
  /** An operator (`by`) loads deposit addresses into the pool. */
  | { t: 'wallet_add_addresses'; currency: CurrencyCode; addresses: string[]; by: number }
  /** A user takes a new deposit address from the pool (`fallback`: the sandbox's generated one when it is empty). */
  | { t: 'wallet_new_address'; userId: number; currency: CurrencyCode; fallback: string | null; max: number }
  | { t: 'address_book_add'; userId: number; currency: CurrencyCode; type: AddressBookType; address: string; label: string; info: BeneficiaryInfo; max: number; waitMs: number }
  | { t: 'address_book_update'; userId: number; currency: CurrencyCode; type: AddressBookType; address: string; label: string; info: BeneficiaryInfo }
  | { t: 'address_book_remove'; userId: number; currency: CurrencyCode; type: AddressBookType; address: string };

export const WALLET_COMMANDS: ReadonlySet<string> = new Set([
  'wallet_withdraw',
  'wallet_cancel_withdrawal',
  'wallet_settle_withdrawal',
  'wallet_complete_due',
  'wallet_credit_deposit',
  'wallet_add_addresses',
  'wallet_new_address',
  'address_book_add',
  'address_book_update',
  'address_book_remove',
]);
