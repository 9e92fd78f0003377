// The HTTP fast path (src/api/http/server.ts): a POST with a body of declared length is answered
// without Fastify; the same request sent chunked (no content-length) goes through Fastify. Both must
// give the same status, content type and envelope, for successes and for every kind of error.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let admin: string;
before(async () => {
  server = await startServer();
  admin = await adminToken(server.url);
});
after(() => server.stop());

interface Answer {
  status: number;
  contentType: string | undefined;
  connection: string | undefined;
  envelope: Record<string, unknown>;
}

/** POSTs `body` to `path`, with a content-length (fast path) or chunked (Fastify). */
function post(path: string, body: string, chunked: boolean, headers: Record<string, string> = {}): Promise<Answer> {
  const url = new URL(path, server.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', ...headers, ...(chunked ? {} : { 'content-length': String(Buffer.byteLength(body)) }) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          const envelope = JSON.parse(text) as Record<string, unknown>;
          // the timing fields differ from one answer to the next
          for (const k of ['usIn', 'usOut', 'usDiff']) {
            assert.equal(typeof envelope[k], 'number', `${k} in ${text}`);
            delete envelope[k];
          }
          resolve({ status: res.statusCode!, contentType: res.headers['content-type'], connection: res.headers.connection, envelope });
        });
      },
    );
    req.on('error', reject);
    if (chunked) req.setHeader('transfer-encoding', 'chunked');
    req.end(body);
  });
}

async function bothPaths(path: string, body: string, headers: Record<string, string> = {}): Promise<Answer> {
  const fast = await post(path, body, false, headers);
  const fastify = await post(path, body, true, headers);
  assert.deepEqual(fast, fastify, `${path} ${body}`);
  assert.equal(fast.contentType, 'application/json; charset=utf-8');
  assert.equal(fast.connection, 'keep-alive');
  return fast;
}

test('both HTTP paths answer a public method alike, bare params and JSON-RPC', async () => {
  const plain = await bothPaths('/api/v2/public/get_currencies', '{}');
  assert.equal(plain.status, 200);
  assert.ok(Array.isArray(plain.envelope.result) && plain.envelope.result.length > 0);
  const rpc = await bothPaths('/v1/public/get_currencies', JSON.stringify({ jsonrpc: '2.0', id: 42, method: 'public/get_currencies', params: {} }));
  assert.equal(rpc.envelope.id, 42);
  const empty = await bothPaths('/api/v2/public/get_currencies', '');
  assert.deepEqual(empty.envelope.result, plain.envelope.result);
});

test('both HTTP paths give the same errors', async () => {
  const cases: Array<[string, string, Record<string, string>, number, number]> = [
    ['/api/v2/public/get_currencies', '{oops', {}, 400, -32700],
    ['/api/v2/public/get_currencies', '[1]', {}, 400, -32600],
    ['/api/v2/public/get_book_summary_by_currency', '{"currency":7}', {}, 400, -32602],
    ['/api/v2/private/buy', '{"instrument_name":"BTC-1JAN30-1-C","amount":1}', {}, 401, 10000],
    ['/api/v2/private/buy', '{"instrument_name":"BTC-1JAN30-1-C","amount":1}', { authorization: 'Bearer not-a-token' }, 401, 13009],
  ];
  for (const [path, body, headers, status, code] of cases) {
    const a = await bothPaths(path, body, headers);
    assert.equal(a.status, status, `${path} ${body}: ${JSON.stringify(a.envelope)}`);
    assert.equal((a.envelope.error as { code: number }).code, code, `${path} ${body}`);
  }
});

test('a private call answers alike on both paths (an order refused for funds, identical both times)', async () => {
  const token = await userToken(server.url, admin, 'fastpath@example.com');
  const inst = (await ok(server.url, 'public/get_instruments', { currency: 'BTC' }))[0].instrument_name as string;
  const refused = await bothPaths('/api/v2/private/sell', JSON.stringify({ instrument_name: inst, amount: 1, type: 'market' }), { authorization: `Bearer ${token}` });
  assert.equal((refused.envelope.error as { code: number }).code, 10009, JSON.stringify(refused.envelope));
  const open = await bothPaths('/api/v2/private/get_open_orders_by_currency', '{"currency":"BTC"}', { authorization: `Bearer ${token}` });
  assert.deepEqual(open.envelope.result, [], JSON.stringify(open.envelope));
});

/** GETs `path`: with no content-length (fast path) or with `content-length: 0` (Fastify). */
function get(path: string, viaFastify: boolean, headers: Record<string, string> = {}): Promise<Answer> {
  const url = new URL(path, server.url);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'GET', headers: { ...headers, ...(viaFastify ? { 'content-length': '0' } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        const envelope = JSON.parse(text) as Record<string, unknown>;
        for (const k of ['usIn', 'usOut', 'usDiff']) delete envelope[k];
        resolve({ status: res.statusCode!, contentType: res.headers['content-type'], connection: res.headers.connection, envelope });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

test('both HTTP paths answer a GET alike: results, repeated reads of one book, and errors', async () => {
  const inst = (await ok(server.url, 'public/get_instruments', { currency: 'BTC' }))[0].instrument_name as string;
  const token = await userToken(server.url, admin, 'fastget@example.com');
  const cases: Array<[string, Record<string, string>, number, number | null]> = [
    [`/api/v2/public/get_order_book?instrument_name=${inst}&depth=5`, {}, 200, null],
    [`/api/v2/public/get_order_book?instrument_name=${inst}&depth=5`, {}, 200, null], // a cached book: the same text
    [`/v1/public/get_order_book?instrument_name=${inst}`, {}, 200, null],
    ['/api/v2/public/get_currencies', {}, 200, null],
    ['/api/v2/public/get_order_book?instrument_name=NOPE-1JAN30-1-C', {}, 400, 10020],
    ['/api/v2/public/get_order_book?instrument_name=x&depth=abc', {}, 400, -32602],
    ['/api/v2/public/get_book_summary_by_currency?currency=BTC&currency=ETH', {}, 400, -32602],
    ['/api/v2/private/get_open_orders_by_currency?currency=BTC', {}, 401, 10000],
    ['/api/v2/private/get_open_orders_by_currency?currency=BTC', { authorization: `Bearer ${token}` }, 200, null],
  ];
  for (const [path, headers, status, code] of cases) {
    const fast = await get(path, false, headers);
    const fastify = await get(path, true, headers);
    assert.deepEqual(fast, fastify, path);
    assert.equal(fast.status, status, `${path}: ${JSON.stringify(fast.envelope)}`);
    assert.equal(fast.contentType, 'application/json; charset=utf-8');
    if (code !== null) assert.equal((fast.envelope.error as { code: number }).code, code, path);
  }
  // a query string that does not percent-decode is Fastify's to refuse, in the envelope
  const bad = await get('/api/v2/public/get_order_book?instrument_name=%zz', false);
  assert.equal(bad.status, 400);
  assert.equal((bad.envelope.error as { code: number }).code, -32600);
});
