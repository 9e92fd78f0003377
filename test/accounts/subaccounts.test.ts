// Subaccounts at the engine (src/accounts/subaccounts.ts): users of their own linked to a main
// account, a limit per main account, names, login, and removal only when empty.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import type { SubaccountRecord } from '../../src/accounts/types.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { roundToTick } from '../../src/domain/instrument.ts';
import { EXP_MAR, Harness, px, spec } from '../helpers/engine.ts';
import { refused, sub, transfer } from './helpers.ts';

const MAR_CALL = spec('BTC', EXP_MAR, 100000, 'call');

function atMark(h: Harness, name: string): string {
  const inst = h.inst(name);
  const m = h.ex.markets.get(inst.id)!;
  return (roundToTick(inst, m.markCoin * 1e4, 'nearest') / 1e4).toFixed(4);
}

function session(h: Harness, userId: number, n: string): void {
  const r = h.apply({ t: 'issue_token', userId, access: `a-${n}`, refresh: `r-${n}`, scope: 'account:read_write', accessTtl: 3_600_000, refreshTtl: 3_600_000, replaces: null });
  assert.equal(r, true);
}

describe('subaccounts', () => {
  it('creates a subaccount as a user of its own with an empty account, linked to its main account', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1');
    const s = sub(h, main);
    assert.notEqual(s, main);
    assert.equal(h.u(s).accounts.BTC.balance, 0);
    assert.equal(h.ex.subaccounts.mainOf(s), main);
    assert.deepEqual(h.ex.subaccounts.childrenOf(main), [s]);
    assert.equal(h.u(s).role, 'user');
    // no password: the email slot holds no address, so no login can name it
    assert.ok(!h.u(s).email.includes('@'));
  });

  it('refuses a subaccount beyond the limit, and one created by a subaccount', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1');
    sub(h, main, 2);
    const second = sub(h, main, 2);
    refused(h.apply({ t: 'create_subaccount', mainId: main, max: 2 }), 13021, 'subaccount_limit_reached');
    refused(h.apply({ t: 'create_subaccount', mainId: second, max: 20 }), 13021, 'main_account_only');
    assert.equal(h.ex.subaccounts.childrenOf(main).length, 2);
  });

  it('renames a subaccount, refusing a name another subaccount of the same main account holds', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1');
    const a = sub(h, main);
    const b = sub(h, main);
    assert.ok(!isReject(h.apply({ t: 'rename_subaccount', mainId: main, subId: a, name: 'alpha' })));
    refused(h.apply({ t: 'rename_subaccount', mainId: main, subId: b, name: 'alpha' }), 11029, 'name_taken');
    assert.equal(h.ex.subaccounts.username(a), 'alpha');
  });

  it("does not let a main account touch another main's subaccount: it is simply not found", () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1');
    const other = h.user('1');
    const s = sub(h, other);
    refused(h.apply({ t: 'rename_subaccount', mainId: main, subId: s, name: 'mine' }), 13020, 'subaccount_not_found');
    refused(h.apply({ t: 'subaccount_login', mainId: main, subId: s, on: false }), 13020, 'subaccount_not_found');
    refused(h.apply({ t: 'remove_subaccount', mainId: main, subId: s }), 13020, 'subaccount_not_found');
    // a subaccount is not a main account of its siblings either
    const sibling = sub(h, other);
    refused(h.apply({ t: 'remove_subaccount', mainId: s, subId: sibling }), 13020, 'subaccount_not_found');
    assert.ok(h.ex.users.has(s) && h.ex.users.has(sibling));
  });

  it('ends every session of a subaccount whose login is disabled, and issues it none until enabled again', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1');
    const s = sub(h, main);
    session(h, s, '1');
    session(h, main, 'm');
    h.apply({ t: 'subaccount_login', mainId: main, subId: s, on: false });
    assert.equal(h.ex.auth.access.has('a-1'), false);
    assert.equal(h.ex.auth.refresh.has('r-1'), false);
    assert.equal(h.ex.auth.access.has('a-m'), true, "the main account's session stays");
    refused(h.apply({ t: 'issue_token', userId: s, access: 'a-2', refresh: 'r-2', scope: 'x', accessTtl: 1000, refreshTtl: 1000, replaces: null }), 13021, 'subaccount_login_disabled');
    h.apply({ t: 'subaccount_login', mainId: main, subId: s, on: true });
    session(h, s, '3');
  });

  it('refuses to remove a subaccount with a balance', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('5');
    const s = sub(h, main);
    assert.ok(!isReject(transfer(h, main, main, s, 1)));
    refused(h.apply({ t: 'remove_subaccount', mainId: main, subId: s }), 13021, 'subaccount_has_balance');
    assert.ok(h.ex.users.has(s));
  });

  it('refuses to remove a subaccount with an open order even when its balance is zero', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('5');
    const s = sub(h, main);
    transfer(h, main, main, s, 100_000_000);
    // a sell of a call needs margin, not cash spent: the order is open, then the money goes home
    h.ok(s, 'sell', MAR_CALL.name, atMark(h, MAR_CALL.name), '0.1');
    // forcibly zero the balance as a test fixture would, keeping the order (no command can do both)
    const u = h.u(s);
    h.ex.deposits.BTC -= u.accounts.BTC.balance;
    u.accounts.BTC.balance = 0;
    refused(h.apply({ t: 'remove_subaccount', mainId: main, subId: s }), 13021, 'subaccount_has_open_orders');
  });

  it('refuses to remove a subaccount holding a position even when its balance is zero', () => {
    const h = Harness.market([MAR_CALL]);
    const seller = h.user('10');
    const main = h.user('5');
    const s = sub(h, main);
    transfer(h, main, main, s, 100_000_000);
    h.ok(seller, 'sell', MAR_CALL.name, atMark(h, MAR_CALL.name), '0.1');
    h.ok(s, 'buy', MAR_CALL.name, atMark(h, MAR_CALL.name), '0.1');
    assert.notEqual(h.position(s, MAR_CALL.name).size, 0);
    // a long option needs no margin: every coin left may go home, leaving the position alone
    transfer(h, main, s, main, h.balance(s));
    assert.equal(h.balance(s), 0);
    refused(h.apply({ t: 'remove_subaccount', mainId: main, subId: s }), 13021, 'subaccount_has_positions');
  });

  it('refuses to remove a subaccount with an untriggered trigger order, and removes it once the order is cancelled', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('5');
    const s = sub(h, main);
    transfer(h, main, main, s, 100_000_000);
    const placed = h.apply({
      t: 'place', userId: s, side: 0, instrument: MAR_CALL.name, price: null, advanced: null, advPrice: null, lots: 10_000_000, type: 'market', tif: 'good_til_cancelled',
      postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null, trig: { type: 'stop_market', source: 'index_price', price: px('200000'), offset: null },
    }) as { order: { id: number } };
    assert.ok(!isReject(placed), JSON.stringify(placed));
    transfer(h, main, s, main, h.balance(s));
    refused(h.apply({ t: 'remove_subaccount', mainId: main, subId: s }), 13021, 'subaccount_has_open_orders');
    h.apply({ t: 'cancel', userId: s, orderId: placed.order.id });
    // the cancelled trigger order stays in its history, which must not keep the subaccount alive
    assert.ok(!isReject(h.apply({ t: 'remove_subaccount', mainId: main, subId: s })));
    assert.equal(h.ex.users.has(s), false);
  });

  it('removes an empty subaccount with its sessions, API keys and MMP settings at once, and frees its place under the limit', () => {
    const h = Harness.market([MAR_CALL]);
    const main = h.user('1');
    const s = sub(h, main, 1);
    session(h, s, '1');
    h.apply({ t: 'create_api_key', userId: s, clientId: 'cid', encSecret: 'enc', scope: 'account:read', name: 'k' });
    h.apply({ t: 'set_mmp_config', userId: s, indexName: 'btc_usd', group: null, interval: 10, frozenTime: 0, quantityLimit: 100_000_000, deltaLimit: 0, maxQuoteQuantity: 0 });
    assert.equal([...h.ex.mmp.groups.values()].filter((g) => g.userId === s).length, 1);
    transfer(h, main, main, s, 100);
    transfer(h, main, s, main, 100);
    const r = h.apply({ t: 'remove_subaccount', mainId: main, subId: s }) as SubaccountRecord;
    assert.ok(!isReject(r));
    assert.equal(h.ex.users.has(s), false);
    assert.equal(h.ex.auth.access.has('a-1'), false);
    assert.equal(h.ex.auth.refresh.has('r-1'), false);
    assert.deepEqual(h.ex.apiKeys.forUser(s), []);
    // nothing of it stays behind to grow the state with every subaccount created and removed
    assert.equal([...h.ex.mmp.groups.values()].filter((g) => g.userId === s).length, 0);
    assert.equal(h.ex.triggers.history.has(s), false);
    refused(h.apply({ t: 'issue_token', userId: s, access: 'a-2', refresh: 'r-2', scope: 'x', accessTtl: 1000, refreshTtl: 1000, replaces: null }), 13009, undefined as never);
    // the history stays with the main account, names included
    assert.equal(h.ex.subaccounts.transfers.get(main)!.length, 2);
    sub(h, main, 1);
    const copy = restore(serialize(h.ex));
    assert.equal(stateHash(copy), stateHash(h.ex));
  });
});
