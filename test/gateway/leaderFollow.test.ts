// Gateways follow the leader (issue 30 item 2, src/gateway/leaderLocator.ts, httpForward.ts,
// upstreams.ts): after a planned switch-over (the leader stopped, the standby takes over, the old
// leader started again as a standby at the same URL) a gateway given both servers serves HTTP and
// WebSocket on the new leader within 2 s: a standby's 10040 sends it looking for the leader and the
// request again there; a client the old leader knew is closed with 1012 (reconnect), never 1000.
// Skips without a reachable PostgreSQL or NATS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { startGateway } from '../../src/gateway/gateway.ts';
import { atmCall } from '../helpers/market.ts';
import { freshSchema } from '../helpers/postgres.ts';
import { freshStream } from '../helpers/nats.ts';
import { adminToken, rawRequest, request, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { AddressedClient, until } from '../helpers/gateway.ts';

test('after a planned switch-over a gateway serves HTTP and WebSocket on the new leader within 2 s, and closes logged-in clients with 1012', { timeout: 120_000 }, async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const ns = await freshStream(t);
  if (!ns) return;
  const env = { ...ns.env, DATABASE_URL: db.url, STRIKEBOOK_STANDBY_POLL_MS: '200' };
  const servers: TestServer[] = [];
  t.after(async () => {
    for (const s of servers) await s.stop().catch(() => undefined);
  });
  const a = await startServer(env);
  servers.push(a);
  const b = await startServer(env);
  servers.push(b);
  assert.equal(b.app.services.ha.role, 'standby');
  const admin = await adminToken(a.url);
  const token = await userToken(a.url, admin, 'trader@example.com', { currency: 'BTC', amount: 10 });
  const m = await atmCall(a.url);
  const buy = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'private/buy', params: { instrument_name: m.name, amount: 0.1, price: m.prices[0] } });
  const post = (url: string, id: number) => rawRequest(url, 'POST', '/api/v2/private/buy', { headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: buy(id) });

  const leaderUrl = `${a.url},${b.url}`;
  const gwOpts = { leaderUrl, natsUrl: ns.url, stream: ns.stream, prefix: ns.prefix, port: 0, host: '127.0.0.1', log: pino({ level: 'silent' }) };
  // one gateway serves HTTP only (nothing of it notices the switch-over until a request), one WebSocket
  const gwHttp = await startGateway(gwOpts);
  t.after(() => gwHttp.close());
  const gwWs = await startGateway(gwOpts);
  t.after(() => gwWs.close());
  assert.equal((await post(gwHttp.url, 1)).body.result?.order?.order_state, 'open', 'HTTP through the gateway before');
  const authed = await AddressedClient.open(gwWs.url);
  const anon = await AddressedClient.open(gwWs.url);
  t.after(() => [authed, anon].forEach((c) => c.ws.terminate()));
  assert.equal(typeof (await authed.call('public/auth', { grant_type: 'password', username: 'trader@example.com', password: 'user-password-1' })).result.access_token, 'string');
  assert.equal((await authed.call('private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[0] })).result.order.order_state, 'open');
  assert.equal(typeof (await anon.call('public/get_time')).result, 'number');

  // the planned switch-over: the leader stops (SIGTERM's path), the standby takes over
  const port = new URL(a.url).port;
  await a.stop();
  servers.splice(servers.indexOf(a), 1);
  await until('the standby leads', async () => (await request(b.url, '/ready')).status === 200, 30_000);
  const led = performance.now();
  const closed = await Promise.race([authed.closedP, new Promise<null>((r) => setTimeout(() => r(null), 5_000))]);
  assert.ok(closed !== null, 'the logged-in client is closed: its session was on the old leader');
  assert.equal(closed.code, 1012, `closed with 1012 service restart (got ${closed.code} ${closed.reason})`);
  // WebSocket on the new leader: a reconnect logs in and trades; the anonymous client goes on
  const again = await AddressedClient.open(gwWs.url);
  t.after(() => again.ws.terminate());
  const relogin = await again.call('public/auth', { grant_type: 'password', username: 'trader@example.com', password: 'user-password-1' });
  assert.equal(typeof relogin.result?.access_token, 'string', JSON.stringify(relogin));
  const wsOrder = await again.call('private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[0] });
  assert.equal(wsOrder.result?.order?.order_state, 'open', JSON.stringify(wsOrder));
  assert.equal(typeof (await anon.call('public/get_time')).result, 'number', 'the anonymous client is still served');
  const wsMs = performance.now() - led;
  t.diagnostic(`WebSocket on the new leader ${wsMs.toFixed(0)} ms after it leads`);
  assert.ok(wsMs <= 2_000, `WebSocket served on the new leader within 2 s (${wsMs.toFixed(0)} ms)`);

  // the old leader comes back at its URL, as a standby: it answers writes 10040
  const a2 = await startServer({ ...env, PORT: port });
  servers.push(a2);
  assert.equal(a2.app.services.ha.role, 'standby');
  assert.equal((await post(a2.url, 2)).body.error?.code, 10040, 'the old leader refuses writes now');
  const back = performance.now();
  // HTTP through the gateway that still points at the old URL: found the new leader, order placed
  const placed = await post(gwHttp.url, 3);
  const httpMs = performance.now() - back;
  assert.equal(placed.body.result?.order?.order_state, 'open', `HTTP through the gateway after the switch-over: ${placed.text}`);
  t.diagnostic(`HTTP on the new leader ${httpMs.toFixed(0)} ms after the old one answered 10040`);
  assert.ok(httpMs <= 2_000, `HTTP served on the new leader within 2 s (${httpMs.toFixed(0)} ms)`);
  for (let i = 0; i < 5; i++) assert.equal((await post(gwHttp.url, 10 + i)).body.result?.order?.order_state, 'open', 'and every call after it');
  assert.equal((await request(gwHttp.url, '/health')).body.leader, b.url);
});
