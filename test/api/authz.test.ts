// Authentication and authorization (API.md 2, 3.1, 3.2): missing, bad, expired and revoked
// credentials, refresh-token rotation, ownership of orders, admin-only operations, the bootstrap
// token, and the invite-code and email checks of sign-up.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { methodGroups } from '../../src/api/methods/index.ts';
import { sha256Hex } from '../../src/auth/crypto.ts';
import { assertEnvelope, assertError, assertOk } from '../helpers/envelope.ts';
import { atmCall, type Market } from '../helpers/market.ts';
import { BOOTSTRAP, adminToken, login, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

const PW = 'user-password-1';
const groupMethods = [...methodGroups.authentication, ...methodGroups.invites, ...methodGroups.trading];
/** Operations that need an identity: a declared scope, or logout (the caller's own token). */
const privateMethods = groupMethods.filter((d) => d.scope !== 'none' || d.name === 'private/logout');
const adminMethods = groupMethods.filter((d) => d.scope === 'admin');

/** Every name an operation answers to. */
const namesOf = (d: { name: string; aliases?: string[] }) => [d.name, ...(d.aliases ?? [])];

async function auth(url: string, params: Record<string, unknown>) {
  return rpc(url, 'public/auth', params);
}

describe('credentials', () => {
  let server: TestServer;
  let url: string;
  let admin: string;
  let user: string;

  before(async () => {
    server = await startServer();
    url = server.url;
    admin = await adminToken(url);
    user = await userToken(url, admin, 'user@example.com', { currency: 'BTC', amount: 10 });
  });
  after(() => server.stop());

  it('refuses every private operation without credentials with 10000 and HTTP 401, by GET and POST', async () => {
    assert.ok(privateMethods.length >= 20, 'the registry has the private operations');
    for (const def of privateMethods) {
      for (const name of namesOf(def)) {
        for (const get of [false, true]) {
          const r = await rpc(url, name, {}, undefined, { get });
          assertEnvelope(r);
          assertError(r, 10000, {}, `${get ? 'GET' : 'POST'} ${name}`);
        }
      }
    }
    // create_admin needs an admin once one exists, even with perfectly valid params
    const r = await rpc(url, 'private/create_admin', { email: 'x@example.com', password: 'password-123' });
    assertError(r, 10000);
  });

  it('refuses a bad or malformed token with 13009 and HTTP 401 on every private operation', async () => {
    const bad = ['not-a-token', 'x'.repeat(200), user.slice(0, -1) + (user.endsWith('A') ? 'B' : 'A')];
    for (const def of privateMethods) {
      for (const token of bad) assertError(await rpc(url, def.name, {}, token), 13009, {}, def.name);
      assertError(await rpc(url, def.name, { access_token: 'bogus' }), 13009, {}, `${def.name} access_token`);
    }
    for (const authorization of ['Bearer', 'Bearer ', 'Token abc', 'Basic Zm9vOmJhcg==', 'bearer nope']) {
      const r = await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, undefined, { headers: { authorization } });
      assertError(r, 13009, {}, authorization);
    }
    // lower-case scheme works (API.md 2: "also bearer")
    assertOk(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, undefined, { headers: { authorization: `bearer ${user}` } }));
  });

  it('refuses an expired access token with 13009', async () => {
    const token = await login(url, 'user@example.com', PW);
    assertOk(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, token));
    const rec = server.app.services.ex.auth.access.get(sha256Hex(token));
    assert.ok(rec, 'the token is stored by its hash');
    rec.expiresAt = server.app.services.clock.now() - 1;
    assertError(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, token), 13009);
    assertError(await rpc(url, 'private/buy', { instrument_name: 'x', amount: 1, price: 1 }, token), 13009);
  });

  it('revokes the caller\'s token at logout, leaving other sessions alone', async () => {
    const session1 = await ok(url, 'public/auth', { grant_type: 'password', username: 'user@example.com', password: PW });
    const session2 = await login(url, 'user@example.com', PW);
    assert.equal(await ok(url, 'private/logout', {}, session1.access_token), 'ok');
    assertError(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, session1.access_token), 13009);
    assertError(await rpc(url, 'private/logout', {}, session1.access_token), 13009);
    assertError(await auth(url, { grant_type: 'refresh_token', refresh_token: session1.refresh_token }), 13009);
    assertOk(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, session2));
    assertError(await rpc(url, 'private/logout', {}), 10000);
  });

  it('rotates refresh tokens: the new pair works and the old refresh token is void', async () => {
    const first = await ok(url, 'public/auth', { grant_type: 'password', username: 'user@example.com', password: PW });
    const second = await ok(url, 'public/auth', { grant_type: 'refresh_token', refresh_token: first.refresh_token });
    assert.equal(second.token_type, 'bearer');
    assert.notEqual(second.access_token, first.access_token);
    assert.notEqual(second.refresh_token, first.refresh_token);
    assert.equal(second.scope, first.scope, 'a refresh keeps the scope');
    assertOk(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, second.access_token));
    assertError(await auth(url, { grant_type: 'refresh_token', refresh_token: first.refresh_token }), 13009);
    // of two concurrent refreshes with the same token, exactly one wins
    const both = await Promise.all([1, 2].map(() => auth(url, { grant_type: 'refresh_token', refresh_token: second.refresh_token })));
    assert.equal(both.filter((r) => r.body.result).length, 1);
    assertError(both.find((r) => r.body.error)!, 13009);
    assertError(await auth(url, { grant_type: 'refresh_token', refresh_token: 'made-up' }), 13009);
  });

  it('refuses a wrong password or an unknown user with 13004 and HTTP 401', async () => {
    assertError(await auth(url, { grant_type: 'password', username: 'user@example.com', password: 'wrong-password' }), 13004);
    assertError(await auth(url, { grant_type: 'password', username: 'nobody@example.com', password: PW }), 13004);
    // the login name is case-insensitive
    assertOk(await auth(url, { grant_type: 'password', username: 'USER@example.com', password: PW }));
  });
});

