// private/get_access_log and the user.access_log channel (issue 31): every login (public/auth, any
// grant) is recorded with its address, newest first, bounded per account; journaled with the login.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stateHash } from '../../src/engine/snapshot.ts';
import { MAX_ACCESS_LOG } from '../../src/engine/accessLog.ts';
import { assertError } from '../helpers/envelope.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { adminToken, login, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

describe('access log', () => {
  let srv: TestServer;
  let url: string;
  let user: string;

  before(async () => {
    srv = await startServer();
    url = srv.url;
    const admin = await adminToken(url);
    user = await userToken(url, admin, 'log@example.com');
  });
  after(() => srv.stop());

  it('lists each login with its address, newest first, paged by offset and count', async () => {
    await login(url, 'log@example.com', 'user-password-1');
    const r = await ok(url, 'public/auth', { grant_type: 'password', username: 'log@example.com', password: 'user-password-1' });
    await ok(url, 'public/auth', { grant_type: 'refresh_token', refresh_token: r.refresh_token });
    const log = await ok(url, 'private/get_access_log', {}, user);
    assert.ok(log.length >= 4, JSON.stringify(log));
    const [newest] = log;
    assert.deepEqual([newest.ip, newest.log, newest.data.grant_type], ['127.0.0.1', 'success', 'refresh_token']);
    assert.equal(typeof newest.id, 'number');
    assert.equal(typeof newest.timestamp, 'number');
    assert.deepEqual([typeof newest.country, typeof newest.city], ['string', 'string']);
    for (let i = 1; i < log.length; i++) assert.ok(log[i].id < log[i - 1].id, 'newest first');
    assert.deepEqual(await ok(url, 'private/get_access_log', { offset: 1, count: 2 }, user), log.slice(1, 3));
    assertError(await rpc(url, 'private/get_access_log', { count: 1001 }, user), -32602);
    assertError(await rpc(url, 'private/get_access_log', {}), 10000);
    assert.ok(MAX_ACCESS_LOG >= 100);
  });

  it('user.access_log notifies the account of each new login', async () => {
    const ws = await WsClient.open(url);
    try {
      await ws.auth('log@example.com');
      assert.deepEqual(await ws.ok('private/subscribe', { channels: ['user.access_log'] }), ['user.access_log']);
      await login(url, 'log@example.com', 'user-password-1');
      await ws.until(() => ws.on('user.access_log').length > 0, 5000, 'the login');
      const n = ws.on('user.access_log')[0]!.data;
      assert.deepEqual([n.ip, n.log], ['127.0.0.1', 'success']);
      assert.deepEqual(n, (await ok(url, 'private/get_access_log', { count: 1 }, user))[0]);
    } finally {
      await ws.close();
    }
  });

  it('a clean replay of the journal reproduces the state', () => {
    const r = cleanReplay(srv.dataDir);
    assert.deepEqual(r.errors, []);
    assert.equal(r.hash, stateHash(srv.app.services.ex));
  });
});
