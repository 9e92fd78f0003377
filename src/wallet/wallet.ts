// The wallet's state (issue 32): withdrawals (pending ones hold their money out of the balance),
// deposit records with their idempotency keys, the deposit-address pool and each user's addresses,
// and the address book. Every change is a journaled command (src/wallet/types.ts WalletCommand)
// applied by the single writer (src/wallet/apply.ts); the state is snapshotted and hashed, and
// absent from the snapshot while empty, so a state without a wallet hashes as before.
import { CURRENCY_CODES, type CurrencyCode } from '../domain/currency.ts';
import type { AddressBookEntry, DepositAddress, WalletDeposit, WithdrawalRecord } from './types.ts';

/** Finished withdrawals and deposits kept per user (history); older ones leave memory and snapshots. */
export const WALLET_HISTORY_KEPT = 1000;
/** Deposit addresses a user may hold per currency (each create_deposit_address takes one). */
export const DEFAULT_MAX_DEPOSIT_ADDRESSES = 10;
/** Addresses one operator call may load, and the pool's size per currency. */
export const MAX_ADDRESSES_PER_CALL = 1000;
export const MAX_POOL_PER_CURRENCY = 100_000;

const isPending = (w: WithdrawalRecord): boolean => w.state === 'unconfirmed' || w.state === 'confirmed';
export { isPending };

export class Wallet {
  /** every kept withdrawal by id (pending ones are never trimmed) */
  readonly withdrawals = new Map<number, WithdrawalRecord>();
  /** kept withdrawal ids per user, oldest first */
  readonly withdrawalsByUser = new Map<number, number[]>();
  nextWithdrawalId = 1;
  /** money of pending withdrawals per currency: out of the balances, not yet out of the venue */
  readonly pending = {} as Record<CurrencyCode, number>;
  /** deposits per user, oldest first (bounded) */
  readonly deposits = new Map<number, WalletDeposit[]>();
  /** credited deposit keys `currency:txid` -> owner: a deposit id credits once, forever */
  readonly depositKeys = new Map<string, number>();
  /** unused deposit addresses per currency, in load order */
  readonly pool = {} as Record<CurrencyCode, string[]>;
  /** every address ever loaded or handed out, `currency:address` (no address is handed out twice) */
  readonly knownAddresses = new Set<string>();
  /** handed-out addresses: `currency:address` -> its record */
  readonly addressOwner = new Map<string, DepositAddress>();
  /** each user's deposit addresses per currency, oldest first (the last is the current one) */
  readonly userAddresses = new Map<number, DepositAddress[]>();
  /** each user's address book, in insertion order */
  readonly book = new Map<number, AddressBookEntry[]>();

  constructor() {
    for (const c of CURRENCY_CODES) {
      this.pending[c] = 0;
      this.pool[c] = [];
    }
  }

  pendingCount(userId: number): number {
    let n = 0;
    for (const id of this.withdrawalsByUser.get(userId) ?? []) if (isPending(this.withdrawals.get(id)!)) n++;
    return n;
  }

  /** The earliest automatic completion due among pending withdrawals (Infinity: none). */
  nextAutoComplete(): number {
    let next = Infinity;
    for (const w of this.withdrawals.values()) if (w.autoAt !== null && isPending(w) && w.autoAt < next) next = w.autoAt;
    return next;
  }

  addWithdrawal(w: WithdrawalRecord): void {
    this.withdrawals.set(w.id, w);
    let ids = this.withdrawalsByUser.get(w.userId);
    if (ids === undefined) this.withdrawalsByUser.set(w.userId, (ids = []));
    ids.push(w.id);
    // trim finished ones past the bound (in steps: amortised O(1)); pending ones always stay
    if (ids.length > 2 * WALLET_HISTORY_KEPT) {
      const keep: number[] = [];
      let drop = ids.length - WALLET_HISTORY_KEPT;
      for (const id of ids) {
        const r = this.withdrawals.get(id)!;
        if (drop > 0 && !isPending(r)) {
          this.withdrawals.delete(id);
          drop--;
        } else keep.push(id);
      }
      this.withdrawalsByUser.set(w.userId, keep);
    }
  }

