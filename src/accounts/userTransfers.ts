// Transfers to another user of the venue (private/submit_transfer_to_user, cancel_transfer_by_id),
// queued as Deribit queues them: a submitted transfer is `prepared` (the amount has left the sender
// and is held), then `confirmed` (it reaches the receiver) once its hold has passed, unless the
// sender cancelled it first (`cancelled`: the amount goes back). Every step is one journaled command
// (user_transfer, confirm_transfers, cancel_transfer), so a transfer is never half done, also across
// a crash; the held amounts count in the conservation sum (Exchange.conservation).
import { CURRENCY_CODES, type CurrencyCode } from '../domain/currency.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Command } from '../engine/commands.ts';
import { post } from '../engine/defaults.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { UserTransferRecord } from './types.ts';

/** User transfers kept (history and nonce memory): 1,000 to 2,000; a prepared one is never dropped. */
export const USER_TRANSFERS_KEPT = 1000;

type Cmd<T extends Command['t']> = Extract<Command, { t: T }>;

/** The user an address names: the owner of that deposit address, else the user of that email. */
function receiver(ex: Exchange, currency: CurrencyCode, address: string) {
  const owner = ex.wallet.addressOwner.get(`${currency}:${address}`);
  return owner !== undefined ? ex.users.get(owner.userId) : ex.usersByEmail.get(address.toLowerCase());
}

export class UserTransfers {
  /** by id, oldest first */
  readonly byId = new Map<number, UserTransferRecord>();
  /** held amounts per currency (the prepared transfers' sum) */
  readonly held = {} as Record<CurrencyCode, number>;

  constructor(private readonly ex: Exchange) {
    for (const c of CURRENCY_CODES) this.held[c] = 0;
  }

  submit(c: Cmd<'user_transfer'>): UserTransferRecord | Reject {
    const ex = this.ex;
    const from = ex.users.get(c.by);
    if (!from) return reject(ERR.UNAUTHORIZED);
    const subs = ex.subaccounts;
    if (subs.isSubaccount(from.id)) return reject(ERR.FORBIDDEN, 'main_account_only');
    // another user of the venue: by an address of the sender's address book of type `transfer`
    // (Deribit's rule), which names the receiver by one of its deposit addresses or its username (a
    // main account's email); a subaccount is reached through its main account, and an administrator
    // holds no money
    const to = receiver(ex, c.currency, c.destination);
    if (c.nonce !== null) {
      const prev = this.byNonce(from.id, c.nonce);
      // a retry gets the first answer (whatever its state now); the nonce for another transfer is refused
      if (prev !== undefined) {
        const same = prev.currency === c.currency && prev.amount === c.amount && prev.to === to?.id;
        return same ? prev : reject(ERR.INVALID_ARGUMENTS, 'nonce_already_used', 'nonce');
      }
    }
    if (c.book === true) {
      const entry = ex.wallet.book.get(from.id)?.find((e) => e.currency === c.currency && e.type === 'transfer' && e.address === c.destination);
      if (entry === undefined) return reject(ERR.FORBIDDEN, 'address_not_in_address_book', 'destination');
      if (ex.now < entry.readyAt) return reject(ERR.FORBIDDEN, 'address_book_waiting_period', 'destination');
    }
    if (to === undefined || subs.isSubaccount(to.id) || to.role !== 'user' || ex.disabledUsers.has(to.id)) return reject(ERR.NOT_FOUND, 'destination_not_found', 'destination');
    if (to.id === from.id) return reject(ERR.INVALID_ARGUMENTS, 'same_source_and_destination', 'destination');
    if (!(Number.isSafeInteger(c.amount) && c.amount > 0 && Number.isSafeInteger(to.accounts[c.currency].balance + c.amount))) return reject(ERR.INVALID_PARAMS, 'invalid_amount', 'amount');
    // the withdrawal's cash rules, on the sender
    const risk = ex.trading.risk;
    if (risk.hasNegativeBalance(from)) return reject(ERR.NOT_ENOUGH_FUNDS, 'negative_balance', 'currency');
    if (risk.inDistress(from)) return reject(ERR.NOT_ENOUGH_FUNDS, 'account_below_maintenance', 'currency');
    if (c.amount > risk.account(from, c.currency).availableWithdrawal) return reject(ERR.NOT_ENOUGH_FUNDS, 'transfer_exceeds_available', 'amount');
    post(ex, from, c.currency, -c.amount, 'transfer', null, to.id);
    const rec: UserTransferRecord = {
      id: subs.nextTransferId++,
      ts: ex.now,
      updated: ex.now,
      from: from.id,
      to: to.id,
      fromName: subs.username(from.id),
      toName: subs.username(to.id),
      currency: c.currency,
      amount: c.amount,
      nonce: c.nonce,
      state: 'prepared',
      due: ex.now + c.holdMs,
    };
    this.held[c.currency] += c.amount;
    this.byId.set(rec.id, rec);
    this.trim();
    // no hold: confirmed in the same command
    if (c.holdMs <= 0) this.confirm(rec);
    return rec;
  }

