// private/change_password and private/set_user_disabled over HTTP (issue 29): their refusals, what
// each revokes, and that a journal holding them replays to the server's state hash.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stateHash } from '../../src/engine/snapshot.ts';
import { FREE_FAILURES } from '../../src/auth/loginThrottle.ts';
import { assertError } from '../helpers/envelope.ts';
import { atmCall } from '../helpers/market.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

const PASSWORD = 'user-password-1';

describe('change_password and set_user_disabled', () => {
  let srv: TestServer;
  let url: string;
  let admin: string;

  before(async () => {
    srv = await startServer();
    url = srv.url;
    admin = await adminToken(url);
  });
  after(() => srv.stop());

  const idOf = async (token: string): Promise<number> => (await ok(url, 'private/get_account_summary', { currency: 'BTC', extended: true }, token)).id;
  const passwordLogin = (email: string, password: string) => rpc(url, 'public/auth', { grant_type: 'password', username: email, password });
  const basic = (key: { client_id: string; client_secret: string }) => ({ headers: { authorization: `Basic ${Buffer.from(`${key.client_id}:${key.client_secret}`).toString('base64')}` } });

  it('a wrong old password is refused as a bad login is, and changes nothing', async () => {
    const email = 'pw-wrong@example.com';
    const token = await userToken(url, admin, email);
    assertError(await rpc(url, 'private/change_password', { old_password: 'not-the-password', new_password: 'another-password-2' }, token), 13004, { reason: 'invalid_credentials', param: 'old_password' });
    assertError(await passwordLogin(email, 'not-the-password'), 13004, { reason: 'invalid_credentials' });
    assert.ok((await passwordLogin(email, PASSWORD)).body.result.access_token, 'the old password still logs in');
    assert.ok(await idOf(token), 'the session is still valid');
  });

  it('a new password create_user would refuse is refused with the same error', async () => {
    const token = await userToken(url, admin, 'pw-weak@example.com');
    for (const weak of ['short', 'x'.repeat(129)]) {
      const created = await rpc(url, 'private/create_user', { email: 'weak-probe@example.com', password: weak }, admin);
      assert.ok(created.body.error, `create_user refuses ${weak.length} chars`);
      const changed = await rpc(url, 'private/change_password', { old_password: PASSWORD, new_password: weak }, token);
      assertError(changed, created.body.error.code, { param: 'new_password' });
    }
  });

  it('wrong old passwords are throttled as failed logins are', async () => {
    const token = await userToken(url, admin, 'pw-throttle@example.com');
    for (let i = 0; i < FREE_FAILURES; i++) assertError(await rpc(url, 'private/change_password', { old_password: `wrong-${i}-password`, new_password: 'another-password-2' }, token), 13004);
    assertError(await rpc(url, 'private/change_password', { old_password: PASSWORD, new_password: 'another-password-2' }, token), 10028, { reason: 'too_many_login_attempts' });
  });

  it('a password change ends every session of the user (13009 next) but not its API keys', async () => {
    const email = 'pw-change@example.com';
    const token = await userToken(url, admin, email);
    const other = (await passwordLogin(email, PASSWORD)).body.result;
    const key = await ok(url, 'private/create_api_key', { scope: 'account:read_write', name: 'bot' }, token);
    const keyToken = (await ok(url, 'public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret })).access_token;
    assertError(await rpc(url, 'private/change_password', { old_password: PASSWORD, new_password: 'another-password-2' }, keyToken), 13021, { reason: 'password_session_required' });
    assert.equal(await ok(url, 'private/change_password', { old_password: PASSWORD, new_password: 'another-password-2' }, token), 'ok');
    assertError(await rpc(url, 'private/get_account_summary', { currency: 'BTC' }, token), 13009);
    assertError(await rpc(url, 'private/get_account_summary', { currency: 'BTC' }, other.access_token), 13009);
    assertError(await rpc(url, 'public/auth', { grant_type: 'refresh_token', refresh_token: other.refresh_token }), 13009);
    assertError(await passwordLogin(email, PASSWORD), 13004);
    assert.ok((await passwordLogin(email, 'another-password-2')).body.result.access_token, 'the new password logs in');
    assert.ok((await ok(url, 'private/get_account_summary', { currency: 'BTC' }, keyToken)).currency, "the API key's token stays valid");
    assert.ok((await rpc(url, 'private/get_account_summary', { currency: 'BTC' }, undefined, basic(key))).body.result, 'the API key stays valid');
  });

  it('set_user_disabled is for administrators, and refuses an unknown user and oneself', async () => {
    const token = await userToken(url, admin, 'dis-caller@example.com');
    const id = await idOf(token);
    assertError(await rpc(url, 'private/set_user_disabled', { user_id: id, disabled: true }, token), 13021, { reason: 'admin_required' });
    assertError(await rpc(url, 'private/set_user_disabled', { user_id: 99_999, disabled: true }, admin), 13020, { reason: 'user_not_found', param: 'user_id' });
    assertError(await rpc(url, 'private/set_user_disabled', { user_id: await idOf(admin), disabled: true }, admin), 11029, { reason: 'cannot_disable_self' });
    assertError(await rpc(url, 'private/set_user_disabled', { user_id: id }, admin), -32602);
    assert.ok(await idOf(token), 'the user is not disabled by any of these');
  });

  it('a disabled user has every credential refused with 13009 until enabled again; its open orders stay', async () => {
    const email = 'dis-user@example.com';
    const token = await userToken(url, admin, email, { currency: 'BTC', amount: 10 });
    const id = await idOf(token);
    const session = (await passwordLogin(email, PASSWORD)).body.result;
    const key = await ok(url, 'private/create_api_key', { scope: 'account:read_write trade:read_write', name: 'bot' }, token);
    const keyToken = (await ok(url, 'public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret })).access_token;
    const m = await atmCall(url);
    const order = (await ok(url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[0], label: 'before-disable' }, token)).order;
    assert.deepEqual(await ok(url, 'private/set_user_disabled', { user_id: id, disabled: true }, admin), { user_id: id, disabled: true });
    assert.equal(srv.app.services.ex.users.get(id)!.orders.get(Number(order.order_id))?.state, 'open', 'open orders are left');
    const listed = async () => (await ok(url, 'private/list_users', { count: 1000 }, admin)).users.find((u: { user_id: number }) => u.user_id === id).disabled;
    assert.equal(await listed(), true, 'list_users shows the user disabled');
    for (const [what, t] of [['password token', token], ['API-key token', keyToken]] as const) assertError(await rpc(url, 'private/get_account_summary', { currency: 'BTC' }, t), 13009, {}, what);
    assertError(await rpc(url, 'private/get_account_summary', { currency: 'BTC' }, undefined, basic(key)), 13009, { reason: 'user_disabled' }, 'Basic');
    assertError(await passwordLogin(email, PASSWORD), 13009, { reason: 'user_disabled' }, 'password login');
    assertError(await rpc(url, 'public/auth', { grant_type: 'refresh_token', refresh_token: session.refresh_token }), 13009, {}, 'refresh');
    assertError(await rpc(url, 'public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret }), 13009, { reason: 'user_disabled' }, 'client_credentials');
    assert.deepEqual(await ok(url, 'private/set_user_disabled', { user_id: id, disabled: false }, admin), { user_id: id, disabled: false });
    assert.equal(await listed(), false, 'and enabled again');
    assertError(await rpc(url, 'private/get_account_summary', { currency: 'BTC' }, token), 13009, {}, 'an old token stays revoked');
    assert.ok((await passwordLogin(email, PASSWORD)).body.result.access_token, 'enabled again, the password logs in');
    assert.ok((await rpc(url, 'private/get_account_summary', { currency: 'BTC' }, undefined, basic(key))).body.result, 'and the API key works');
  });

  it('a journal with password changes and disables replays to the same state hash', () => {
    const r = cleanReplay(srv.dataDir);
    assert.deepEqual(r.errors, []);
    assert.equal(r.hash, stateHash(srv.app.services.ex));
  });
});
