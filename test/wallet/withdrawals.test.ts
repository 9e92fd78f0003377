// Withdrawals in the engine (src/wallet/): a pending withdrawal takes its amount out of the balance at
// once, so the same cash cannot also be transferred or put up for an order; cancel and reject give it
// back, completion sends it out; conservation counts pending withdrawals; the address book, its
// waiting period and the limits are enforced by the command; replay and snapshots reproduce all of it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ERR, isReject } from '../../src/domain/errors.ts';
import type { User } from '../../src/engine/types.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { Command } from '../../src/engine/commands.ts';
import { EXP_MAR, Harness, T0, code, sat, spec } from '../helpers/engine.ts';
import { INFO, admin, book, conserved, ok, withdraw } from './helpers.ts';
import type { WithdrawalRecord } from '../../src/wallet/types.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');
const HOUR = 3_600_000;

describe('withdrawals', () => {
  it('takes the amount out of the balance at once and holds it as pending, conserving money', () => {
    const h = Harness.market([CALL]);
    const u = h.user('2');
    book(h, u, 'bc1-dest');
    const w = ok(withdraw(h, u, sat('0.5')));
    assert.equal(w.state, 'confirmed');
    assert.equal(h.ex.users.get(u)!.accounts.BTC.balance, sat('1.5'));
    assert.equal(h.ex.wallet.pending.BTC, sat('0.5'));
    assert.equal(h.ex.withdrawals.BTC, 0, 'nothing left the venue yet');
    conserved(h);
  });

  it('cannot spend a pending withdrawal twice: a transfer and an order of the same cash are refused', () => {
    const h = Harness.market([CALL]);
    const main = h.user('1');
    const sub = (h.apply({ t: 'create_subaccount', mainId: main, max: 5 }) as User).id;
    book(h, main, 'bc1-dest');
    ok(withdraw(h, main, sat('1')));
    // the same cash again: a second withdrawal, a transfer, an order
    assert.equal(code(withdraw(h, main, sat('1'))), ERR.NOT_ENOUGH_FUNDS);
    const t = h.apply({ t: 'transfer', by: main, from: main, to: sub, currency: 'BTC', amount: sat('0.5'), nonce: null });
    assert.equal(code(t), ERR.NOT_ENOUGH_FUNDS);
    const o = h.place(main, 'buy', CALL.name, '0.05', '1');
    assert.ok(isReject(o), 'an order needing the withdrawn cash is refused');
    assert.equal(h.ex.users.get(main)!.accounts.BTC.balance, 0);
    assert.equal(h.ex.users.get(sub)!.accounts.BTC.balance, 0);
    conserved(h);
  });

  it('gives the amount back on cancel, only once, and only to its owner', () => {
    const h = Harness.market([CALL]);
    const u = h.user('1');
    const other = h.user('1');
    book(h, u, 'bc1-dest');
    const w = ok(withdraw(h, u, sat('0.4')));
    assert.equal(code(h.apply({ t: 'wallet_cancel_withdrawal', userId: other, id: w.id })), ERR.NOT_FOUND, "another user's withdrawal is not found");
    const c = ok(h.apply({ t: 'wallet_cancel_withdrawal', userId: u, id: w.id }) as WithdrawalRecord);
    assert.equal(c.state, 'cancelled');
    assert.equal(h.ex.users.get(u)!.accounts.BTC.balance, sat('1'));
    assert.equal(h.ex.wallet.pending.BTC, 0);
    assert.equal(code(h.apply({ t: 'wallet_cancel_withdrawal', userId: u, id: w.id })), ERR.FORBIDDEN, 'a cancelled withdrawal cannot be cancelled again');
    assert.equal(h.ex.users.get(u)!.accounts.BTC.balance, sat('1'), 'the second cancel gave nothing back');
    conserved(h);
  });

  it('is completed or rejected by an administrator only; completion sends the money out, rejection gives it back', () => {
    const h = Harness.market([CALL]);
    const op = admin(h);
    const u = h.user('1');
    book(h, u, 'bc1-dest');
    const a = ok(withdraw(h, u, sat('0.3')));
    const b = ok(withdraw(h, u, sat('0.2')));
    assert.equal(code(h.apply({ t: 'wallet_settle_withdrawal', id: a.id, by: u, outcome: 'completed', txid: 'tx1' })), ERR.FORBIDDEN, 'a user cannot complete its own withdrawal');
    const done = ok(h.apply({ t: 'wallet_settle_withdrawal', id: a.id, by: op, outcome: 'completed', txid: 'tx1' }) as WithdrawalRecord);
    assert.equal(done.state, 'completed');
    assert.equal(done.txid, 'tx1');
    assert.equal(h.ex.withdrawals.BTC, sat('0.3'));
    assert.equal(h.ex.users.get(u)!.accounts.BTC.withdrawn, sat('0.3'));
    assert.equal(code(h.apply({ t: 'wallet_cancel_withdrawal', userId: u, id: a.id })), ERR.FORBIDDEN, 'a completed withdrawal cannot be cancelled');
    ok(h.apply({ t: 'wallet_settle_withdrawal', id: b.id, by: op, outcome: 'rejected', txid: null }));
    assert.equal(h.ex.users.get(u)!.accounts.BTC.balance, sat('0.7'));
    assert.equal(h.ex.wallet.pending.BTC, 0);
    assert.equal(code(h.apply({ t: 'wallet_settle_withdrawal', id: b.id, by: op, outcome: 'completed', txid: 'tx2' })), ERR.FORBIDDEN, 'a rejected withdrawal cannot be completed');
    conserved(h);
  });

  it('goes only to an address-book withdrawal address past its waiting period (pinned clock)', () => {
    const h = Harness.market([CALL]);
    const u = h.user('1');
    assert.equal((withdraw(h, u, sat('0.1'), 'bc1-unknown') as { reason?: string }).reason, 'address_not_in_address_book');
    h.apply({ t: 'address_book_add', userId: u, currency: 'BTC', type: 'transfer', address: 'bc1-transfer', label: '', info: INFO, max: 10, waitMs: 0 });
    assert.equal((withdraw(h, u, sat('0.1'), 'bc1-transfer') as { reason?: string }).reason, 'address_not_in_address_book', 'a transfer entry is not a withdrawal address');
    const e = book(h, u, 'bc1-new', 24 * HOUR);
    assert.equal(e.readyAt, T0 + 24 * HOUR);
    h.ts = T0 + 24 * HOUR - 1;
    assert.equal((withdraw(h, u, sat('0.1'), 'bc1-new') as { reason?: string }).reason, 'address_book_waiting_period');
    h.ts = T0 + 24 * HOUR;
    ok(withdraw(h, u, sat('0.1'), 'bc1-new'));
    // without the address-book rule, any address
    ok(withdraw(h, u, sat('0.1'), 'bc1-anywhere', { bookOnly: false }));
    // a removed entry no longer receives withdrawals
    ok(h.apply({ t: 'address_book_remove', userId: u, currency: 'BTC', type: 'withdrawal', address: 'bc1-new' }));
    assert.equal((withdraw(h, u, sat('0.1'), 'bc1-new') as { reason?: string }).reason, 'address_not_in_address_book');
    conserved(h);
  });

  it('limits pending withdrawals per user and address-book entries per user', () => {
    const h = Harness.market([CALL]);
    const u = h.user('1');
    book(h, u, 'bc1-dest');
    for (let i = 0; i < 3; i++) ok(withdraw(h, u, sat('0.01'), 'bc1-dest', { maxPending: 3 }));
    assert.equal((withdraw(h, u, sat('0.01'), 'bc1-dest', { maxPending: 3 }) as { reason?: string }).reason, 'too_many_pending_withdrawals');
    const first = h.ex.wallet.withdrawalsOf(u, 'BTC').at(-1)!;
    ok(h.apply({ t: 'wallet_cancel_withdrawal', userId: u, id: first.id }));
    ok(withdraw(h, u, sat('0.01'), 'bc1-dest', { maxPending: 3 }));
    const v = h.user();
    for (let i = 0; i < 4; i++) ok(h.apply({ t: 'address_book_add', userId: v, currency: 'BTC', type: 'withdrawal', address: `a${i}`, label: '', info: INFO, max: 4, waitMs: 0 }));
    assert.equal((h.apply({ t: 'address_book_add', userId: v, currency: 'BTC', type: 'withdrawal', address: 'a9', label: '', info: INFO, max: 4, waitMs: 0 }) as { reason?: string }).reason, 'address_book_full');
    conserved(h);
  });

  it('is idempotent by nonce: a retry answers the first withdrawal and reserves nothing more', () => {
    const h = Harness.market([CALL]);
    const u = h.user('1');
    book(h, u, 'bc1-dest');
    const a = ok(withdraw(h, u, sat('0.2'), 'bc1-dest', {}, 'n1'));
    const b = ok(withdraw(h, u, sat('0.2'), 'bc1-dest', {}, 'n1'));
    assert.equal(b.id, a.id);
    assert.equal(h.ex.users.get(u)!.accounts.BTC.balance, sat('0.8'));
    assert.equal((withdraw(h, u, sat('0.3'), 'bc1-dest', {}, 'n1') as { reason?: string }).reason, 'nonce_already_used');
  });

  it('refuses a subaccount (its money leaves through its main account)', () => {
    const h = Harness.market([CALL]);
    const main = h.user('1');
    const sub = (h.apply({ t: 'create_subaccount', mainId: main, max: 5 }) as User).id;
    h.deposit(sub, 'BTC', sat('1'));
    assert.equal((withdraw(h, sub, sat('0.1'), 'x', { bookOnly: false }) as { reason?: string }).reason, 'main_account_only');
  });

  it('completes sandbox withdrawals automatically once due, and never those without a due time', () => {
    const h = Harness.market([CALL]);
    const u = h.user('1');
    book(h, u, 'bc1-dest');
    const auto = ok(withdraw(h, u, sat('0.1'), 'bc1-dest', { autoCompleteMs: 60_000 }));
    const manual = ok(withdraw(h, u, sat('0.1'), 'bc1-dest'));
    assert.equal(h.ex.wallet.nextAutoComplete(), T0 + 60_000);
    assert.deepEqual(h.apply({ t: 'wallet_complete_due' }, T0 + 59_999), []);
    const done = h.apply({ t: 'wallet_complete_due' }, T0 + 60_000) as WithdrawalRecord[];
    assert.deepEqual(done.map((w) => w.id), [auto.id]);
    assert.equal(h.ex.wallet.withdrawals.get(auto.id)!.txid, `sandbox-${auto.id}`);
    assert.equal(h.ex.wallet.withdrawals.get(manual.id)!.state, 'confirmed');
    assert.equal(h.ex.withdrawals.BTC, sat('0.1'));
    conserved(h);
  });

  it('replays and restores from a snapshot to the same state hash', () => {
    const cmds: Command[] = [];
    const run = (h: Harness) => {
      const op = admin(h);
      const u = h.user('3');
      const apply = (c: Command) => {
        cmds.push(c);
        return h.apply(c);
      };
      apply({ t: 'address_book_add', userId: u, currency: 'BTC', type: 'withdrawal', address: 'bc1', label: 'l', info: INFO, max: 10, waitMs: 0 });
      const w = apply({ t: 'wallet_withdraw', userId: u, currency: 'BTC', amount: sat('1'), address: 'bc1', priority: 'mid', nonce: null, rules: { bookOnly: true, maxPending: 5, autoCompleteMs: null } }) as WithdrawalRecord;
      apply({ t: 'wallet_withdraw', userId: u, currency: 'BTC', amount: sat('0.5'), address: 'bc1', priority: 'mid', nonce: 'k', rules: { bookOnly: true, maxPending: 5, autoCompleteMs: null } });
      apply({ t: 'wallet_settle_withdrawal', id: w.id, by: op, outcome: 'completed', txid: 'abc' });
      apply({ t: 'wallet_add_addresses', currency: 'BTC', addresses: ['p1', 'p2'], by: op });
      apply({ t: 'wallet_new_address', userId: u, currency: 'BTC', fallback: null, max: 5 });
      apply({ t: 'wallet_credit_deposit', currency: 'BTC', address: 'p1', amount: sat('0.25'), txid: 'dep1', by: op });
    };
    const h = Harness.market([CALL]);
    run(h);
    conserved(h);
    const restored = restore(serialize(h.ex));
    assert.equal(stateHash(restored), stateHash(h.ex));
    assert.equal(restored.wallet.pending.BTC, sat('0.5'));
    assert.equal(restored.wallet.addressOwner.get('BTC:p1')!.userId, h.ex.wallet.addressOwner.get('BTC:p1')!.userId);
    const again = Harness.market([CALL]);
    run(again);
    assert.equal(stateHash(again.ex), stateHash(h.ex));
    assert.ok(cmds.length > 0);
  });
});
