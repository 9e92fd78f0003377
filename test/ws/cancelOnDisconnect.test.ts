// Acceptance (issue 5): cancel-on-disconnect is a journaled command that fires on close and on a
// missed heartbeat, not on private/logout, and touches only orders placed over that connection.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { WsClient } from '../helpers/ws.ts';

let srv: TestServer;
let m: Market;
let tok: string;
let bidIdx: number;
const ENV = { STRIKEBOOK_WS_MIN_HEARTBEAT: '1' };
const EMAIL = 'cod@example.com';

before(async () => {
  srv = await startServer(ENV);
  const admin = await adminToken(srv.url);
  tok = await userToken(srv.url, admin, EMAIL, { currency: 'BTC', amount: 10 });
  m = await atmCall(srv.url);
  bidIdx = m.prices.indexOf(nearMark(m)) - 5;
});

after(async () => {
  await srv.stop();
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
  const cod = await WsClient.open(srv.url);
  await cod.auth(EMAIL);
  assert.deepEqual(await cod.ok('private/get_cancel_on_disconnect'), { scope: 'connection', enabled: false });
  assert.equal(await cod.ok('private/enable_cancel_on_disconnect', { scope: 'connection' }), 'ok');
  assert.deepEqual(await cod.ok('private/get_cancel_on_disconnect', { scope: 'connection' }), { scope: 'connection', enabled: true });
  const other = await WsClient.open(srv.url);
  await other.auth(EMAIL);

  const mine = [await rest((p) => cod.ok('private/buy', p)), await rest((p) => cod.ok('private/buy', p))];
  const viaOther = await rest((p) => other.ok('private/buy', p));
  const viaHttp = await rest((p) => ok(srv.url, 'private/buy', p, tok));

  await cod.close();
  await waitCancelled(mine);
  await assertOpen([viaOther, viaHttp]);

  // journaled: a restart replays the cancel from the journal
  await other.close();
  const dataDir = srv.dataDir;
  await srv.stop({ keepData: true });
  srv = await startServer(ENV, dataDir);
  for (const id of mine) assert.equal((await state(id)).cancel_reason, 'cancel_on_disconnect');
  await assertOpen([viaOther, viaHttp]);
});

test('a missed heartbeat closes the connection and cancels its orders', async () => {
  const ws = await WsClient.open(srv.url);
  await ws.auth(EMAIL);
  await ws.ok('private/enable_cancel_on_disconnect');
  assert.equal((await ws.call('public/set_heartbeat', { interval: 0.5 })).error.code, -32602);
  const id = await rest((p) => ws.ok('private/buy', p));
  const keep = await rest((p) => ok(srv.url, 'private/buy', p, tok));

  // a client that answers keeps its connection across several heartbeats
  const alive = await WsClient.open(srv.url);
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
  const ws = await WsClient.open(srv.url);
  await ws.auth(EMAIL);
  await ws.ok('private/enable_cancel_on_disconnect');
  const id = await rest((p) => ws.ok('private/buy', p));
  await ws.ok('private/logout');
  await ws.closedP;
  await new Promise((r) => setTimeout(r, 200));
  await assertOpen([id]);
});

test('account scope turns cancel-on-disconnect on for the next connections of the user', async () => {
  const a = await WsClient.open(srv.url);
  await a.auth(EMAIL);
  await a.ok('private/enable_cancel_on_disconnect', { scope: 'account' });
  assert.deepEqual(await a.ok('private/get_cancel_on_disconnect', { scope: 'account' }), { scope: 'account', enabled: true });
  const b = await WsClient.open(srv.url);
  await b.auth(EMAIL);
  assert.deepEqual(await b.ok('private/get_cancel_on_disconnect'), { scope: 'connection', enabled: true });
  const id = await rest((p) => b.ok('private/buy', p));
  await a.ok('private/disable_cancel_on_disconnect', { scope: 'account' });
  await b.close();
  await waitCancelled([id]);
  const c = await WsClient.open(srv.url);
  await c.auth(EMAIL);
  assert.deepEqual(await c.ok('private/get_cancel_on_disconnect'), { scope: 'connection', enabled: false });
  await a.close();
  await c.close();
});
