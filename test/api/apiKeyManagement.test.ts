// API-key management of issue 31: enable/disable, edit, reset, rename, change scope, and IP
// whitelists enforced on every way a key authenticates. Each change is a journaled command: a clean
// replay of the journal reproduces the state hash.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stateHash } from '../../src/engine/snapshot.ts';
import { assertError } from '../helpers/envelope.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

const basic = (k: { client_id: string; client_secret: string }) => ({ authorization: `Basic ${Buffer.from(`${k.client_id}:${k.client_secret}`).toString('base64')}` });

describe('API-key management', () => {
  let srv: TestServer;
  let url: string;
  let user: string;
  let other: string;

  before(async () => {
    srv = await startServer();
    url = srv.url;
    const admin = await adminToken(url);
    user = await userToken(url, admin, 'keys@example.com', { currency: 'BTC', amount: 1 });
    other = await userToken(url, admin, 'other-keys@example.com');
  });
  after(() => srv.stop());

  const summary = (headers: Record<string, string>) => rpc(url, 'private/get_account_summary', { currency: 'BTC' }, undefined, { headers });
  const keyAuth = (k: { client_id: string; client_secret: string }) => rpc(url, 'public/auth', { grant_type: 'client_credentials', client_id: k.client_id, client_secret: k.client_secret });

  it('disable_api_key stops the key and the tokens issued to it; enable_api_key lets it in again', async () => {
    const k = await ok(url, 'private/create_api_key', { max_scope: 'account:read trade:read', name: 'bot' }, user);
    const token = (await keyAuth(k)).body.result.access_token;
    assert.equal((await summary(basic(k))).body.result.currency, 'BTC');
    const off = await ok(url, 'private/disable_api_key', { id: k.id }, user);
    assert.equal(off.enabled, false);
    assert.equal(off.id, k.id);
    assertError(await summary(basic(k)), 13009);
    assertError(await keyAuth(k), 13004);
    assertError(await rpc(url, 'private/get_account_summary', { currency: 'BTC' }, token), 13009);
    assert.equal((await ok(url, 'private/list_api_keys', {}, user)).find((x: any) => x.id === k.id).enabled, false);
    const on = await ok(url, 'private/enable_api_key', { id: k.id }, user);
    assert.equal(on.enabled, true);
    assert.equal((await summary(basic(k))).body.result.currency, 'BTC');
    assertError(await rpc(url, 'private/disable_api_key', { id: k.id }, other), 13020, { reason: 'api_key_not_found' }, "another user's key");
  });

  it('change_api_key_name, change_scope_in_api_key and edit_api_key change the key; a narrower scope binds it at once', async () => {
    const k = await ok(url, 'private/create_api_key', { max_scope: 'account:read trade:read_write' }, user);
    assert.equal((await ok(url, 'private/change_api_key_name', { id: k.id, name: 'renamed' }, user)).name, 'renamed');
    const narrowed = await ok(url, 'private/change_scope_in_api_key', { id: k.id, max_scope: 'account:read' }, user);
    assert.deepEqual(narrowed.max_scope, ['account:read'], 'max_scope is the list of grants, as Deribit documents it');
    assert.equal(narrowed.scope, 'account:read');
    assertError(await rpc(url, 'private/get_open_orders', {}, undefined, { headers: basic(k) }), 13403);
    const e = await ok(url, 'private/edit_api_key', { id: k.id, max_scope: 'account:read trade:read', name: 'edited', enabled: true }, user);
    assert.deepEqual([e.name, e.max_scope, e.enabled], ['edited', ['account:read', 'trade:read'], true]);
    assert.deepEqual((await rpc(url, 'private/get_open_orders', {}, undefined, { headers: basic(k) })).body.result, []);
    // a key never gets more than the caller holds, nor admin
    assertError(await rpc(url, 'private/change_scope_in_api_key', { id: k.id, max_scope: 'admin' }, user), -32602);
    assertError(await rpc(url, 'private/change_api_key_name', { id: k.id, name: 'bad<name>' }, user), -32602);
  });

  it('reset_api_key gives a new secret: the old one no longer authenticates, the new one does', async () => {
    const k = await ok(url, 'private/create_api_key', { max_scope: 'account:read' }, user);
    const r = await ok(url, 'private/reset_api_key', { id: k.id }, user);
    assert.equal(r.client_id, k.client_id);
    assert.notEqual(r.client_secret, k.client_secret);
    assertError(await summary(basic(k)), 13009);
    assert.equal((await summary(basic(r))).body.result.currency, 'BTC');
    // Deribit's key objects all carry client_secret; here only create and reset show it, the rest a mask
    const listed = (await ok(url, 'private/list_api_keys', {}, user)).find((x: any) => x.id === k.id);
    assert.equal(listed.client_secret, '********', 'list never shows a secret');
    for (const m of ['private/disable_api_key', 'private/enable_api_key']) {
      const a = await ok(url, m, { id: k.id }, user);
      assert.equal(a.client_secret, '********', `${m} never shows a secret`);
      assert.ok(!JSON.stringify(a).includes(r.client_secret), m);
    }
    assert.equal((await ok(url, 'private/change_api_key_name', { id: k.id, name: 'n' }, user)).client_secret, '********');
  });

  it('an IP whitelist admits only its addresses, by every way a key authenticates', async () => {
    const k = await ok(url, 'private/create_api_key', { max_scope: 'account:read' }, user);
    const token = (await keyAuth(k)).body.result.access_token;
    const w = await ok(url, 'private/edit_api_key', { id: k.id, max_scope: 'account:read', ip_whitelist: ['10.1.2.3'] }, user);
    assert.deepEqual(w.ip_whitelist, ['10.1.2.3']);
    assertError(await summary(basic(k)), 13021, { reason: 'ip_not_whitelisted' });
    assertError(await keyAuth(k), 13021, { reason: 'ip_not_whitelisted' });
    assertError(await rpc(url, 'private/get_account_summary', { currency: 'BTC' }, token), 13021, { reason: 'ip_not_whitelisted' });
    await ok(url, 'private/edit_api_key', { id: k.id, max_scope: 'account:read', ip_whitelist: ['10.1.2.3', '127.0.0.1'] }, user);
    assert.equal((await summary(basic(k))).body.result.currency, 'BTC');
    await ok(url, 'private/edit_api_key', { id: k.id, max_scope: 'account:read', ip_whitelist: [] }, user);
    assert.equal((await summary(basic(k))).body.result.currency, 'BTC', 'an empty list admits every address');
    assertError(await rpc(url, 'private/edit_api_key', { id: k.id, max_scope: 'account:read', ip_whitelist: ['not an ip'] }, user), -32602);
  });

  it('a clean replay of the journal reproduces the state the changes left', async () => {
    const replayed = cleanReplay(srv.dataDir);
    assert.deepEqual(replayed.errors, []);
    assert.equal(replayed.hash, stateHash(srv.app.services.ex));
    const live = srv.app.services.ex.apiKeys.forUser(replayed.ex.apiKeys.forUser(2)[0]!.userId);
    assert.deepEqual(replayed.ex.apiKeys.forUser(live[0]!.userId), live);
  });
});
