// A ticker subscription starts with the current ticker (src/api/ws/hub.ts), so a screen of many
// series needs no request per series: on an idle market nothing else would arrive. Run against the
// engine and through a gateway (test/helpers/targets.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, type Market } from '../helpers/market.ts';
import { ok, type TestServer } from '../helpers/server.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';
import { WsClient } from '../helpers/ws.ts';

function suite(spec: TargetSpec): void {
  let tg: Target;
  let srv: TestServer;
  let m: Market;
  before(async () => {
    tg = await startTarget(spec.kind);
    srv = tg.srv;
    m = await atmCall(srv.url);
  });
  after(() => tg.stop());

  test('a ticker subscription answers with the current ticker at once, also joining a channel another connection holds', async () => {
    const channel = `ticker.${m.name}.100ms`;
    const expected = await ok(srv.url, 'public/ticker', { instrument_name: m.name });
    const first = await WsClient.open(tg.ws);
    const second = await WsClient.open(tg.ws);
    try {
      // the second joins while the first holds the channel, on a market where nothing changes: only
      // the answer to its own subscription can bring it a ticker
      for (const [who, ws] of [['first', first], ['second', second]] as const) {
        await ws.ok('public/subscribe', { channels: [channel] });
        await ws.until(() => ws.on(channel).length > 0, 3000, `the ${who} subscriber's ticker`);
        const t = ws.on(channel)[0]!.data;
        assert.equal(t.instrument_name, m.name);
        for (const k of ['mark_price', 'mark_iv', 'best_bid_price', 'best_ask_price', 'open_interest', 'index_price']) assert.deepEqual(t[k], expected[k], `${who}: ${k}`);
        assert.deepEqual(t.greeks, expected.greeks, `${who}: greeks`);
      }
    } finally {
      await first.close();
      await second.close();
    }
  });
}

for (const spec of await wsTargets()) describe(spec.name, { skip: spec.skip }, () => suite(spec));
