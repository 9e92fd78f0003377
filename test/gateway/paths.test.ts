// What a gateway forwards over HTTP (issue 29 item 4, src/gateway/paths.ts): the public API and the
// web app only; no spelling of the leader's loopback-only /metrics (or /ready, /health) reaches the
// leader through a gateway on the same host.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { startGateway } from '../../src/gateway/gateway.ts';
import { forwardTarget } from '../../src/gateway/paths.ts';
import { rawRequest, startServer } from '../helpers/server.ts';
import { freshStream } from '../helpers/nats.ts';

/** Targets that name the leader's /metrics (or another operator path) by a trick of spelling. */
const TRICKS = ['/metrics/', '/METRICS', '//metrics', '/%6detrics', '/%6Detrics', '/./metrics', '/api/v2/../metrics', '/api/v2/%2e%2e/metrics', '/docs/../metrics', '/metrics;x', '/metrics%3Fx=1', '/ready', '/health/', '/api/v2/public/get_time/../../../../metrics', '/assets/..%2fmetrics', 'http://127.0.0.1/metrics', '/metrics#x', '/%2fmetrics', '/\\metrics'];

test('a gateway forwards no spelling of the leader\'s /metrics: each is its own 404 or its own /metrics', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const srv = await startServer(ns.env);
  t.after(() => srv.stop());
  const gw = await startGateway({ leaderUrl: srv.url, natsUrl: ns.url, stream: ns.stream, prefix: ns.prefix, port: 0, host: '127.0.0.1', log: pino({ level: 'silent' }) });
  t.after(() => gw.close());
  // the leader serves its /metrics to any loopback peer, which the gateway is
  const leaderOnly = /^strikebook_leader \d/m;
  assert.match((await rawRequest(srv.url, 'GET', '/metrics')).text, leaderOnly, 'the leader shows its metrics to a loopback peer');
  for (const target of ['/metrics?x=1', '/metrics']) {
    const r = await rawRequest(gw.url, 'GET', target);
    assert.equal(r.status, 200, target);
    assert.doesNotMatch(r.text, leaderOnly, `${target}: the gateway's own metrics, not the leader's`);
    assert.match(r.text, /strikebook_gateway_deliveries_total/, target);
  }
  for (const target of TRICKS) {
    const r = await rawRequest(gw.url, 'GET', target);
    assert.doesNotMatch(r.text, leaderOnly, `${target} must not reach the leader's /metrics`);
    assert.doesNotMatch(r.text, /"role":"leader"|"ready":/, `${target} must not reach the leader's /health or /ready`);
    assert.equal(r.status, 404, `${target}: ${r.status} ${r.text.slice(0, 200)}`);
  }
  // what the public API and the app have still goes through
  assert.equal((await rawRequest(gw.url, 'GET', '/api/v2/public/get_time')).status, 200);
  assert.equal((await rawRequest(gw.url, 'GET', '/v1/public/get_time?x=1')).status, 200);
  assert.equal((await rawRequest(gw.url, 'GET', '/api/v2/public/get_book_summary_by_currency/BTC')).status, 200);
  assert.equal((await rawRequest(gw.url, 'GET', '/docs')).status, 200);
  assert.equal((await rawRequest(gw.url, 'GET', '/docs/openapi.json')).status, 200);
});

test('the allow-list: API, docs and web app paths are forwarded in their decoded spelling, others not', () => {
  assert.equal(forwardTarget('/api/v2/public/get_time?a=%20b'), '/api/v2/public/get_time?a=%20b');
  assert.equal(forwardTarget('/api/v2/public/get_%74ime'), '/api/v2/public/get_time');
  assert.equal(forwardTarget('/api/v1/private/buy'), '/api/v1/private/buy');
  assert.equal(forwardTarget('/'), '/');
  assert.equal(forwardTarget('/chain/BTC-27DEC24'), '/chain/BTC-27DEC24');
  assert.equal(forwardTarget('/assets/index-abc123.js'), '/assets/index-abc123.js');
  assert.equal(forwardTarget('/favicon.svg'), '/favicon.svg');
  for (const t of TRICKS) assert.equal(forwardTarget(t), null, t);
  assert.equal(forwardTarget('/api/v2/public/get_time/'), null, 'a trailing slash is another spelling');
  assert.equal(forwardTarget('/api/v3/public/get_time'), null);
  assert.equal(forwardTarget('/api/v2/admin/get_time'), null);
  assert.equal(forwardTarget('/%zz'), null, 'malformed escapes');
});
