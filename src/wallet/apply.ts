// The wallet's commands applied by the single writer (issue 32). Deterministic: time is the
// command's (Exchange.now), ids come from counters in the state, every setting a decision depends on
// travels in the command. Each command changes the state whole or not at all.
//
// Money: a withdrawal takes its amount out of the balance when it is created (a `withdrawal` entry
// in the log) and holds it in `Wallet.pending`, so it can be spent once only: a transfer or an order
// of the same cash after it finds it gone. Cancelled or rejected, the amount goes back (a positive
// `withdrawal` entry); completed, it leaves the venue (Exchange.withdrawals). Conservation:
// deposits - completed withdrawals = balances + fees + insurance + pending withdrawals.
import { ERR, reject, type Reject } from '../domain/errors.ts';
import { post } from '../engine/defaults.ts';
import { bookDeposit } from '../engine/depositWithdraw.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { DepositRecord } from '../engine/types.ts';
import type { AddressBookEntry, DepositAddress, WalletCommand, WalletDeposit, WithdrawalRecord } from './types.ts';
import { MAX_POOL_PER_CURRENCY, isPending } from './wallet.ts';
import type { CurrencyCode } from '../domain/currency.ts';

type Cmd<T extends WalletCommand['t']> = Extract<WalletCommand, { t: T }>;

export function applyWallet(ex: Exchange, c: WalletCommand): unknown {
  switch (c.t) {
    case 'wallet_withdraw':
      return withdraw(ex, c);
    case 'wallet_cancel_withdrawal':
      return cancelWithdrawal(ex, c);
    case 'wallet_settle_withdrawal':
      return settleWithdrawal(ex, c);
    case 'wallet_complete_due':
      return completeDue(ex);
    case 'wallet_credit_deposit':
      return creditDeposit(ex, c);
    case 'wallet_add_addresses':
      return addAddresses(ex, c);
    case 'wallet_new_address':
      return newAddress(ex, c);
    case 'address_book_add':
      return bookAdd(ex, c);
    case 'address_book_update':
      return bookUpdate(ex, c);
    case 'address_book_remove':
      return bookRemove(ex, c);
  }
}

// ---- withdrawals --------------------------------------------------------------------------------

function byNonce(ex: Exchange, userId: number, nonce: string): WithdrawalRecord | undefined {
  const ids = ex.wallet.withdrawalsByUser.get(userId) ?? [];
  for (let i = ids.length - 1; i >= 0; i--) {
    const w = ex.wallet.withdrawals.get(ids[i]!)!;
    if (w.nonce === nonce) return w;
  }
  return undefined;
}

function withdraw(ex: Exchange, c: Cmd<'wallet_withdraw'>): WithdrawalRecord | Reject {
  const user = ex.users.get(c.userId);
  if (!user) return reject(ERR.UNAUTHORIZED);
  // a subaccount's money leaves the venue through its main account (Deribit: mainaccount only)
  if (ex.subaccounts.isSubaccount(user.id)) return reject(ERR.FORBIDDEN, 'main_account_only');
  if (c.nonce !== null) {
    const prev = byNonce(ex, user.id, c.nonce);
    if (prev !== undefined) {
      const same = prev.currency === c.currency && prev.amount === c.amount && prev.address === c.address;
      return same ? prev : reject(ERR.INVALID_ARGUMENTS, 'nonce_already_used', 'nonce');
    }
  }
  if (!(Number.isSafeInteger(c.amount) && c.amount > 0)) return reject(ERR.INVALID_PARAMS, 'invalid_amount', 'amount');
  if (c.rules.bookOnly) {
    const e = findEntry(ex, user.id, c.currency, 'withdrawal', c.address);
    if (e === undefined) return reject(ERR.FORBIDDEN, 'address_not_in_address_book', 'address');
    if (ex.now < e.readyAt) return reject(ERR.FORBIDDEN, 'address_book_waiting_period', 'address');
  }
  if (ex.wallet.pendingCount(user.id) >= c.rules.maxPending) return reject(ERR.FORBIDDEN, 'too_many_pending_withdrawals');
  // the cash rules of every money leaving an account (docs/api-notes.md)
  const risk = ex.trading.risk;
  if (risk.hasNegativeBalance(user)) return reject(ERR.NOT_ENOUGH_FUNDS, 'negative_balance', 'currency');
  if (risk.inDistress(user)) return reject(ERR.NOT_ENOUGH_FUNDS, 'account_below_maintenance', 'currency');
  if (c.amount > risk.account(user, c.currency).availableWithdrawal) return reject(ERR.NOT_ENOUGH_FUNDS, 'withdrawal_exceeds_available', 'amount');
  post(ex, user, c.currency, -c.amount, 'withdrawal', null, null);
  ex.wallet.pending[c.currency] += c.amount;
  const w: WithdrawalRecord = {
    id: ex.wallet.nextWithdrawalId++,
    userId: user.id,
    currency: c.currency,
    amount: c.amount,
    address: c.address,
    priority: c.priority,
    state: 'confirmed',
    created: ex.now,
    updated: ex.now,
    confirmed: ex.now,
    txid: null,
    nonce: c.nonce,
    autoAt: c.rules.autoCompleteMs === null ? null : ex.now + c.rules.autoCompleteMs,
  };
  ex.wallet.addWithdrawal(w);
  return w;
}

