// Deposits and deposit addresses in the engine (src/wallet/): an operator credits a deposit sent to a
// deposit address to its owner, once per (currency, transaction id) also after a restart from a
// snapshot; addresses come from an operator-loaded pool, are never handed out twice, are limited per
// user, and an empty pool is refused clearly (the sandbox's generated address stands in).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ERR, isReject } from '../../src/domain/errors.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { Harness, code, sat } from '../helpers/engine.ts';
import type { DepositAddress, WalletDeposit } from '../../src/wallet/types.ts';
import { admin, conserved, ok } from './helpers.ts';

function address(h: Harness, userId: number, fallback: string | null = null, max = 10): DepositAddress {
  return ok(h.apply({ t: 'wallet_new_address', userId, currency: 'BTC', fallback, max }) as DepositAddress);
}

describe('deposits and deposit addresses', () => {
  it('hands out pool addresses in order, never twice, and refuses clearly when the pool is empty', () => {
    const h = new Harness();
    const op = admin(h);
    const a = h.user();
    const b = h.user();
    assert.deepEqual(h.apply({ t: 'wallet_add_addresses', currency: 'BTC', addresses: ['p1', 'p2', 'p1'], by: op }), { added: 2, pool: 2 });
    assert.equal(code(h.apply({ t: 'wallet_add_addresses', currency: 'BTC', addresses: ['p3'], by: a })), ERR.FORBIDDEN, 'only an operator loads the pool');
    assert.equal(address(h, a).address, 'p1');
    assert.equal(address(h, b).address, 'p2');
    // loading an address handed out already does not put it back
    assert.deepEqual(h.apply({ t: 'wallet_add_addresses', currency: 'BTC', addresses: ['p1'], by: op }), { added: 0, pool: 0 });
    const empty = h.apply({ t: 'wallet_new_address', userId: a, currency: 'BTC', fallback: null, max: 10 });
    assert.ok(isReject(empty));
    assert.equal(empty.code, ERR.OTHER_REJECT);
    assert.equal(empty.reason, 'deposit_address_pool_empty');
    // the sandbox's generated address, used only when new
    assert.equal(address(h, a, 'gen-1').address, 'gen-1');
    assert.equal((h.apply({ t: 'wallet_new_address', userId: b, currency: 'BTC', fallback: 'gen-1', max: 10 }) as { reason?: string }).reason, 'deposit_address_pool_empty');
    assert.equal(h.ex.wallet.currentAddress(a, 'BTC')!.address, 'gen-1');
    assert.equal(h.ex.wallet.currentAddress(b, 'ETH'), null);
  });

  it('limits deposit addresses per user and currency', () => {
    const h = new Harness();
    const u = h.user();
    address(h, u, 'g1', 2);
    address(h, u, 'g2', 2);
    assert.equal((h.apply({ t: 'wallet_new_address', userId: u, currency: 'BTC', fallback: 'g3', max: 2 }) as { reason?: string }).reason, 'deposit_address_limit_reached');
  });

  it('credits one deposit id once: a second credit changes nothing, also after a restart from a snapshot', () => {
    const h = new Harness();
    const op = admin(h);
    const u = h.user();
    address(h, u, 'addr-u');
    const credit = { t: 'wallet_credit_deposit' as const, currency: 'BTC' as const, address: 'addr-u', amount: sat('0.7'), txid: 'txhash-1', by: op };
    const first = ok(h.apply(credit) as WalletDeposit);
    assert.equal(first.userId, u);
    const again = ok(h.apply(credit) as WalletDeposit);
    assert.equal(again, first, 'the first record answers');
    assert.equal(h.ex.users.get(u)!.accounts.BTC.balance, sat('0.7'));
    assert.equal(h.ex.deposits.BTC, sat('0.7'));
    // the same id with another amount is refused, never credited
    assert.equal((h.apply({ ...credit, amount: sat('5') }) as { reason?: string }).reason, 'deposit_already_credited');
    // a restart: the state restored from a snapshot remembers the id
    const after = restore(serialize(h.ex));
    assert.equal(stateHash(after), stateHash(h.ex));
    after.apply({ ...credit, ts: h.ts + 1, seq: h.seq + 1 });
    after.apply({ ...credit, ts: h.ts + 2, seq: h.seq + 2 });
    assert.equal(after.users.get(u)!.accounts.BTC.balance, sat('0.7'));
    assert.equal(after.wallet.depositsOf(u, 'BTC').length, 1);
    // the same transaction id in another currency is another deposit
    address(h, u, 'addr-u-eth');
    h.apply({ t: 'wallet_new_address', userId: u, currency: 'ETH', fallback: 'addr-u-eth-2', max: 10 });
    ok(h.apply({ ...credit, currency: 'ETH', address: 'addr-u-eth-2' }));
    assert.equal(h.ex.users.get(u)!.accounts.ETH.balance, sat('0.7'));
    conserved(h);
  });

  it('refuses a credit by a non-operator, to an unknown address, or of a bad amount', () => {
    const h = new Harness();
    const op = admin(h);
    const u = h.user();
    address(h, u, 'addr-u');
    assert.equal(code(h.apply({ t: 'wallet_credit_deposit', currency: 'BTC', address: 'addr-u', amount: 1, txid: 't', by: u })), ERR.FORBIDDEN);
    assert.equal(code(h.apply({ t: 'wallet_credit_deposit', currency: 'BTC', address: 'nobody', amount: 1, txid: 't', by: op })), ERR.NOT_FOUND);
    assert.equal(code(h.apply({ t: 'wallet_credit_deposit', currency: 'BTC', address: 'addr-u', amount: 0.5, txid: 't', by: op })), ERR.INVALID_PARAMS);
    // a refused credit does not burn its id
    ok(h.apply({ t: 'wallet_credit_deposit', currency: 'BTC', address: 'addr-u', amount: 1, txid: 't', by: op }));
    assert.equal(h.ex.users.get(u)!.accounts.BTC.balance, 1);
    conserved(h);
  });

  it('lists sandbox self-service deposits too, newest first', () => {
    const h = new Harness();
    const u = h.user('1');
    h.deposit(u, 'BTC', sat('2'), 'mine-1');
    const list = h.ex.wallet.depositsOf(u, 'BTC');
    assert.deepEqual(list.map((d) => d.amount), [sat('2'), sat('1')]);
    assert.equal(list[0]!.txid, 'mine-1');
    assert.equal(list[0]!.state, 'completed');
  });
});
