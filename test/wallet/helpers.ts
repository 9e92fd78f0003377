// Engine-level helpers for the wallet tests: wallet commands through Harness.
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import type { CurrencyCode } from '../../src/domain/currency.ts';
import type { User } from '../../src/engine/types.ts';
import type { Harness } from '../helpers/engine.ts';
import type { AddressBookEntry, BeneficiaryInfo, WithdrawRules, WithdrawalRecord } from '../../src/wallet/types.ts';

export const INFO: BeneficiaryInfo = {
  beneficiary_vasp_name: 'Vasp',
  beneficiary_vasp_did: 'did:x',
  beneficiary_vasp_website: '',
  beneficiary_first_name: 'Ada',
  beneficiary_last_name: 'L',
  beneficiary_company_name: '',
  beneficiary_address: 'Street 1',
  agreed: true,
  personal: true,
};

export const RULES: WithdrawRules = { bookOnly: true, maxPending: 10, autoCompleteMs: null };

export function admin(h: Harness): number {
  const u = h.apply({ t: 'create_user', email: `admin${h.seq}@test.io`, passwordHash: 'x', role: 'admin', inviteCode: null, by: null }) as User;
  assert.ok(!isReject(u));
  return u.id;
}

/** Adds a withdrawal address to the user's book, ready at once unless `waitMs`. */
export function book(h: Harness, userId: number, address: string, waitMs = 0, currency: CurrencyCode = 'BTC'): AddressBookEntry {
  const r = h.apply({ t: 'address_book_add', userId, currency, type: 'withdrawal', address, label: 'mine', info: INFO, max: 100, waitMs });
  if (isReject(r)) throw new Error(`address_book_add refused: ${r.reason}`);
  return r as AddressBookEntry;
}

export function withdraw(h: Harness, userId: number, amount: number, address = 'bc1-dest', rules: Partial<WithdrawRules> = {}, nonce: string | null = null, currency: CurrencyCode = 'BTC') {
  return h.apply({ t: 'wallet_withdraw', userId, currency, amount, address, priority: 'high', nonce, rules: { ...RULES, ...rules } }) as WithdrawalRecord | import('../../src/domain/errors.ts').Reject;
}

export function ok<T>(r: T | import('../../src/domain/errors.ts').Reject): T {
  if (isReject(r)) throw new Error(`refused: ${r.code} ${r.reason}`);
  return r;
}

/** Conservation with pending withdrawals: deposits - completed withdrawals = balances + fees + insurance + pending. */
export function conserved(h: Harness): void {
  for (const [c, v] of Object.entries(h.ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
}
