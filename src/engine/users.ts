// A user record as the engine creates it: one shape for accounts that sign up (create_user) and for
// subaccounts (src/accounts/subaccounts.ts), so both are users of their own for trading and margin.
import { CURRENCY_CODES, type CurrencyCode } from '../domain/currency.ts';
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