/** Gives a pending withdrawal's money back to its owner and ends it in `state`. */
function release(ex: Exchange, w: WithdrawalRecord, state: 'cancelled' | 'rejected'): void {
  const user = ex.users.get(w.userId)!;
  post(ex, user, w.currency, w.amount, 'withdrawal', null, null);
  ex.wallet.pending[w.currency] -= w.amount;
  w.state = state;
  w.updated = ex.now;
}

function complete(ex: Exchange, w: WithdrawalRecord, txid: string): void {
  const user = ex.users.get(w.userId)!;
  ex.wallet.pending[w.currency] -= w.amount;
  ex.withdrawals[w.currency] += w.amount;
  user.accounts[w.currency].withdrawn += w.amount;
  w.state = 'completed';
  w.txid = txid;
  w.updated = ex.now;
}

function cancelWithdrawal(ex: Exchange, c: Cmd<'wallet_cancel_withdrawal'>): WithdrawalRecord | Reject {
  const w = ex.wallet.withdrawals.get(c.id);
  // another user's withdrawal is simply not found
  if (w === undefined || w.userId !== c.userId) return reject(ERR.NOT_FOUND, 'withdrawal_not_found', 'id');
  if (!isPending(w)) return reject(ERR.FORBIDDEN, `withdrawal_${w.state}`, 'id');
  release(ex, w, 'cancelled');
  return w;
}

function settleWithdrawal(ex: Exchange, c: Cmd<'wallet_settle_withdrawal'>): WithdrawalRecord | Reject {
  if (ex.users.get(c.by)?.role !== 'admin') return reject(ERR.FORBIDDEN, 'admin_required');
  const w = ex.wallet.withdrawals.get(c.id);
  if (w === undefined) return reject(ERR.NOT_FOUND, 'withdrawal_not_found', 'id');
  if (!isPending(w)) return reject(ERR.FORBIDDEN, `withdrawal_${w.state}`, 'id');
  if (c.outcome === 'rejected') release(ex, w, 'rejected');
  else complete(ex, w, c.txid ?? '');
  return w;
}

function completeDue(ex: Exchange): WithdrawalRecord[] {
  const done: WithdrawalRecord[] = [];
  for (const w of ex.wallet.withdrawals.values()) {
    if (w.autoAt !== null && w.autoAt <= ex.now && isPending(w)) {
      complete(ex, w, `sandbox-${w.id}`);
      done.push(w);
    }
  }
  return done;
}

// ---- deposits and deposit addresses -------------------------------------------------------------

/** The sandbox's self-service deposits (src/engine/depositWithdraw.ts) are listed by get_deposits too. */
export function recordSandboxDeposit(ex: Exchange, d: DepositRecord): void {
  ex.wallet.addDeposit({ currency: d.currency, userId: d.userId, address: '', amount: d.amount, state: 'completed', txid: d.depositId, received: d.timestamp, updated: d.timestamp });
}

function creditDeposit(ex: Exchange, c: Cmd<'wallet_credit_deposit'>): WalletDeposit | Reject {
  if (ex.users.get(c.by)?.role !== 'admin') return reject(ERR.FORBIDDEN, 'admin_required');
  const key = `${c.currency}:${c.txid}`;
  const owner = ex.wallet.depositKeys.get(key);
  if (owner !== undefined) {
    // credited already: the first record answers, nothing moves again
    const prev = ex.wallet.deposits.get(owner)?.find((d) => d.currency === c.currency && d.txid === c.txid);
    if (prev !== undefined && prev.address === c.address && prev.amount === c.amount) return prev;
    return reject(ERR.INVALID_ARGUMENTS, 'deposit_already_credited', 'transaction_id');
  }
  const addr = ex.wallet.addressOwner.get(`${c.currency}:${c.address}`);
  if (addr === undefined) return reject(ERR.NOT_FOUND, 'deposit_address_unknown', 'address');
  const user = ex.users.get(addr.userId);
  if (!user) return reject(ERR.NOT_FOUND, 'deposit_address_owner_gone', 'address');
  const refused = bookDeposit(ex, user, c.currency, c.amount);
  if (refused !== null) return refused;
  const d: WalletDeposit = { currency: c.currency, userId: user.id, address: c.address, amount: c.amount, state: 'completed', txid: c.txid, received: ex.now, updated: ex.now };
  ex.wallet.depositKeys.set(key, user.id);
  ex.wallet.addDeposit(d);
  return d;
}