describe('expiry of access tokens on the exchange clock', () => {
  let server: TestServer;

  before(async () => {
    server = await startServer({ STRIKEBOOK_ACCESS_TOKEN_TTL: '60', STRIKEBOOK_TEST_CLOCK: '1' });
  });
  after(() => server.stop());

  it('issues tokens for STRIKEBOOK_ACCESS_TOKEN_TTL seconds and refuses them with 13009 once that time has passed', async () => {
    const url = server.url;
    await adminToken(url);
    const t = await ok(url, 'public/auth', { grant_type: 'password', username: 'admin@example.com', password: 'admin-password-1' });
    assert.equal(t.expires_in, 60);
    assertOk(await rpc(url, 'private/list_invite_codes', {}, t.access_token));
    const clock = server.app.services.testClock!;
    clock.set(clock.now() + 59_000);
    assertOk(await rpc(url, 'private/list_invite_codes', {}, t.access_token), 'still valid after 59 s');
    clock.set(clock.now() + 2_000);
    assertError(await rpc(url, 'private/list_invite_codes', {}, t.access_token), 13009);
    // the refresh token lives longer and brings a working access token
    const again = await ok(url, 'public/auth', { grant_type: 'refresh_token', refresh_token: t.refresh_token });
    assertOk(await rpc(url, 'private/list_invite_codes', {}, again.access_token));
  });
});

