// Announcements (issue 31): an administrator publishes them; public/get_announcements lists them,
// private/get_new_announcements the ones a user has not marked read (set_announcement_as_read), and
// the `announcements` channel carries each as it is published. Journaled: a clean replay reproduces
// the state hash.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stateHash } from '../../src/engine/snapshot.ts';
import { assertError } from '../helpers/envelope.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

describe('announcements', () => {
  let srv: TestServer;
  let url: string;
  let admin: string;
  let user: string;

  before(async () => {
    srv = await startServer();
    url = srv.url;
    admin = await adminToken(url);
    user = await userToken(url, admin, 'reader@example.com');
  });
  after(() => srv.stop());

  it('an administrator publishes; the channel carries it; public/get_announcements lists them newest first', async () => {
    const ws = await WsClient.open(url);
    try {
      assert.deepEqual(await ws.ok('public/subscribe', { channels: ['announcements'] }), ['announcements']);
      const a = await ok(url, 'private/publish_announcement', { title: 'Maintenance', body: 'Saturday 10:00 UTC', important: true }, admin);
      assert.deepEqual(Object.keys(a).sort(), ['body', 'confirmation', 'id', 'important', 'publication_timestamp', 'title']);
      assert.deepEqual([a.title, a.body, a.important, a.confirmation], ['Maintenance', 'Saturday 10:00 UTC', true, false]);
      await ws.until(() => ws.on('announcements').length > 0, 5000, 'the announcement');
      assert.deepEqual(ws.on('announcements')[0]!.data, { action: 'new', ...a });
      const b = await ok(url, 'private/publish_announcement', { title: 'New series', body: 'Weekly ETH options' }, admin);
      const listed = await ok(url, 'public/get_announcements', {});
      assert.deepEqual(listed.map((x: any) => x.id), [b.id, a.id]);
      assert.deepEqual(await ok(url, 'public/get_announcements', { count: 1 }), [b]);
      assert.deepEqual(await ok(url, 'public/get_announcements', { start_timestamp: a.publication_timestamp - 1 }), []);
      assertError(await rpc(url, 'private/publish_announcement', { title: 'x', body: 'y' }, user), 13021);
      assertError(await rpc(url, 'private/publish_announcement', { title: '', body: 'y' }, admin), -32602);
    } finally {
      await ws.close();
    }
  });

  it('get_new_announcements lists what the user has not marked read; set_announcement_as_read marks one', async () => {
    const fresh = await ok(url, 'private/get_new_announcements', {}, user);
    assert.ok(fresh.length >= 2);
    assert.equal(await ok(url, 'private/set_announcement_as_read', { announcement_id: fresh[0].id }, user), 'ok');
    const after = await ok(url, 'private/get_new_announcements', {}, user);
    assert.deepEqual(after.map((x: any) => x.id), fresh.slice(1).map((x: any) => x.id));
    assert.equal((await ok(url, 'private/get_new_announcements', {}, admin)).length, fresh.length, "another user's reads are theirs");
    assertError(await rpc(url, 'private/set_announcement_as_read', { announcement_id: 999999 }, user), 13020);
    assertError(await rpc(url, 'private/get_new_announcements', {}), 10000);
  });

  it('a clean replay of the journal reproduces the state', async () => {
    const r = cleanReplay(srv.dataDir);
    assert.deepEqual(r.errors, []);
    assert.equal(r.hash, stateHash(srv.app.services.ex));
  });
});
