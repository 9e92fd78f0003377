// Issue 29, item 1: behind a trusted reverse proxy every per-address limit counts the client's own
// address (the right-most untrusted X-Forwarded-For hop), not the proxy's: anonymous credit pools,
// the verify_invite_code limit, the WebSocket per-address cap; and the proxy itself is not held to
// the per-address TCP cap, which would refuse all its clients together. The leader trusts
// 127.0.0.1, the address test/helpers/forwardingProxy.ts forwards from; clients are 127.0.0.x.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { assertError, assertOk } from '../helpers/envelope.ts';
import { startForwardingProxy } from '../helpers/forwardingProxy.ts';
import { postFrom, wsFrom } from '../helpers/fromAddress.ts';
import { adminToken, ok, startServer } from '../helpers/server.ts';

/** GET `path` from the loopback address `from`; the status only. */
function statusFrom(base: string, from: string, path: string): Promise<number> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: Number(port), localAddress: from, method: 'GET', path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A bare TCP connection to `base` from `from`. */
function tcpFrom(base: string, from: string): Promise<Socket> {
  const sock = connect({ host: '127.0.0.1', port: Number(new URL(base).port), localAddress: from });
  return new Promise((resolve, reject) => {
    sock.once('connect', () => resolve(sock));
    sock.once('error', reject);
  });
}

test('through a reverse proxy: anonymous credits are per client, so one client\'s flood does not refuse another', async (t) => {
  const srv = await startServer({ STRIKEBOOK_RATE_LIMITS: '1', STRIKEBOOK_TRUSTED_PROXIES: '127.0.0.1' });
  t.after(() => srv.stop());
  const admin = await adminToken(srv.url);
  const adminId = srv.app.services.ex.usersByEmail.get('admin@example.com')!.id;
  await ok(srv.url, 'private/set_rate_limits', { user_id: adminId, non_matching_max_credits: 1e9, non_matching_refill_per_sec: 1e9 }, admin);
  // the exchange clock stands still: no credit refills, the counts are exact
  await ok(srv.url, 'private/set_test_time', { timestamp: (await ok(srv.url, 'public/get_time')) + 1000 }, admin);
  const proxy = await startForwardingProxy(srv.url);
  t.after(() => proxy.close());
  for (let i = 0; i < 100; i++) assert.equal(await statusFrom(proxy.url, '127.0.0.21', '/api/v2/public/get_time'), 200, `call ${i + 1}`);
  assert.equal(await statusFrom(proxy.url, '127.0.0.21', '/api/v2/public/get_time'), 429, 'the flooding client is refused');
  assert.equal(await statusFrom(proxy.url, '127.0.0.22', '/api/v2/public/get_time'), 200, 'another client behind the same proxy is not');
});

test('through a reverse proxy: verify_invite_code\'s limit is per client', async (t) => {
  const srv = await startServer({ STRIKEBOOK_TRUSTED_PROXIES: '127.0.0.1' });
  t.after(() => srv.stop());
  const proxy = await startForwardingProxy(srv.url);
  t.after(() => proxy.close());
  for (let i = 0; i < 20; i++) assertOk(await postFrom(proxy.url, '127.0.0.3', 'public/verify_invite_code', { code: `guess-${i}` }));
  assertError(await postFrom(proxy.url, '127.0.0.3', 'public/verify_invite_code', { code: 'guess-20' }), 10028);
  assertOk(await postFrom(proxy.url, '127.0.0.2', 'public/verify_invite_code', { code: 'mine' }), 'another client is not refused');
});

test('through a reverse proxy: the WebSocket cap counts each client\'s sockets, and the proxy is not held to the per-address TCP cap', async (t) => {
  const srv = await startServer({ STRIKEBOOK_TRUSTED_PROXIES: '127.0.0.1', STRIKEBOOK_WS_MAX_CONNECTIONS_PER_IP: '2', STRIKEBOOK_MAX_CONNECTIONS_PER_IP: '3' });
  t.after(() => srv.stop());
  const proxy = await startForwardingProxy(srv.url);
  t.after(() => proxy.close());
  const open = [await wsFrom(proxy.url, '127.0.0.3'), await wsFrom(proxy.url, '127.0.0.3')];
  t.after(() => open.forEach((w) => w.terminate()));
  await assert.rejects(wsFrom(proxy.url, '127.0.0.3'), /upgrade refused: 429/, 'a third socket of one client is refused');
  // two more clients: four sockets from the proxy's one address, over its TCP cap of three
  open.push(await wsFrom(proxy.url, '127.0.0.2'), await wsFrom(proxy.url, '127.0.0.4'));
  // an untrusted peer is still held to the TCP cap: its fourth connection is refused at once
  const sockets: Socket[] = [];
  for (let i = 0; i < 3; i++) sockets.push(await tcpFrom(srv.url, '127.0.0.5'));
  t.after(() => sockets.forEach((x) => x.destroy()));
  const fourth = await tcpFrom(srv.url, '127.0.0.5');
  const refusal = await new Promise<string>((resolve) => {
    let text = '';
    fourth.on('data', (d) => (text += d));
    fourth.on('close', () => resolve(text));
  });
  assert.match(refusal, /^HTTP\/1.1 429/);
});