describe('ownership of orders', () => {
  let server: TestServer;
  let url: string;
  let alice: string;
  let bob: string;
  let atm: Market;
  let order: any;

  before(async () => {
    server = await startServer();
    url = server.url;
    const admin = await adminToken(url);
    alice = await userToken(url, admin, 'alice@example.com', { currency: 'BTC', amount: 10 });
    bob = await userToken(url, admin, 'bob@example.com', { currency: 'BTC', amount: 10 });
    atm = await atmCall(url);
    order = (await ok(url, 'private/sell', { instrument_name: atm.name, amount: 0.5, price: atm.prices[atm.prices.length - 1] }, alice)).order;
    const buy = await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[atm.prices.length - 1] }, bob);
    assert.equal(buy.trades.length, 1);
  });
  after(() => server.stop());

  it('answers another user\'s order id as not found, exactly like an unknown one', async () => {
    const theirs = await rpc(url, 'private/cancel', { order_id: order.order_id }, bob);
    const unknown = await rpc(url, 'private/cancel', { order_id: '99999999' }, bob);
    assertError(theirs, 10004);
    assertError(unknown, 10004);
    assert.deepEqual(theirs.body.error, unknown.body.error, 'nothing tells them apart');
    assertError(await rpc(url, 'private/get_user_trades_by_order', { order_id: order.order_id }, bob), 10004);
    assert.equal((await ok(url, 'private/get_user_trades_by_order', { order_id: order.order_id }, alice)).length, 1);
  });

  it('keeps another user\'s orders out of every open-order list and every bulk cancel', async () => {
    for (const [m, p] of [
      ['private/get_open_orders_by_currency', { currency: 'BTC' }],
      ['private/get_open_orders_by_instrument', { instrument_name: atm.name }],
      ['private/get_open_orders_by_side', { side: 'sell' }],
      ['private/get_open_orders_instrument_by_currency', { currency: 'BTC' }],
    ] as const) {
      assert.deepEqual(await ok(url, m, p, bob), [], `${m} for bob`);
      assert.equal((await ok(url, m, p, alice)).length, 1, `${m} for alice`);
    }
    assert.equal(await ok(url, 'private/cancel_all_by_instrument', { instrument_name: atm.name }, bob), 0);
    assert.equal(await ok(url, 'private/cancel_all_by_currency', { currency: 'BTC' }, bob), 0);
    assert.equal(await ok(url, 'private/cancel_all', {}, bob), 0);
    const still = await ok(url, 'private/get_open_orders_by_instrument', { instrument_name: atm.name }, alice);
    assert.deepEqual(still.map((o: any) => [o.order_id, o.order_state]), [[order.order_id, 'open']]);
  });

  it('shows each user only their own side of a trade', async () => {
    const a = await ok(url, 'private/get_user_trades_by_currency', { currency: 'BTC' }, alice);
    const b = await ok(url, 'private/get_user_trades_by_currency', { currency: 'BTC' }, bob);
    assert.equal(a.trades.length, 1);
    assert.equal(b.trades.length, 1);
    assert.equal(a.trades[0].trade_id, b.trades[0].trade_id);
    assert.equal(a.trades[0].order_id, order.order_id);
    assert.notEqual(b.trades[0].order_id, order.order_id);
    assert.deepEqual([a.trades[0].liquidity, b.trades[0].liquidity], ['M', 'T']);
  });
});

