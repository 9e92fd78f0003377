// The one rule that books money coming into the venue (bookDeposit, src/engine/depositWithdraw.ts),
// held through both of its doors: the direct `deposit` command and an operator's credit of an
// on-chain deposit (`wallet_credit_deposit`). A trader who finds one door looser than the other
// mints money, so every bad amount is tried at both, and the good one must move the same figures.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ERR } from '../../src/domain/errors.ts';
import { Harness, code } from '../helpers/engine.ts';
import { admin, conserved } from './helpers.ts';

/** A harness with a user holding `start` BTC minor units and a deposit address `addr`. */
function setup(start: number) {
  const h = new Harness();
  const op = admin(h);
  const u = h.user('0');
  if (start > 0) h.deposit(u, 'BTC', start, 'seed');
  h.apply({ t: 'wallet_new_address', userId: u, currency: 'BTC', fallback: 'addr', max: 10 });
  return { h, op, u };
}

const doors = {
  deposit: (s: ReturnType<typeof setup>, amount: number) => s.h.deposit(s.u, 'BTC', amount),
  credit: (s: ReturnType<typeof setup>, amount: number) => s.h.apply({ t: 'wallet_credit_deposit', currency: 'BTC', address: 'addr', amount, txid: `tx-${amount}`, by: s.op }),
};

describe('booking a deposit (both doors)', () => {
  for (const [door, apply] of Object.entries(doors)) {
    it(`${door}: refuses every amount that is not a positive safe integer, or that would take the balance or the venue's total past one, and moves nothing`, () => {
      const near = Number.MAX_SAFE_INTEGER - 10;
      for (const [start, amount] of [[5, 0], [5, -1], [5, 0.5], [5, Number.NaN], [5, Number.POSITIVE_INFINITY], [5, 2 ** 53], [near, 11]] as const) {
        const s = setup(start);
        const acct = s.h.ex.users.get(s.u)!.accounts.BTC;
        const log = s.h.ex.users.get(s.u)!.log;
        const held = { balance: acct.balance, deposited: acct.deposited, venue: s.h.ex.deposits.BTC, entries: log.length, listed: s.h.ex.wallet.depositsOf(s.u, 'BTC').length };
        assert.equal(code(apply(s, amount)), ERR.INVALID_PARAMS, `${door} of ${amount} on ${start}`);
        assert.deepEqual({ balance: acct.balance, deposited: acct.deposited, venue: s.h.ex.deposits.BTC, entries: log.length, listed: s.h.ex.wallet.depositsOf(s.u, 'BTC').length }, held);
        conserved(s.h);
      }
    });
  }

  it('books a good amount the same through either door: balance, deposited, the venue total and the ledger', () => {
    const moved = Object.entries(doors).map(([door, apply]) => {
      const s = setup(1_000);
      const acct = s.h.ex.users.get(s.u)!.accounts.BTC;
      const logBefore = s.h.ex.users.get(s.u)!.log.length;
      apply(s, 250);
      conserved(s.h);
      const log = s.h.ex.users.get(s.u)!.log;
      const entry = log.at(log.length - 1);
      assert.equal(s.h.ex.users.get(s.u)!.log.length, logBefore + 1, `${door} logs one entry`);
      return { balance: acct.balance, deposited: acct.deposited, venue: s.h.ex.deposits.BTC, type: entry.type, amount: entry.amount, after: entry.balance };
    });
    assert.deepEqual(moved[0], { balance: 1_250, deposited: 1_250, venue: 1_250, type: 'deposit', amount: 250, after: 1_250 });
    assert.deepEqual(moved[1], moved[0]);
  });
});
