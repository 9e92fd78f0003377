// API keys (API.md 2 and 3.1): creation with the secret shown once and encrypted at rest, listing
// and removal, and the three ways a key authenticates: deri-hmac-sha256 over the raw request
// target and body, HTTP Basic, and public/auth with client_credentials / client_signature.
// Scopes are enforced with 13403.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import path from 'node:path';
import { readdirSync } from 'node:fs';
import { decryptSecret, hmacSha256Hex } from '../../src/auth/crypto.ts';
import { assertError, assertOk } from '../helpers/envelope.ts';
import { atmCall, type Market } from '../helpers/market.ts';
import { adminToken, ok, request, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

interface Key {
  id: number;
  client_id: string;
  client_secret: string;
  scope: string;
}

function hmacHeader(key: { client_id: string; client_secret: string }, method: string, uri: string, body = '', ts = Date.now(), nonce = String(ts)): string {
  const sig = hmacSha256Hex(key.client_secret, `${ts}\n${nonce}\n${method}\n${uri}\n${body}\n`);
  return `deri-hmac-sha256 id=${key.client_id},ts=${ts},sig=${sig},nonce=${nonce}`;
}

/** A GET signed exactly as ccxt signs it. */
async function signedGet(url: string, key: { client_id: string; client_secret: string }, uri: string, opts: { ts?: number; nonce?: string; sendUri?: string } = {}) {
  const authorization = hmacHeader(key, 'GET', uri, '', opts.ts, opts.nonce);
  return request(url, opts.sendUri ?? uri, { headers: { authorization } });
}

function basic(key: { client_id: string; client_secret: string }): string {
  return `Basic ${Buffer.from(`${key.client_id}:${key.client_secret}`).toString('base64')}`;
}

describe('API keys', () => {
  let server: TestServer;
  let url: string;
  let user: string;
  let other: string;
  let full: Key;
  let readOnly: Key;
  let otherKey: Key;
  let atm: Market;

  before(async () => {
    server = await startServer();
    url = server.url;
    const admin = await adminToken(url);
    user = await userToken(url, admin, 'keys@example.com', { currency: 'BTC', amount: 10 });
    other = await userToken(url, admin, 'other-keys@example.com', { currency: 'BTC', amount: 10 });
    full = await ok(url, 'private/create_api_key', { scope: 'account:read_write trade:read_write', name: 'bot' }, user);
    readOnly = await ok(url, 'private/create_api_key', { scope: 'trade:read' }, user);
    otherKey = await ok(url, 'private/create_api_key', { scope: 'trade:read_write account:read' }, other);
    atm = await atmCall(url);
  });
  after(() => server.stop());

  it('creates a key with its scope and shows the secret only in the creation reply', async () => {
    assert.equal(typeof full.id, 'number');
    assert.match(full.client_id, /^[A-Za-z0-9_-]{8,}$/);
    assert.match(full.client_secret, /^[A-Za-z0-9_-]{40,}$/);
    assert.equal(full.scope, 'account:read_write trade:read_write');
    assert.equal(readOnly.scope, 'trade:read');
    const list = await ok(url, 'private/list_api_keys', {}, user);
    assert.deepEqual(
      list.map((k: any) => [k.id, k.client_id, k.scope, k.name]),
      [
        [full.id, full.client_id, full.scope, 'bot'],
        [readOnly.id, readOnly.client_id, 'trade:read', ''],
      ],
    );
    // Deribit's key objects carry client_secret: here the mask, never the secret
    for (const k of list) assert.equal(k.client_secret, '********', 'no secret in the list');
    assert.ok(!JSON.stringify(list).includes(full.client_secret) && !JSON.stringify(list).includes(readOnly.client_secret));
    // another user sees only their own key
    assert.deepEqual((await ok(url, 'private/list_api_keys', {}, other)).map((k: any) => k.id), [otherKey.id]);
  });

  it('refuses a scope a key cannot carry with -32602', async () => {
    for (const scope of ['admin', 'trade:write', 'nonsense', ' ']) assertError(await rpc(url, 'private/create_api_key', { scope }, user), -32602, {}, scope);
    assertError(await rpc(url, 'private/create_api_key', {}, user), -32602);
    // Deribit's parameter name works too
    const k = await ok(url, 'private/create_api_key', { max_scope: 'trade:read account:read' }, user);
    assert.equal(k.scope, 'trade:read account:read');
    await ok(url, 'private/remove_api_key', { id: k.id }, user);
  });

  it('keeps the secret encrypted at rest: not in the journal, not in the state, decryptable only with the server key', async () => {
    const rec = server.app.services.ex.apiKeys.byClientId.get(full.client_id)!;
    assert.ok(rec);
    assert.ok(!JSON.stringify(rec).includes(full.client_secret));
    assert.equal(decryptSecret(rec.encSecret, server.app.services.serverKey, full.client_id), full.client_secret);
    assert.throws(() => decryptSecret(rec.encSecret, server.app.services.serverKey, readOnly.client_id), 'bound to its client id');
    const dbFile = readdirSync(server.dataDir).find((f) => f.endsWith('.db') || f.endsWith('.sqlite'));
    assert.ok(dbFile, 'the journal database exists');
    const db = new Database(path.join(server.dataDir, dbFile), { readonly: true });
    try {
      const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type='table'").all() as { name: string }[]).map((t) => t.name);
      for (const t of tables) {
        const rows = db.prepare(`SELECT * FROM "${t}"`).all();
        const text = JSON.stringify(rows);
        for (const k of [full, readOnly, otherKey]) assert.ok(!text.includes(k.client_secret), `no plain secret in table ${t}`);
      }
    } finally {
      db.close();
    }
  });

  it('authenticates a deri-hmac-sha256 GET signed over the raw request target, at every prefix', async () => {
    for (const prefix of ['/api/v2/', '/api/v1/', '/v1/']) {
      const r = await signedGet(url, full, `${prefix}private/get_open_orders_by_currency?currency=BTC&kind=option`);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.result, []);
    }
    // the raw target, not a re-serialisation: percent-encoding as the client sent it
    const r = await signedGet(url, full, '/api/v2/private/cancel_by_label?label=my%20label%2Fx%26y&currency=BTC');
    assert.equal(r.body.result, 0, r.text);
  });

  it('authenticates a signed POST over its raw JSON body', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'private/get_open_orders_by_currency', params: { currency: 'BTC' } });
    const uri = '/api/v2/private/get_open_orders_by_currency';
    const authorization = hmacHeader(full, 'POST', uri, body);
    const r = await request(url, uri, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.id, 3);
    // the same signature over another body is refused
    const r2 = await request(url, uri, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: body.replace('BTC', 'ETH') });
    assertError(r2, 13009);
  });

  it('refuses with 13009 a signature older than 60 s, one from the future, a tampered query string and another key\'s id', async () => {
    const uri = '/api/v2/private/get_open_orders_by_currency?currency=BTC';
    assertOk(await signedGet(url, full, uri, { ts: Date.now() - 50_000 }), 'within the window');
    const stale = await signedGet(url, full, uri, { ts: Date.now() - 61_000 });
    assertError(stale, 13009);
    assert.equal(stale.status, 401);
    assertError(await signedGet(url, full, uri, { ts: Date.now() + 61_000 }), 13009);
    assertError(await signedGet(url, full, uri, { sendUri: '/api/v2/private/get_open_orders_by_currency?currency=ETH' }), 13009);
    assertError(await signedGet(url, full, uri, { sendUri: uri + '&kind=option' }), 13009);
    // signed with this key's secret but claiming another key's id
    assertError(await signedGet(url, { client_id: otherKey.client_id, client_secret: full.client_secret }, uri), 13009);
    assertError(await signedGet(url, { client_id: 'no-such-client', client_secret: full.client_secret }, uri), 13009);
    // malformed headers
    for (const authorization of ['deri-hmac-sha256', 'deri-hmac-sha256 id=x', `deri-hmac-sha256 id=${full.client_id},ts=abc,sig=00,nonce=1`]) {
      assertError(await request(url, uri, { headers: { authorization } }), 13009, {}, authorization);
    }
  });

  it('accepts equal nonces on different parallel requests, and an identical signature only once', async () => {
    const ts = Date.now();
    const uris = ['BTC', 'ETH', 'USDC'].map((c) => `/api/v2/private/get_open_orders_by_currency?currency=${c}`);
    const results = await Promise.all(uris.map((uri) => request(url, uri, { headers: { authorization: hmacHeader(full, 'GET', uri, '', ts, String(ts)) } })));
    for (const r of results) assert.equal(r.status, 200, r.text);
    // the same signed request again is a replay (test/auth/signatureBinding.test.ts covers more)
    assertError(await request(url, uris[0]!, { headers: { authorization: hmacHeader(full, 'GET', uris[0]!, '', ts, String(ts)) } }), 13009, { reason: 'replayed_signature' });
  });

  it('authenticates HTTP Basic with the client id and secret, and refuses a wrong secret with 13009', async () => {
    const r = await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, undefined, { headers: { authorization: basic(full) } });
    assertOk(r);
    const bad = await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, undefined, { headers: { authorization: basic({ ...full, client_secret: full.client_secret + 'x' }) } });
    assertError(bad, 13009);
    assert.equal(bad.status, 401);
  });

  it('issues a token for client_credentials with the key\'s scope, and refuses a wrong secret with 13004', async () => {
    const t = await ok(url, 'public/auth', { grant_type: 'client_credentials', client_id: readOnly.client_id, client_secret: readOnly.client_secret });
    assert.equal(t.token_type, 'bearer');
    assert.match(t.scope, /trade:read/);
    assertOk(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, t.access_token));
    assertError(await rpc(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0] }, t.access_token), 13403);
    assertError(await rpc(url, 'public/auth', { grant_type: 'client_credentials', client_id: readOnly.client_id, client_secret: 'wrong' }), 13004);
    assertError(await rpc(url, 'public/auth', { grant_type: 'client_credentials', client_id: 'nobody', client_secret: 'wrong' }), 13004);
  });

  it('issues a token for client_signature, refusing a bad or stale signature with 13004', async () => {
    const timestamp = Date.now();
    const nonce = 'abc123';
    const data = '';
    const signature = hmacSha256Hex(full.client_secret, `${timestamp}\n${nonce}\n${data}`);
    const t = await ok(url, 'public/auth', { grant_type: 'client_signature', client_id: full.client_id, timestamp, signature, nonce, data });
    const buy = await rpc(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0] }, t.access_token);
    assert.equal(assertOk(buy).order.order_state, 'open');
    await ok(url, 'private/cancel_all', {}, t.access_token);
    assertError(await rpc(url, 'public/auth', { grant_type: 'client_signature', client_id: full.client_id, timestamp, signature: signature.replace(/.$/, (c) => (c === '0' ? '1' : '0')), nonce, data }), 13004);
    const old = timestamp - 61_000;
    const oldSig = hmacSha256Hex(full.client_secret, `${old}\n${nonce}\n${data}`);
    assertError(await rpc(url, 'public/auth', { grant_type: 'client_signature', client_id: full.client_id, timestamp: old, signature: oldSig, nonce, data }), 13004);
  });

  it('lets a trade:read key read orders but refuses private/buy with 13403 and HTTP 403', async () => {
    const placed = await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0] }, user);
    const id = placed.order.order_id;
    const open = await signedGet(url, readOnly, `/api/v2/private/get_open_orders_by_instrument?instrument_name=${atm.name}`);
    assert.deepEqual(assertOk(open).map((o: any) => o.order_id), [id]);
    assert.equal(assertOk(await signedGet(url, readOnly, `/api/v2/private/get_order_state?order_id=${id}`)).order_id, id);
    const buy = await signedGet(url, readOnly, `/api/v2/private/buy?instrument_name=${atm.name}&amount=0.1&type=limit&price=${atm.prices[0]}`);
    assertError(buy, 13403);
    assert.equal(buy.status, 403);
    assertError(await signedGet(url, readOnly, `/api/v2/private/cancel?order_id=${id}`), 13403);
    // account scope: a trade-only key cannot manage keys
    assertError(await signedGet(url, readOnly, '/api/v2/private/list_api_keys'), 13403);
    // the full key may trade
    assertOk(await signedGet(url, full, `/api/v2/private/cancel?order_id=${id}`));
  });

  it('never grants admin operations to a key of an administrator', async () => {
    const admin = await ok(url, 'public/auth', { grant_type: 'password', username: 'admin@example.com', password: 'admin-password-1' });
    const key = await ok(url, 'private/create_api_key', { scope: 'account:read_write trade:read_write' }, admin.access_token);
    assertError(await signedGet(url, key, '/api/v2/private/list_users'), 13021);
  });

  it('removes a key: it no longer authenticates, and another user\'s key id is not found', async () => {
    const k = await ok(url, 'private/create_api_key', { scope: 'trade:read' }, user);
    assertOk(await signedGet(url, k, '/api/v2/private/get_open_orders_by_currency?currency=BTC'));
    const token = (await ok(url, 'public/auth', { grant_type: 'client_credentials', client_id: k.client_id, client_secret: k.client_secret })).access_token;
    assertOk(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, token));
    assertError(await rpc(url, 'private/remove_api_key', { id: k.id }, other), 13020);
    assert.equal(await ok(url, 'private/remove_api_key', { id: k.id }, user), 'ok');
    assertError(await signedGet(url, k, '/api/v2/private/get_open_orders_by_currency?currency=BTC'), 13009);
    assertError(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, undefined, { headers: { authorization: basic(k) } }), 13009);
    assertError(await rpc(url, 'private/remove_api_key', { id: k.id }, user), 13020);
    // a token issued to the key dies with it
    assertError(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, token), 13009);
    assertError(await rpc(url, 'public/auth', { grant_type: 'client_credentials', client_id: k.client_id, client_secret: k.client_secret }), 13004);
  });
});