describe('administrators and sign-up', () => {
  let server: TestServer;
  let url: string;

  before(async () => {
    server = await startServer({ STRIKEBOOK_TEST_CLOCK: '1' });
    url = server.url;
  });
  after(() => server.stop());

  it('creates the first administrator only with the right bootstrap token', async () => {
    const params = { email: 'first@example.com', password: 'admin-password-1' };
    assertError(await rpc(url, 'private/create_admin', { ...params, bootstrap_token: 'wrong-token' }), 13009, { param: 'bootstrap_token' });
    assertError(await rpc(url, 'private/create_admin', params), 10000);
    assert.equal(server.app.services.ex.users.size, 0);
    // of two concurrent bootstraps, exactly one creates an administrator
    const both = await Promise.all(
      ['first@example.com', 'second@example.com'].map((email) => rpc(url, 'private/create_admin', { ...params, email, bootstrap_token: BOOTSTRAP })),
    );
    assert.equal(both.filter((r) => r.body.result).length, 1);
    const loser = both.find((r) => r.body.error)!;
    assertEnvelope(loser);
    assert.equal(loser.body.error.code, 13021);
    assert.equal([...server.app.services.ex.users.values()].filter((u) => u.role === 'admin').length, 1);
  });

  it('voids the bootstrap token once an administrator exists', async () => {
    const admins = () => [...server.app.services.ex.users.values()].filter((u) => u.role === 'admin').length;
    const r = await rpc(url, 'private/create_admin', { email: 'late@example.com', password: 'admin-password-1', bootstrap_token: BOOTSTRAP });
    assert.ok(r.body.error, 'refused');
    assert.ok([10000, 13009, 13021].includes(r.body.error.code), `an authentication error, got ${r.body.error.code}`);
    assertEnvelope(r);
    assert.equal(admins(), 1);
    assert.equal(server.app.services.bootstrapToken, null);
  });

  it('lets an administrator create administrators and refuses everyone else with 13021 and HTTP 403', async () => {
    const winner = [...server.app.services.ex.users.values()].find((u) => u.role === 'admin')!;
    const admin = await login(url, winner.email, 'admin-password-1');
    const made = await ok(url, 'private/create_admin', { email: 'deputy@example.com', password: 'admin-password-2' }, admin);
    assert.equal(made.role, 'admin');
    const deputy = await login(url, 'deputy@example.com', 'admin-password-2');
    assertOk(await rpc(url, 'private/generate_invite_code', {}, deputy));

    const user = await userToken(url, admin, 'plain@example.com');
    assertError(await rpc(url, 'private/create_admin', { email: 'evil@example.com', password: 'admin-password-1' }, user), 13021);
    assertError(await rpc(url, 'private/create_admin', { email: 'evil@example.com', password: 'admin-password-1', bootstrap_token: BOOTSTRAP }, user), 13021);
    assert.equal(server.app.services.ex.usersByEmail.has('evil@example.com'), false);
    for (const def of adminMethods) {
      for (const name of namesOf(def)) assertError(await rpc(url, name, { code: 'x' }, user), 13021, {}, name);
    }
    // a user may not credit someone else's account either
    assertError(await rpc(url, 'private/deposit_collateral', { currency: 'BTC', amount: 1, user_id: made.user_id }, user), 13021);
    // an administrator may create a user without an invite code; a user may not
    assert.equal((await ok(url, 'private/create_user', { email: 'direct@example.com', password: PW }, admin)).role, 'user');
    assertError(await rpc(url, 'private/create_user', { email: 'direct2@example.com', password: PW }, user), -32602, { param: 'invite_code' });
  });

  it('refuses sign-up with an unknown, revoked, expired or exhausted invite code with 11029 and the reason', async () => {
    const admin = await login(url, 'deputy@example.com', 'admin-password-2');
    const signUp = (email: string, invite_code: string) => rpc(url, 'private/create_user', { email, password: PW, invite_code });
    const count = () => server.app.services.ex.users.size;
    const n0 = count();

    assertError(await signUp('u1@example.com', 'no-such-code'), 11029, { reason: 'invite_code_invalid', param: 'invite_code' });

    const revoked = (await ok(url, 'private/generate_invite_code', {}, admin)).code;
    await ok(url, 'private/revoke_invite_code', { code: revoked }, admin);
    assertError(await signUp('u2@example.com', revoked), 11029, { reason: 'invite_code_invalid' });

    const shortLived = (await ok(url, 'private/generate_invite_code', { expires_in: 60 }, admin)).code;
    const once = (await ok(url, 'private/generate_invite_code', { max_uses: 1 }, admin)).code;
    assertOk(await signUp('u3@example.com', once));
    assertError(await signUp('u4@example.com', once), 11029, { reason: 'invite_code_exhausted' });

    const clock = server.app.services.testClock!;
    clock.set(clock.now() + 61_000);
    assertError(await signUp('u5@example.com', shortLived), 11029, { reason: 'invite_code_expired' });
    const v = await ok(url, 'public/verify_invite_code', { code: shortLived });
    assert.equal(v.reason, 'expired');
    assert.equal(count(), n0 + 1, 'only the valid sign-up created a user');
  });

  it('refuses an email that is taken, whatever its case, with 11029 email_taken', async () => {
    const admin = await login(url, 'deputy@example.com', 'admin-password-2');
    const code = (await ok(url, 'private/generate_invite_code', { max_uses: 10 }, admin)).code;
    assertOk(await rpc(url, 'private/create_user', { email: 'Mixed.Case@Example.com', password: PW, invite_code: code }));
    for (const email of ['mixed.case@example.com', 'MIXED.CASE@EXAMPLE.COM', 'Mixed.Case@Example.com']) {
      assertError(await rpc(url, 'private/create_user', { email, password: PW, invite_code: code }), 11029, { reason: 'email_taken', param: 'email' });
    }
    assertError(await rpc(url, 'private/create_admin', { email: 'DEPUTY@example.com', password: PW }, admin), 11029, { reason: 'email_taken' });
    // a refused sign-up does not use up the code
    const v = await ok(url, 'public/verify_invite_code', { code });
    assert.equal(v.uses_left, 9);
  });
});

