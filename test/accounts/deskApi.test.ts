// Issue 32's second slice over HTTP and WebSocket: a subaccount's email and notifications, transfers
// to another user (prepared, confirmed once its hold passed, cancelled by its sender; in get_transfers
// on both sides), move_positions between the accounts of one main account, subaccount_id on the
// user-trade histories, and a removed subaccount's API keys stopping at once.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark } from '../helpers/market.ts';
import { WsClient } from '../helpers/ws.ts';

let srv: TestServer;
let admin: string;
let main: string;
let friend: string;
let mainId: number;
let subId: number;

async function subToken(email: string, sid: number): Promise<string> {
  const r = await ok(srv.url, 'public/auth', { grant_type: 'password', username: email, password: 'user-password-1' });
  return (await ok(srv.url, 'public/exchange_token', { refresh_token: r.refresh_token, subject_id: sid })).access_token;
}

function assertError(r: { body: any }, code: number, reason?: string): void {
  assert.ok(r.body.error, `expected error ${code}, got ${JSON.stringify(r.body.result)}`);
  assert.equal(r.body.error.code, code, JSON.stringify(r.body.error));
  if (reason !== undefined) assert.match(JSON.stringify(r.body.error), new RegExp(reason));
}

const btc = async (token: string) => (await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, token)).balance;

