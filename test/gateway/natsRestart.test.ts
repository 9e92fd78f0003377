// A NATS restart under a gateway (issue 30 item 3, src/gateway/natsStream.ts): noticed within 1 s
// (logged, counted in a metric, /health not "ok"), and the gateway's streams resume within 2 s of
// NATS coming back, from the sequence after the last message it handled: every book change made
// while NATS was down reaches the subscriber chained on, without a new snapshot. A nats-server of
// the test's own (test/helpers/nats.ts OwnNats), killed and started again on its store: the shared
// one is never restarted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { startGateway } from '../../src/gateway/gateway.ts';
import { atmCall } from '../helpers/market.ts';
import { OwnNats } from '../helpers/nats.ts';
import { adminToken, freePort, ok, request, startServer, userToken } from '../helpers/server.ts';
import { AddressedClient, applyBook, bookOf, until } from '../helpers/gateway.ts';

test('after a NATS restart a gateway notices within 1 s (log, metric, /health) and its streams resume within 2 s from the last sequence', { timeout: 120_000 }, async (t) => {
  if (!OwnNats.available(t)) return;
  const nats = new OwnNats(await freePort());
  t.after(() => nats.dispose());
  await nats.start();
  const natsEnv = { NATS_URL: nats.url, STRIKEBOOK_NATS_STREAM: 'SB', STRIKEBOOK_NATS_SUBJECT_PREFIX: 'sb' };
  const srv = await startServer(natsEnv);
  t.after(() => srv.stop());
  const admin = await adminToken(srv.url);
  const maker = await userToken(srv.url, admin, 'maker@example.com', { currency: 'BTC', amount: 100 });
  const m = await atmCall(srv.url);
  const logged: string[] = [];
  const log = pino({ level: 'warn' }, new Writable({ write: (chunk, _enc, done) => (logged.push(chunk.toString()), done()) }));
  const gw = await startGateway({ leaderUrl: srv.url, natsUrl: nats.url, stream: 'SB', prefix: 'sb', port: 0, host: '127.0.0.1', log });
  t.after(() => gw.close());
  const c = await AddressedClient.open(gw.url);
  t.after(() => c.ws.terminate());
  const ch = `book.${m.name}.raw`;
  assert.deepEqual((await c.call('public/subscribe', { channels: [ch], access_token: admin })).result, [ch]);
  let k = 0;
  const place = () => ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[k++ % 10] }, maker);
  const book = () => c.notes.filter((n) => n.channel === ch).map((n) => n.data);
  const reaches = async () => {
    const leader = await ok(srv.url, 'public/get_order_book', { instrument_name: m.name, depth: 1000 });
    return book().some((d) => d.change_id === leader.change_id) ? leader : null;
  };
  await place();
  await until('a change before the restart', reaches, 10_000);
  const metrics = async () => (await request(gw.url, '/metrics')).text;

  await nats.stop();
  const down = performance.now();
  const health = await until('/health reports NATS down', async () => {
    const h = await request(gw.url, '/health');
    return h.status !== 200 ? h : null;
  }, 5_000);
  const noticed = performance.now() - down;
  t.diagnostic(`NATS loss noticed in ${noticed.toFixed(0)} ms`);
  assert.ok(noticed <= 1_000, `noticed within 1 s (${noticed.toFixed(0)} ms)`);
  assert.equal(health.status, 503);
  assert.notEqual(health.body.status, 'ok');
  assert.equal(health.body.nats.connected, false);
  assert.match(await metrics(), /^strikebook_gateway_nats_connected 0$/m);
  assert.match(await metrics(), /^strikebook_gateway_nats_disconnects_total 1$/m);
  assert.ok(logged.some((l) => l.includes('NATS connection lost')), 'the loss is logged');
  // orders while NATS is down: the leader keeps their events for when it is back
  for (let i = 0; i < 5; i++) await place();

  await nats.start();
  const back = performance.now();
  const leader = await until('the book stream resumes', reaches, 10_000);
  const resumed = performance.now() - back;
  t.diagnostic(`streams resumed ${resumed.toFixed(0)} ms after NATS came back`);
  assert.ok(resumed <= 2_000, `resumed within 2 s (${resumed.toFixed(0)} ms)`);
  // from the last sequence: every change made meanwhile, chained on, no new snapshot
  assert.deepEqual(applyBook(book()), bookOf(leader));
  assert.equal(book().filter((d) => d.type === 'snapshot').length, 1, 'no gap, so no second snapshot');
  assert.equal((await request(gw.url, '/health')).body.status, 'ok');
  assert.match(await metrics(), /^strikebook_gateway_nats_connected 1$/m);
  // and on after it
  await place();
  await until('a change after the restart', reaches, 5_000);
});
