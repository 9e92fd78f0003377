// The OpenAPI document at /docs/openapi.json and the page at /docs, both generated from the method
// registry: every operation is in them, with its params, security and the shared envelopes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { allMethods } from '../../src/api/methods/index.ts';
import { ERROR_TABLE } from '../../src/api/rpc/errors.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let doc: any;
let docText: string;
let docType: string | null;

before(async () => {
  server = await startServer();
  const res = await fetch(`${server.url}/docs/openapi.json`);
  assert.equal(res.status, 200);
  docType = res.headers.get('content-type');
  docText = await res.text();
  doc = JSON.parse(docText);
});
after(() => server.stop());

function op(path: string, method: 'get' | 'post'): any {
  const o = doc.paths[path]?.[method];
  assert.ok(o, `${method.toUpperCase()} ${path} is documented`);
  return o;
}

test('the document is OpenAPI 3.1.0 JSON with info and a relative server', () => {
  assert.match(docType ?? '', /^application\/json/);
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.info.title, 'Strikebook');
  assert.equal(typeof doc.info.version, 'string');
  assert.deepEqual(doc.servers, [{ url: '/' }]);
});

test('every registry method has a GET and a POST at its canonical path, path-parameter forms too', () => {
  const ids = new Set<string>();
  for (const def of allMethods) {
    const forms = [`/api/v2/${def.name}`, ...(def.pathParam ? [`/api/v2/${def.name}/{${def.pathParam}}`] : [])];
    for (const path of forms) {
      for (const m of ['get', 'post'] as const) {
        const o = op(path, m);
        assert.deepEqual(o.tags, [def.name.split('/')[0]]);
        assert.ok(!ids.has(o.operationId), `operationId ${o.operationId} is unique`);
        ids.add(o.operationId);
      }
    }
    if (def.pathParam) {
      const p = op(`/api/v2/${def.name}/{${def.pathParam}}`, 'get').parameters.find((x: any) => x.in === 'path');
      assert.equal(p?.name, def.pathParam, def.name);
      assert.equal(p.required, true);
    }
    for (const alias of def.aliases ?? []) assert.match(op(`/api/v2/${def.name}`, 'get').description, new RegExp(`/v1/${alias}\``), `${def.name} names its alias ${alias}`);
  }
  assert.equal(op('/api/v2/private/buy', 'post').operationId, 'private_buy');
});

test('private/buy takes instrument_name and amount in its body and query, and needs a bearer token', () => {
  const post = op('/api/v2/private/buy', 'post');
  const schema = post.requestBody.content['application/json'].schema;
  assert.equal(schema.type, 'object');
  assert.ok(schema.properties.instrument_name, 'instrument_name in the body schema');
  assert.ok(schema.properties.amount, 'amount in the body schema');
  assert.ok(schema.required.includes('instrument_name'));
  // a defaulted param is filled in by the server, so a client need not send it
  assert.ok(!schema.required.includes('time_in_force'));
  assert.deepEqual(post.security, [{ bearer: [] }]);
  const get = op('/api/v2/private/buy', 'get');
  assert.deepEqual(get.security, [{ bearer: [] }]);
  const q = get.parameters.find((p: any) => p.name === 'instrument_name');
  assert.equal(q.in, 'query');
  assert.equal(q.required, true);
  assert.equal(q.schema.type, 'string');
  assert.equal(get.parameters.find((p: any) => p.name === 'amount')?.required, false);
  assert.equal(doc.components.securitySchemes.bearer.type, 'http');
  assert.equal(doc.components.securitySchemes.bearer.scheme, 'bearer');
  assert.match(doc.components.securitySchemes.bearer.description, /deri-hmac-sha256/);
});

test('a public method has no security; a public account read does', () => {
  for (const m of ['get', 'post'] as const) {
    assert.equal(op('/api/v2/public/get_instruments', m).security, undefined);
    assert.deepEqual(op('/api/v2/public/get_positions', m).security, [{ bearer: [] }]);
  }
});

test('every $ref in the document resolves inside it', () => {
  const refs: string[] = [];
  const walk = (x: unknown): void => {
    if (Array.isArray(x)) x.forEach(walk);
    else if (x !== null && typeof x === 'object') {
      for (const [k, v] of Object.entries(x)) {
        if (k === '$ref') refs.push(v as string);
        else walk(v);
      }
    }
  };
  walk(doc);
  assert.ok(refs.length >= allMethods.length * 2, 'responses use the shared components');
  for (const ref of refs) {
    assert.match(ref, /^#\//, ref);
    let node: any = doc;
    for (const part of ref.slice(2).split('/')) node = node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
    assert.ok(node !== undefined, `${ref} resolves`);
  }
});

test('responses are the shared success and error envelopes', () => {
  const o = op('/api/v2/private/buy', 'post');
  assert.equal(o.responses['200'].$ref, '#/components/responses/Result');
  for (const status of ['400', '401', '403', '404', '429', '500']) assert.ok(o.responses[status]?.$ref, `${status} documented`);
  const env = doc.components.schemas.Envelope;
  for (const f of ['jsonrpc', 'id', 'result', 'usIn', 'usOut', 'usDiff', 'testnet']) assert.ok(env.properties[f], `envelope has ${f}`);
  const err = doc.components.schemas.ErrorEnvelope.properties.error.$ref;
  assert.equal(err, '#/components/schemas/RpcError');
  for (const f of ['code', 'message', 'data']) assert.ok(doc.components.schemas.RpcError.properties[f], `error has ${f}`);
});

test('the error component lists every code of ERROR_TABLE', () => {
  const e = doc.components.schemas.RpcError;
  for (const [code, info] of Object.entries(ERROR_TABLE)) {
    assert.ok(e.description.includes(`\`${code}\` ${info.message}`), `${code} ${info.message} listed`);
    assert.ok(e.properties.code.enum.includes(Number(code)), `${code} in the enum`);
  }
  assert.match(doc.components.responses.Error401.description, /10000 authorization_required/);
});

test('/docs is an HTML page that links the JSON and lists the operations by tag with their scope', async () => {
  const res = await fetch(`${server.url}/docs`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
  const html = await res.text();
  assert.match(html, /href="\/docs\/openapi\.json"/);
  assert.ok(!/<script/i.test(html), 'no scripts');
  assert.match(html, /<h2 id="public">/);
  assert.match(html, /<h2 id="private">/);
  assert.match(html, /<code>private\/buy<\/code><\/td><td><code>trade:read_write<\/code>/);
  for (const def of allMethods) assert.ok(html.includes(`<code>${def.name}</code>`), `${def.name} listed`);
});
