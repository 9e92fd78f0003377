// Issue 29, item 2: behind a gateway or a reverse proxy, a stranger must not lock an owner out of
// login. Every scenario runs against the leader directly, through a same-host reverse proxy that
// appends X-Forwarded-For (test/helpers/forwardingProxy.ts) and through the real stream gateway
// (src/gateway, which sets X-Forwarded-For on the HTTP requests it forwards), with the leader
// trusting 127.0.0.1, the address both forward from. Clients on different hosts are loopback
// source addresses: the owner at 127.0.0.2, a stranger at 127.0.0.3, a new client at 127.0.0.4.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { startGateway } from '../../src/gateway/gateway.ts';
import { assertError, assertOk } from '../helpers/envelope.ts';
import { startForwardingProxy } from '../helpers/forwardingProxy.ts';
import { loginFrom, wsCall, wsFrom } from '../helpers/fromAddress.ts';
import { freshStream } from '../helpers/nats.ts';
import { adminToken, startServer, userToken, type TestServer } from '../helpers/server.ts';

const PW = 'user-password-1';
const OWNER = '127.0.0.2';
const STRANGER = '127.0.0.3';
const NEWCOMER = '127.0.0.4';

async function leader(t: TestContext, env: Record<string, string> = {}): Promise<{ srv: TestServer; admin: string }> {
  const srv = await startServer({ STRIKEBOOK_TRUSTED_PROXIES: '127.0.0.1', ...env });
  t.after(() => srv.stop());
  return { srv, admin: await adminToken(srv.url) };
}

/** The owner logged in from her client before; a stranger's ten wrong passwords do not block it. */
async function strangerCannotLockOutOwner(base: string, email: string): Promise<void> {
  assertOk(await loginFrom(base, OWNER, email, PW), 'the owner logs in: her client is known');
  const codes: number[] = [];
  for (let i = 0; i < 10; i++) codes.push((await loginFrom(base, STRANGER, email, `wrong-${i}-xxxx`)).body.error?.code);
  assert.deepEqual(codes, [13004, 13004, 13004, 13004, 13004, 10028, 10028, 10028, 10028, 10028], 'the stranger is backed off');
  assertError(await loginFrom(base, STRANGER, email, PW), 10028, { reason: 'too_many_login_attempts' }, 'even the stranger\'s right guess waits');
  assertOk(await loginFrom(base, OWNER, email, PW), 'the owner\'s known client is not refused');
}

/** 101 failed logins on random emails from one client refuse that client, not everyone else. */
async function sprayBlocksOnlyTheSprayer(base: string, email: string, tag: string): Promise<void> {
  let last = null;
  for (let i = 0; i < 101; i++) last = await loginFrom(base, STRANGER, `nobody-${tag}-${i}@example.com`, 'wrong-password');
  assertError(last!, 10028, { reason: 'too_many_login_attempts' }, 'the sprayer hit the per-client ceiling');
  assertOk(await loginFrom(base, NEWCOMER, email, PW), 'a client logging in for the first time is not refused');
}

test('directly: a stranger\'s wrong passwords do not lock out the owner\'s known client', async (t) => {
  const { srv, admin } = await leader(t);
  await userToken(srv.url, admin, 'alice@example.com');
  await strangerCannotLockOutOwner(srv.url, 'alice@example.com');
});

test('directly: a stranger sharing the owner\'s address (NAT) who sprays 101 emails does not refuse the owner\'s right password', async (t) => {
  const { srv, admin } = await leader(t);
  await userToken(srv.url, admin, 'carol@example.com');
  assertOk(await loginFrom(srv.url, STRANGER, 'carol@example.com', PW), 'carol logs in from the shared address: it is known');
  let last = null;
  for (let i = 0; i < 101; i++) last = await loginFrom(srv.url, STRANGER, `nobody-${i}@example.com`, 'wrong-password');
  assertError(last!, 10028, { reason: 'too_many_login_attempts' });
  assertError(await loginFrom(srv.url, STRANGER, 'nobody-x@example.com', 'wrong-password'), 10028, {}, 'the address stays refused for new accounts');
  assertOk(await loginFrom(srv.url, STRANGER, 'carol@example.com', PW), 'a known client with the right password is not refused by the ceiling');
});

