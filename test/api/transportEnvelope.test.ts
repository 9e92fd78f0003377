// Every answer of the server is a Deribit envelope (API.md 1.2) with a code from API.md section 4,
// including the refusals that happen before any method runs: a path parameter too long, a header
// block too large, a body over the limit, an unsupported content type, a malformed
// percent-encoding, an unknown path and a method not allowed. Each is sent at every prefix, by GET
// and POST (the method refusal by the other verbs), on raw sockets so nothing is normalized away.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertEnvelope } from '../helpers/envelope.ts';
import { rawRequest, startServer, type RawReply, type TestServer } from '../helpers/server.ts';

const PREFIXES = ['/v1/', '/api/v1/', '/api/v2/'];


/** An envelope with `code`, answered with HTTP `status` and a JSON content type. */
function refused(r: RawReply, code: number, status: number, where: string): void {
  assert.ok(r.body !== null, `${where}: the answer is JSON, got ${r.status} ${r.text.slice(0, 200)}`);
  assert.match(String(r.headers['content-type']), /^application\/json/, `${where}: content type`);
  assertEnvelope({ status: r.status, body: r.body }, { where, status, testnet: true });
  assert.equal(r.body.error?.code, code, `${where}: ${r.text.slice(0, 300)}`);
}

describe('transport-level refusals answer the Deribit envelope', () => {
  let server: TestServer;
  let url: string;

  before(async () => {
    server = await startServer();
    url = server.url;
  });
  after(() => server.stop());

  const verbs = ['GET', 'POST'] as const;
  const json = { 'content-type': 'application/json' };

  it('a path parameter that is too long: 414 and -32602', async () => {
    for (const prefix of PREFIXES) {
      for (const verb of verbs) {
        for (const path of [`public/get_order_book/${'B'.repeat(300)}`, `public/get_book_summary_per_currency/${'C'.repeat(500)}`, `public/get_instrument/${'%41'.repeat(250)}`]) {
          const r = await rawRequest(url, verb, prefix + path, verb === 'POST' ? { headers: json, body: '{}' } : {});
          refused(r, -32602, 414, `${verb} ${prefix}${path.slice(0, 40)}...`);
        }
      }
    }
  });

  it('a header block that is too large: 431 and -32600', async () => {
    for (const prefix of PREFIXES) {
      for (const verb of verbs) {
        const r = await rawRequest(url, verb, `${prefix}public/get_time`, { headers: { 'x-padding': 'y'.repeat(20_000), ...(verb === 'POST' ? json : {}) }, ...(verb === 'POST' ? { body: '{}' } : {}) });
        refused(r, -32600, 431, `${verb} ${prefix} with 20 kB of headers`);
        const q = await rawRequest(url, verb, `${prefix}public/verify_invite_code?code=${'x'.repeat(20_000)}`);
        refused(q, -32600, 431, `${verb} ${prefix} with a 20 kB query string`);
      }
    }
  });

  it('a body over the limit: 413 and -32600, with and without a declared length', async () => {
    const big = JSON.stringify({ junk: 'x'.repeat(40 * 1024) });
    for (const prefix of PREFIXES) {
      for (const verb of verbs) {
        const r = await rawRequest(url, verb, `${prefix}public/get_time`, { headers: json, body: big });
        refused(r, -32600, 413, `${verb} ${prefix} with a 40 kB body`);
        const chunked = await rawRequest(url, verb, `${prefix}public/get_time`, { headers: { ...json, 'transfer-encoding': 'chunked' }, body: undefined });
        // a chunked request with no chunks is an empty body: it is served
        assert.equal(chunked.status, 200, `${verb} ${prefix} chunked and empty`);
      }
    }
  });

  it('an unsupported content type: 415 and -32600', async () => {
    for (const prefix of PREFIXES) {
      for (const verb of verbs) {
        for (const type of ['application/xml', 'multipart/form-data; boundary=x', 'image/png']) {
          const r = await rawRequest(url, verb, `${prefix}public/get_time`, { headers: { 'content-type': type }, body: '<a/>' });
          refused(r, -32600, 415, `${verb} ${prefix} as ${type}`);
        }
      }
    }
  });

  it('a malformed percent-encoding in the path or the query: 400 and -32600', async () => {
    for (const prefix of PREFIXES) {
      for (const verb of verbs) {
        for (const target of [`${prefix}public/get_instrument/BTC%E0%A4%A`, `${prefix}public/get_instrument/%ZZ`, `${prefix}public/get_instrument?instrument_name=%E0%A4%A`, `${prefix}public/get_time?x=%`]) {
          const r = await rawRequest(url, verb, target, verb === 'POST' ? { headers: json, body: '{}' } : {});
          refused(r, -32600, 400, `${verb} ${target}`);
        }
      }
    }
  });

  it('an unknown path: 404 and -32601', async () => {
    for (const prefix of PREFIXES) {
      for (const verb of verbs) {
        for (const path of ['public/no_such_method', 'private/no_such_method', 'elsewhere/get_time', 'public/get_time/extra/segments']) {
          const r = await rawRequest(url, verb, prefix + path, verb === 'POST' ? { headers: json, body: '{}' } : {});
          refused(r, -32601, 404, `${verb} ${prefix}${path}`);
        }
      }
    }
    refused(await rawRequest(url, 'GET', '/api/v3/public/get_time'), -32601, 404, 'an unknown prefix');
  });

  it('a method not allowed: 405 with Allow, and -32600', async () => {
    for (const prefix of PREFIXES) {
      for (const verb of ['PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
        for (const path of ['public/get_time', 'private/buy', 'public/get_order_book/BTC-1JAN30-1000-C']) {
          const r = await rawRequest(url, verb, prefix + path, { headers: json, body: '{}' });
          refused(r, -32600, 405, `${verb} ${prefix}${path}`);
          assert.equal(r.headers.allow, 'GET, POST, HEAD', `${verb} ${prefix}${path}: Allow`);
        }
      }
    }
  });

  it('still answers ordinary requests after all of that, by GET and POST, with JSON, text and form bodies', async () => {
    for (const prefix of PREFIXES) {
      const g = await rawRequest(url, 'GET', `${prefix}public/get_time`);
      assertEnvelope({ status: g.status, body: g.body });
      for (const [type, body] of [
        ['application/json', '{}'],
        ['application/json; charset=utf-8', '{"jsonrpc":"2.0","id":3,"method":"public/get_time"}'],
        ['text/plain', '{}'],
        ['application/x-www-form-urlencoded', '{}'],
      ] as const) {
        const p = await rawRequest(url, 'POST', `${prefix}public/get_time`, { headers: { 'content-type': type }, body });
        assert.equal(p.status, 200, `${type}: ${p.text}`);
        assert.ok(Number.isInteger(p.body.result), `${type}: ${p.text}`);
      }
      // curl -d 'currency=BTC' sends a form: its fields are the params, as in a query string
      const form = await rawRequest(url, 'POST', `${prefix}public/get_index_price`, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'index_name=btc_usd' });
      assert.equal(form.status, 200, form.text);
      assert.equal(typeof form.body.result.index_price, 'number');
    }
  });
});