describe('API keys across a restart', () => {
  it('keeps keys and the server key, so a signed request works after recovery', async () => {
    let server = await startServer();
    const dataDir = server.dataDir;
    try {
      const admin = await adminToken(server.url);
      const user = await userToken(server.url, admin, 'restart@example.com');
      const key = await ok(server.url, 'private/create_api_key', { scope: 'trade:read' }, user);
      const hash = server.app.services.ex.apiKeys.byId.size;
      await server.stop({ keepData: true });
      server = await startServer({}, dataDir);
      assert.equal(server.app.services.ex.apiKeys.byId.size, hash);
      const r = await signedGet(server.url, key, '/api/v2/private/get_open_orders_by_currency?currency=BTC');
      assert.equal(r.status, 200, r.text);
    } finally {
      await server.stop();
    }
  });
});

describe('API-key signatures with the test clock', () => {
  it('accepts a signature on the client\'s wall clock after set_test_time moved the exchange clock', async () => {
    const server = await startServer({ STRIKEBOOK_TEST_CLOCK: '1' });
    try {
      const admin = await adminToken(server.url);
      const user = await userToken(server.url, admin, 'clock@example.com');
      const key = await ok(server.url, 'private/create_api_key', { scope: 'trade:read' }, user);
      // three hours ahead of both the exchange clock (pinned or not) and the wall clock
      const ahead = Math.max(await ok(server.url, 'public/get_time'), Date.now()) + 3 * 3600_000;
      await ok(server.url, 'private/set_test_time', { timestamp: ahead }, admin);
      const uri = '/api/v2/private/get_open_orders_by_currency?currency=BTC';
      assert.equal((await signedGet(server.url, key, uri)).status, 200, 'wall clock');
      const exchangeNow = await ok(server.url, 'public/get_time');
      assert.equal((await signedGet(server.url, key, uri, { ts: exchangeNow })).status, 200, 'exchange clock');
      assertError(await signedGet(server.url, key, uri, { ts: Date.now() - 3_600_000 }), 13009);
    } finally {
      await server.stop();
    }
  });
});
