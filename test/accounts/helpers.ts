// Engine-level helpers for the accounts tests: subaccounts and transfers through Harness commands.
import assert from 'node:assert/strict';
import { isReject, type Reject } from '../../src/domain/errors.ts';
import type { CurrencyCode } from '../../src/domain/currency.ts';
import type { TransferRecord } from '../../src/accounts/types.ts';
import type { User } from '../../src/engine/types.ts';
import type { Harness } from '../helpers/engine.ts';

export function sub(h: Harness, mainId: number, max = 20): number {
  const r = h.apply({ t: 'create_subaccount', mainId, max });
  if (isReject(r)) throw new Error(`create_subaccount refused: ${r.reason}`);
  return (r as User).id;
}

export function transfer(h: Harness, by: number, from: number, to: number, amount: number, currency: CurrencyCode = 'BTC', nonce: string | null = null): TransferRecord | Reject {
  return h.apply({ t: 'transfer', by, from, to, currency, amount, nonce }) as TransferRecord | Reject;
}

export function refused(r: unknown, code: number, reason: string): void {
  assert.ok(isReject(r), `expected a refusal (${reason}), got ${JSON.stringify(r)}`);
  assert.equal(r.code, code, JSON.stringify(r));
  assert.equal(r.reason, reason);
}

export function conserved(h: Harness): void {
  for (const [c, v] of Object.entries(h.ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
}
