// A user record as the engine creates it: one shape for accounts that sign up (create_user, applied
// here) and for subaccounts (src/accounts/subaccounts.ts), so both are users of their own for
// trading and margin.
import { CURRENCY_CODES, type CurrencyCode } from '../domain/currency.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Command } from './commands.ts';
import type { Exchange } from './exchange.ts';
import { Ledger } from './ledger.ts';
import type { Account, User } from './types.ts';

export function newAccount(currency: CurrencyCode): Account {
  return { currency, balance: 0, deposited: 0, withdrawn: 0, fees: 0 };
}

export function accountsRecord(): Record<CurrencyCode, Account> {
  const r = {} as Record<CurrencyCode, Account>;
  for (const c of CURRENCY_CODES) r[c] = newAccount(c);
  return r;
}

export function blankUser(id: number, email: string, role: 'admin' | 'user', passwordHash: string, created: number): User {
  return {
    id,
    email,
    role,
    passwordHash,
    created,
    accounts: accountsRecord(),
    positions: new Map(),
    exposures: new Map(),
    openOrderCount: 0,
    trades: [],
    orders: new Map(),
    clientOrderIds: new Map(),
    depositIds: new Map(),
    log: new Ledger(),
  };
}

export function createUser(ex: Exchange, c: Extract<Command, { t: 'create_user' }>): User | Reject {
  const key = c.email.toLowerCase();
  if (ex.usersByEmail.has(key)) return reject(ERR.INVALID_ARGUMENTS, 'email_taken', 'email');
  // the bootstrap path (no acting admin) works only while no administrator exists
  if (c.role === 'admin' && c.by === null && ex.hasAdmin()) return reject(ERR.FORBIDDEN, 'bootstrap_closed');
  if (c.by !== null && ex.users.get(c.by)?.role !== 'admin') return reject(ERR.FORBIDDEN, 'admin_required');
  if (c.inviteCode !== null) {
    const status = ex.auth.inviteStatus(c.inviteCode, ex.now);
    if (status !== 'ok') return reject(ERR.INVALID_ARGUMENTS, status === 'unknown' ? 'invite_code_invalid' : `invite_code_${status}`, 'invite_code');
    ex.auth.invites.get(c.inviteCode)!.uses++;
  }
  const user = blankUser(ex.nextUserId++, c.email, c.role, c.passwordHash, ex.now);
  ex.users.set(user.id, user);
  ex.usersByEmail.set(key, user);
  return user;
}
