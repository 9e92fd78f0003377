// A gateway's connections to the leader (issue 29 item 3, src/gateway/upstreams.ts and forwarding.ts):
// anonymous calls share a bounded HTTP pool, a client's own upstream WebSocket only when the leader
// must know its connection, bounded per client address and in all; every call the gateway cannot
// serve is refused at once; the client's address reaches the leader in X-Forwarded-For.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import pino from 'pino';
import { WebSocketServer } from 'ws';
import { startGateway } from '../../src/gateway/gateway.ts';
import { adminToken, rawRequest, startServer, userToken } from '../helpers/server.ts';
import { freshStream } from '../helpers/nats.ts';
import { AddressedClient } from '../helpers/gateway.ts';

const silent = pino({ level: 'silent' });

test('one address\'s 40 connections through a gateway take none of its upstream slots: another address\'s login is answered at once', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  // the leader admits 20 WebSockets per address, and sees every upstream from the gateway's
  const srv = await startServer({ ...ns.env, STRIKEBOOK_WS_MAX_CONNECTIONS_PER_IP: '20' });
  t.after(() => srv.stop());
  const admin = await adminToken(srv.url);
  await userToken(srv.url, admin, 'mallory@example.com', { currency: 'BTC', amount: 1 });
  await userToken(srv.url, admin, 'victim@example.com', { currency: 'BTC', amount: 1 });
  const gw = await startGateway({ leaderUrl: srv.url, natsUrl: ns.url, stream: ns.stream, prefix: ns.prefix, port: 0, host: '127.0.0.1', log: silent, maxUpstreamsPerIp: 8 });
  t.after(() => gw.close());

  const flood: AddressedClient[] = [];
  for (let i = 0; i < 40; i++) flood.push(await AddressedClient.open(gw.url, '127.0.0.1'));
  t.after(() => flood.forEach((c) => c.ws.terminate()));
  // anonymous reads: every one answered by the leader, over the shared pool
  const reads = await Promise.all(flood.map((c) => c.call('public/get_time', {}, 10_000)));
  assert.deepEqual(reads.filter((r) => typeof r.result !== 'number').map((r) => r.error), [], 'every anonymous read answered');
  assert.ok(gw.upstreams <= 1, `anonymous reads opened no upstream per client (${gw.upstreams})`);
  // logins need a connection of their own: 8 from this address at most, the rest refused at once
  const logins = await Promise.all(flood.map((c) => c.call('public/auth', { grant_type: 'password', username: 'mallory@example.com', password: 'user-password-1' }, 15_000)));
  const granted = logins.filter((r) => r.result?.access_token !== undefined).length;
  const refused = logins.filter((r) => r.error?.code === 10028);
  assert.equal(granted, 8, 'the per-address upstream cap');
  assert.equal(refused.length, 32, `the others are refused with 10028: ${JSON.stringify(logins.find((r) => r.error?.code !== 10028 && r.error))}`);
  assert.ok(gw.upstreams <= 9, `upstreams bounded (${gw.upstreams})`);

  // another address: its login and private calls are answered at once
  const victim = await AddressedClient.open(gw.url, '127.0.0.2');
  t.after(() => victim.ws.terminate());
  // a deadline for liveness only (a login hashes a password: slow on a loaded machine)
  const auth = await victim.call('public/auth', { grant_type: 'password', username: 'victim@example.com', password: 'user-password-1' }, 10_000);
  assert.equal(typeof auth.result?.access_token, 'string', JSON.stringify(auth));
  const summary = await victim.call('private/get_account_summary', { currency: 'BTC' }, 5_000);
  assert.equal(summary.result?.currency, 'BTC', JSON.stringify(summary));
});

test('a gateway refuses at once (10028) the calls of one address past its share of the pool, and answers every one', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const srv = await startServer(ns.env);
  t.after(() => srv.stop());
  const gw = await startGateway({ leaderUrl: srv.url, natsUrl: ns.url, stream: ns.stream, prefix: ns.prefix, port: 0, host: '127.0.0.1', log: silent, poolSockets: 2, poolMaxQueuedPerIp: 10 });
  t.after(() => gw.close());
  const flood: AddressedClient[] = [];
  for (let i = 0; i < 10; i++) flood.push(await AddressedClient.open(gw.url, '127.0.0.1'));
  t.after(() => flood.forEach((c) => c.ws.terminate()));
  const victim = await AddressedClient.open(gw.url, '127.0.0.2');
  t.after(() => victim.ws.terminate());
  const calls = flood.flatMap((c) => Array.from({ length: 20 }, () => c.call('public/get_time', {}, 10_000)));
  const mine = victim.call('public/get_time', {}, 10_000);
  const answers = await Promise.all(calls);
  assert.equal(answers.length, 200, 'every call answered');
  const busy = answers.filter((a) => a.error?.code === 10028).length;
  assert.ok(busy > 0 && busy <= 200 - 10, `past the address's queue, refused at once (${busy})`);
  assert.equal(answers.filter((a) => a.error !== undefined && a.error.code !== 10028).length, 0);
  assert.equal(typeof (await mine).result, 'number', 'the other address is served in its turn');
});

test('the gateway sends X-Forwarded-For with the client\'s address on forwarded HTTP, pooled calls and its upstream upgrades', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  // a fake leader that records the headers of what reaches it
  const seen: Array<{ kind: string; url: string; headers: IncomingHttpHeaders }> = [];
  const fake = createServer((req, res) => {
    seen.push({ kind: 'http', url: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const result = (req.url ?? '').includes('get_instruments') ? [] : 'fake';
      res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result, testnet: true }));
    });
  });
  const wss = new WebSocketServer({ server: fake, path: '/ws/api/v2' });
  wss.on('connection', (ws, req) => {
    seen.push({ kind: 'upgrade', url: req.url ?? '', headers: req.headers });
    ws.on('message', (raw) => {
      const msg = JSON.parse(raw.toString());
      const result = msg.method === 'public/auth' ? { access_token: 'x' } : msg.method === 'private/get_account_summary' ? { id: 7 } : 'fake';
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }));
    });
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    wss.close();
    fake.close();
  });
  const port = (fake.address() as { port: number }).port;
  const gw = await startGateway({ leaderUrl: `http://127.0.0.1:${port}`, natsUrl: ns.url, stream: ns.stream, prefix: ns.prefix, port: 0, host: '127.0.0.1', log: silent });
  t.after(() => gw.close());

  await rawRequest(gw.url, 'GET', '/api/v2/public/get_time', { headers: { 'x-forwarded-for': '203.0.113.9' } });
  const c = await AddressedClient.open(gw.url, '127.0.0.3');
  t.after(() => c.ws.terminate());
  assert.equal((await c.call('public/get_time')).result, 'fake');
  assert.deepEqual((await c.call('public/auth', { grant_type: 'password', username: 'a', password: 'b' })).result, { access_token: 'x' });
  const http = seen.filter((s) => s.kind === 'http' && s.url.startsWith('/api/v2/public/get_time'));
  assert.equal(http.length, 2, 'the HTTP request and the pooled call');
  assert.equal(http[0]!.headers['x-forwarded-for'], '203.0.113.9, 127.0.0.1', 'appended to what the client sent');
  assert.equal(http[1]!.headers['x-forwarded-for'], '127.0.0.3', 'a pooled WebSocket call carries its client\'s address');
  const up = seen.filter((s) => s.kind === 'upgrade');
  assert.equal(up.length, 1);
  assert.equal(up[0]!.headers['x-forwarded-for'], '127.0.0.3', 'the upstream upgrade carries its client\'s address');
});
