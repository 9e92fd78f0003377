// API-key scopes on private channels through a gateway, as on the leader's own socket: a key
// without trade:read subscribes to no order or trade channel (left out of the answer, the rest
// subscribes), whether it logged in on the socket or passed its token as the subscribe's
// access_token; and a key narrowed while it streams loses its trade channels at the next recheck.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, rpc, startServer, userToken } from '../helpers/server.ts';
import { freshStream } from '../helpers/nats.ts';
import { WsClient } from '../helpers/ws.ts';
import { spawnGateway, until } from '../helpers/gateway.ts';
import { atmCall, nearMark } from '../helpers/market.ts';

const TRADE = 'user.orders.any.any.raw';
const ACCOUNT = 'user.portfolio.btc';

test('a gateway streams a private channel only to a credential whose scopes read it, as the leader does', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const srv = await startServer({ ...ns.env });
  t.after(() => srv.stop());
  const admin = await adminToken(srv.url);
  const user = await userToken(srv.url, admin, 'gw-scopes@example.com', { currency: 'BTC', amount: 10 });
  const call = await atmCall(srv.url);
  const gw = await spawnGateway({ STRIKEBOOK_LEADER_URL: srv.url, NATS_URL: ns.url, STRIKEBOOK_NATS_STREAM: ns.stream, STRIKEBOOK_NATS_SUBJECT_PREFIX: ns.prefix, STRIKEBOOK_GATEWAY_RECHECK_MS: '300' });
  t.after(() => gw.proc.kill('SIGKILL'));
  const accountOnly = await ok(srv.url, 'private/create_api_key', { max_scope: 'account:read', name: 'acct' }, user);
  const both = await ok(srv.url, 'private/create_api_key', { max_scope: 'account:read trade:read', name: 'both' }, user);
  const creds = (k: { client_id: string; client_secret: string }) => ({ grant_type: 'client_credentials', client_id: k.client_id, client_secret: k.client_secret });

  const sockets: WsClient[] = [];
  t.after(() => sockets.forEach((c) => c.ws.close()));
  const open = async (url: string) => {
    const c = await WsClient.open(url);
    sockets.push(c);
    return c;
  };

  // logged in on the socket: the same answer on the leader and through the gateway
  for (const [key, expected] of [[accountOnly, [ACCOUNT]], [both, [TRADE, ACCOUNT]]] as const) {
    for (const url of [srv.url, gw.url]) {
      const c = await open(url);
      await c.ok('public/auth', creds(key));
      const got = await c.ok('private/subscribe', { channels: [TRADE, ACCOUNT] });
      assert.deepEqual(got, expected, `${key.max_scope} on ${url === gw.url ? 'the gateway' : 'the leader'}`);
    }
  }
  // the token as the subscribe's access_token, on a socket with no login
  const token = (await ok(srv.url, 'public/auth', creds(accountOnly))).access_token;
  for (const url of [srv.url, gw.url]) {
    const c = await open(url);
    assert.deepEqual(await c.ok('private/subscribe', { channels: [TRADE, ACCOUNT], access_token: token }), [ACCOUNT], `access_token on ${url}`);
  }

  // a key narrowed while it streams: its sessions end on the leader (13009), and through the gateway
  // its channels end at the next recheck
  const streaming = await open(gw.url);
  await streaming.ok('public/auth', creds(both));
  assert.deepEqual(await streaming.ok('private/subscribe', { channels: [TRADE, ACCOUNT] }), [TRADE, ACCOUNT]);
  const watcher = await open(srv.url);
  await watcher.ok('public/auth', { grant_type: 'password', username: 'gw-scopes@example.com', password: 'user-password-1' });
  await watcher.ok('private/subscribe', { channels: [TRADE] });
  const first = await ok(srv.url, 'private/buy', { instrument_name: call.name, amount: 0.1, price: nearMark(call), post_only: true, label: 'before' }, user);
  await until('the order before the narrowing', () => streaming.on(TRADE).some((n) => n.data.order_id === first.order.order_id));
  await ok(srv.url, 'private/change_scope_in_api_key', { id: both.id, max_scope: 'account:read' }, user);
  const tokenCall = await streaming.call('private/get_open_orders', {});
  assert.equal(tokenCall.error?.code, 13009, JSON.stringify(tokenCall));
  // more than two recheck periods, then an order: the leader's own socket sees it, the gateway's none
  await new Promise((r) => setTimeout(r, 1500));
  const second = await ok(srv.url, 'private/buy', { instrument_name: call.name, amount: 0.1, price: nearMark(call), post_only: true, label: 'after' }, user);
  await until('the second order on the leader', () => watcher.on(TRADE).some((n) => n.data.order_id === second.order.order_id));
  await new Promise((r) => setTimeout(r, 500));
  assert.ok(!streaming.on(TRADE).some((n) => n.data.order_id === second.order.order_id), 'a narrowed key streams no order made after the recheck');
  const cancel = await rpc(srv.url, 'private/cancel_all', {}, user);
  assert.ok(cancel.body.result !== undefined, JSON.stringify(cancel.body));
});