describe('subaccount email and notifications, transfers to users, position moves over the API', () => {
  before(async () => {
    srv = await startServer({ STRIKEBOOK_USER_TRANSFER_HOLD_SECONDS: '60', STRIKEBOOK_ADDRESS_BOOK_WAIT_MS: '0' });
    admin = await adminToken(srv.url);
    main = await userToken(srv.url, admin, 'desk2@example.com', { currency: 'BTC', amount: 10 });
    friend = await userToken(srv.url, admin, 'friend@example.com', { currency: 'BTC', amount: 1 });
    await ok(srv.url, 'private/create_subaccount', {}, main);
    [mainId, subId] = (await ok(srv.url, 'private/get_subaccounts', {}, main)).map((x: any) => x.id);
    // a transfer to another user goes to an entry of the sender's address book of type `transfer`
    for (const address of ['friend@example.com', 'nobody@example.com']) await ok(srv.url, 'private/add_to_address_book', { currency: 'BTC', type: 'transfer', address, label: 'friend' }, main);
  });
  after(async () => srv.stop());

  it("sets a subaccount's email and notifications, shown by get_subaccounts; a subaccount or another main cannot", async () => {
    assert.equal(await ok(srv.url, 'private/set_email_for_subaccount', { sid: subId, email: 'bot-one@example.com' }, main), 'ok');
    assert.equal(await ok(srv.url, 'private/toggle_notifications_from_subaccount', { sid: subId, state: true }, main), 'ok');
    const row = (await ok(srv.url, 'private/get_subaccounts', {}, main))[1];
    assert.deepEqual([row.email, row.receive_notifications], ['bot-one@example.com', true]);
    assertError(await rpc(srv.url, 'private/set_email_for_subaccount', { sid: subId, email: 'x@example.com' }, friend), 13020);
    assertError(await rpc(srv.url, 'private/toggle_notifications_from_subaccount', { sid: subId, state: false }, friend), 13020);
    assertError(await rpc(srv.url, 'private/set_email_for_subaccount', { sid: subId, email: 'not-an-email' }, main), -32602);
    const s = await subToken('desk2@example.com', subId);
    assertError(await rpc(srv.url, 'private/toggle_notifications_from_subaccount', { sid: subId, state: false }, s), 13021, 'main_account_only');
    assert.equal((await ok(srv.url, 'private/get_subaccounts', {}, main))[1].receive_notifications, true);
  });

  it('queues a transfer to another user: prepared (held from the sender), confirmed once its hold passed, in get_transfers on both sides', async () => {
    const before = [await btc(main), await btc(friend)];
    const t = await ok(srv.url, 'private/submit_transfer_to_user', { currency: 'BTC', amount: 0.25, destination: 'friend@example.com' }, main);
    assert.deepEqual([t.type, t.state, t.direction, t.other_side, t.amount], ['user', 'prepared', 'payment', 'friend@example.com', 0.25]);
    assert.equal(await btc(main), before[0] - 0.25);
    assert.equal(await btc(friend), before[1]);
    const theirs = await ok(srv.url, 'private/get_transfers', { currency: 'BTC' }, friend);
    assert.deepEqual([theirs.data[0].id, theirs.data[0].direction, theirs.data[0].state, theirs.data[0].other_side], [t.id, 'income', 'prepared', 'desk2@example.com']);
    // past the hold: the market tick confirms it
    await ok(srv.url, 'private/set_test_time', { timestamp: (await ok(srv.url, 'public/get_time')) + 61_000 }, admin);
    assert.equal(await btc(friend), before[1] + 0.25);
    const mine = await ok(srv.url, 'private/get_transfers', { currency: 'BTC' }, main);
    assert.deepEqual([mine.data[0].id, mine.data[0].state], [t.id, 'confirmed']);
    assertError(await rpc(srv.url, 'private/cancel_transfer_by_id', { currency: 'BTC', id: t.id }, main), 11029, 'transfer_confirmed');
  });

  it('cancels a prepared transfer: the money goes back; only its sender may, and only once', async () => {
    main = (await ok(srv.url, 'public/auth', { grant_type: 'password', username: 'desk2@example.com', password: 'user-password-1' })).access_token;
    friend = (await ok(srv.url, 'public/auth', { grant_type: 'password', username: 'friend@example.com', password: 'user-password-1' })).access_token;
    const before = await btc(main);
    const t = await ok(srv.url, 'private/submit_transfer_to_user', { currency: 'BTC', amount: 0.5, destination: 'friend@example.com', nonce: 'gift-1' }, main);
    // the same nonce again: the same transfer, no second debit
    const again = await ok(srv.url, 'private/submit_transfer_to_user', { currency: 'BTC', amount: 0.5, destination: 'friend@example.com', nonce: 'gift-1' }, main);
    assert.equal(again.id, t.id);
    assert.equal(await btc(main), before - 0.5);
    assertError(await rpc(srv.url, 'private/cancel_transfer_by_id', { currency: 'BTC', id: t.id }, friend), 13020, 'transfer_not_found');
    const c = await ok(srv.url, 'private/cancel_transfer_by_id', { currency: 'BTC', id: t.id }, main);
    assert.equal(c.state, 'cancelled');
    assert.equal(await btc(main), before);
    assertError(await rpc(srv.url, 'private/cancel_transfer_by_id', { currency: 'BTC', id: t.id }, main), 11029, 'transfer_cancelled');
    const log = await ok(srv.url, 'private/get_transaction_log', { currency: 'BTC', query: 'transfer', count: 2 }, main);
    assert.deepEqual(log.logs.map((e: any) => e.change), [0.5, -0.5]);
  });

  it('refuses a transfer to a user beyond what the sender may withdraw, from a subaccount, or to an unknown user', async () => {
    assertError(await rpc(srv.url, 'private/submit_transfer_to_user', { currency: 'BTC', amount: 1000, destination: 'friend@example.com' }, main), 10009, 'transfer_exceeds_available');
    assertError(await rpc(srv.url, 'private/submit_transfer_to_user', { currency: 'BTC', amount: 0.1, destination: 'nobody@example.com' }, main), 13020, 'destination_not_found');
    const s = await subToken('desk2@example.com', subId);
    assertError(await rpc(srv.url, 'private/submit_transfer_to_user', { currency: 'BTC', amount: 0.1, destination: 'friend@example.com' }, s), 13021, 'main_account_only');
  });

  it("sends only to an entry of the sender's own address book of type transfer, once its waiting period is over; by a deposit address too", async () => {
    const other = await userToken(srv.url, admin, 'other@example.com', { currency: 'BTC', amount: 1 });
    const deposit = (await ok(srv.url, 'private/create_deposit_address', { currency: 'BTC' }, other)).address;
    const send = (destination: string, token = main) => rpc(srv.url, 'private/submit_transfer_to_user', { currency: 'BTC', amount: 0.01, destination }, token);
    const before = await btc(main);
    // a known user, but not in the sender's address book: refused, and nothing moves
    assertError(await send('other@example.com'), 13021, 'address_not_in_address_book');
    assertError(await send(deposit), 13021, 'address_not_in_address_book');
    // in the address book, but as a withdrawal address: refused
    await ok(srv.url, 'private/add_to_address_book', { currency: 'BTC', type: 'withdrawal', address: deposit, label: 'w' }, main);
    assertError(await send(deposit), 13021, 'address_not_in_address_book');
    // in another user's address book (the friend's) only: refused for the sender
    await ok(srv.url, 'private/add_to_address_book', { currency: 'BTC', type: 'transfer', address: 'other@example.com', label: 'o' }, friend);
    assertError(await send('other@example.com'), 13021, 'address_not_in_address_book');
    // an entry of another currency does not count
    await ok(srv.url, 'private/add_to_address_book', { currency: 'ETH', type: 'transfer', address: deposit, label: 'eth' }, main);
    assertError(await send(deposit), 13021, 'address_not_in_address_book');
    assert.equal(await btc(main), before, 'no refused transfer moved money');
    // the deposit address as a transfer entry: the transfer reaches its owner
    await ok(srv.url, 'private/add_to_address_book', { currency: 'BTC', type: 'transfer', address: deposit, label: 'other' }, main);
    const t = (await send(deposit)).body.result;
    assert.deepEqual([t.state, t.other_side, t.amount], ['prepared', 'other@example.com', 0.01]);
    assert.equal((await ok(srv.url, 'private/get_transfers', { currency: 'BTC' }, other)).data[0].id, t.id);
    assert.equal(await btc(main), before - 0.01);
    await ok(srv.url, 'private/cancel_transfer_by_id', { currency: 'BTC', id: t.id }, main);
  });

  it("refuses a transfer to a new address-book entry during its waiting period", async () => {
    const slow = await startServer({ STRIKEBOOK_ADDRESS_BOOK_WAIT_MS: '60000' });
    try {
      const a = await adminToken(slow.url);
      const sender = await userToken(slow.url, a, 'sender@example.com', { currency: 'BTC', amount: 1 });
      await userToken(slow.url, a, 'receiver@example.com');
      const entry = await ok(slow.url, 'private/add_to_address_book', { currency: 'BTC', type: 'transfer', address: 'receiver@example.com', label: 'r' }, sender);
      assert.equal(entry.status, 'waiting');
      const send = () => rpc(slow.url, 'private/submit_transfer_to_user', { currency: 'BTC', amount: 0.1, destination: 'receiver@example.com' }, sender);
      assertError(await send(), 13021, 'address_book_waiting_period');
      await ok(slow.url, 'private/set_test_time', { timestamp: (await ok(slow.url, 'public/get_time')) + 60_001 }, a);
      const r = await send();
      assert.equal(r.body.result?.state, 'prepared', JSON.stringify(r.body));
    } finally {
      await slow.stop();
    }
  });

  it("moves positions to a subaccount and back (HTTP and WebSocket), shown in both logs and the subaccount's positions; the subaccount's trades by subaccount_id", async () => {
    const m = await atmCall(srv.url);
    const price = nearMark(m);
    await ok(srv.url, 'private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 2, destination: subId }, main);
    const s = await subToken('desk2@example.com', subId);
    // the subaccount trades with the friend: its trades read by the main account with subaccount_id
    await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 1, price }, friend);
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 1, price }, s);
    const subTrades = await ok(srv.url, 'private/get_user_trades_by_instrument', { instrument_name: m.name, subaccount_id: subId }, main);
    assert.equal(subTrades.trades.length, 1);
    assert.equal((await ok(srv.url, 'private/get_user_trades_by_currency', { currency: 'BTC', subaccount_id: subId }, main)).trades.length, 1);
    assert.equal((await ok(srv.url, 'private/get_user_trades_by_order', { order_id: subTrades.trades[0].order_id, subaccount_id: subId }, main)).length, 1);
    assert.equal((await ok(srv.url, 'private/get_user_trades_by_instrument', { instrument_name: m.name }, main)).trades.length, 0);
    assertError(await rpc(srv.url, 'private/get_user_trades_by_instrument', { instrument_name: m.name, subaccount_id: subId }, friend), 13020);
    assertError(await rpc(srv.url, 'private/get_user_trades_by_currency', { currency: 'BTC', subaccount_id: mainId }, s), 13020);
    // the subaccount's long moves to the main account
    const r = await ok(srv.url, 'private/move_positions', { currency: 'BTC', source_uid: subId, target_uid: mainId, trades: [{ instrument_name: m.name, amount: 0.6, price }] }, main);
    assert.deepEqual(r.trades, [{ source_uid: subId, target_uid: mainId, instrument_name: m.name, direction: 'sell', price, amount: 0.6 }]);
    const pos = await ok(srv.url, 'private/get_positions', { currency: 'BTC', subaccount_id: subId }, main);
    assert.equal(pos.find((p: any) => p.instrument_name === m.name).size, 0.4);
    const mainPos = await ok(srv.url, 'private/get_positions', { currency: 'BTC' }, main);
    assert.equal(mainPos.find((p: any) => p.instrument_name === m.name).size, 0.6);
    const log = await ok(srv.url, 'private/get_transaction_log', { currency: 'BTC', query: 'position_move' }, main);
    assert.deepEqual([log.logs[0].instrument_name, log.logs[0].side, log.logs[0].amount, log.logs[0].commission], [m.name, 'buy', 0.6, 0]);
    // and back over a WebSocket, at the mark (no price)
    const ws = await WsClient.open(srv.url);
    try {
      await ws.auth('desk2@example.com');
      const back = await ws.ok('private/move_positions', { source_uid: mainId, target_uid: subId, trades: [{ instrument_name: m.name, amount: '0.6' }] });
      assert.deepEqual([back.trades[0].direction, back.trades[0].amount], ['sell', 0.6]);
    } finally {
      ws.ws.close();
      await ws.closedP;
    }
    const after = await ok(srv.url, 'private/get_positions', { currency: 'BTC', subaccount_id: subId }, main);
    assert.equal(after.find((p: any) => p.instrument_name === m.name).size, 1);
    // a subaccount may not move, an amount beyond the position moves nothing
    assertError(await rpc(srv.url, 'private/move_positions', { source_uid: subId, target_uid: mainId, trades: [{ instrument_name: m.name, amount: 0.1 }] }, s), 13021, 'main_account_only');
    assertError(await rpc(srv.url, 'private/move_positions', { source_uid: subId, target_uid: mainId, trades: [{ instrument_name: m.name, amount: 0.5 }, { instrument_name: m.name, amount: 0.6 }] }, main), 10021, 'amount_exceeds_position');
    assert.equal((await ok(srv.url, 'private/get_positions', { currency: 'BTC', subaccount_id: subId }, main)).find((p: any) => p.instrument_name === m.name).size, 1);
  });

  it("stops a removed subaccount's API keys at once: signed requests, their tokens, and a socket logged in with one", async () => {
    const created = await ok(srv.url, 'private/create_subaccount', {}, main);
    const s = await subToken('desk2@example.com', created.id);
    const key = await ok(srv.url, 'private/create_api_key', { scope: 'account:read_write trade:read_write', name: 'bot' }, s);
    const basic = { headers: { authorization: `Basic ${Buffer.from(`${key.client_id}:${key.client_secret}`).toString('base64')}` } };
    const keyToken = (await ok(srv.url, 'public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret })).access_token;
    assert.equal((await rpc(srv.url, 'private/get_account_summary', { currency: 'BTC', extended: true }, undefined, basic)).body.result.id, created.id);
    const ws = await WsClient.open(srv.url);
    try {
      await ws.ok('public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret });
      assert.equal((await ws.ok('private/get_account_summary', { currency: 'BTC', extended: true })).id, created.id);
      await ok(srv.url, 'private/remove_subaccount', { subaccount_id: created.id }, main);
      assert.ok((await rpc(srv.url, 'private/get_account_summary', { currency: 'BTC' }, undefined, basic)).body.error, 'the signed request is refused');
      assertError(await rpc(srv.url, 'private/get_account_summary', { currency: 'BTC' }, keyToken), 13009);
      const r = await ws.call('private/get_account_summary', { currency: 'BTC' });
      assert.equal(r.error?.code, 13009, JSON.stringify(r));
      assert.ok((await rpc(srv.url, 'public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret })).body.error, 'the key no longer logs in');
    } finally {
      ws.ws.close();
      await ws.closedP;
    }
  });
});
