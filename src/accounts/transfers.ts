// Transfers between the accounts of one main account (private/submit_transfer_to_subaccount,
// private/submit_transfer_between_subaccounts): one command moves an exact integer amount from one
// account to the other, logged in both accounts' transaction logs, so it applies whole or not at all
// and replay reproduces it. The sender must pass the cash rules of a withdrawal
// (src/engine/depositWithdraw.ts): what it sends is money leaving its account.
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Command } from '../engine/commands.ts';
import { post } from '../engine/defaults.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { TransferRecord } from './types.ts';

type TransferCmd = Extract<Command, { t: 'transfer' }>;

/**
 * Who may move what: the main account moves money between any two accounts of its family; a
 * subaccount sends only its own money, and only to its main account (it may not act on a sibling).
 */
function authority(ex: Exchange, c: TransferCmd): Reject | null {
  const subs = ex.subaccounts;
  const main = subs.mainOf(c.by);
  for (const id of [c.from, c.to]) {
    // an account of another family is simply not found (its existence is not revealed)
    if (!ex.users.has(id) || subs.mainOf(id) !== main) return reject(ERR.NOT_FOUND, 'subaccount_not_found', id === c.from ? 'source' : 'destination');
  }
  if (c.from === c.to) return reject(ERR.INVALID_ARGUMENTS, 'same_source_and_destination', 'destination');
  if (c.by === main) return null;
  if (c.from !== c.by) return reject(ERR.FORBIDDEN, 'subaccount_may_send_only_its_own_funds', 'source');
  if (c.to !== main) return reject(ERR.FORBIDDEN, 'subaccount_may_send_only_to_its_main_account', 'destination');
  return null;
}

/** A transfer already made under this nonce by this account, if any (the newest kept). */
function byNonce(ex: Exchange, mainId: number, by: number, nonce: string): TransferRecord | undefined {
  const list = ex.subaccounts.transfers.get(mainId);
  if (list === undefined) return undefined;
  for (let i = list.length - 1; i >= 0; i--) if (list[i]!.by === by && list[i]!.nonce === nonce) return list[i];
  return undefined;
}

export function applyTransfer(ex: Exchange, c: TransferCmd): TransferRecord | Reject {
  if (!ex.users.has(c.by)) return reject(ERR.UNAUTHORIZED);
  const mainId = ex.subaccounts.mainOf(c.by);
  if (c.nonce !== null) {
    const prev = byNonce(ex, mainId, c.by, c.nonce);
    // a retry gets the first answer; the same nonce for another transfer is refused, never applied
    if (prev !== undefined) {
      const same = prev.from === c.from && prev.to === c.to && prev.currency === c.currency && prev.amount === c.amount;
      return same ? prev : reject(ERR.INVALID_ARGUMENTS, 'nonce_already_used', 'nonce');
    }
  }
  const denied = authority(ex, c);
  if (denied !== null) return denied;
  const from = ex.users.get(c.from)!;
  const to = ex.users.get(c.to)!;
  if (!(Number.isSafeInteger(c.amount) && c.amount > 0 && Number.isSafeInteger(to.accounts[c.currency].balance + c.amount))) {
    return reject(ERR.INVALID_PARAMS, 'invalid_amount', 'amount');
  }
  // the withdrawal's cash rules, on the sender (docs/api-notes.md)
  const risk = ex.trading.risk;
  if (risk.hasNegativeBalance(from)) return reject(ERR.NOT_ENOUGH_FUNDS, 'negative_balance', 'currency');
  if (risk.inDistress(from)) return reject(ERR.NOT_ENOUGH_FUNDS, 'account_below_maintenance', 'currency');
  if (c.amount > risk.account(from, c.currency).availableWithdrawal) return reject(ERR.NOT_ENOUGH_FUNDS, 'transfer_exceeds_available', 'amount');
  post(ex, from, c.currency, -c.amount, 'transfer', null, to.id);
  post(ex, to, c.currency, c.amount, 'transfer', null, from.id);
  const rec: TransferRecord = {
    id: ex.subaccounts.nextTransferId++,
    ts: ex.now,
    from: from.id,
    to: to.id,
    fromName: ex.subaccounts.username(from.id),
    toName: ex.subaccounts.username(to.id),
    by: c.by,
    currency: c.currency,
    amount: c.amount,
    nonce: c.nonce,
  };
  ex.subaccounts.record(mainId, rec);
  return rec;
}
