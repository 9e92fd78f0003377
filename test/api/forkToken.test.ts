// public/fork_token (issue 31): a new named session from a refresh token, which stays valid.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../helpers/envelope.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('fork_token', () => {
  let srv: TestServer;

  before(async () => {
    srv = await startServer();
    const admin = await adminToken(srv.url);
    await userToken(srv.url, admin, 'fork@example.com', { currency: 'BTC', amount: 1 });
  });
  after(() => srv.stop());

  it('issues a token pair for a named session with the same grants; the refresh token it forked stays valid', async () => {
    const first = await ok(srv.url, 'public/auth', { grant_type: 'password', username: 'fork@example.com', password: 'user-password-1', scope: 'trade:read account:read' });
    const fork = await ok(srv.url, 'public/fork_token', { refresh_token: first.refresh_token, session_name: 'bot-2' });
    assert.equal(fork.token_type, 'bearer');
    assert.match(fork.scope, /\bsession:bot-2\b/);
    assert.match(fork.scope, /\btrade:read\b/);
    assert.doesNotMatch(fork.scope, /read_write/);
    assert.equal(typeof fork.expires_in, 'number');
    assert.equal((await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, fork.access_token)).currency, 'BTC');
    // the original session goes on
    assert.equal((await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, first.access_token)).currency, 'BTC');
    assert.ok((await ok(srv.url, 'public/auth', { grant_type: 'refresh_token', refresh_token: first.refresh_token })).access_token);
    assertError(await rpc(srv.url, 'public/fork_token', { refresh_token: 'nope', session_name: 'x' }), 13009);
    assertError(await rpc(srv.url, 'public/fork_token', { refresh_token: fork.refresh_token, session_name: 'bad name!' }), -32602);
  });
});
