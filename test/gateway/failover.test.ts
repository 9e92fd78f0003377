// Gateways and NATS under load: a gateway killed (SIGKILL) while orders flow, its clients moving to
// another gateway and rebuilding every book equal to get_order_book; NATS killed and restarted while
// orders flow, a stream reader resuming from its last sequence missing and repeating nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, freePort, ok, startServer, userToken } from '../helpers/server.ts';
import { freshStream, OwnNats, readStream, type StoredEvent } from '../helpers/nats.ts';
import { WsClient } from '../helpers/ws.ts';
import { applyBook, bookOf, spawnGateway, until } from '../helpers/gateway.ts';
import { connect } from '@nats-io/transport-node';
import { assertStreamHoldsLoad, orderLoad, threeMarkets } from '../helpers/streamLoad.ts';

test('a gateway killed under load: its clients reconnect to another and rebuild every book equal to get_order_book', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const srv = await startServer(ns.env);
  t.after(() => srv.stop());
  const admin = await adminToken(srv.url);
  const maker = await userToken(srv.url, admin, 'maker@example.com', { currency: 'BTC', amount: 100 });
  const taker = await userToken(srv.url, admin, 'taker@example.com', { currency: 'BTC', amount: 100 });
  const ms = await threeMarkets(srv.url);
  const env = { STRIKEBOOK_LEADER_URL: srv.url, NATS_URL: ns.url, STRIKEBOOK_NATS_STREAM: ns.stream, STRIKEBOOK_NATS_SUBJECT_PREFIX: ns.prefix };
  const [a, b] = await Promise.all([spawnGateway(env), spawnGateway(env)]);
  t.after(() => {
    a.proc.kill('SIGKILL');
    b.proc.kill('SIGKILL');
  });
  const channels = ms.flatMap((m) => [`book.${m.name}.raw`, `book.${m.name}.100ms`]);
  const clients: WsClient[] = [];
  for (let i = 0; i < 4; i++) {
    const c = await WsClient.open(a.url);
    // raw channels need credentials: an access_token param authenticates the connection (as on the leader)
    assert.deepEqual(await c.ok('public/subscribe', { channels, access_token: admin }), channels);
    clients.push(c);
  }
  const load = orderLoad(srv.url, maker, taker, ms);
  await until('some orders', () => load.orders.length >= 30);
  a.proc.kill('SIGKILL');
  await Promise.all(clients.map((c) => c.closedP));
  // each client moves to the other gateway: what it had is dropped, the new snapshot starts over
  const moved: WsClient[] = [];
  for (let i = 0; i < clients.length; i++) {
    const c = await WsClient.open(b.url);
    t.after(() => c.ws.close());
    assert.deepEqual(await c.ok('public/subscribe', { channels, access_token: admin }), channels);
    moved.push(c);
  }
  await until('more orders after the move', () => load.orders.length >= 90, 60_000);
  await load.stop();
  for (const m of ms) {
    const leader = await ok(srv.url, 'public/get_order_book', { instrument_name: m.name, depth: 1000 });
    for (const [i, c] of moved.entries()) {
      for (const ch of [`book.${m.name}.raw`, `book.${m.name}.100ms`]) {
        await until(`client ${i} ${ch} at change ${leader.change_id}`, () => c.notes.some((n) => n.channel === ch && n.data.change_id === leader.change_id));
        assert.deepEqual(applyBook(c.notes.filter((n) => n.channel === ch).map((n) => n.data)), bookOf(leader), `client ${i} ${ch}`);
      }
    }
  }
  assert.ok(load.trades.length > 0, 'the load traded');
});

test('NATS killed and restarted under load: a reader resuming from its last sequence gets every acknowledged event once', async (t) => {
  if (!OwnNats.available(t)) return;
  const nats = new OwnNats(await freePort());
  t.after(() => nats.dispose());
  await nats.start();
  const srv = await startServer({ NATS_URL: nats.url, STRIKEBOOK_NATS_STREAM: 'SB', STRIKEBOOK_NATS_SUBJECT_PREFIX: 'sb' });
  t.after(() => srv.stop());
  const admin = await adminToken(srv.url);
  const maker = await userToken(srv.url, admin, 'maker@example.com', { currency: 'BTC', amount: 100 });
  const taker = await userToken(srv.url, admin, 'taker@example.com', { currency: 'BTC', amount: 100 });
  const ms = await threeMarkets(srv.url);
  const load = orderLoad(srv.url, maker, taker, ms);
  await until('orders before the kill', () => load.orders.length >= 40);

  // the reader: everything up to its last sequence before NATS goes away
  let nc = await connect({ servers: nats.url });
  const seen: StoredEvent[] = await readStream(nc, 'SB');
  await nc.close();
  await nats.stop();
  await until('the publisher sees NATS gone', async () => /\nstrikebook_nats_connected 0\n/.test(await (await fetch(`${srv.url}/metrics`)).text()));
  const ackedWhileDown = load.orders.length;
  await until('orders acknowledged while NATS is down', () => load.orders.length >= ackedWhileDown + 30, 30_000);
  await nats.start();
  await until('orders after the restart', () => load.orders.length >= ackedWhileDown + 80, 60_000);
  await load.stop();
  const publisherDrained = async () => {
    const text = await (await fetch(`${srv.url}/metrics`)).text();
    return /\nstrikebook_nats_backlog 0\n/.test(text) && /\nstrikebook_nats_connected 1\n/.test(text);
  };
  await until('the backlog drained', publisherDrained, 30_000);
  nc = await connect({ servers: nats.url });
  t.after(() => nc.close());
  const last = seen.length > 0 ? seen[seen.length - 1]!.seq : 0;
  const rest = await readStream(nc, 'SB', last + 1);
  const all = [...seen, ...rest];

  await assertStreamHoldsLoad(all, 'sb', load, ms, srv.url);
});