  addDeposit(d: WalletDeposit): void {
    let list = this.deposits.get(d.userId);
    if (list === undefined) this.deposits.set(d.userId, (list = []));
    list.push(d);
    if (list.length > 2 * WALLET_HISTORY_KEPT) list.splice(0, list.length - WALLET_HISTORY_KEPT);
  }

  /** A user's withdrawals in one currency, newest first. */
  withdrawalsOf(userId: number, currency: CurrencyCode): WithdrawalRecord[] {
    const out: WithdrawalRecord[] = [];
    const ids = this.withdrawalsByUser.get(userId) ?? [];
    for (let i = ids.length - 1; i >= 0; i--) {
      const w = this.withdrawals.get(ids[i]!)!;
      if (w.currency === currency) out.push(w);
    }
    return out;
  }

  /** A user's deposits in one currency, newest first. */
  depositsOf(userId: number, currency: CurrencyCode): WalletDeposit[] {
    const list = this.deposits.get(userId) ?? [];
    const out: WalletDeposit[] = [];
    for (let i = list.length - 1; i >= 0; i--) if (list[i]!.currency === currency) out.push(list[i]!);
    return out;
  }

  currentAddress(userId: number, currency: CurrencyCode): DepositAddress | null {
    const list = this.userAddresses.get(userId) ?? [];
    for (let i = list.length - 1; i >= 0; i--) if (list[i]!.currency === currency) return list[i]!;
    return null;
  }

  isEmpty(): boolean {
    return this.withdrawals.size === 0 && this.nextWithdrawalId === 1 && this.deposits.size === 0 && this.depositKeys.size === 0 && this.knownAddresses.size === 0 && this.book.size === 0;
  }

  toJson(): unknown {
    return {
      withdrawals: [...this.withdrawalsByUser].map(([u, ids]) => [u, ids.map((id) => this.withdrawals.get(id)!)]),
      next: this.nextWithdrawalId,
      pending: this.pending,
      deposits: [...this.deposits],
      depositKeys: [...this.depositKeys],
      pool: this.pool,
      known: [...this.knownAddresses],
      addresses: [...this.userAddresses],
      book: [...this.book],
    };
  }

  /** Restores from `toJson` output; snapshots from before the wallet have none (`j` undefined). */
  restore(j: unknown): void {
    if (j === undefined || j === null) return;
    const s = j as {
      withdrawals: [number, WithdrawalRecord[]][];
      next: number;
      pending: Record<CurrencyCode, number>;
      deposits: [number, WalletDeposit[]][];
      depositKeys: [string, number][];
      pool: Record<CurrencyCode, string[]>;
      known: string[];
      addresses: [number, DepositAddress[]][];
      book: [number, AddressBookEntry[]][];
    };
    for (const [u, list] of s.withdrawals) {
      this.withdrawalsByUser.set(u, list.map((w) => w.id));
      for (const w of list) this.withdrawals.set(w.id, w);
    }
    this.nextWithdrawalId = s.next;
    for (const c of CURRENCY_CODES) {
      this.pending[c] = s.pending[c] ?? 0;
      this.pool[c] = s.pool[c] ?? [];
    }
    for (const [u, list] of s.deposits) this.deposits.set(u, list);
    for (const [k, u] of s.depositKeys) this.depositKeys.set(k, u);
    for (const a of s.known) this.knownAddresses.add(a);
    for (const [u, list] of s.addresses) {
      this.userAddresses.set(u, list);
      for (const a of list) this.addressOwner.set(`${a.currency}:${a.address}`, a);
    }
    for (const [u, list] of s.book) this.book.set(u, list);
  }
}

/** Whether a sandbox withdrawal's automatic completion is due at `now` (the market timer asks each second). */
export function walletDue(ex: { wallet: Wallet }, now: number): boolean {
  const w = ex.wallet;
  let any = false;
  for (const c of CURRENCY_CODES) if (w.pending[c] > 0) any = true;
  return any && w.nextAutoComplete() <= now;
}
