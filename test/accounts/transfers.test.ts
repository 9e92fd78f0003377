// Transfers between the accounts of one main account (src/accounts/transfers.ts), at the engine:
// exact amounts, both logs, the withdrawal's cash rules on the sender, who may move what, and
// idempotency by nonce.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import { roundToTick } from '../../src/domain/instrument.ts';
import type { TransferRecord } from '../../src/accounts/types.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { EXP_JAN, EXP_MAR, Harness, sat, spec } from '../helpers/engine.ts';
import { conserved, refused, sub, transfer } from './helpers.ts';

const JAN_CALL = spec('BTC', EXP_JAN, 110000, 'call');
const MAR_CALL = spec('BTC', EXP_MAR, 100000, 'call');

function atMark(h: Harness, name: string): string {
  const inst = h.inst(name);
  const m = h.ex.markets.get(inst.id)!;
  return (roundToTick(inst, m.markCoin * 1e4, 'nearest') / 1e4).toFixed(4);
}

describe('transfers between the accounts of one main account', () => {
  it('moves the exact amount and logs it in both accounts with the other side named', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1');
    const s = sub(h, main);
    const r = transfer(h, main, main, s, 12_345_678) as TransferRecord;
    assert.ok(!isReject(r));
    assert.equal(h.balance(main), sat('1') - 12_345_678);
    assert.equal(h.balance(s), 12_345_678);
    const out = h.u(main).log.entries().at(-1)!;
    const inc = h.u(s).log.entries().at(-1)!;
    assert.deepEqual([out.type, out.amount, out.userId, out.balance], ['transfer', -12_345_678, s, h.balance(main)]);
    assert.deepEqual([inc.type, inc.amount, inc.userId, inc.balance], ['transfer', 12_345_678, main, 12_345_678]);
    assert.equal(h.ex.subaccounts.transfers.get(main)!.length, 1);
    conserved(h);
  });

  it('refuses a transfer larger than the sender has, and leaves both balances as they were', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1');
    const s = sub(h, main);
    refused(transfer(h, main, main, s, sat('1') + 1), 10009, 'transfer_exceeds_available');
    assert.equal(h.balance(main), sat('1'));
    assert.equal(h.balance(s), 0);
    refused(transfer(h, main, s, main, 1), 10009, 'transfer_exceeds_available');
    refused(transfer(h, main, main, s, 0), -32602, 'invalid_amount');
    refused(transfer(h, main, main, s, 0.5), -32602, 'invalid_amount');
  });

  it('refuses to take the cash that backs the sender\'s initial margin', () => {
    const h = Harness.market([MAR_CALL]);
    const buyer = h.user('10');
    const main = h.user('1');
    const s = sub(h, main);
    h.ok(buyer, 'buy', MAR_CALL.name, atMark(h, MAR_CALL.name), '1');
    h.ok(main, 'sell', MAR_CALL.name, atMark(h, MAR_CALL.name), '1');
    const free = h.ex.trading.risk.account(h.u(main), 'BTC').availableWithdrawal;
    assert.ok(free > 0 && free < h.balance(main), 'part of the cash is margin');
    refused(transfer(h, main, main, s, free + 1), 10009, 'transfer_exceeds_available');
    assert.ok(!isReject(transfer(h, main, main, s, free)));
    conserved(h);
  });

  it('refuses any transfer out of an account below maintenance margin, even of a small amount', () => {
    const h = Harness.market([JAN_CALL]);
    const other = h.user('50');
    const main = h.user('0.15', '20');
    const s = sub(h, main);
    h.ok(other, 'buy', JAN_CALL.name, atMark(h, JAN_CALL.name), '1');
    h.ok(main, 'sell', JAN_CALL.name, atMark(h, JAN_CALL.name), '1');
    h.apply({ t: 'index', currency: 'BTC', price: 150000, manual: true, by: null }, EXP_JAN - 3_600_000);
    assert.ok(h.ex.trading.risk.inDistress(h.u(main)));
    // its ETH is untouched by the BTC short, yet it may not leave while the account is in trouble
    refused(transfer(h, main, main, s, sat('1'), 'ETH'), 10009, 'account_below_maintenance');
    assert.equal(h.balance(s, 'ETH'), 0);
  });

  it('refuses a transfer out of an account with a negative balance', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1', '1');
    const s = sub(h, main);
    h.u(main).accounts.BTC.balance = -5; // as a default leaves it until the waterfall runs
    refused(transfer(h, main, main, s, 1, 'ETH'), 10009, 'negative_balance');
  });

  it('lets the main account move money between two of its subaccounts', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1');
    const a = sub(h, main);
    const b = sub(h, main);
    transfer(h, main, main, a, 1000);
    assert.ok(!isReject(transfer(h, main, a, b, 400)));
    assert.deepEqual([h.balance(a), h.balance(b)], [600, 400]);
  });

  it('lets a subaccount send its own money to its main account only: never from a sibling, to a sibling or out of the family', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1');
    const a = sub(h, main);
    const b = sub(h, main);
    const stranger = h.user('1');
    const strangersSub = sub(h, stranger);
    transfer(h, main, main, a, 1000);
    transfer(h, main, main, b, 1000);
    refused(transfer(h, a, b, a, 1), 13021, 'subaccount_may_send_only_its_own_funds');
    refused(transfer(h, a, main, a, 1), 13021, 'subaccount_may_send_only_its_own_funds');
    refused(transfer(h, a, a, b, 1), 13021, 'subaccount_may_send_only_to_its_main_account');
    refused(transfer(h, a, a, strangersSub, 1), 13020, 'subaccount_not_found');
    refused(transfer(h, main, main, strangersSub, 1), 13020, 'subaccount_not_found');
    refused(transfer(h, stranger, a, stranger, 1), 13020, 'subaccount_not_found');
    refused(transfer(h, main, main, main, 1), 11029, 'same_source_and_destination');
    assert.deepEqual([h.balance(a), h.balance(b), h.balance(strangersSub)], [1000, 1000, 0]);
    assert.ok(!isReject(transfer(h, a, a, main, 250)));
    assert.equal(h.balance(a), 750);
  });

  it('moves money once for a nonce sent twice, answers the retry with the first transfer, and refuses the nonce for another transfer', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1');
    const s = sub(h, main);
    const first = transfer(h, main, main, s, 500, 'BTC', 'n-1') as TransferRecord;
    const again = transfer(h, main, main, s, 500, 'BTC', 'n-1') as TransferRecord;
    assert.equal(again.id, first.id);
    assert.equal(h.balance(s), 500);
    refused(transfer(h, main, main, s, 501, 'BTC', 'n-1'), 11029, 'nonce_already_used');
    assert.equal(h.balance(s), 500);
    // no nonce: each command is a transfer of its own
    transfer(h, main, main, s, 500);
    transfer(h, main, main, s, 500);
    assert.equal(h.balance(s), 1500);
  });

  it("refuses a withdrawal out of the venue from a subaccount: its money leaves through its main account (Deribit's withdraw is main-account only)", () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1');
    const s = sub(h, main);
    transfer(h, main, main, s, 1000);
    refused(h.apply({ t: 'withdraw', userId: s, currency: 'BTC', amount: 1 }), 13021, 'main_account_only');
    assert.equal(h.balance(s), 1000);
    assert.ok(!isReject(h.apply({ t: 'withdraw', userId: main, currency: 'BTC', amount: 1 })));
  });

  it('restores subaccounts and transfers from a snapshot to the same state hash, and replays to it', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1');
    const s = sub(h, main);
    transfer(h, main, main, s, 700, 'BTC', 'x');
    h.apply({ t: 'rename_subaccount', mainId: main, subId: s, name: 'desk' });
    const copy = restore(serialize(h.ex));
    assert.equal(stateHash(copy), stateHash(h.ex));
    assert.equal(copy.subaccounts.mainOf(s), main);
    // the nonce survives the snapshot: a retry after a restart still moves nothing
    const r = copy.apply({ t: 'transfer', by: main, from: main, to: s, currency: 'BTC', amount: 700, nonce: 'x', ts: h.ts, seq: h.seq + 1 });
    assert.ok(!isReject(r));
    assert.equal(copy.users.get(s)!.accounts.BTC.balance, 700);
  });
});
