// The wallet over HTTP and WebSocket (src/api/methods/wallet.ts, walletAdmin.ts): the address book and
// its waiting period on the pinned test clock, a withdrawal that reserves its amount at once (the
// same cash then cannot be withdrawn, transferred or used for an order), cancel, the operator's queue
// and completion, the sandbox's automatic completion, deposit addresses from the pool, a deposit id
// credited once, and production's empty pool refused clearly.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { cheapCall } from '../helpers/market.ts';
import { WsClient } from '../helpers/ws.ts';

const HOUR = 3_600_000;

function assertError(r: { body: any }, code: number, reason?: string): void {
  assert.ok(r.body.error, `expected error ${code}, got ${JSON.stringify(r.body.result)}`);
  assert.equal(r.body.error.code, code, JSON.stringify(r.body.error));
  if (reason !== undefined) assert.match(JSON.stringify(r.body.error), new RegExp(reason));
}

const balance = async (url: string, token: string): Promise<number> => (await ok(url, 'private/get_account_summary', { currency: 'BTC' }, token)).balance;

describe('the wallet over the API (sandbox)', () => {
  let srv: TestServer;
  let admin: string;
  let user: string;
  let now: number;

  const advance = async (ms: number) => {
    now += ms;
    await ok(srv.url, 'private/set_test_time', { timestamp: now }, admin);
  };

  before(async () => {
    srv = await startServer({ STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000', STRIKEBOOK_ADDRESS_BOOK_WAIT_MS: String(HOUR), STRIKEBOOK_WITHDRAWAL_AUTO_COMPLETE_MS: '600000', STRIKEBOOK_ADDRESS_BOOK_MAX: '3' });
    admin = await adminToken(srv.url);
    user = await userToken(srv.url, admin, 'wallet@example.com', { currency: 'BTC', amount: 1 });
    // the test clock stops at the time set: every time below is exact
    now = (await ok(srv.url, 'public/get_time')) + 1000;
    await ok(srv.url, 'private/set_test_time', { timestamp: now }, admin);
  });
  after(async () => srv.stop());

  it('keeps an address book; a new withdrawal address waits its period before a withdrawal may use it', async () => {
    const add = await ok(srv.url, 'private/add_to_address_book', { currency: 'BTC', type: 'withdrawal', address: 'bc1qdest', label: 'cold', beneficiary_vasp_name: 'Me', agreed: true, personal: true }, user);
    assert.equal(add.status, 'waiting');
    assert.equal(add.waiting_timestamp, true);
    assert.equal(add.label, 'cold');
    assertError(await rpc(srv.url, 'private/withdraw', { currency: 'BTC', address: 'bc1qdest', amount: 0.1 }, user), 13021, 'address_book_waiting_period');
    assertError(await rpc(srv.url, 'private/withdraw', { currency: 'BTC', address: 'bc1qother', amount: 0.1 }, user), 13021, 'address_not_in_address_book');
    assert.equal(await ok(srv.url, 'private/update_in_address_book', { currency: 'BTC', type: 'withdrawal', address: 'bc1qdest', label: 'vault' }, user), 'ok');
    await advance(HOUR);
    const list = await ok(srv.url, 'private/get_address_book', { currency: 'BTC', type: 'withdrawal' }, user);
    assert.deepEqual(list.map((e: any) => [e.address, e.label, e.status]), [['bc1qdest', 'vault', 'confirmed']]);
    assert.deepEqual(await ok(srv.url, 'private/get_address_book', { currency: 'BTC', type: 'transfer' }, user), []);
    // the limit on entries
    await ok(srv.url, 'private/add_to_address_book', { currency: 'BTC', type: 'transfer', address: 'a2', label: '' }, user);
    await ok(srv.url, 'private/add_to_address_book', { currency: 'ETH', type: 'withdrawal', address: 'a3', label: '' }, user);
    assertError(await rpc(srv.url, 'private/add_to_address_book', { currency: 'ETH', type: 'withdrawal', address: 'a4', label: '' }, user), 13021, 'address_book_full');
    assert.equal(await ok(srv.url, 'private/remove_from_address_book', { currency: 'ETH', type: 'withdrawal', address: 'a3' }, user), 'ok');
    assertError(await rpc(srv.url, 'private/remove_from_address_book', { currency: 'ETH', type: 'withdrawal', address: 'a3' }, user), 13020);
  });

  it('reserves a withdrawal at once: the same cash cannot be withdrawn again, transferred or used for an order', async () => {
    const w = await ok(srv.url, 'private/withdraw', { currency: 'BTC', address: 'bc1qdest', amount: 1, priority: 'mid', nonce: 'w-1' }, user);
    assert.equal(w.state, 'confirmed');
    assert.equal(w.amount, 1);
    assert.equal(w.transaction_id, null);
    assert.equal(await balance(srv.url, user), 0);
    assertError(await rpc(srv.url, 'private/withdraw', { currency: 'BTC', address: 'bc1qdest', amount: 0.5 }, user), 10009);
    const sub = await ok(srv.url, 'private/create_subaccount', {}, user);
    assertError(await rpc(srv.url, 'private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 0.5, destination: sub.id }, user), 10009);
    const call = await cheapCall(srv.url);
    const order = await rpc(srv.url, 'private/buy', { instrument_name: call.name, amount: 1, price: call.prices.at(-1) }, user);
    assert.ok(order.body.error, 'an order needing the reserved cash is refused');
    // the retry of the same nonce answers the same withdrawal
    assert.equal((await ok(srv.url, 'private/withdraw', { currency: 'BTC', address: 'bc1qdest', amount: 1, nonce: 'w-1' }, user)).id, w.id);
    const c = await ok(srv.url, 'private/cancel_withdrawal', { currency: 'BTC', id: w.id }, user);
    assert.equal(c.state, 'cancelled');
    assert.equal(await balance(srv.url, user), 1);
    assertError(await rpc(srv.url, 'private/cancel_withdrawal', { currency: 'BTC', id: w.id }, user), 13021, 'withdrawal_cancelled');
  });

  it("puts withdrawals in the operator's queue; the operator completes one with its transaction id", async () => {
    const w = await ok(srv.url, 'private/withdraw', { currency: 'BTC', address: 'bc1qdest', amount: 0.25 }, user);
    assertError(await rpc(srv.url, 'private/get_pending_withdrawals', {}, user), 13021);
    assertError(await rpc(srv.url, 'private/complete_withdrawal', { id: w.id, transaction_id: 'tx' }, user), 13021);
    const queue = await ok(srv.url, 'private/get_pending_withdrawals', { currency: 'BTC' }, admin);
    assert.deepEqual(queue.map((x: any) => [x.id, x.amount, x.state]), [[w.id, 0.25, 'confirmed']]);
    assert.ok(queue[0].user_id > 0);
    const done = await ok(srv.url, 'private/complete_withdrawal', { id: w.id, transaction_id: 'f00dcafe' }, admin);
    assert.equal(done.state, 'completed');
    assert.equal(done.transaction_id, 'f00dcafe');
    assert.deepEqual(await ok(srv.url, 'private/get_pending_withdrawals', {}, admin), []);
    const hist = await ok(srv.url, 'private/get_withdrawals', { currency: 'BTC' }, user);
    assert.deepEqual(hist.data.map((x: any) => x.state), ['completed', 'cancelled']);
    assert.equal(hist.count, 2);
    assert.equal(await balance(srv.url, user), 0.75);
  });

  it('completes a sandbox withdrawal by itself after the configured delay (over WebSocket)', async () => {
    const ws = await WsClient.open(srv.url);
    try {
      await ws.auth('wallet@example.com');
      const w = await ws.ok('private/withdraw', { currency: 'BTC', address: 'bc1qdest', amount: 0.05 });
      await advance(600_000 - 1);
      assert.equal((await ws.ok('private/get_withdrawals', { currency: 'BTC', count: 1 })).data[0].state, 'confirmed');
      await advance(1);
      const after = (await ws.ok('private/get_withdrawals', { currency: 'BTC', count: 1 })).data[0];
      assert.equal(after.id, w.id);
      assert.equal(after.state, 'completed');
      assert.equal(after.transaction_id, `sandbox-${w.id}`);
    } finally {
      await ws.close();
    }
  });

  it('hands out deposit addresses from the pool (generated in the sandbox) and credits a deposit id once', async () => {
    const gen = await ok(srv.url, 'private/create_deposit_address', { currency: 'BTC' }, user);
    assert.match(gen.address, /^sandbox-btc-/);
    assert.equal(gen.type, 'deposit');
    assert.deepEqual(await ok(srv.url, 'private/add_deposit_addresses', { currency: 'BTC', addresses: ['bc1qpool1', 'bc1qpool2'] }, admin), { added: 2, pool: 2 });
    assertError(await rpc(srv.url, 'private/add_deposit_addresses', { currency: 'BTC', addresses: ['x'] }, user), 13021);
    const a = await ok(srv.url, 'private/create_deposit_address', { currency: 'BTC' }, user);
    assert.equal(a.address, 'bc1qpool1');
    assert.equal((await ok(srv.url, 'private/get_current_deposit_address', { currency: 'BTC' }, user)).address, 'bc1qpool1');
    assert.equal(await ok(srv.url, 'private/get_current_deposit_address', { currency: 'ETH' }, user), null);
    const before = await balance(srv.url, user);
    const credit = { currency: 'BTC', address: 'bc1qpool1', amount: 0.3, transaction_id: 'deadbeef01' };
    const d1 = await ok(srv.url, 'private/credit_deposit', credit, admin);
    const d2 = await ok(srv.url, 'private/credit_deposit', credit, admin);
    assert.deepEqual(d2, d1);
    assert.equal(await balance(srv.url, user), before + 0.3);
    assertError(await rpc(srv.url, 'private/credit_deposit', { ...credit, amount: 3 }, admin), 11029, 'deposit_already_credited');
    const deposits = await ok(srv.url, 'private/get_deposits', { currency: 'BTC' }, user);
    assert.equal(deposits.data[0].transaction_id, 'deadbeef01');
    assert.equal(deposits.data[0].address, 'bc1qpool1');
    assert.equal(deposits.data[0].state, 'completed');
    assert.equal(deposits.data.filter((x: any) => x.transaction_id === 'deadbeef01').length, 1);
  });
});

describe('the wallet in production mode', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startServer({ STRIKEBOOK_MODE: 'production' });
  });
  after(async () => srv.stop());

  it('refuses create_deposit_address clearly while the pool is empty, and applies the default waiting period', async () => {
    const admin = await adminToken(srv.url);
    const user = await userToken(srv.url, admin, 'prod@example.com');
    const id = (await ok(srv.url, 'private/get_account_summary', { currency: 'BTC', extended: true }, user)).id;
    await ok(srv.url, 'private/deposit_collateral', { currency: 'BTC', amount: 1, user_id: id }, admin);
    assertError(await rpc(srv.url, 'private/create_deposit_address', { currency: 'BTC' }, user), 11030, 'deposit_address_pool_empty');
    await ok(srv.url, 'private/add_to_address_book', { currency: 'BTC', type: 'withdrawal', address: 'bc1qprod', label: '' }, user);
    // the default waiting period (a day) applies
    assertError(await rpc(srv.url, 'private/withdraw', { currency: 'BTC', address: 'bc1qprod', amount: 0.1 }, user), 13021, 'address_book_waiting_period');
  });
});
