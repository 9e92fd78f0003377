// Review findings pinned: limits that must hold under parallel requests, and no way for a
// credential to grant more than it holds.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

let server: TestServer;
let admin: string;
before(async () => {
  server = await startServer();
  admin = await adminToken(server.url);
});
after(() => server.stop());

test('parallel wrong-password guesses cannot pass the per-email limit', async () => {
  await userToken(server.url, admin, 'victim@example.com');
  const replies = await Promise.all(
    Array.from({ length: 30 }, () => rpc(server.url, 'public/auth', { grant_type: 'password', username: 'victim@example.com', password: 'wrong-password' })),
  );
  const codes = replies.map((r) => r.body.error?.code);
  assert.ok(codes.filter((c) => c === 13004).length <= 10, `at most 10 guesses evaluated, got ${codes.filter((c) => c === 13004).length}`);
  assert.ok(codes.filter((c) => c === 10028).length >= 20);
});

test('successful logins do not use up the failed-login allowance', async () => {
  await userToken(server.url, admin, 'often@example.com');
  for (let i = 0; i < 15; i++) {
    const r = await rpc(server.url, 'public/auth', { grant_type: 'password', username: 'often@example.com', password: 'user-password-1' });
    assert.ok(r.body.result?.access_token, `login ${i} refused: ${JSON.stringify(r.body.error)}`);
  }
});

test('an API key cannot create a key with more scope than it has', async () => {
  const user = await userToken(server.url, admin, 'keys@example.com');
  const narrow = await ok(server.url, 'private/create_api_key', { scope: 'account:read_write' }, user);
  const basic = `Basic ${Buffer.from(`${narrow.client_id}:${narrow.client_secret}`).toString('base64')}`;
  const post = (scope: string) =>
    fetch(`${server.url}/api/v2/private/create_api_key`, { method: 'POST', headers: { authorization: basic, 'content-type': 'application/json' }, body: JSON.stringify({ scope }) }).then((r) => r.json() as Promise<any>);
  const escalated = await post('trade:read_write account:read_write');
  assert.equal(escalated.error?.code, 13403);
  const same = await post('account:read');
  assert.ok(same.result?.client_id, 'a key may create a key within its own scope');
});

test('a websocket handles a connection’s requests in order: auth then subscribe without waiting', async () => {
  await userToken(server.url, admin, 'pipeline@example.com');
  const ws = await WsClient.open(server.url.replace('http', 'ws'));
  try {
    const [auth, sub] = await Promise.all([
      ws.call('public/auth', { grant_type: 'password', username: 'pipeline@example.com', password: 'user-password-1' }),
      ws.call('private/subscribe', { channels: ['user.orders.any.any.raw'] }),
    ]);
    assert.ok(auth.result?.access_token);
    assert.deepEqual(sub.result, ['user.orders.any.any.raw']);
  } finally {
    ws.ws.close();
  }
});

test('private channels respect API-key scopes and stop when the token is revoked', async () => {
  const user = await userToken(server.url, admin, 'scoped@example.com');
  const walletOnly = await ok(server.url, 'private/create_api_key', { scope: 'wallet:read' }, user);
  const ws = await WsClient.open(server.url.replace('http', 'ws'));
  try {
    await ws.ok('public/auth', { grant_type: 'client_credentials', client_id: walletOnly.client_id, client_secret: walletOnly.client_secret });
    const denied = await ws.ok('private/subscribe', { channels: ['user.orders.any.any.raw', 'user.portfolio.BTC'] });
    assert.deepEqual(denied, [], 'a wallet-only key streams no orders or portfolio');
  } finally {
    ws.ws.close();
  }
  const ws2 = await WsClient.open(server.url.replace('http', 'ws'));
  try {
    const session = await ws2.ok('public/auth', { grant_type: 'password', username: 'scoped@example.com', password: 'user-password-1' });
    assert.deepEqual(await ws2.ok('private/subscribe', { channels: ['user.portfolio.BTC'] }), ['user.portfolio.BTC']);
    await ok(server.url, 'private/logout', {}, session.access_token);
    // within the one-second sweep the revoked token's private subscriptions are gone
    await new Promise((r) => setTimeout(r, 1300));
    const before = ws2.on('user.portfolio.BTC').length;
    await ok(server.url, 'private/deposit_collateral', { currency: 'BTC', amount: 1 }, user);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(ws2.on('user.portfolio.BTC').length, before, 'no portfolio update after the token was revoked');
  } finally {
    ws2.ws.close();
  }
});

test('public/auth narrows the token to a requested scope and never widens it', async () => {
  await userToken(server.url, admin, 'narrow@example.com');
  const auth = await ok(server.url, 'public/auth', { grant_type: 'password', username: 'narrow@example.com', password: 'user-password-1', scope: 'trade:read session:bot' });
  assert.match(auth.scope, /trade:read(?!_write)/);
  assert.doesNotMatch(auth.scope, /trade:read_write|account:/);
  const reads = await rpc(server.url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, auth.access_token);
  assert.ok(Array.isArray(reads.body.result));
  const buy = await rpc(server.url, 'private/buy', { instrument_name: 'BTC-X', amount: 0.1, price: 0.01 }, auth.access_token);
  assert.equal(buy.body.error.code, 13403);
  const wider = await ok(server.url, 'public/auth', { grant_type: 'password', username: 'narrow@example.com', password: 'user-password-1', scope: 'admin trade:read_write' });
  assert.doesNotMatch(wider.scope, /admin/, 'a user cannot ask for admin');
});

// last: the flood uses up this server's per-IP sign-up allowance
test('a sign-up with a dead invite code is refused before any password hashing, and sign-ups per IP are limited', async () => {
  const dead = await rpc(server.url, 'private/create_user', { email: 'x@example.com', password: 'pass-word-123', invite_code: 'bogus' });
  assert.equal(dead.body.error.code, 11029);
  assert.equal(dead.body.error.data.reason, 'invite_code_invalid');
  const replies = await Promise.all(
    Array.from({ length: 40 }, (_, i) => rpc(server.url, 'private/create_user', { email: `flood${i}@example.com`, password: 'pass-word-123', invite_code: 'bogus' })),
  );
  assert.ok(replies.some((r) => r.body.error?.code === 10028), 'the flood hits the per-IP sign-up limit');
  assert.ok(replies.every((r) => r.status < 500));
});
