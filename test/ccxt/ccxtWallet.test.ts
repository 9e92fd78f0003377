// The unmodified ccxt `deribit` class against the wallet (issue 32): fetchDeposits, withdraw and
// fetchWithdrawals, signed with an API key that holds the wallet scope. ccxt reads Deribit's shapes:
// a deposit's `received_timestamp`, a withdrawal's `id`, `state`, `fee` and `transaction_id`.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import ccxt from 'ccxt';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('ccxt deribit against the wallet', () => {
  let server: TestServer;
  let url: string;
  let admin: string;
  let token: string;
  let client: InstanceType<typeof ccxt.deribit>;

  before(async () => {
    // a new address-book entry receives withdrawals at once; no automatic completion
    server = await startServer({ STRIKEBOOK_ADDRESS_BOOK_WAIT_MS: '0', STRIKEBOOK_WITHDRAWAL_AUTO_COMPLETE_MS: '0' });
    url = server.url;
    admin = await adminToken(url);
    token = await userToken(url, admin, 'ccxt-wallet@example.com', { currency: 'BTC', amount: 2 });
    const key = await ok(url, 'private/create_api_key', { scope: 'account:read_write trade:read_write wallet:read_write' }, token);
    client = new ccxt.deribit({ apiKey: key.client_id, secret: key.client_secret, version: 'v1', urls: { api: { rest: url } }, enableRateLimit: false, timeout: 10_000 });
    client.milliseconds = () => server.app.services.clock.now();
  });
  after(() => server.stop());

  it('fetchDeposits lists a deposit credited to a deposit address, with its transaction id', async () => {
    const addr = await ok(url, 'private/create_deposit_address', { currency: 'BTC' }, token);
    await ok(url, 'private/credit_deposit', { currency: 'BTC', address: addr.address, amount: 0.5, transaction_id: 'ccxt-tx-1' }, admin);
    const deposits = await client.fetchDeposits('BTC');
    const credited = deposits.find((d) => d.txid === 'ccxt-tx-1');
    assert.ok(credited, JSON.stringify(deposits));
    assert.equal(credited.amount, 0.5);
    assert.equal(credited.address, addr.address);
    assert.equal(credited.status, 'ok');
    assert.equal(credited.currency, 'BTC');
    assert.equal(typeof credited.timestamp, 'number');
    // the sandbox deposit of the fixture is listed too
    assert.ok(deposits.some((d) => d.amount === 2));
  });

  it('withdraw makes a pending withdrawal to an address-book address; fetchWithdrawals follows it to completed', async () => {
    await ok(url, 'private/add_to_address_book', { currency: 'BTC', type: 'withdrawal', address: 'bc1qccxtdest', label: 'ccxt' }, token);
    const sent = await client.withdraw('BTC', 0.75, 'bc1qccxtdest');
    // ccxt's deribit.withdraw parses the whole JSON-RPC envelope instead of its `result` (so against
    // Deribit too its fields come out empty); the withdrawal is in `info.result`
    const w = client.parseTransaction((sent.info as { result: Record<string, unknown> }).result);
    assert.equal(w.type, 'withdrawal');
    assert.equal(w.amount, 0.75);
    assert.equal(w.address, 'bc1qccxtdest');
    assert.equal(w.status, 'confirmed');
    assert.ok(w.id);
    assert.equal((await ok(url, 'private/get_account_summary', { currency: 'BTC' }, token)).balance, 1.75, 'the amount left the balance at once');
    // not in the address book: ccxt raises with the venue's error
    await assert.rejects(client.withdraw('BTC', 0.1, 'bc1qnotinbook'), (e: Error) => e instanceof ccxt.ExchangeError && /address_not_in_address_book/.test(e.message));
    await ok(url, 'private/complete_withdrawal', { id: Number(w.id), transaction_id: 'ccxt-out-1' }, admin);
    const list = await client.fetchWithdrawals('BTC');
    assert.equal(list.length, 1);
    assert.equal(list[0]!.id, w.id);
    assert.equal(list[0]!.status, 'ok');
    assert.equal(list[0]!.txid, 'ccxt-out-1');
    assert.equal(list[0]!.fee?.cost, 0);
  });
});
