// Issue 14, finding 6: no lockout by a third party.
// - API-key sessions have their own cap (16 per key): a key that logs in 65 times drops only its own
//   oldest sessions, never its owner's password sessions.
// - Failed logins back off exponentially per (account, client IP); a client IP that logged in to the
//   account before is not blocked from the right password by someone else's wrong ones, while new
//   clients are backed off per account.
// Clients at different addresses are simulated with loopback source addresses (127.0.0.x).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { MAX_SESSIONS_PER_API_KEY, MAX_SESSIONS_PER_USER } from '../../src/auth/authState.ts';
import { LoginThrottle, backoffMs } from '../../src/auth/loginThrottle.ts';
import { assertError, assertOk } from '../helpers/envelope.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

/** public/auth by password from the loopback address `from`. */
function loginFrom(url: string, from: string, username: string, password: string): Promise<{ status: number; body: any; headers: Record<string, unknown> }> {
  const { port } = new URL(url);
  const body = JSON.stringify({ grant_type: 'password', username, password });
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: Number(port), localAddress: from, method: 'POST', path: '/api/v2/public/auth', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('sessions: API-key logins never evict password sessions', () => {
  let server: TestServer;
  let url: string;
  after(() => server.stop());
  before(async () => {
    server = await startServer();
    url = server.url;
  });

  it('65 client_credentials logins of a trade:read key keep the owner\'s password session alive and hold 16 key sessions', async () => {
    const admin = await adminToken(url);
    const owner = await userToken(url, admin, 'owner@example.com');
    const key = await ok(url, 'private/create_api_key', { scope: 'trade:read' }, owner);
    const tokens: string[] = [];
    for (let i = 0; i < 65; i++) {
      tokens.push((await ok(url, 'public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret })).access_token);
    }
    assertOk(await rpc(url, 'private/get_account_summary', { currency: 'BTC' }, owner), 'the owner\'s password session is alive');
    const auth = server.app.services.ex.auth;
    const user = server.app.services.ex.usersByEmail.get('owner@example.com')!;
    assert.equal(auth.keySessionCount(key.id), MAX_SESSIONS_PER_API_KEY);
    assert.equal(auth.sessionCount(user.id), 1, 'one password session');
    // the key's own oldest sessions went, its newest 16 stay
    assertError(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, tokens[0]), 13009);
    assertError(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, tokens[65 - MAX_SESSIONS_PER_API_KEY - 1]), 13009);
    assertOk(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, tokens[65 - MAX_SESSIONS_PER_API_KEY]));
    assertOk(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, tokens[64]));
    // the password cap is its own: 64 more password logins drop the first password session only
    for (let i = 0; i < MAX_SESSIONS_PER_USER; i++) await ok(url, 'public/auth', { grant_type: 'password', username: 'owner@example.com', password: 'user-password-1' });
    assertError(await rpc(url, 'private/get_account_summary', { currency: 'BTC' }, owner), 13009);
    assertOk(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, tokens[64]), 'key sessions are not evicted by password logins');
    assert.equal(auth.keySessionCount(key.id), MAX_SESSIONS_PER_API_KEY);
    assert.equal(auth.sessionCount(user.id), MAX_SESSIONS_PER_USER);
  });
});

describe('failed-login back-off', () => {
  let server: TestServer;
  let url: string;
  let admin: string;
  after(() => server.stop());
  before(async () => {
    server = await startServer();
    url = server.url;
    admin = await adminToken(url);
    // the exchange clock stands still: every back-off below is exact
    await ok(url, 'private/set_test_time', { timestamp: (await ok(url, 'public/get_time')) + 1000 }, admin);
  });

  const setTime = async (ms: number) => ok(url, 'private/set_test_time', { timestamp: ms }, admin);

  it('does not lock the owner\'s known client out after a third party\'s 10 wrong passwords; new clients back off', async () => {
    await userToken(url, admin, 'alice@example.com');
    const PW = 'user-password-1';
    // the owner logs in from her usual address: it becomes known
    assertOk(await loginFrom(url, '127.0.0.2', 'alice@example.com', PW));
    // a third party at another address: 10 wrong passwords, the first five evaluated
    const attacker = [];
    for (let i = 0; i < 10; i++) attacker.push(await loginFrom(url, '127.0.0.3', 'alice@example.com', `wrong-${i}-xxxx`));
    assert.deepEqual(attacker.map((r) => r.body.error?.code), [13004, 13004, 13004, 13004, 13004, 10028, 10028, 10028, 10028, 10028]);
    assertError(attacker[9], 10028, { reason: 'too_many_login_attempts' });
    assert.equal(attacker[9].body.error.data.retry_after_ms, 1000);
    // the attacker's right guess is refused too while it waits
    assertError(await loginFrom(url, '127.0.0.3', 'alice@example.com', PW), 10028);
    // the owner's known client is not blocked
    assertOk(await loginFrom(url, '127.0.0.2', 'alice@example.com', PW), 'known client');
    // a client that never logged in to the account waits for the account-wide back-off
    const fresh = await loginFrom(url, '127.0.0.4', 'alice@example.com', PW);
    assertError(fresh, 10028);
    assert.equal(fresh.body.error.data.retry_after_ms, 1000);
  });

  it('doubles the wait with each further failure (1 s, 2 s, 4 s) and sends Retry-After', async () => {
    await userToken(url, admin, 'bob@example.com');
    let now = await ok(url, 'public/get_time');
    for (let i = 0; i < 5; i++) assertError(await loginFrom(url, '127.0.0.5', 'bob@example.com', 'wrong-password'), 13004);
    for (const expected of [1000, 2000, 4000]) {
      const r = await loginFrom(url, '127.0.0.5', 'bob@example.com', 'wrong-password');
      assertError(r, 10028);
      assert.equal(r.body.error.data.retry_after_ms, expected);
      assert.equal(r.headers['retry-after'], String(expected / 1000), 'Retry-After in seconds');
      // one millisecond short: still refused
      await setTime(now + expected - 1);
      assert.equal((await loginFrom(url, '127.0.0.5', 'bob@example.com', 'wrong-password')).body.error.data.retry_after_ms, 1);
      now += expected;
      await setTime(now);
      assertError(await loginFrom(url, '127.0.0.5', 'bob@example.com', 'wrong-password'), 13004, {}, 'evaluated after the wait');
    }
  });
});

describe('LoginThrottle', () => {
  it('computes the back-off: none for the first four failures, then 1 s doubling to 15 min', () => {
    assert.deepEqual([1, 4, 5, 6, 7, 14, 15, 100].map(backoffMs), [0, 0, 1000, 2000, 4000, 512_000, 900_000, 900_000]);
  });

  it('forgets failures 30 minutes after the last one and bounds the known clients per account', () => {
    let t = 0;
    const th = new LoginThrottle(() => t);
    for (let i = 0; i < 6; i++) th.failed('e', 'ip');
    assert.equal(th.retryAfter('e', 'ip'), 2000);
    t += 30 * 60_000 + 1;
    assert.equal(th.retryAfter('e', 'ip'), 0);
    for (let i = 0; i < 9; i++) th.succeeded('e', `ip${i}`);
    assert.equal(th.isKnown('e', 'ip0'), false, 'the oldest of 9 is dropped');
    assert.equal(th.isKnown('e', 'ip8'), true);
  });
});
