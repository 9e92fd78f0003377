// A leader that freezes under a gateway (issue 30 item 2, src/gateway/leaderLocator.ts): the first
// server of STRIKEBOOK_LEADER_URL is reached through a TCP proxy that the test freezes (connections
// stay open, nothing passes: as a SIGSTOPped process whose kernel still holds its sockets). A
// forward that gets no answer within the forward timeout is refused at once (10040: a write's
// outcome unknown), the gateway finds the server that answers /ready, a read is answered there, and a
// logged-in client of the frozen server is closed with 1012 (reconnect). Before, gateways forwarded
// to a frozen leader for 17 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Socket } from 'node:net';
import pino from 'pino';
import { startGateway } from '../../src/gateway/gateway.ts';
import { adminToken, rawRequest, request, startServer, userToken } from '../helpers/server.ts';
import { freshStream } from '../helpers/nats.ts';
import { AddressedClient } from '../helpers/gateway.ts';
import { atmCall } from '../helpers/market.ts';

/** A TCP proxy to `port` that can be frozen: while frozen nothing passes either way and new connections hang. */
async function freezableProxy(port: number): Promise<{ url: string; freeze(): void; close(): void }> {
  let frozen = false;
  const sockets = new Set<Socket>();
  const srv = createServer((client) => {
    const up = connect(port, '127.0.0.1');
    sockets.add(client).add(up);
    client.on('data', (d) => !frozen && up.write(d));
    up.on('data', (d) => !frozen && client.write(d));
    for (const [a, b] of [[client, up], [up, client]] as const) {
      a.on('close', () => !frozen && b.destroy());
      a.on('error', () => undefined);
    }
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(srv.address() as { port: number }).port}`,
    freeze: () => (frozen = true),
    close() {
      for (const s of sockets) s.destroy();
      srv.close();
    },
  };
}

test('a frozen leader: a forward unanswered within the timeout is refused at once, the gateway moves to the server that leads, reads are served and logged-in clients closed with 1012', { timeout: 120_000 }, async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const a = await startServer(ns.env);
  const b = await startServer();
  // the proxy (and its frozen connections) goes first, then the gateway, then the servers
  const stops: Array<() => unknown> = [];
  t.after(async () => {
    for (const s of stops) await s();
    await a.stop();
    await b.stop();
  });
  const tokens: string[] = [];
  for (const s of [a, b]) tokens.push(await userToken(s.url, await adminToken(s.url), 'trader@example.com', { currency: 'BTC', amount: 10 }));
  const m = await atmCall(a.url);
  const proxy = await freezableProxy(Number(new URL(a.url).port));
  stops.push(() => proxy.close());
  const gw = await startGateway({ leaderUrl: `${proxy.url},${b.url}`, natsUrl: ns.url, stream: ns.stream, prefix: ns.prefix, port: 0, host: '127.0.0.1', log: pino({ level: 'silent' }), forwardTimeoutMs: 1_000 });
  stops.push(() => gw.close());
  const authed = await AddressedClient.open(gw.url);
  t.after(() => authed.ws.terminate());
  assert.equal(typeof (await authed.call('public/auth', { grant_type: 'password', username: 'trader@example.com', password: 'user-password-1' })).result?.access_token, 'string');
  assert.equal((await request(gw.url, '/health')).body.leader, proxy.url);

  proxy.freeze();
  const frozenAt = performance.now();
  // a write on the frozen leader: refused once the timeout passes (it may have run: the client checks)
  const body = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'private/buy', params: { instrument_name: m.name, amount: 0.1, price: m.prices[0] } });
  const write = await rawRequest(gw.url, 'POST', '/api/v2/private/buy', { headers: { authorization: `Bearer ${tokens[0]}`, 'content-type': 'application/json' }, body });
  assert.equal(write.body.error?.code, 10040, write.text);
  assert.equal(write.body.error.data.reason, 'leader_timeout_outcome_unknown');
  // the logged-in client of the frozen leader is told to reconnect
  const closed = await Promise.race([authed.closedP, new Promise<null>((r) => setTimeout(() => r(null), 10_000))]);
  assert.ok(closed !== null, 'the logged-in client was closed');
  assert.equal(closed.code, 1012, `closed with 1012 (got ${closed.code} ${closed.reason})`);
  // reads are served by the server that leads now
  const read = await rawRequest(gw.url, 'GET', '/api/v2/public/get_time');
  assert.equal(typeof read.body.result, 'number', read.text);
  assert.equal((await request(gw.url, '/health')).body.leader, b.url);
  t.diagnostic(`frozen leader left in ${(performance.now() - frozenAt).toFixed(0)} ms (forward timeout 1,000 ms)`);
  const again = await AddressedClient.open(gw.url);
  t.after(() => again.ws.terminate());
  assert.equal(typeof (await again.call('public/auth', { grant_type: 'password', username: 'trader@example.com', password: 'user-password-1' })).result?.access_token, 'string');
  assert.equal((await again.call('private/get_account_summary', { currency: 'BTC' })).result?.currency, 'BTC');
});
