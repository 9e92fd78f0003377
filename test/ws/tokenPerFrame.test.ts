// A WebSocket keeps the hash of the last access token it saw (src/api/ws/server.ts
// Connection.hashOf), not the decision: a token revoked while the socket is open is refused on the
// very next frame that carries it, and a frame with another user's token acts as that user. On the
// engine and through a gateway (which forwards each frame with its token as it is).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, rpc, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';

function suite(spec: TargetSpec): void {
  let tg: Target;
  let srv: TestServer;
  let admin: string;
  let m: Market;

  before(async () => {
    tg = await startTarget(spec.kind);
    srv = tg.srv;
    admin = await adminToken(srv.url);
    m = await atmCall(srv.url);
  });
  after(() => tg.stop());

  test('a token logged out elsewhere is refused on the next frame of a socket that used it', async () => {
    const token = await userToken(srv.url, admin, 'frames@example.com', { currency: 'BTC', amount: 10 });
    const ws = await WsClient.open(tg.ws);
    const price = m.prices[Math.max(0, m.prices.indexOf(nearMark(m)) - 3)];
    const order = { instrument_name: m.name, amount: 0.1, price, type: 'limit', access_token: token };
    const first = await ws.call('private/buy', order);
    assert.equal(first.result?.order?.order_state, 'open', JSON.stringify(first));
    // the same token ends over HTTP while the socket stays open
    const out = await rpc(srv.url, 'private/logout', {}, token);
    assert.equal(out.body.error, undefined, JSON.stringify(out.body));
    const second = await ws.call('private/buy', order);
    assert.equal(second.error?.code, 13009, JSON.stringify(second));
    assert.equal(second.result, undefined);
    await ws.close();
  });

  test('frames with different tokens on one socket act as their own users', async () => {
    const a = await userToken(srv.url, admin, 'frames-a@example.com', { currency: 'BTC', amount: 10 });
    const b = await userToken(srv.url, admin, 'frames-b@example.com', { currency: 'BTC', amount: 10 });
    const ws = await WsClient.open(tg.ws);
    const price = m.prices[Math.max(0, m.prices.indexOf(nearMark(m)) - 3)];
    const place = (token: string, label: string) => ws.call('private/buy', { instrument_name: m.name, amount: 0.1, price, type: 'limit', label, access_token: token });
    const answers = [await place(a, 'of-a'), await place(b, 'of-b'), await place(a, 'of-a-2')];
    for (const x of answers) assert.equal(x.result?.order?.order_state, 'open', JSON.stringify(x));
    const labels = async (token: string) =>
      ((await ws.call('private/get_open_orders_by_instrument', { instrument_name: m.name, access_token: token })).result as Array<{ label: string }>).map((o) => o.label).sort();
    assert.deepEqual(await labels(a), ['of-a', 'of-a-2']);
    assert.deepEqual(await labels(b), ['of-b']);
    await ws.close();
  });
}

for (const spec of await wsTargets()) describe(spec.name, { skip: spec.skip }, () => suite(spec));
