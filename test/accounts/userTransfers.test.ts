// Transfers to another user of the venue (src/accounts/userTransfers.ts), at the engine: the queue
// (prepared -> confirmed at its due time, or cancelled by its sender), the held amount counted by
// conservation, the cash rules on the sender, who may send and cancel, and idempotency by nonce.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import type { UserTransferRecord } from '../../src/accounts/types.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { roundToTick } from '../../src/domain/instrument.ts';
import { EXP_JAN, EXP_MAR, Harness, sat, spec } from '../helpers/engine.ts';
import { conserved, refused, sub } from './helpers.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');
const JAN_CALL = spec('BTC', EXP_JAN, 110000, 'call');

function atMark(h: Harness, name: string): string {
  const inst = h.inst(name);
  const m = h.ex.markets.get(inst.id)!;
  return (roundToTick(inst, m.markCoin * 1e4, 'nearest') / 1e4).toFixed(4);
}
const HOLD = 60_000;

function send(h: Harness, by: number, destination: string, amount: number, nonce: string | null = null, holdMs = HOLD): UserTransferRecord | ReturnType<typeof refused> {
  return h.apply({ t: 'user_transfer', by, destination, currency: 'BTC', amount, nonce, holdMs }) as UserTransferRecord;
}

describe('transfers to another user', () => {
  it('holds the amount while prepared and credits the receiver only when confirmed at its due time', () => {
    const h = Harness.market([CALL]);
    const a = h.user('1');
    const b = h.user();
    const r = send(h, a, 'u2@test.io', 25_000_000) as UserTransferRecord;
    assert.equal(r.state, 'prepared');
    assert.equal(h.balance(a), sat('1') - 25_000_000);
    assert.equal(h.balance(b), 0);
    assert.equal(h.ex.subaccounts.users.held.BTC, 25_000_000);
    conserved(h);
    assert.equal(h.apply({ t: 'confirm_transfers' }, h.ts + HOLD - 1), 0, 'not due yet');
    assert.equal(h.balance(b), 0);
    assert.equal(h.apply({ t: 'confirm_transfers' }, h.ts + 1), 1);
    assert.equal(r.state, 'confirmed');
    assert.equal(h.balance(b), 25_000_000);
    assert.equal(h.ex.subaccounts.users.held.BTC, 0);
    const inc = h.u(b).log.entries().at(-1)!;
    assert.deepEqual([inc.type, inc.amount, inc.userId], ['transfer', 25_000_000, a]);
    conserved(h);
    refused(h.apply({ t: 'cancel_transfer', by: a, id: r.id, currency: 'BTC' }), 11029, 'transfer_confirmed');
  });

  it('gives the amount back to the sender when it cancels, and the receiver never sees it', () => {
    const h = Harness.market([CALL]);
    const a = h.user('1');
    const b = h.user();
    const r = send(h, a, 'u2@test.io', 10_000) as UserTransferRecord;
    refused(h.apply({ t: 'cancel_transfer', by: b, id: r.id, currency: 'BTC' }), 13020, 'transfer_not_found');
    refused(h.apply({ t: 'cancel_transfer', by: a, id: r.id, currency: 'ETH' }), 13020, 'transfer_not_found');
    const c = h.apply({ t: 'cancel_transfer', by: a, id: r.id, currency: 'BTC' }) as UserTransferRecord;
    assert.equal(c.state, 'cancelled');
    assert.equal(h.balance(a), sat('1'));
    h.apply({ t: 'confirm_transfers' }, h.ts + 10 * HOLD);
    assert.equal(h.balance(b), 0);
    refused(h.apply({ t: 'cancel_transfer', by: a, id: r.id, currency: 'BTC' }), 11029, 'transfer_cancelled');
    conserved(h);
  });

  it('confirms at once without a hold', () => {
    const h = Harness.market([CALL]);
    const a = h.user('1');
    const b = h.user();
    const r = send(h, a, 'U2@test.io', 7, null, 0) as UserTransferRecord;
    assert.equal(r.state, 'confirmed');
    assert.equal(h.balance(b), 7);
  });

  it('refuses a transfer that would leave the sender short of its cash rules, from a subaccount, to itself, to a subaccount or to nobody', () => {
    const h = Harness.market([CALL]);
    const a = h.user('1');
    h.user();
    const s = sub(h, a);
    refused(send(h, a, 'u2@test.io', sat('1') + 1), 10009, 'transfer_exceeds_available');
    refused(send(h, s, 'u2@test.io', 1), 13021, 'main_account_only');
    refused(send(h, a, 'u1@test.io', 1), 11029, 'same_source_and_destination');
    refused(send(h, a, `subaccount:${s}`, 1), 13020, 'destination_not_found');
    refused(send(h, a, 'nobody@test.io', 1), 13020, 'destination_not_found');
    // a held amount is not available twice
    assert.ok(!isReject(send(h, a, 'u2@test.io', sat('0.6'))));
    refused(send(h, a, 'u2@test.io', sat('0.6')), 10009, 'transfer_exceeds_available');
    assert.equal(h.balance(a), sat('0.4'));
  });

  it('refuses a transfer that would take the cash an account below maintenance margin needs', () => {
    const h = Harness.market([JAN_CALL]);
    const buyer = h.user('50');
    const a = h.user('0.15', '20');
    h.user();
    h.ok(buyer, 'buy', JAN_CALL.name, atMark(h, JAN_CALL.name), '1');
    h.ok(a, 'sell', JAN_CALL.name, atMark(h, JAN_CALL.name), '1');
    // the index rises: the short call's maintenance margin outgrows the equity
    h.apply({ t: 'index', currency: 'BTC', price: 150000, manual: true, by: null }, EXP_JAN - 3_600_000);
    assert.ok(h.ex.trading.risk.inDistress(h.u(a)), 'the seller is below maintenance');
    refused(send(h, a, 'u3@test.io', 1), 10009, 'account_below_maintenance');
    refused(h.apply({ t: 'user_transfer', by: a, destination: 'u3@test.io', currency: 'ETH', amount: sat('1'), nonce: null, holdMs: HOLD }), 10009, 'account_below_maintenance');
    conserved(h);
  });

  it('moves money once for a nonce sent twice and refuses the nonce for another transfer', () => {
    const h = Harness.market([CALL]);
    const a = h.user('1');
    const b = h.user();
    const r1 = send(h, a, 'u2@test.io', 100, 'n1') as UserTransferRecord;
    const r2 = send(h, a, 'u2@test.io', 100, 'n1') as UserTransferRecord;
    assert.equal(r2.id, r1.id);
    assert.equal(h.balance(a), sat('1') - 100);
    refused(send(h, a, 'u2@test.io', 101, 'n1'), 11029, 'nonce_already_used');
    h.apply({ t: 'confirm_transfers' }, h.ts + HOLD);
    assert.equal((send(h, a, 'u2@test.io', 100, 'n1') as UserTransferRecord).state, 'confirmed');
    assert.equal(h.balance(b), 100);
  });

  it('snapshots and restores prepared transfers with their held amount, to the same state hash', () => {
    const h = Harness.market([CALL]);
    const a = h.user('1');
    h.user();
    send(h, a, 'u2@test.io', 500);
    send(h, a, 'u2@test.io', 600, null, 0);
    const back = restore(serialize(h.ex));
    assert.equal(stateHash(back), stateHash(h.ex));
    assert.equal(back.subaccounts.users.held.BTC, 500);
    for (const [c, v] of Object.entries(back.conservation())) assert.equal(v.balances, v.expected, c);
  });
});