describe('rate limits on credentials', () => {
  let server: TestServer;
  let url: string;

  before(async () => {
    server = await startServer();
    url = server.url;
  });
  after(() => server.stop());

  it('limits invite-code checks per IP with 10028 and HTTP 429, so codes cannot be enumerated', async () => {
    const replies = [];
    for (let i = 0; i < 25; i++) replies.push(await rpc(url, 'public/verify_invite_code', { code: `guess-${i}` }));
    const limited = replies.filter((r) => r.body.error);
    assert.ok(replies.slice(0, 5).every((r) => r.body.result?.valid === false), 'the first checks are answered');
    assert.ok(limited.length > 0, 'later checks are refused');
    for (const r of limited) {
      assertEnvelope(r);
      assertError(r, 10028);
    }
  });

  it('backs off failed logins per email and client, refusing even the right password from the guessing client', async () => {
    const admin = await adminToken(url);
    await userToken(url, admin, 'target@example.com');
    await userToken(url, admin, 'bystander@example.com');
    // the clock stands still, so the back-off (1 s after the fifth failure) cannot run out mid-test
    await ok(url, 'private/set_test_time', { timestamp: (await ok(url, 'public/get_time')) + 1000 }, admin);
    const attempts = [];
    for (let i = 0; i < 12; i++) attempts.push(await auth(url, { grant_type: 'password', username: 'target@example.com', password: `guess-${i}-xx` }));
    assert.ok(attempts.slice(0, 5).every((r) => r.body.error?.code === 13004), 'wrong passwords are refused as such');
    assertError(attempts[attempts.length - 1], 10028);
    assertError(await auth(url, { grant_type: 'password', username: 'target@example.com', password: PW }), 10028);
    assertOk(await auth(url, { grant_type: 'password', username: 'bystander@example.com', password: PW }), 'another email is unaffected');
  });
});

describe('production mode', () => {
  let server: TestServer;

  before(async () => {
    server = await startServer({ STRIKEBOOK_MODE: 'production' });
  });
  after(() => server.stop());

  it('takes deposits from administrators only and says testnet false', async () => {
    const url = server.url;
    const admin = await adminToken(url);
    const userId = (await ok(url, 'private/create_user', { email: 'prod@example.com', password: PW }, admin)).user_id;
    const user = await login(url, 'prod@example.com', PW);
    const r = await rpc(url, 'private/deposit_collateral', { currency: 'BTC', amount: 1 }, user);
    assertEnvelope(r, { testnet: false });
    assertError(r, 13021);
    const d = await rpc(url, 'private/deposit_collateral', { currency: 'BTC', amount: 2.5, user_id: userId, deposit_id: 'tx-1' }, admin);
    assertEnvelope(d, { testnet: false });
    assert.equal(assertOk(d).balance, 2.5);
    // a repeated deposit_id is applied once
    assert.equal((await ok(url, 'private/deposit_collateral', { currency: 'BTC', amount: 2.5, user_id: userId, deposit_id: 'tx-1' }, admin)).balance, 2.5);
    assert.equal(server.app.services.ex.users.get(userId)!.accounts.BTC.balance, 2.5e8);
  });
});