test('directly: a forged X-Forwarded-For from an untrusted peer is ignored', async (t) => {
  const { srv, admin } = await leader(t);
  await userToken(srv.url, admin, 'dave@example.com');
  assertOk(await loginFrom(srv.url, OWNER, 'dave@example.com', PW));
  // the stranger claims to be the owner's address: it is not a trusted proxy, so it stays itself
  for (let i = 0; i < 5; i++) await loginFrom(srv.url, STRANGER, 'dave@example.com', 'wrong-password', { 'x-forwarded-for': OWNER });
  assertError(await loginFrom(srv.url, STRANGER, 'dave@example.com', PW, { 'x-forwarded-for': OWNER }), 10028, {}, 'not taken for the known client');
  assertOk(await loginFrom(srv.url, OWNER, 'dave@example.com', PW));
});

test('through a reverse proxy: a stranger cannot lock out the owner, and a sprayer refuses only itself', async (t) => {
  const { srv, admin } = await leader(t);
  const proxy = await startForwardingProxy(srv.url);
  t.after(() => proxy.close());
  await userToken(srv.url, admin, 'alice@example.com');
  await userToken(srv.url, admin, 'bob@example.com');
  await strangerCannotLockOutOwner(proxy.url, 'alice@example.com');
  await sprayBlocksOnlyTheSprayer(proxy.url, 'bob@example.com', 'proxy');
});

test('through a reverse proxy writing RFC 7239 Forwarded: the same, with STRIKEBOOK_PROXY_HEADER=forwarded', async (t) => {
  const { srv, admin } = await leader(t, { STRIKEBOOK_PROXY_HEADER: 'forwarded' });
  const proxy = await startForwardingProxy(srv.url, { header: 'forwarded' });
  t.after(() => proxy.close());
  await userToken(srv.url, admin, 'alice@example.com');
  await strangerCannotLockOutOwner(proxy.url, 'alice@example.com');
});

test('through a reverse proxy over WebSocket: the owner\'s public/auth on a socket is not refused after a stranger\'s failures', async (t) => {
  const { srv, admin } = await leader(t);
  const proxy = await startForwardingProxy(srv.url);
  t.after(() => proxy.close());
  await userToken(srv.url, admin, 'erin@example.com');
  const owner = await wsFrom(proxy.url, OWNER);
  t.after(() => owner.terminate());
  const auth = { grant_type: 'password', username: 'erin@example.com', password: PW };
  assert.equal((await wsCall(owner, 'public/auth', auth)).result?.token_type, 'bearer', 'the owner logs in over the socket');
  const stranger = await wsFrom(proxy.url, STRANGER);
  t.after(() => stranger.terminate());
  for (let i = 0; i < 10; i++) await wsCall(stranger, 'public/auth', { ...auth, password: `wrong-${i}-xxxx` });
  assert.equal((await wsCall(stranger, 'public/auth', auth)).error?.code, 10028, 'the stranger waits');
  const again = await wsCall(owner, 'public/auth', auth);
  assert.equal(again.error, undefined, JSON.stringify(again.error));
  assert.equal(again.result.token_type, 'bearer');
});

test('through the stream gateway: a stranger cannot lock out the owner, and a sprayer refuses only itself', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const { srv, admin } = await leader(t, ns.env);
  const gw = await startGateway({ leaderUrl: srv.url, natsUrl: ns.url, stream: ns.stream, prefix: ns.prefix, port: 0, host: '127.0.0.1', log: pino({ level: 'silent' }) });
  t.after(() => gw.close());
  await userToken(srv.url, admin, 'alice@example.com');
  await userToken(srv.url, admin, 'bob@example.com');
  await strangerCannotLockOutOwner(gw.url, 'alice@example.com');
  await sprayBlocksOnlyTheSprayer(gw.url, 'bob@example.com', 'gateway');
});
