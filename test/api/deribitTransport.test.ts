// Deribit transport parity (issue 31 item 1): JSON-RPC over POST to /api/v2 with the method in the
// body, batches, public/hello, public/test's version, id-less WebSocket requests, and token lifetimes
// asked for through `expires:NUMBER`.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import WebSocket from 'ws';
import { MAX_BATCH } from '../../src/api/http/bodyMethod.ts';
import { assertError, assertOk } from '../helpers/envelope.ts';
import { adminToken, ok, request, ROOT, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

const VERSION: string = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;

function post(url: string, p: string, body: unknown, token?: string) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  return request(url, p, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

describe('Deribit transport', () => {
  let srv: TestServer;
  let admin: string;
  let user: string;

  before(async () => {
    srv = await startServer({ STRIKEBOOK_MAX_ACCESS_TOKEN_TTL: '86400' });
    admin = await adminToken(srv.url);
    user = await userToken(srv.url, admin, 'transport@example.com', { currency: 'BTC', amount: 10 });
  });
  after(() => srv.stop());

  it('answers a JSON-RPC request POSTed to /api/v2, /api/v1 and /v1 with the method in the body, with or without a leading slash', async () => {
    for (const p of ['/api/v2', '/api/v2/', '/api/v1', '/v1']) {
      for (const method of ['public/get_time', '/public/get_time']) {
        const r = await post(srv.url, p, { jsonrpc: '2.0', id: 42, method, params: {} });
        assert.equal(r.status, 200, `${p} ${method}: ${r.text}`);
        assert.equal(r.body.id, 42);
        assert.equal(typeof r.body.result, 'number', `${p} ${method}`);
      }
    }
  });

  it('runs a private method named in the body with the bearer token, and refuses it without one', async () => {
    const r = await post(srv.url, '/api/v2', { jsonrpc: '2.0', id: 'a', method: 'private/get_account_summary', params: { currency: 'BTC' } }, user);
    assert.equal(r.body.id, 'a');
    assert.equal(r.body.result.balance, 10);
    const anon = await post(srv.url, '/api/v2', { jsonrpc: '2.0', id: 'b', method: 'private/get_account_summary', params: { currency: 'BTC' } });
    assert.equal(anon.body.id, 'b');
    assertError({ status: anon.status, body: anon.body }, 10000);
  });

  it('answers an unknown method in the body with -32601 and its id, and a body without a method with -32600', async () => {
    const r = await post(srv.url, '/api/v2', { jsonrpc: '2.0', id: 7, method: 'public/no_such_method', params: {} });
    assert.equal(r.body.id, 7);
    assertError({ status: r.status, body: r.body }, -32601);
    const none = await post(srv.url, '/api/v2', { jsonrpc: '2.0', id: 8, params: {} });
    assertError({ status: none.status, body: none.body }, -32600);
    assert.equal(none.body.id, 8);
  });

  it('answers a batch with one envelope per request, in order, each with its id', async () => {
    const r = await post(srv.url, '/api/v2', [
      { jsonrpc: '2.0', id: 1, method: 'public/get_time', params: {} },
      { jsonrpc: '2.0', id: 2, method: 'public/no_such_method', params: {} },
      { jsonrpc: '2.0', id: 3, method: 'private/get_account_summary', params: { currency: 'BTC' } },
      'not a request',
    ], user);
    assert.equal(r.status, 200);
    assert.ok(Array.isArray(r.body), r.text);
    assert.deepEqual(r.body.map((e: any) => e.id), [1, 2, 3, null]);
    assert.equal(typeof r.body[0].result, 'number');
    assert.equal(r.body[1].error.code, -32601);
    assert.equal(r.body[2].result.currency, 'BTC');
    assert.equal(r.body[3].error.code, -32600);
  });

  it('refuses an empty batch and one over the bound, running none of it', async () => {
    assertError(await post(srv.url, '/api/v2', []), -32600);
    const big = Array.from({ length: MAX_BATCH + 1 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'private/buy', params: { instrument_name: 'BTC-PERPETUAL', amount: 1 } }));
    const r = await post(srv.url, '/api/v2', big, user);
    assertError({ status: r.status, body: r.body }, -32600);
    assert.match(r.body.error.data.reason, new RegExp(`at most ${MAX_BATCH}`));
  });

  it('serves a raw JSON-RPC-over-POST client: every call POSTed to /api/v2, auth by client_credentials, orders, label reads and a batch', async () => {
    // what a Deribit Python client does: one URL, the method in the body, the token as a bearer
    let nextId = 1;
    const session: { token?: string } = {};
    const call = async (method: string, params: Record<string, unknown> = {}) => {
      const r = await post(srv.url, '/api/v2', { jsonrpc: '2.0', id: nextId++, method, params }, session.token);
      if (r.body.error) throw new Error(`${method}: ${JSON.stringify(r.body.error)}`);
      return r.body.result;
    };
    const key = await ok(srv.url, 'private/create_api_key', { max_scope: 'trade:read_write account:read' }, user);
    assert.equal(typeof (await call('public/get_time')), 'number');
    const auth = await call('public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret });
    session.token = auth.access_token;
    const instruments = await call('public/get_instruments', { currency: 'BTC', kind: 'option' });
    const inst = instruments.find((i: any) => i.option_type === 'call');
    const book = await call('public/get_order_book', { instrument_name: inst.instrument_name });
    const placed = await call('private/buy', { instrument_name: inst.instrument_name, amount: 0.1, price: book.min_price, label: 'raw-post' });
    assert.equal(placed.order.order_state, 'open');
    const [byLabel, summary] = JSON.parse((await post(srv.url, '/api/v2', [
      { jsonrpc: '2.0', id: nextId++, method: 'private/get_open_orders_by_label', params: { currency: 'BTC', label: 'raw-post' } },
      { jsonrpc: '2.0', id: nextId++, method: 'private/get_account_summary', params: { currency: 'BTC' } },
    ], session.token)).text);
    assert.deepEqual(byLabel.result.map((o: any) => o.order_id), [placed.order.order_id]);
    assert.equal(summary.result.currency, 'BTC');
    assert.equal(await call('private/cancel_all'), 1);
  });

  it('answers public/hello with our version over HTTP and WebSocket, and public/test with the package version', async () => {
    const h = assertOk(await rpc(srv.url, 'public/hello', { client_name: 'bot', client_version: '1.0' }));
    assert.deepEqual(h, { version: VERSION });
    assert.deepEqual(await ok(srv.url, 'public/test'), { version: VERSION });
    assertError(await rpc(srv.url, 'public/hello', { client_version: '1.0' }), -32602);
    const ws = await WsClient.open(srv.url);
    try {
      assert.deepEqual(await ws.ok('public/hello', { client_name: 'bot', client_version: '1.0' }), { version: VERSION });
    } finally {
      await ws.close();
    }
  });

  it('refuses a WebSocket request without an id, as Deribit does, and does not run it', async () => {
    const ws = new WebSocket(srv.url.replace(/^http/, 'ws') + '/ws/api/v2');
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    try {
      const answer = new Promise<any>((resolve) => ws.once('message', (d) => resolve(JSON.parse(d.toString()))));
      ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'public/auth', params: { grant_type: 'password', username: 'transport@example.com', password: 'user-password-1' } }));
      const r = await answer;
      assert.equal(r.error.code, -32600, JSON.stringify(r));
      assert.equal('id' in r, false);
      assert.equal(r.result, undefined);
    } finally {
      ws.close();
    }
  });

  it('gives a token the lifetime asked for with expires:NUMBER (seconds), capped at the configured maximum, and expires it then', async () => {
    const creds = { grant_type: 'password', username: 'transport@example.com', password: 'user-password-1' };
    const plain = await ok(srv.url, 'public/auth', creds);
    assert.equal(plain.expires_in, 3600, 'the default lifetime, in seconds');
    const short = await ok(srv.url, 'public/auth', { ...creds, scope: 'trade:read expires:600' });
    assert.equal(short.expires_in, 600);
    assert.match(short.scope, /\bexpires:600\b/);
    assert.match(short.scope, /\btrade:read\b/);
    const long = await ok(srv.url, 'public/auth', { ...creds, scope: 'expires:99999999' });
    assert.equal(long.expires_in, 86400, 'capped at STRIKEBOOK_MAX_ACCESS_TOKEN_TTL');
    assertError(await rpc(srv.url, 'public/auth', { ...creds, scope: 'expires:0' }), -32602);
    // the short token works until its lifetime ends, and not after
    assertOk(await rpc(srv.url, 'private/get_positions', { currency: 'BTC' }, short.access_token));
    const now = await ok(srv.url, 'public/get_time');
    await ok(srv.url, 'private/set_test_time', { timestamp: now + 601_000 }, admin);
    assert.equal((await rpc(srv.url, 'private/get_positions', { currency: 'BTC' }, short.access_token)).body.error?.code !== undefined, true, 'expired after 600 s');
    assertOk(await rpc(srv.url, 'private/get_positions', { currency: 'BTC' }, long.access_token));
  });
});
