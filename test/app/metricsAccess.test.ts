// Issue 29, item 3: /metrics is an operator's. It used to be served to any loopback peer, which
// every same-host reverse proxy and gateway is, so anything that forwarded the path (`/metrics/`,
// `/metrics?x=1` slipped past a gateway's exact match) published it. Now: a token, a listener of
// its own, or (sandbox only) a loopback peer on a request that no proxy carried.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { metricsListeners } from '../../src/api/http/server.ts';
import { ConfigError, loadConfig } from '../../src/app/config.ts';
import pino from 'pino';
import { startGateway } from '../../src/gateway/gateway.ts';
import { startForwardingProxy } from '../helpers/forwardingProxy.ts';
import { freshStream } from '../helpers/nats.ts';
import { rawRequest, startServer } from '../helpers/server.ts';

const TOKEN = 'metrics-token-0123456789abcdef';
const served = (r: { status: number; text: string }) => r.status === 200 && /strikebook_journal_seq/.test(r.text);

test('through a same-host reverse proxy /metrics is not served, in any spelling', async (t) => {
  const srv = await startServer();
  t.after(() => srv.stop());
  const proxy = await startForwardingProxy(srv.url);
  t.after(() => proxy.close());
  assert.ok(served(await rawRequest(srv.url, 'GET', '/metrics')), 'this host, directly, in a sandbox: served');
  for (const path of ['/metrics', '/metrics/', '/metrics?x=1']) {
    const r = await rawRequest(proxy.url, 'GET', path);
    assert.equal(r.status, 404, path);
    assert.equal(r.body.error.code, -32601, path);
    assert.doesNotMatch(r.text, /strikebook_/, path);
  }
});

test('through the stream gateway the leader\'s /metrics is not served, in any spelling the gateway forwards', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const srv = await startServer(ns.env);
  t.after(() => srv.stop());
  const gw = await startGateway({ leaderUrl: srv.url, natsUrl: ns.url, stream: ns.stream, prefix: ns.prefix, port: 0, host: '127.0.0.1', log: pino({ level: 'silent' }) });
  t.after(() => gw.close());
  for (const path of ['/metrics', '/metrics/', '/metrics?x=1']) {
    const r = await rawRequest(gw.url, 'GET', path);
    assert.doesNotMatch(r.text, /strikebook_journal_seq/, `${path}: the leader's metrics`);
  }
});

test('a loopback request carrying a forwarding header, or from a trusted proxy, is not served', async (t) => {
  const srv = await startServer({ STRIKEBOOK_TRUSTED_PROXIES: '127.0.0.1' });
  t.after(() => srv.stop());
  for (const h of ['x-forwarded-for', 'forwarded', 'x-real-ip', 'via']) {
    assert.equal((await rawRequest(srv.url, 'GET', '/metrics', { headers: { [h]: '127.0.0.1' } })).status, 404, h);
  }
  assert.equal((await rawRequest(srv.url, 'GET', '/metrics')).status, 404, 'the peer 127.0.0.1 is a trusted proxy');
});

test('with STRIKEBOOK_METRICS_TOKEN, /metrics answers the bearer of the token from anywhere, and nobody else', async (t) => {
  const srv = await startServer({ STRIKEBOOK_METRICS_TOKEN: TOKEN });
  t.after(() => srv.stop());
  const proxy = await startForwardingProxy(srv.url);
  t.after(() => proxy.close());
  assert.equal((await rawRequest(srv.url, 'GET', '/metrics')).status, 404, 'loopback alone is not enough');
  assert.equal((await rawRequest(srv.url, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}x` } })).status, 404, 'a wrong token');
  assert.equal((await rawRequest(srv.url, 'GET', '/metrics', { headers: { authorization: `Basic ${TOKEN}` } })).status, 404, 'not a bearer');
  assert.ok(served(await rawRequest(srv.url, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })));
  assert.ok(served(await rawRequest(proxy.url, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })), 'through the proxy too');
  const remote = await srv.app.http.inject({ method: 'GET', url: '/metrics', remoteAddress: '203.0.113.7', headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(remote.statusCode, 200, 'from another host');
});

test('with STRIKEBOOK_METRICS_PORT, /metrics is served there only (token too when set), never on the API listener', async (t) => {
  const srv = await startServer({ STRIKEBOOK_METRICS_PORT: '0', STRIKEBOOK_METRICS_TOKEN: TOKEN });
  t.after(() => srv.stop());
  const listener = metricsListeners.get(srv.app.http);
  assert.ok(listener, 'a metrics listener was started');
  assert.match(listener.url, /^http:\/\/127\.0\.0\.1:\d+$/, 'on 127.0.0.1 by default');
  assert.ok(served(await rawRequest(listener.url, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })));
  assert.equal((await rawRequest(listener.url, 'GET', '/metrics')).status, 404, 'without the token');
  assert.equal((await rawRequest(listener.url, 'GET', '/api/v2/public/get_time', { headers: { authorization: `Bearer ${TOKEN}` } })).status, 404, 'nothing else there');
  // the API listener: not even with the token, which is for the metrics listener
  assert.equal((await rawRequest(srv.url, 'GET', '/metrics')).status, 404);
  assert.equal((await rawRequest(srv.url, 'GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })).status, 404);
  await srv.stop();
  await assert.rejects(fetch(`${listener.url}/metrics`), 'closed with the server');
});

test('without a token the metrics listener answers whoever reaches it, and the API listener nobody', async (t) => {
  const srv = await startServer({ STRIKEBOOK_METRICS_PORT: '0' });
  t.after(() => srv.stop());
  assert.ok(served(await rawRequest(metricsListeners.get(srv.app.http)!.url, 'GET', '/metrics')));
  assert.equal((await rawRequest(srv.url, 'GET', '/metrics')).status, 404, 'loopback on the API listener: no');
});

test('in production mode without a token or a port, /metrics is served to nobody on the API listener', async (t) => {
  const srv = await startServer({ STRIKEBOOK_MODE: 'production' });
  t.after(() => srv.stop());
  assert.equal((await rawRequest(srv.url, 'GET', '/metrics')).status, 404);
});

test('parses the metrics settings: a short or spaced token, a bad port are ConfigErrors naming the variable', () => {
  const c = loadConfig({});
  assert.deepEqual([c.metricsToken, c.metricsPort, c.metricsHost], [null, null, '127.0.0.1']);
  const d = loadConfig({ STRIKEBOOK_METRICS_TOKEN: TOKEN, STRIKEBOOK_METRICS_PORT: '9100', STRIKEBOOK_METRICS_HOST: '10.0.0.5' });
  assert.deepEqual([d.metricsToken, d.metricsPort, d.metricsHost], [TOKEN, 9100, '10.0.0.5']);
  for (const [k, v] of [['STRIKEBOOK_METRICS_TOKEN', 'short'], ['STRIKEBOOK_METRICS_TOKEN', 'has a space in it 0123'], ['STRIKEBOOK_METRICS_PORT', '70000']]) {
    assert.throws(() => loadConfig({ [k]: v }), (e: Error) => e instanceof ConfigError && e.message.startsWith(k) && !e.message.includes('has a space'), `${k}=${v}`);
  }
});
