// Issue 29, item 6 (part): /docs is HTML, so it gets the web app's protections (a CSP that runs no
// script and allows no framing, nosniff, no referrer); and the web app's CSP lets the page connect
// to its own origin only, its WebSocket included, instead of `ws: wss:` (any host).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rawRequest, startServer } from '../helpers/server.ts';

/** The CSP directives as a map: name -> its sources. */
function directives(csp: unknown): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const d of String(csp).split(';')) {
    const [name, ...sources] = d.trim().split(/\s+/);
    if (name) out.set(name, sources);
  }
  return out;
}

test('/docs and its OpenAPI document carry a CSP without scripts or framing, nosniff and no-referrer', async (t) => {
  const srv = await startServer();
  t.after(() => srv.stop());
  const docs = await rawRequest(srv.url, 'GET', '/docs');
  assert.equal(docs.status, 200);
  const csp = directives(docs.headers['content-security-policy']);
  assert.deepEqual(csp.get('default-src'), ["'none'"], 'nothing loads unless named');
  assert.deepEqual(csp.get('frame-ancestors'), ["'none'"]);
  assert.deepEqual(csp.get('base-uri'), ["'none'"]);
  assert.equal(csp.get('script-src'), undefined, 'no script: default-src none covers it');
  assert.match(String(csp.get('style-src')), /^'sha256-[A-Za-z0-9+/]+=*'$/, 'its one inline style, by hash');
  assert.equal(docs.headers['x-content-type-options'], 'nosniff');
  assert.equal(docs.headers['referrer-policy'], 'no-referrer');
  // the hash is the hash of the style the page holds
  const style = /<style>([^<]*)<\/style>/.exec(docs.text)![1]!;
  const { createHash } = await import('node:crypto');
  assert.deepEqual(csp.get('style-src'), [`'sha256-${createHash('sha256').update(style).digest('base64')}'`]);
  const openapi = await rawRequest(srv.url, 'GET', '/docs/openapi.json');
  assert.equal(openapi.headers['x-content-type-options'], 'nosniff');
  assert.deepEqual(directives(openapi.headers['content-security-policy']).get('default-src'), ["'none'"]);
});

test('the web app\'s connect-src names its own origin and WebSocket URL, not any ws: or wss: host', async (t) => {
  const srv = await startServer();
  t.after(() => srv.stop());
  const host = new URL(srv.url).host;
  const page = await rawRequest(srv.url, 'GET', '/signin');
  const connect = directives(page.headers['content-security-policy']).get('connect-src');
  assert.deepEqual(connect, ["'self'", `ws://${host}`, `wss://${host}`]);
  // a Host header that is not a host name names nothing but 'self'
  const odd = await rawRequest(srv.url, 'GET', '/signin', { headers: { host: 'evil.example; script-src *' } });
  assert.deepEqual(directives(odd.headers['content-security-policy']).get('connect-src'), ["'self'"]);
  assert.deepEqual(directives(odd.headers['content-security-policy']).get('script-src'), ["'self'"]);
});
