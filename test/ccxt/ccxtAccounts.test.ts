// ccxt's account methods against Strikebook (issue 32): the unmodified ccxt `deribit` class lists the
// main account and its subaccounts (fetchAccounts), moves money to a subaccount (transfer, ccxt's
// default submit_transfer_to_subaccount) and to another user (transfer with
// method privateGetSubmitTransferToUser, a `pending` transfer), and reads them back (fetchTransfers).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import ccxt from 'ccxt';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';

type Client = InstanceType<typeof ccxt.deribit>;

describe('ccxt deribit: accounts and transfers', () => {
  let server: TestServer;
  let url: string;
  let desk: Client;
  let deskToken: string;
  let friendToken: string;
  let admin: string;

  before(async () => {
    server = await startServer({ STRIKEBOOK_ADDRESS_BOOK_WAIT_MS: '0' });
    url = server.url;
    admin = await adminToken(url);
    deskToken = await userToken(url, admin, 'ccxt-desk@example.com', { currency: 'BTC', amount: 5 });
    friendToken = await userToken(url, admin, 'ccxt-friend@example.com', { currency: 'BTC', amount: 1 });
    await ok(url, 'private/create_subaccount', {}, deskToken);
    await ok(url, 'private/create_subaccount', {}, deskToken);
    const key = await ok(url, 'private/create_api_key', { scope: 'account:read_write trade:read_write' }, deskToken);
    desk = new ccxt.deribit({ apiKey: key.client_id, secret: key.client_secret, version: 'v1', urls: { api: { rest: url } }, enableRateLimit: false, timeout: 10_000 });
    desk.milliseconds = () => server.app.services.clock.now();
  });
  after(() => server.stop());

  it('fetchAccounts lists the main account and its subaccounts', async () => {
    const accounts = await desk.fetchAccounts();
    const listed = await ok(url, 'private/get_subaccounts', {}, deskToken);
    assert.deepEqual(accounts.map((a) => [a.id, a.type]), listed.map((x: any) => [String(x.id), x.type]));
    assert.deepEqual(accounts.map((a) => a.type), ['main', 'subaccount', 'subaccount']);
  });

  it('transfer moves money to a subaccount, and fetchTransfers shows it as done', async () => {
    const [, sub] = await desk.fetchAccounts();
    const t = await desk.transfer('BTC', 0.75, 'main', sub!.id!);
    assert.deepEqual([t.status, t.amount, t.currency, t.toAccount], ['ok', 0.75, 'BTC', (await ok(url, 'private/get_subaccounts', {}, deskToken))[1].username]);
    const subBalance = (await ok(url, 'private/get_account_summary', { currency: 'BTC', subaccount_id: Number(sub!.id) }, deskToken)).balance;
    assert.equal(subBalance, 0.75);
    const list = await desk.fetchTransfers('BTC');
    assert.ok(list.some((x) => x.id === t.id && x.status === 'ok' && x.amount === 0.75));
  });

  it('transfer to another user is pending until its hold passes, then ok; fetchTransfers follows it', async () => {
    // Deribit's rule: the destination is a `transfer` entry of the sender's address book
    await ok(url, 'private/add_to_address_book', { currency: 'BTC', type: 'transfer', address: 'ccxt-friend@example.com', label: 'friend' }, deskToken);
    const t = await desk.transfer('BTC', 0.1, 'main', 'ccxt-friend@example.com', { method: 'privateGetSubmitTransferToUser' });
    assert.deepEqual([t.status, t.amount, t.toAccount], ['pending', 0.1, 'ccxt-friend@example.com']);
    assert.equal((await desk.fetchTransfers('BTC')).find((x) => x.id === t.id)?.status, 'pending');
    await ok(url, 'private/set_test_time', { timestamp: (await ok(url, 'public/get_time')) + 61_000 }, admin);
    assert.equal((await desk.fetchTransfers('BTC', undefined, 10)).find((x) => x.id === t.id)?.status, 'ok');
    friendToken = (await ok(url, 'public/auth', { grant_type: 'password', username: 'ccxt-friend@example.com', password: 'user-password-1' })).access_token;
    assert.equal((await ok(url, 'private/get_account_summary', { currency: 'BTC' }, friendToken)).balance, 1.1);
  });
});
