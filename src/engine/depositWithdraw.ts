// Money in and out of the venue by direct command: `deposit` (idempotent on a client deposit_id) and
// `withdraw` (under the cash rules). The wallet's deposits and withdrawals are src/wallet/.
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Command } from './commands.ts';
import { post } from './defaults.ts';
import type { Exchange } from './exchange.ts';
import type { DepositRecord, User } from './types.ts';
import type { CurrencyCode } from '../domain/currency.ts';
import { recordSandboxDeposit } from '../wallet/apply.ts';

/**
 * Credits money that came into the venue to a user: the one place a deposit's amount is checked and
 * booked, for the direct `deposit` command and for the wallet's credited on-chain deposits
 * (src/wallet/apply.ts). Money is a positive safe integer of minor units, and neither the balance
 * nor the venue's deposit total may leave the safe integers; anything else is refused and nothing
 * moves. Returns null once credited.
 */
export function bookDeposit(ex: Exchange, user: User, currency: CurrencyCode, amount: number): Reject | null {
  const acct = user.accounts[currency];
  if (!(Number.isSafeInteger(amount) && amount > 0 && Number.isSafeInteger(acct.balance + amount) && Number.isSafeInteger(ex.deposits[currency] + amount))) {
    return reject(ERR.INVALID_PARAMS, 'invalid_amount', 'amount');
  }
  post(ex, user, currency, amount, 'deposit', null, null);
  acct.deposited += amount;
  ex.deposits[currency] += amount;
  return null;
}

export function deposit(ex: Exchange, c: Extract<Command, { t: 'deposit' }>): DepositRecord | Reject {
  const user = ex.users.get(c.userId);
  if (!user) return reject(ERR.NOT_FOUND, 'user_not_found', 'user_id');
  if (c.depositId !== null) {
    const prev = user.depositIds.get(c.depositId);
    if (prev) return prev;
  }
  const refused = bookDeposit(ex, user, c.currency, c.amount);
  if (refused !== null) return refused;
  const acct = user.accounts[c.currency];
  const rec: DepositRecord = {
    depositId: c.depositId ?? `d${ex.seq}`,
    userId: user.id,
    currency: c.currency,
    amount: c.amount,
    balance: acct.balance,
    timestamp: ex.now,
  };
  // only client keys go into the idempotency map: a generated id ("d<seq>") stored there would
  // swallow a later client deposit that happens to use the same text as its deposit_id
  if (c.depositId !== null) user.depositIds.set(rec.depositId, rec);
  recordSandboxDeposit(ex, rec);
  return rec;
}

export function withdraw(ex: Exchange, c: Extract<Command, { t: 'withdraw' }>): { balance: number; amount: number } | Reject {
  const user = ex.users.get(c.userId);
  if (!user) return reject(ERR.NOT_FOUND, 'user_not_found');
  if (!(Number.isSafeInteger(c.amount) && c.amount > 0)) return reject(ERR.INVALID_PARAMS, 'invalid_amount', 'amount');
  // a subaccount's money leaves the venue through its main account (src/accounts/transfers.ts)
  if (ex.subaccounts.isSubaccount(user.id)) return reject(ERR.FORBIDDEN, 'main_account_only');
  // the cash rules (docs/api-notes.md): what is left covers the cash promised to open buys and the
  // initial margin, and no account of the user is below zero or below maintenance margin
  // (risk.account applies them all; the reasons name the last two)
  if (ex.trading.risk.hasNegativeBalance(user)) return reject(ERR.NOT_ENOUGH_FUNDS, 'negative_balance', 'currency');
  if (ex.trading.risk.inDistress(user)) return reject(ERR.NOT_ENOUGH_FUNDS, 'account_below_maintenance', 'currency');
  const risk = ex.trading.risk.account(user, c.currency);
  if (c.amount > risk.availableWithdrawal) return reject(ERR.NOT_ENOUGH_FUNDS, 'withdrawal_exceeds_available', 'amount');
  const acct = user.accounts[c.currency];
  post(ex, user, c.currency, -c.amount, 'withdrawal', null, null);
  acct.withdrawn += c.amount;
  ex.withdrawals[c.currency] += c.amount;
  return { balance: acct.balance, amount: c.amount };
}
