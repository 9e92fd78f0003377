// Subaccounts and transfers over HTTP and WebSocket (src/api/methods/subaccounts.ts): the main
// account's view, a subaccount's session from public/exchange_token, what a subaccount may not read
// or do, both transaction logs, get_transfers from both sides, and a removed subaccount's sessions
// stopping at once on HTTP and on a live socket.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

let srv: TestServer;
let main: string;
let other: string;

async function authResult(url: string, email: string): Promise<{ access_token: string; refresh_token: string }> {
  return ok(url, 'public/auth', { grant_type: 'password', username: email, password: 'user-password-1' });
}

/** A session of subaccount `sid` of the main account `email`, through public/exchange_token. */
async function subToken(email: string, sid: number): Promise<string> {
  const r = await authResult(srv.url, email);
  return (await ok(srv.url, 'public/exchange_token', { refresh_token: r.refresh_token, subject_id: sid })).access_token;
}

function assertError(r: { body: any }, code: number, reason?: string): void {
  assert.ok(r.body.error, `expected error ${code}, got ${JSON.stringify(r.body.result)}`);
  assert.equal(r.body.error.code, code, JSON.stringify(r.body.error));
  if (reason !== undefined) assert.match(JSON.stringify(r.body.error), new RegExp(reason));
}

describe('subaccounts and transfers over the API', () => {
  before(async () => {
    srv = await startServer({ STRIKEBOOK_MAX_SUBACCOUNTS: '3' });
    const admin = await adminToken(srv.url);
    main = await userToken(srv.url, admin, 'desk@example.com', { currency: 'BTC', amount: 2 });
    other = await userToken(srv.url, admin, 'other@example.com', { currency: 'BTC', amount: 1 });
  });
  after(async () => srv.stop());

  it('creates subaccounts up to STRIKEBOOK_MAX_SUBACCOUNTS and lists them with the main account and portfolios', async () => {
    const a = await ok(srv.url, 'private/create_subaccount', {}, main);
    assert.equal(a.type, 'subaccount');
    assert.equal(a.email, 'desk@example.com');
    assert.equal(a.login_enabled, true);
    assert.equal(a.portfolio.btc.balance, 0);
    await ok(srv.url, 'private/create_subaccount', {}, main);
    await ok(srv.url, 'private/create_subaccount', {}, main);
    assertError(await rpc(srv.url, 'private/create_subaccount', {}, main), 13021, 'subaccount_limit_reached');
    const list = await ok(srv.url, 'private/get_subaccounts', { with_portfolio: true }, main);
    assert.deepEqual(list.map((x: any) => x.type), ['main', 'subaccount', 'subaccount', 'subaccount']);
    assert.equal(list[0].portfolio.btc.balance, 2);
    assert.equal(list[1].id, a.id);
    // room for the tests below
    await ok(srv.url, 'private/remove_subaccount', { subaccount_id: list[3].id }, main);
    await ok(srv.url, 'private/remove_subaccount', { subaccount_id: list[2].id }, main);
  });

  it('moves money to a subaccount and back, shown in both transaction logs and in get_transfers from both sides', async () => {
    const [mainRow, subRow] = await ok(srv.url, 'private/get_subaccounts', {}, main);
    await ok(srv.url, 'private/change_subaccount_name', { sid: subRow.id, name: 'desk_one' }, main);
    const t = await ok(srv.url, 'private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 0.5, destination: subRow.id }, main);
    assert.deepEqual([t.amount, t.direction, t.other_side, t.state, t.type], [0.5, 'payment', 'desk_one', 'confirmed', 'subaccount']);
    const s = await subToken('desk@example.com', subRow.id);
    const summary = await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, s);
    assert.equal(summary.balance, 0.5);
    const back = await ok(srv.url, 'private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 0.125, destination: mainRow.id }, s);
    assert.equal(back.other_side, 'desk@example.com');
    const mine = await ok(srv.url, 'private/get_transfers', { currency: 'BTC' }, s);
    assert.equal(mine.count, 2);
    assert.deepEqual(mine.data.map((x: any) => [x.direction, x.amount]), [['payment', 0.125], ['income', 0.5]]);
    const log = await ok(srv.url, 'private/get_transaction_log', { currency: 'BTC', query: 'transfer' }, main);
    assert.deepEqual(log.logs.map((e: any) => e.change), [0.125, -0.5]);
    const subLog = await ok(srv.url, 'private/get_transaction_log', { currency: 'BTC', query: 'transfer' }, s);
    assert.deepEqual(subLog.logs.map((e: any) => [e.change, e.balance]), [[-0.125, 0.375], [0.5, 0.5]]);
  });

  it("pushes a transfer to the portfolio subscriptions of both accounts", async () => {
    const [, subRow] = await ok(srv.url, 'private/get_subaccounts', {}, main);
    const mainWs = await WsClient.open(srv.url);
    const subWs = await WsClient.open(srv.url);
    try {
      await mainWs.auth('desk@example.com');
      await subWs.auth('desk@example.com');
      await subWs.ok('public/exchange_token', { refresh_token: (await authResult(srv.url, 'desk@example.com')).refresh_token, subject_id: subRow.id });
      await mainWs.ok('private/subscribe', { channels: ['user.portfolio.btc'] });
      await subWs.ok('private/subscribe', { channels: ['user.portfolio.btc'] });
      await mainWs.until(() => mainWs.on('user.portfolio.btc').length > 0, 10_000, 'first main portfolio');
      await subWs.until(() => subWs.on('user.portfolio.btc').length > 0, 10_000, 'first sub portfolio');
      const mainBefore = mainWs.on('user.portfolio.btc').at(-1)!.data.balance;
      const subBefore = subWs.on('user.portfolio.btc').at(-1)!.data.balance;
      await ok(srv.url, 'private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 0.25, destination: subRow.id }, main);
      await mainWs.until(() => mainWs.on('user.portfolio.btc').at(-1)!.data.balance !== mainBefore, 10_000, 'main portfolio after the transfer');
      await subWs.until(() => subWs.on('user.portfolio.btc').at(-1)!.data.balance !== subBefore, 10_000, 'sub portfolio after the transfer');
      assert.equal(Math.round((mainBefore - mainWs.on('user.portfolio.btc').at(-1)!.data.balance) * 1e8), 25_000_000);
      assert.equal(Math.round((subWs.on('user.portfolio.btc').at(-1)!.data.balance - subBefore) * 1e8), 25_000_000);
    } finally {
      for (const w of [mainWs, subWs]) {
        w.ws.close();
        await w.closedP;
      }
    }
    // back where the tests below expect it
    await ok(srv.url, 'private/submit_transfer_between_subaccounts', { currency: 'BTC', amount: 0.25, source: subRow.id, destination: (await ok(srv.url, 'private/get_subaccounts', {}, main))[0].id }, main);
  });

  it("names a subaccount as one in its extended account summary: its type, username and its main account's email", async () => {
    const [, subRow] = await ok(srv.url, 'private/get_subaccounts', {}, main);
    const s = await subToken('desk@example.com', subRow.id);
    const summary = await ok(srv.url, 'private/get_account_summary', { currency: 'BTC', extended: true }, s);
    assert.deepEqual([summary.id, summary.type, summary.username, summary.email], [subRow.id, 'subaccount', subRow.username, 'desk@example.com']);
    const all = await ok(srv.url, 'private/get_account_summaries', {}, s);
    assert.deepEqual([all.type, all.username], ['subaccount', subRow.username]);
    const mainSummary = await ok(srv.url, 'private/get_account_summary', { currency: 'BTC', extended: true }, main);
    assert.deepEqual([mainSummary.type, mainSummary.username], ['main', 'desk@example.com']);
  });

  it("lets the main account read a subaccount's summaries, positions and log with subaccount_id, and nobody else", async () => {
    const [mainRow, subRow] = await ok(srv.url, 'private/get_subaccounts', { with_portfolio: true }, main);
    const summary = await ok(srv.url, 'private/get_account_summary', { currency: 'BTC', subaccount_id: subRow.id }, main);
    assert.equal(summary.balance, subRow.portfolio.btc.balance);
    assert.notEqual(summary.balance, mainRow.portfolio.btc.balance);
    assert.deepEqual(await ok(srv.url, 'private/get_positions', { currency: 'BTC', subaccount_id: subRow.id }, main), []);
    const summaries = await ok(srv.url, 'private/get_account_summaries', { subaccount_id: subRow.id }, main);
    assert.deepEqual([summaries.id, summaries.type], [subRow.id, 'subaccount']);
    const log = await ok(srv.url, 'private/get_transaction_log', { currency: 'BTC', query: 'transfer', subaccount_id: subRow.id }, main);
    assert.equal(log.logs[0].balance, subRow.portfolio.btc.balance);
    // its own id reads itself
    assert.equal((await ok(srv.url, 'private/get_account_summary', { currency: 'BTC', subaccount_id: mainRow.id }, main)).balance, mainRow.portfolio.btc.balance);
    assertError(await rpc(srv.url, 'private/get_account_summary', { currency: 'BTC', subaccount_id: subRow.id }, other), 13020);
    assertError(await rpc(srv.url, 'private/get_positions', { currency: 'BTC', subaccount_id: subRow.id }, other), 13020);
    assertError(await rpc(srv.url, 'private/get_account_summaries', { subaccount_id: subRow.id }, other), 13020);
    assertError(await rpc(srv.url, 'private/get_transaction_log', { currency: 'BTC', subaccount_id: subRow.id }, other), 13020);
    const s = await subToken('desk@example.com', subRow.id);
    assertError(await rpc(srv.url, 'private/get_account_summary', { currency: 'BTC', subaccount_id: mainRow.id }, s), 13020);
  });

  it('moves money once for a nonce sent twice', async () => {
    const [, subRow] = await ok(srv.url, 'private/get_subaccounts', {}, main);
    const before = (await ok(srv.url, 'private/get_subaccounts', { with_portfolio: true }, main))[1].portfolio.btc.balance;
    const p = { currency: 'BTC', amount: 0.01, destination: subRow.id, nonce: 'once-1' };
    const [a, b] = await Promise.all([rpc(srv.url, 'private/submit_transfer_between_subaccounts', p, main), rpc(srv.url, 'private/submit_transfer_between_subaccounts', p, main)]);
    assert.equal(a.body.result.id, b.body.result.id);
    const afterBal = (await ok(srv.url, 'private/get_subaccounts', { with_portfolio: true }, main))[1].portfolio.btc.balance;
    assert.equal(Math.round((afterBal - before) * 1e8), 1_000_000);
  });

  it('refuses a transfer beyond what the sender may withdraw', async () => {
    const [, subRow] = await ok(srv.url, 'private/get_subaccounts', {}, main);
    assertError(await rpc(srv.url, 'private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 5, destination: subRow.id }, main), 10009, 'transfer_exceeds_available');
  });

  it('does not let a subaccount read the family, act on a sibling or its main account, or reach another main\'s subaccount', async () => {
    const sibling = await ok(srv.url, 'private/create_subaccount', {}, main);
    const [mainRow, subRow] = await ok(srv.url, 'private/get_subaccounts', {}, main);
    await ok(srv.url, 'private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 0.1, destination: sibling.id }, main);
    const s = await subToken('desk@example.com', subRow.id);
    assertError(await rpc(srv.url, 'private/get_subaccounts', {}, s), 13021, 'main_account_only');
    assertError(await rpc(srv.url, 'private/get_subaccounts_details', { currency: 'BTC' }, s), 13021, 'main_account_only');
    assertError(await rpc(srv.url, 'private/create_subaccount', {}, s), 13021);
    assertError(await rpc(srv.url, 'private/remove_subaccount', { subaccount_id: sibling.id }, s), 13021);
    // money: not from a sibling, not from the main account, not to a sibling
    assertError(await rpc(srv.url, 'private/submit_transfer_between_subaccounts', { currency: 'BTC', amount: 0.01, source: sibling.id, destination: subRow.id }, s), 13021, 'only_its_own_funds');
    assertError(await rpc(srv.url, 'private/submit_transfer_between_subaccounts', { currency: 'BTC', amount: 0.01, source: mainRow.id, destination: subRow.id }, s), 13021, 'only_its_own_funds');
    assertError(await rpc(srv.url, 'private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 0.01, destination: sibling.id }, s), 13021, 'only_to_its_main_account');
    // a subaccount's session cannot be exchanged for its main account's or a sibling's
    const subAuth = await ok(srv.url, 'public/exchange_token', { refresh_token: (await authResult(srv.url, 'desk@example.com')).refresh_token, subject_id: subRow.id });
    assertError(await rpc(srv.url, 'public/exchange_token', { refresh_token: subAuth.refresh_token, subject_id: mainRow.id }), 13020);
    assertError(await rpc(srv.url, 'public/exchange_token', { refresh_token: subAuth.refresh_token, subject_id: sibling.id }), 13020);
    // another main account: the desk's subaccounts are not found
    assertError(await rpc(srv.url, 'private/change_subaccount_name', { sid: subRow.id, name: 'taken' }, other), 13020);
    assertError(await rpc(srv.url, 'private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 0.01, destination: subRow.id }, other), 13020);
    assertError(await rpc(srv.url, 'public/exchange_token', { refresh_token: (await authResult(srv.url, 'other@example.com')).refresh_token, subject_id: subRow.id }), 13020);
    const sib = (await ok(srv.url, 'private/get_subaccounts', { with_portfolio: true }, main)).find((x: any) => x.id === sibling.id);
    assert.equal(sib.portfolio.btc.balance, 0.1);
    // empty it again for the removal test
    await ok(srv.url, 'private/submit_transfer_between_subaccounts', { currency: 'BTC', amount: 0.1, source: sibling.id, destination: mainRow.id }, main);
  });

  it("stops a removed subaccount's sessions at once, on HTTP and on a live WebSocket", async () => {
    const list = await ok(srv.url, 'private/get_subaccounts', {}, main);
    const victim = list[2];
    const httpToken = await subToken('desk@example.com', victim.id);
    const ws = await WsClient.open(srv.url);
    try {
      await ws.auth('desk@example.com');
      const refresh = (await authResult(srv.url, 'desk@example.com')).refresh_token;
      await ws.ok('public/exchange_token', { refresh_token: refresh, subject_id: victim.id });
      const onSocket = await ws.ok('private/get_account_summary', { currency: 'BTC', extended: true });
      assert.equal(onSocket.id, victim.id, 'the socket now acts as the subaccount');
      await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, httpToken);
      await ok(srv.url, 'private/remove_subaccount', { subaccount_id: victim.id }, main);
      assertError(await rpc(srv.url, 'private/get_account_summary', { currency: 'BTC' }, httpToken), 13009);
      const r = await ws.call('private/get_account_summary', { currency: 'BTC' });
      assert.equal(r.error?.code, 13009, JSON.stringify(r));
    } finally {
      ws.ws.close();
      await ws.closedP;
    }
    assert.equal((await ok(srv.url, 'private/get_subaccounts', {}, main)).some((x: any) => x.id === victim.id), false);
  });

  it('serves every subaccount and transfer method over a WebSocket as over HTTP', async () => {
    const ws = await WsClient.open(srv.url);
    try {
      await ws.auth('desk@example.com');
      const created = await ws.ok('private/create_subaccount');
      const list = await ws.ok('private/get_subaccounts', { with_portfolio: true });
      assert.equal(list.at(-1).id, created.id);
      assert.equal(await ws.ok('private/change_subaccount_name', { sid: created.id, name: 'over_ws' }), 'ok');
      assert.equal(await ws.ok('private/toggle_subaccount_login', { sid: created.id, state: 'enable' }), 'ok');
      const t = await ws.ok('private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 0.001, destination: created.id });
      assert.equal(t.other_side, 'over_ws');
      const back = await ws.ok('private/submit_transfer_between_subaccounts', { currency: 'BTC', amount: 0.001, source: created.id, destination: list[0].id, nonce: 'ws-1' });
      assert.equal(back.nonce, 'ws-1');
      assert.equal((await ws.ok('private/get_transfers', { currency: 'BTC', count: 2 })).data[0].id, back.id);
      const details = await ws.ok('private/get_subaccounts_details', { currency: 'BTC', with_open_orders: true });
      assert.ok(details.some((d: any) => d.uid === created.id && Array.isArray(d.positions) && Array.isArray(d.open_orders)));
      assert.equal(await ws.ok('private/remove_subaccount', { subaccount_id: created.id }), 'ok');
    } finally {
      ws.ws.close();
      await ws.closedP;
    }
  });

  it('refuses to remove a subaccount that holds money', async () => {
    const [, subRow] = await ok(srv.url, 'private/get_subaccounts', {}, main);
    assertError(await rpc(srv.url, 'private/remove_subaccount', { subaccount_id: subRow.id }, main), 13021, 'subaccount_has_balance');
  });

  it('ends a subaccount\'s sessions when its login is disabled, and refuses new ones', async () => {
    const [, subRow] = await ok(srv.url, 'private/get_subaccounts', {}, main);
    const s = await subToken('desk@example.com', subRow.id);
    await ok(srv.url, 'private/toggle_subaccount_login', { sid: subRow.id, state: 'disable' }, main);
    assertError(await rpc(srv.url, 'private/get_account_summary', { currency: 'BTC' }, s), 13009);
    const refresh = (await authResult(srv.url, 'desk@example.com')).refresh_token;
    assertError(await rpc(srv.url, 'public/exchange_token', { refresh_token: refresh, subject_id: subRow.id }), 13021, 'subaccount_login_disabled');
    assert.equal((await ok(srv.url, 'private/get_subaccounts', {}, main))[1].login_enabled, false);
    await ok(srv.url, 'private/toggle_subaccount_login', { sid: subRow.id, state: 'enable' }, main);
    await subToken('desk@example.com', subRow.id);
  });
});
