import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ok, startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.stop());

test('an integer path parameter works with a JSON body as well as by GET', async () => {
  const inst = (await ok(server.url, 'public/get_instruments', { currency: 'BTC' }))[0];
  const path = `${server.url}/v1/public/get_order_book_by_instrument_id/${inst.instrument_id}`;
  const byPost = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ depth: 5 }) });
  const postBody = (await byPost.json()) as any;
  assert.equal(byPost.status, 200, JSON.stringify(postBody));
  assert.equal(postBody.result.instrument_name, inst.instrument_name);
  const byGet = (await (await fetch(`${path}?depth=5`)).json()) as any;
  assert.equal(byGet.result.instrument_name, inst.instrument_name);
});

test('a string path parameter is taken as given', async () => {
  const inst = (await ok(server.url, 'public/get_instruments', { currency: 'ETH' }))[0];
  const r = await fetch(`${server.url}/api/v2/public/get_instrument/${inst.instrument_name}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  const body = (await r.json()) as any;
  assert.equal(body.result.instrument_id, inst.instrument_id);
});
