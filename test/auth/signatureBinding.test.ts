// Issue 14, finding 1: a deri-hmac-sha256 signature covers exactly the request it was made for.
// A captured Authorization header pointed at another path (the signed target hidden in the query
// string), or a signed body sent to another method, is refused with 13009 and moves no money; an
// identical replay within the timestamp window is refused too.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hmacSha256Hex } from '../../src/auth/crypto.ts';
import { assertError, assertOk } from '../helpers/envelope.ts';
import { atmCall, type Market } from '../helpers/market.ts';
import { adminToken, ok, rawRequest, startServer, userToken, type TestServer } from '../helpers/server.ts';

interface Key {
  client_id: string;
  client_secret: string;
}

function hmacHeader(key: Key, method: string, uri: string, body = '', ts = Date.now(), nonce = `n${ts}`): string {
  const sig = hmacSha256Hex(key.client_secret, `${ts}\n${nonce}\n${method}\n${uri}\n${body}\n`);
  return `deri-hmac-sha256 id=${key.client_id},ts=${ts},sig=${sig},nonce=${nonce}`;
}

describe('signatures bound to the exact request', () => {
  let server: TestServer;
  let url: string;
  let victim: string;
  let key: Key;
  let atm: Market;

  const balance = async (): Promise<number> => (await ok(url, 'private/get_account_summary', { currency: 'BTC' }, victim)).balance;

  before(async () => {
    server = await startServer();
    url = server.url;
    const admin = await adminToken(url);
    victim = await userToken(url, admin, 'victim@example.com', { currency: 'BTC', amount: 10 });
    key = await ok(url, 'private/create_api_key', { scope: 'account:read_write trade:read_write wallet:read_write' }, victim);
    atm = await atmCall(url);
  });
  after(() => server.stop());

  it('refuses a read signature retargeted to withdraw_collateral (signed target hidden in the query string) with 13009, balance unchanged', async () => {
    const signed = '/api/v2/private/get_account_summary?currency=BTC';
    const authorization = hmacHeader(key, 'GET', signed);
    const before = await balance();
    const attack = await rawRequest(url, 'GET', `/v1/private/withdraw_collateral?currency=BTC&amount=9.5&x=${signed}`, { headers: { authorization } });
    assertError(attack, 13009);
    // the same under the other prefixes, and with the signed target as a path suffix
    for (const target of [`/api/v1/private/withdraw_collateral?currency=BTC&amount=9.5&x=${signed}`, `/api/v2/private/withdraw_collateral?currency=BTC&amount=9.5&x=${signed}`, `/x${signed}`]) {
      const r = await rawRequest(url, 'GET', target, { headers: { authorization } });
      assert.ok(r.body?.error, `${target}: ${r.text}`);
    }
    assert.equal(await balance(), before);
    assert.equal(before, 10);
  });

  it('refuses a signed buy body sent to /v1/private/sell?x=/api/v2/private/buy with 13009, no order placed', async () => {
    const body = JSON.stringify({ instrument_name: atm.name, amount: 0.1, price: atm.prices[0], type: 'limit' });
    const authorization = hmacHeader(key, 'POST', '/api/v2/private/buy', body);
    const r = await rawRequest(url, 'POST', '/v1/private/sell?x=/api/v2/private/buy', { headers: { authorization, 'content-type': 'application/json' }, body });
    assertError(r, 13009);
    assert.deepEqual(await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, victim), []);
    assert.equal(await balance(), 10);
  });

  it('verifies each prefix for what it is: a signature over /api/v2/... is refused at /v1/... and /api/v1/...', async () => {
    const ts = Date.now();
    const signed = '/api/v2/private/get_open_orders_by_currency?currency=BTC';
    for (const prefix of ['/v1/', '/api/v1/']) {
      const r = await rawRequest(url, 'GET', signed.replace('/api/v2/', prefix), { headers: { authorization: hmacHeader(key, 'GET', signed, '', ts, `p${prefix}`) } });
      assertError(r, 13009, {}, prefix);
    }
    // and each prefix signed for itself works
    for (const prefix of ['/v1/', '/api/v1/', '/api/v2/']) {
      const target = signed.replace('/api/v2/', prefix);
      assertOk(await rawRequest(url, 'GET', target, { headers: { authorization: hmacHeader(key, 'GET', target) } }), prefix);
    }
  });

  it('refuses a signature made for another method (GET signed, POST sent)', async () => {
    const uri = '/api/v2/private/get_open_orders_by_currency?currency=BTC';
    const r = await rawRequest(url, 'POST', uri, { headers: { authorization: hmacHeader(key, 'GET', uri), 'content-type': 'application/json' }, body: '' });
    assertError(r, 13009);
  });

  it('accepts a signed request once: an identical replay within the window is refused with 13009', async () => {
    const body = JSON.stringify({ instrument_name: atm.name, amount: 0.1, price: atm.prices[0], type: 'limit' });
    const authorization = hmacHeader(key, 'POST', '/api/v2/private/buy', body);
    const first = await rawRequest(url, 'POST', '/api/v2/private/buy', { headers: { authorization, 'content-type': 'application/json' }, body });
    const orderId = assertOk(first).order.order_id;
    const replay = await rawRequest(url, 'POST', '/api/v2/private/buy', { headers: { authorization, 'content-type': 'application/json' }, body });
    assertError(replay, 13009, { reason: 'replayed_signature' });
    const open = await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, victim);
    assert.deepEqual(
      open.map((o: any) => o.order_id),
      [orderId],
      'one order, not two',
    );
    await ok(url, 'private/cancel_all', {}, victim);
    // parallel identical copies: exactly one passes
    const getAuth = hmacHeader(key, 'GET', '/api/v2/private/get_positions?currency=BTC');
    const copies = await Promise.all(Array.from({ length: 5 }, () => rawRequest(url, 'GET', '/api/v2/private/get_positions?currency=BTC', { headers: { authorization: getAuth } })));
    assert.equal(copies.filter((r) => r.status === 200).length, 1);
    assert.equal(copies.filter((r) => r.body?.error?.code === 13009).length, 4);
  });

  it('accepts one nonce on different requests (ccxt signs parallel calls with the same millisecond nonce)', async () => {
    const ts = Date.now();
    for (const c of ['BTC', 'ETH']) {
      const uri = `/api/v2/private/get_open_orders_by_currency?currency=${c}`;
      assertOk(await rawRequest(url, 'GET', uri, { headers: { authorization: hmacHeader(key, 'GET', uri, '', ts, String(ts)) } }), c);
    }
  });

  it('refuses a replayed public/auth client_signature with 13004', async () => {
    const timestamp = Date.now();
    const nonce = 'once-only';
    const signature = hmacSha256Hex(key.client_secret, `${timestamp}\n${nonce}\n`);
    const params = { grant_type: 'client_signature', client_id: key.client_id, timestamp, signature, nonce, data: '' };
    const body = JSON.stringify(params);
    assertOk(await rawRequest(url, 'POST', '/api/v2/public/auth', { headers: { 'content-type': 'application/json' }, body }));
    const again = await rawRequest(url, 'POST', '/api/v2/public/auth', { headers: { 'content-type': 'application/json' }, body });
    assertError(again, 13004, { reason: 'replayed_signature' });
  });
});
