// Acceptance (issue 5): cancel-on-disconnect is a journaled command that fires on close and on a
// missed heartbeat, not on private/logout, and touches only orders placed over that connection.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, rpc, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { WsClient } from '../helpers/ws.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';

function suite(spec: TargetSpec): void {
  let tg: Target;
  let srv: TestServer;
  let m: Market;
  let tok: string;
  let bidIdx: number;
  const ENV = { STRIKEBOOK_WS_MIN_HEARTBEAT: '1' };
  const EMAIL = 'cod@example.com';

  before(async () => {
    tg = await startTarget(spec.kind, ENV);
    srv = tg.srv;
    const admin = await adminToken(srv.url);
    tok = await userToken(srv.url, admin, EMAIL, { currency: 'BTC', amount: 10 });
    m = await atmCall(srv.url);
    bidIdx = m.prices.indexOf(nearMark(m)) - 5;
  });

  after(async () => {
    await tg.stop();
  });

  /** Rests a small bid (a fresh price each time) and returns its id. */
  async function rest(place: (params: Record<string, unknown>) => Promise<any>): Promise<string> {
    const r = await place({ instrument_name: m.name, amount: 0.1, price: m.prices[bidIdx--] });
    assert.equal(r.order.order_state, 'open');
    return r.order.order_id;
  }

  const state = (id: string) => ok(srv.url, 'private/get_order_state', { order_id: id }, tok);

  async function waitCancelled(ids: string[]): Promise<void> {
    const deadline = performance.now() + 10_000;
    for (;;) {
      const states = await Promise.all(ids.map(state));
      if (states.every((o) => o.order_state === 'cancelled')) {
        for (const o of states) assert.equal(o.cancel_reason, 'cancel_on_disconnect');
        return;
      }
      if (performance.now() > deadline) assert.fail(`orders not cancelled: ${JSON.stringify(states.map((o) => o.order_state))}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async function assertOpen(ids: string[]): Promise<void> {
    for (const id of ids) assert.equal((await state(id)).order_state, 'open', `order ${id} survives`);
  }

  test('closing a connection with cancel-on-disconnect cancels only its own orders, durably', async () => {
    const cod = await WsClient.open(tg.ws);
    await cod.auth(EMAIL);
    assert.deepEqual(await cod.ok('private/get_cancel_on_disconnect'), { scope: 'connection', enabled: false });
    assert.equal(await cod.ok('private/enable_cancel_on_disconnect', { scope: 'connection' }), 'ok');
    assert.deepEqual(await cod.ok('private/get_cancel_on_disconnect', { scope: 'connection' }), { scope: 'connection', enabled: true });
    const other = await WsClient.open(tg.ws);
    await other.auth(EMAIL);

    const mine = [await rest((p) => cod.ok('private/buy', p)), await rest((p) => cod.ok('private/buy', p))];
    const viaOther = await rest((p) => other.ok('private/buy', p));
    const viaHttp = await rest((p) => ok(srv.url, 'private/buy', p, tok));

    await cod.close();
    await waitCancelled(mine);
    await assertOpen([viaOther, viaHttp]);

    // journaled: a restart replays the cancel from the journal
    await other.close();
    srv = await tg.restart();
    for (const id of mine) assert.equal((await state(id)).cancel_reason, 'cancel_on_disconnect');
    await assertOpen([viaOther, viaHttp]);
  });

  test('a missed heartbeat closes the connection and cancels its orders', async () => {
    const ws = await WsClient.open(tg.ws);
    await ws.auth(EMAIL);
    await ws.ok('private/enable_cancel_on_disconnect');
    assert.equal((await ws.call('public/set_heartbeat', { interval: 0.5 })).error.code, -32602);
    const id = await rest((p) => ws.ok('private/buy', p));
    const keep = await rest((p) => ok(srv.url, 'private/buy', p, tok));

    // a client that answers keeps its connection across several heartbeats
    const alive = await WsClient.open(tg.ws);
    await alive.auth(EMAIL);
    await alive.ok('private/enable_cancel_on_disconnect');
    const aliveOrder = await rest((p) => alive.ok('private/buy', p));
    await alive.ok('public/set_heartbeat', { interval: 1 });

    ws.answerHeartbeats = false;
    assert.equal(await ws.ok('public/set_heartbeat', { interval: 1 }), 'ok');
    await ws.closedP;
    assert.ok(ws.heartbeats.some((h) => h.params.type === 'test_request'));
    await waitCancelled([id]);
    await assertOpen([keep, aliveOrder]);
    assert.equal(alive.closed, false);
    assert.ok(alive.heartbeats.length >= 1);
    await alive.close();
    await waitCancelled([aliveOrder]);
  });

  test('private/logout closes the connection without cancelling', async () => {
    const ws = await WsClient.open(tg.ws);
    await ws.auth(EMAIL);
    await ws.ok('private/enable_cancel_on_disconnect');
    const id = await rest((p) => ws.ok('private/buy', p));
    await ws.ok('private/logout');
    await ws.closedP;
    await new Promise((r) => setTimeout(r, 200));
    await assertOpen([id]);
  });

  test('account scope turns cancel-on-disconnect on for the next connections of the user', async () => {
    const a = await WsClient.open(tg.ws);
    await a.auth(EMAIL);
    await a.ok('private/enable_cancel_on_disconnect', { scope: 'account' });
    assert.deepEqual(await a.ok('private/get_cancel_on_disconnect', { scope: 'account' }), { scope: 'account', enabled: true });
    const b = await WsClient.open(tg.ws);
    await b.auth(EMAIL);
    assert.deepEqual(await b.ok('private/get_cancel_on_disconnect'), { scope: 'connection', enabled: true });
    const id = await rest((p) => b.ok('private/buy', p));
    await a.ok('private/disable_cancel_on_disconnect', { scope: 'account' });
    await b.close();
    await waitCancelled([id]);
    const c = await WsClient.open(tg.ws);
    await c.auth(EMAIL);
    assert.deepEqual(await c.ok('private/get_cancel_on_disconnect'), { scope: 'connection', enabled: false });
    await a.close();
    await c.close();
  });

  test('over HTTP the account scope of cancel-on-disconnect is set and read through the registry; scopes are checked on both transports', async () => {
    // HTTP has no connection: scope connection (the default) is refused
    const noConn = await rpc(srv.url, 'private/get_cancel_on_disconnect', {}, tok);
    assert.deepEqual([noConn.body.error.code, noConn.body.error.data.reason, noConn.body.error.data.param], [11029, 'scope_connection_needs_websocket', 'scope']);
    assert.deepEqual(await ok(srv.url, 'private/get_cancel_on_disconnect', { scope: 'account' }, tok), { scope: 'account', enabled: false });
    assert.equal(await ok(srv.url, 'private/enable_cancel_on_disconnect', { scope: 'account' }, tok), 'ok');
    assert.deepEqual(await ok(srv.url, 'private/get_cancel_on_disconnect', { scope: 'account' }, tok), { scope: 'account', enabled: true });

    // the next WebSocket connection starts with it on, and its orders go when it closes
    const ws = await WsClient.open(tg.ws);
    await ws.auth(EMAIL);
    assert.deepEqual(await ws.ok('private/get_cancel_on_disconnect'), { scope: 'connection', enabled: true });
    assert.deepEqual(await ws.ok('private/get_cancel_on_disconnect', { scope: 'account' }), { scope: 'account', enabled: true });
    const id = await rest((p) => ws.ok('private/buy', p));
    await ws.close();
    await waitCancelled([id]);

    assert.equal(await ok(srv.url, 'private/disable_cancel_on_disconnect', { scope: 'account' }, tok), 'ok');
    const ws2 = await WsClient.open(tg.ws);
    await ws2.auth(EMAIL);
    assert.deepEqual(await ws2.ok('private/get_cancel_on_disconnect'), { scope: 'connection', enabled: false });
    assert.deepEqual(await ok(srv.url, 'private/get_cancel_on_disconnect', { scope: 'account' }, tok), { scope: 'account', enabled: false });
    await ws2.close();

    // an API key with account:read may read the setting, not change it (HTTP and WebSocket alike)
    const key = await ok(srv.url, 'private/create_api_key', { scope: 'account:read trade:read_write' }, tok);
    const keyTok = (await ok(srv.url, 'public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret })).access_token;
    assert.equal((await rpc(srv.url, 'private/enable_cancel_on_disconnect', { scope: 'account' }, keyTok)).body.error.code, 13403);
    assert.deepEqual(await ok(srv.url, 'private/get_cancel_on_disconnect', { scope: 'account' }, keyTok), { scope: 'account', enabled: false });
    const ws3 = await WsClient.open(tg.ws);
    await ws3.ok('public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret });
    assert.equal((await ws3.call('private/enable_cancel_on_disconnect')).error.code, 13403);
    assert.deepEqual(await ws3.ok('private/get_cancel_on_disconnect'), { scope: 'connection', enabled: false });
    await ws3.close();
  });
}

for (const spec of await wsTargets()) describe(spec.name, { skip: spec.skip }, () => suite(spec));