  /** Confirms every prepared transfer whose hold has passed, oldest first; returns how many. */
  confirmDue(): number {
    let n = 0;
    for (const r of this.byId.values()) {
      if (r.state === 'prepared' && r.due <= this.ex.now) {
        this.confirm(r);
        n++;
      }
    }
    return n;
  }

  /** The earliest time a prepared transfer is due (Infinity: none). */
  nextDue(): number {
    let due = Infinity;
    if (this.heldTotal() === 0) return due;
    for (const r of this.byId.values()) if (r.state === 'prepared' && r.due < due) due = r.due;
    return due;
  }

  /** The sender cancels one of its prepared transfers: the amount goes back to it. */
  cancel(c: Cmd<'cancel_transfer'>): UserTransferRecord | Reject {
    const r = this.byId.get(c.id);
    // another user's transfer, or one in another currency, is simply not found
    if (r === undefined || r.from !== c.by || r.currency !== c.currency) return reject(ERR.NOT_FOUND, 'transfer_not_found', 'id');
    if (r.state !== 'prepared') return reject(ERR.INVALID_ARGUMENTS, `transfer_${r.state}`, 'id');
    const from = this.ex.users.get(r.from)!;
    post(this.ex, from, r.currency, r.amount, 'transfer', null, r.to);
    this.held[r.currency] -= r.amount;
    r.state = 'cancelled';
    r.updated = this.ex.now;
    return r;
  }

  /** Transfers the user sent or received in one currency, newest first. */
  of(userId: number, currency: CurrencyCode): UserTransferRecord[] {
    const out: UserTransferRecord[] = [];
    for (const r of this.byId.values()) if (r.currency === currency && (r.from === userId || r.to === userId)) out.push(r);
    return out.reverse();
  }

  heldTotal(): number {
    let n = 0;
    for (const c of CURRENCY_CODES) n += this.held[c];
    return n;
  }

  isEmpty(): boolean {
    return this.byId.size === 0;
  }

  toJson(): unknown {
    return [...this.byId.values()];
  }

  restore(j: unknown): void {
    if (!Array.isArray(j)) return;
    for (const r of j as UserTransferRecord[]) {
      this.byId.set(r.id, r);
      if (r.state === 'prepared') this.held[r.currency] += r.amount;
    }
  }

  private confirm(r: UserTransferRecord): void {
    const ex = this.ex;
    const to = ex.users.get(r.to);
    this.held[r.currency] -= r.amount;
    r.updated = ex.now;
    if (to === undefined) {
      // the receiver is gone (never a main account today): the money goes back
      post(ex, ex.users.get(r.from)!, r.currency, r.amount, 'transfer', null, r.to);
      r.state = 'cancelled';
      return;
    }
    post(ex, to, r.currency, r.amount, 'transfer', null, r.from);
    r.state = 'confirmed';
  }

  private byNonce(by: number, nonce: string): UserTransferRecord | undefined {
    const list = [...this.byId.values()];
    for (let i = list.length - 1; i >= 0; i--) if (list[i]!.from === by && list[i]!.nonce === nonce) return list[i];
    return undefined;
  }

  /** Drops the oldest settled transfers beyond 2 x USER_TRANSFERS_KEPT, down to USER_TRANSFERS_KEPT. */
  private trim(): void {
    if (this.byId.size <= 2 * USER_TRANSFERS_KEPT) return;
    let excess = this.byId.size - USER_TRANSFERS_KEPT;
    for (const [id, r] of this.byId) {
      if (excess === 0) break;
      if (r.state === 'prepared') continue;
      this.byId.delete(id);
      excess--;
    }
  }
}
