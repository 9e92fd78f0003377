// A connection's orders are pipelined (src/api/ws/server.ts PIPELINED): the next request starts
// once an order is applied, not once it is durable, yet every request is applied and answered in
// the order it arrived, as when they ran one by one.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, userToken, type TestServer } from '../helpers/server.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';

function suite(spec: TargetSpec): void {
  let tg: Target;
  let srv: TestServer;
  let token: string;
  let m: Market;

  before(async () => {
    tg = await startTarget(spec.kind);
    srv = tg.srv;
    const admin = await adminToken(srv.url);
    token = await userToken(srv.url, admin, 'pipeline@example.com', { currency: 'BTC', amount: 100 });
    m = await atmCall(srv.url);
  });
  after(() => tg.stop());

  /** Opens a socket, sends every request at once (no waiting) and collects the answers by arrival. */
  async function burst(requests: Array<{ method: string; params: Record<string, unknown> }>): Promise<any[]> {
    const ws = new WebSocket(tg.ws.replace(/^http/, 'ws') + '/ws/api/v2');
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const answers: any[] = [];
    const done = new Promise<void>((resolve) =>
      ws.on('message', (raw) => {
        answers.push(JSON.parse(raw.toString()));
        if (answers.length === requests.length) resolve();
      }),
    );
    // sent without waiting: the frames reach the server together, as a bot's burst does
    for (const [i, r] of requests.entries()) ws.send(JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: r.method, params: { ...r.params, access_token: token } }));
    await done;
    ws.close();
    return answers;
  }

  const journalBatches = () => srv.app.services.metrics.text().then((t) => Number(/^strikebook_journal_batches_total (\d+)/m.exec(t)![1]));

  test('orders, cancels, refusals and reads sent back-to-back are applied and answered in arrival order', async () => {
    const price = m.prices[Math.max(0, m.prices.indexOf(nearMark(m)) - 3)];
    const buy = (label: string, extra: Record<string, unknown> = {}) => ({ method: 'private/buy', params: { instrument_name: m.name, amount: 0.1, price, type: 'limit', label, ...extra } });
    const answers = await burst([
      buy('a'),
      { method: 'private/cancel_by_label', params: { label: 'a' } },
      buy('b'),
      buy('bad', { amount: -1 }), // refused before it reaches the engine: its answer still waits its turn
      { method: 'private/get_open_orders_by_instrument', params: { instrument_name: m.name } },
      buy('c'),
      { method: 'private/cancel_all', params: {} },
    ]);
    const byId = answers;
    assert.deepEqual(byId.map((a) => a.id), [1, 2, 3, 4, 5, 6, 7], 'answers leave in arrival order');
    assert.equal(byId[0].result.order.label, 'a');
    assert.equal(byId[1].result, 1, 'the cancel by label ran after a was placed, and before b');
    assert.equal(byId[2].result.order.order_state, 'open');
    assert.equal(byId[3].error.code, 10021, 'invalid amount');
    assert.deepEqual(byId[4].result.map((o: any) => o.label), ['b'], 'the read saw a cancelled and b placed, and not c');
    assert.equal(byId[5].result.order.label, 'c');
    assert.equal(byId[6].result, 2, 'cancel_all ran after b and c');
  });

  test('a burst of orders on one socket shares journal batches instead of waiting one commit each', async () => {
    const price = m.prices[Math.max(0, m.prices.indexOf(nearMark(m)) - 4)];
    const before = await journalBatches();
    const n = 40;
    const answers = await burst(Array.from({ length: n }, () => ({ method: 'private/buy', params: { instrument_name: m.name, amount: 0.1, price, type: 'limit' } })));
    const batches = (await journalBatches()) - before;
    assert.equal(answers.filter((a) => a.result?.order?.order_state === 'open').length, n);
    // one by one, each order waited for its own commit: n batches (checked on the serial code)
    assert.ok(batches <= n / 4, `${n} orders took ${batches} journal batches`);
    const ids = answers.map((a) => a.id);
    assert.deepEqual(ids, Array.from({ length: n }, (_, i) => i + 1));
  });
}

for (const spec of await wsTargets()) describe(spec.name, { skip: spec.skip }, () => suite(spec));