function addAddresses(ex: Exchange, c: Cmd<'wallet_add_addresses'>): { added: number; pool: number } | Reject {
  if (ex.users.get(c.by)?.role !== 'admin') return reject(ERR.FORBIDDEN, 'admin_required');
  const pool = ex.wallet.pool[c.currency];
  const fresh: string[] = [];
  const seen = new Set<string>();
  for (const a of c.addresses) {
    const k = `${c.currency}:${a}`;
    if (!ex.wallet.knownAddresses.has(k) && !seen.has(k)) {
      seen.add(k);
      fresh.push(a);
    }
  }
  if (pool.length + fresh.length > MAX_POOL_PER_CURRENCY) return reject(ERR.INVALID_ARGUMENTS, 'address_pool_full', 'addresses');
  for (const a of fresh) {
    pool.push(a);
    ex.wallet.knownAddresses.add(`${c.currency}:${a}`);
  }
  return { added: fresh.length, pool: pool.length };
}

function newAddress(ex: Exchange, c: Cmd<'wallet_new_address'>): DepositAddress | Reject {
  if (!ex.users.has(c.userId)) return reject(ERR.UNAUTHORIZED);
  const list = ex.wallet.userAddresses.get(c.userId) ?? [];
  if (list.filter((a) => a.currency === c.currency).length >= c.max) return reject(ERR.FORBIDDEN, 'deposit_address_limit_reached', 'currency');
  const pool = ex.wallet.pool[c.currency];
  let address = pool.shift();
  if (address === undefined) {
    // the sandbox's generated address (production passes none): used only when it is new
    if (c.fallback === null || ex.wallet.knownAddresses.has(`${c.currency}:${c.fallback}`)) return reject(ERR.OTHER_REJECT, 'deposit_address_pool_empty', 'currency');
    address = c.fallback;
    ex.wallet.knownAddresses.add(`${c.currency}:${address}`);
  }
  const a: DepositAddress = { currency: c.currency, address, userId: c.userId, created: ex.now };
  list.push(a);
  ex.wallet.userAddresses.set(c.userId, list);
  ex.wallet.addressOwner.set(`${c.currency}:${address}`, a);
  return a;
}

// ---- address book -------------------------------------------------------------------------------

function findEntry(ex: Exchange, userId: number, currency: CurrencyCode, type: string, address: string): AddressBookEntry | undefined {
  return ex.wallet.book.get(userId)?.find((e) => e.currency === currency && e.type === type && e.address === address);
}

function bookAdd(ex: Exchange, c: Cmd<'address_book_add'>): AddressBookEntry | Reject {
  if (!ex.users.has(c.userId)) return reject(ERR.UNAUTHORIZED);
  if (findEntry(ex, c.userId, c.currency, c.type, c.address) !== undefined) return reject(ERR.INVALID_ARGUMENTS, 'address_already_in_address_book', 'address');
  const list = ex.wallet.book.get(c.userId) ?? [];
  if (list.length >= c.max) return reject(ERR.FORBIDDEN, 'address_book_full');
  const e: AddressBookEntry = { currency: c.currency, type: c.type, address: c.address, label: c.label, info: c.info, created: ex.now, readyAt: ex.now + c.waitMs };
  list.push(e);
  ex.wallet.book.set(c.userId, list);
  return e;
}

function bookUpdate(ex: Exchange, c: Cmd<'address_book_update'>): AddressBookEntry | Reject {
  const e = findEntry(ex, c.userId, c.currency, c.type, c.address);
  if (e === undefined) return reject(ERR.NOT_FOUND, 'address_not_in_address_book', 'address');
  // the address is the entry's key: its label and beneficiary may change, its waiting period stays
  e.label = c.label;
  e.info = c.info;
  return e;
}

function bookRemove(ex: Exchange, c: Cmd<'address_book_remove'>): AddressBookEntry | Reject {
  const list = ex.wallet.book.get(c.userId);
  const i = list?.findIndex((e) => e.currency === c.currency && e.type === c.type && e.address === c.address) ?? -1;
  if (list === undefined || i < 0) return reject(ERR.NOT_FOUND, 'address_not_in_address_book', 'address');
  const [e] = list.splice(i, 1);
  if (list.length === 0) ex.wallet.book.delete(c.userId);
  return e!;
}
