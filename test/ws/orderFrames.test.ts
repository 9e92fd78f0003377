// An order's answer over WebSocket is framed by the server itself (src/api/ws/server.ts
// renderedFrame: envelope head, the rendered answer and the tail encoded into one frame by byte
// counts): with non-ASCII text in the request id and the label, on a resting order and on a trade,
// the frame must still be exactly one well-formed message, the envelope in its usual field order.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, userToken, type TestServer } from '../helpers/server.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';

function suite(spec: TargetSpec): void {
  let tg: Target;
  let srv: TestServer;
  let maker: string;
  let taker: string;
  let m: Market;

  before(async () => {
    tg = await startTarget(spec.kind);
    srv = tg.srv;
    const admin = await adminToken(srv.url);
    maker = await userToken(srv.url, admin, 'frames-maker@example.com', { currency: 'BTC', amount: 100 });
    taker = await userToken(srv.url, admin, 'frames-taker@example.com', { currency: 'BTC', amount: 100 });
    m = await atmCall(srv.url);
  });
  after(() => tg.stop());

  /** Sends one frame and returns the raw text of the answer. */
  async function rawCall(frame: string): Promise<string> {
    const ws = new WebSocket(tg.ws.replace(/^http/, 'ws') + '/ws/api/v2');
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const text = await new Promise<string>((resolve, reject) => {
      ws.once('message', (data) => resolve((data as Buffer).toString('utf8')));
      ws.once('error', reject);
      ws.send(frame);
    });
    ws.close();
    return text;
  }

  test('an order answer with non-ASCII id and label, resting then traded, is one exact envelope', async () => {
    const price = m.prices[Math.max(0, m.prices.indexOf(nearMark(m)) - 3)];
    const label = 'é€😀 "q" \\';
    const id = 'ïd-✓';
    const order = (method: string, token: string) => JSON.stringify({ jsonrpc: '2.0', id, method, params: { instrument_name: m.name, amount: 0.1, price, type: 'limit', label, access_token: token } });
    for (const [method, token, state, trades] of [
      ['private/sell', maker, 'open', 0],
      ['private/buy', taker, 'filled', 1],
    ] as const) {
      const text = await rawCall(order(method, token));
      assert.ok(text.includes('"result"'), text);
      const msg = JSON.parse(text) as { id: unknown; result: { order: { label: string; order_state: string }; trades: unknown[] }; usIn: number; usOut: number; usDiff: number; testnet: boolean };
      assert.equal(msg.id, id);
      assert.equal(msg.result.order.label, label);
      assert.equal(msg.result.order.order_state, state);
      assert.equal(msg.result.trades.length, trades);
      // the envelope's fields in their order, the result as JSON.stringify writes it
      const expected = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${JSON.stringify(msg.result)},"usIn":${msg.usIn},"usOut":${msg.usOut},"usDiff":${msg.usDiff},"testnet":${msg.testnet}}`;
      assert.equal(text, expected);
    }
  });
}

for (const spec of await wsTargets()) describe(spec.name, { skip: spec.skip }, () => suite(spec));
