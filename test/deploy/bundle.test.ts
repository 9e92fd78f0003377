// The server bundle `npm start` runs (scripts/buildServer.ts): it carries its pure-JavaScript npm
// packages inside (fastify, ajv, TypeBox, ws, prom-client), so the tests that run the sources under
// tsx do not exercise the copies of those packages that production runs. This file does: what the
// bundle imports from outside it, and the bundled server answering through each of those packages
// (routing, schema validation, JSON-RPC errors, WebSocket frames, metrics), and its NATS events
// thread, whose bundle carries ajv and TypeBox of its own.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { BUNDLE_EXTERNAL, BUNDLE_IMPORTS } from '../../scripts/buildServer.ts';
import { assertError } from '../helpers/envelope.ts';
import { atmCall, nearMark } from '../helpers/market.ts';
import { freshStream, readStream } from '../helpers/nats.ts';
import { adminToken, bundledEntry, ok, rawRequest, rpc, spawnServer, tempDir, userToken, type ChildServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

/** A package name an import names: `@scope/name` or `name`, without a path inside the package. */
function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

function allowedExternal(specifier: string): boolean {
  if (isBuiltin(specifier)) return true;
  const pkg = packageOf(specifier);
  return BUNDLE_EXTERNAL.some((e) => (e.endsWith('/*') ? pkg.startsWith(e.slice(0, -1)) : pkg === e));
}

/** The bundle started on a fresh data dir; killed (if still running) and its dir removed when `t` ends. */
async function spawnBundle(t: TestContext, env: Record<string, string> = {}): Promise<ChildServer> {
  const dir = tempDir();
  const srv = await spawnServer(dir, env, { bundled: true });
  t.after(async () => {
    if (srv.proc.exitCode === null && srv.proc.signalCode === null) srv.proc.kill('SIGKILL');
    await srv.exited;
    rmSync(dir, { recursive: true, force: true });
  });
  return srv;
}

test('the bundle imports only node modules and the packages it leaves out on purpose', () => {
  bundledEntry(); // built first when a source is newer, as npm start does
  const imports = JSON.parse(readFileSync(BUNDLE_IMPORTS, 'utf8')) as Record<string, string[]>;
  assert.ok(imports['main.js'] && imports['journalWorker.js'], `every entry is listed: ${Object.keys(imports).join(', ')}`);
  for (const [file, specifiers] of Object.entries(imports)) {
    const stray = specifiers.filter((s) => !allowedExternal(s));
    assert.deepEqual(stray, [], `${file} imports packages from node_modules that the bundle should carry`);
  }
  // the packages of the request path are inside the bundle, not loaded file by file at each start
  for (const pkg of ['fastify', 'ajv', 'ws', 'prom-client', '@sinclair/typebox']) {
    assert.ok(!imports['main.js']!.some((s) => packageOf(s) === pkg), `${pkg} is bundled into main.js`);
  }
  // and the ones kept out are the ones a server on SQLite must not load
  assert.ok(imports['main.js']!.includes('pg'), 'pg stays an import of its own, loaded only for PostgreSQL');
});

test('the bundled server answers over HTTP, JSON-RPC errors, WebSocket and /metrics', async (t) => {
  const srv = await spawnBundle(t);
  const url = srv.url;

  // fastify's routing and query parsing (GET), the JSON-RPC envelope
  const m = await atmCall(url);
  assert.ok(m.prices.length > 2, 'get_instruments and get_order_book answered through the bundle');

  // schema validation (TypeBox schemas compiled by ajv): a wrong type is a -32602, not a 500
  assertError(await rpc(url, 'public/get_order_book', { instrument_name: m.name, depth: 'deep' }), -32602);
  assertError(await rpc(url, 'public/no_such_method'), -32601);

  const admin = await adminToken(url);
  const seller = await userToken(url, admin, 'bundle-seller@example.com', { currency: 'BTC', amount: 10 });
  await userToken(url, admin, 'bundle-buyer@example.com', { currency: 'BTC', amount: 10 });
  const price = nearMark(m);
  const sell = await ok(url, 'private/sell', { instrument_name: m.name, amount: 0.1, price, label: 'bundle' }, seller);
  assert.equal(sell.order.order_state, 'open');

  // ws: frames in and out, authentication, a subscription's notification, an order answered
  const ws = await WsClient.open(url);
  t.after(() => ws.close());
  await ws.auth('bundle-buyer@example.com');
  const channel = `trades.${m.name}.raw`;
  assert.deepEqual(await ws.ok('public/subscribe', { channels: [channel] }), [channel]);
  const buy = await ws.ok('private/buy', { instrument_name: m.name, amount: 0.1, price });
  assert.equal(buy.trades.length, 1, 'the buy traded against the resting sell');
  assert.equal(buy.order.order_state, 'filled');
  await ws.until(() => ws.on(channel).length > 0, 5000, `a notification on ${channel}`);
  assert.equal(ws.on(channel)[0]!.data[0].trade_id, buy.trades[0].trade_id);
  const badWs = await ws.call('private/buy', { instrument_name: m.name, amount: 'much', price });
  assert.equal(badWs.error?.code, -32602, `a bad parameter over WebSocket: ${JSON.stringify(badWs.error)}`);

  // prom-client's registry (a sandbox serves /metrics to this host directly)
  const metrics = await rawRequest(url, 'GET', '/metrics');
  assert.equal(metrics.status, 200);
  assert.match(metrics.text, /^strikebook_journal_seq \d+$/m);

  // a planned stop (SIGTERM: drain, snapshot, close) exits cleanly
  await ws.close();
  srv.proc.kill('SIGTERM');
  assert.equal(await srv.exited, 0, `exit code after SIGTERM; output: ${srv.output().slice(-2000)}`);
});

test('the bundled server publishes its events to NATS JetStream from its events thread', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const srv = await spawnBundle(t, ns.env);
  const m = await atmCall(srv.url);
  const admin = await adminToken(srv.url);
  const maker = await userToken(srv.url, admin, 'bundle-nats@example.com', { currency: 'BTC', amount: 10 });
  const order = (await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[0] }, maker)).order;
  const deadline = performance.now() + 10_000;
  let text = '';
  while (!text.includes(order.order_id) && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    text = JSON.stringify(await readStream(ns.nc, ns.stream).catch(() => []));
  }
  assert.ok(text.includes(order.order_id), `the order ${order.order_id} reached stream ${ns.stream}; server output: ${srv.output().slice(-1500)}`);
});
