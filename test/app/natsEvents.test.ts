// Events on NATS JetStream (src/app/natsEvents.ts, src/api/ws/streamEvents.ts): what the leader
// publishes per durable batch, the dedupe id, and the bounded backlog while NATS is down.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { NatsEventPublisher } from '../../src/app/natsEvents.ts';
import { adminToken, freePort, ok, request, startServer, userToken } from '../helpers/server.ts';
import { atmCall } from '../helpers/market.ts';
import { freshStream, OwnNats, readStream, type StoredEvent } from '../helpers/nats.ts';
import { connect } from '@nats-io/transport-node';

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function metric(url: string, name: string): Promise<number> {
  const text = (await request(url, '/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `metric ${name} present`);
  return Number(line.split(' ')[1]);
}

/** Checks that the book changes of `inst` chain without a gap and returns the last change_id. */
function chainOf(events: StoredEvent[], inst: string): number {
  const book = events.filter((e) => e.subject.endsWith(`.public.book.${inst}`)).map((e) => e.data);
  assert.ok(book.length > 0, 'book changes published');
  for (let i = 1; i < book.length; i++) assert.equal(book[i].prev_change_id, book[i - 1].change_id, `chain at ${i}`);
  return book[book.length - 1].change_id;
}

test('publishes each durable batch as book, trade and private events, each with a per-batch dedupe id', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const srv = await startServer(ns.env);
  t.after(() => srv.stop());
  const admin = await adminToken(srv.url);
  const maker = await userToken(srv.url, admin, 'maker@example.com', { currency: 'BTC', amount: 10 });
  const taker = await userToken(srv.url, admin, 'taker@example.com', { currency: 'BTC', amount: 10 });
  const m = await atmCall(srv.url);
  const price = m.prices[Math.floor(m.prices.length / 2)];
  const sell = await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.3, price }, maker);
  const buy = await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price }, taker);
  assert.equal(buy.trades.length, 1);
  const makerId = (await ok(srv.url, 'private/get_account_summary', { currency: 'BTC', extended: true }, maker)).id;
  const takerId = (await ok(srv.url, 'private/get_account_summary', { currency: 'BTC', extended: true }, taker)).id;

  const events = await until('the trade on the stream', async () => {
    const ev = await readStream(ns.nc, ns.stream);
    return ev.some((e) => e.subject === `${ns.prefix}.public.trades.${m.name}`) ? ev : null;
  });
  // every message has its batch's last seq and its subject as id: a retried publish is dropped
  const ids = new Set<string>();
  for (const e of events) {
    assert.match(e.msgId ?? '', /^\d+:/, 'Nats-Msg-Id set');
    assert.equal(e.msgId!.slice(e.msgId!.indexOf(':') + 1), e.subject);
    assert.ok(!ids.has(e.msgId!), `one message per id (${e.msgId})`);
    ids.add(e.msgId!);
  }
  const book = await ok(srv.url, 'public/get_order_book', { instrument_name: m.name, depth: 100 });
  assert.equal(chainOf(events, m.name), book.change_id, 'the last change is the book as get_order_book shows it');
  const trades = events.filter((e) => e.subject === `${ns.prefix}.public.trades.${m.name}`).flatMap((e) => e.data);
  assert.deepEqual(trades.map((x: any) => x.trade_id), [buy.trades[0].trade_id]);
  const mine = events.filter((e) => e.subject === `${ns.prefix}.private.${makerId}`).map((e) => e.data);
  const lastMakerView = mine.flatMap((d) => d.orders).filter((o: any) => o.order_id === sell.order.order_id).pop();
  assert.equal(lastMakerView.filled_amount, 0.1, 'the maker sees its order partly filled');
  assert.deepEqual(mine.flatMap((d) => d.trades).map((x: any) => x.trade_id), [buy.trades[0].trade_id]);
  const theirs = events.filter((e) => e.subject === `${ns.prefix}.private.${takerId}`).map((e) => e.data);
  assert.equal(theirs.flatMap((d) => d.positions)[0].size, 0.1, "the taker's position after the fill");
  // nobody's private events go to another user's subject
  for (const e of events.filter((x) => x.subject === `${ns.prefix}.private.${takerId}`)) {
    for (const o of e.data.orders) assert.notEqual(o.order_id, sell.order.order_id);
  }
  await until('the counts reported', async () => (await metric(srv.url, 'strikebook_nats_published_total')) >= events.length);
  assert.equal(await metric(srv.url, 'strikebook_nats_connected'), 1);
});

test('a batch published again (a retry after a lost acknowledgement) is stored once', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const pub = new NatsEventPublisher({ url: ns.url, stream: ns.stream, prefix: ns.prefix, backlogMax: 1000, maxAgeSec: 60, log: pino({ level: 'silent' }) });
  pub.start();
  t.after(() => pub.close(0));
  const batch = [
    { subject: `${ns.prefix}.public.trades.X`, data: '[1]' },
    { subject: `${ns.prefix}.private.7`, data: '{"orders":[]}' },
  ];
  pub.enqueue(batch, 41, 42);
  pub.enqueue(batch, 41, 42);
  pub.enqueue([{ subject: `${ns.prefix}.public.trades.X`, data: '[2]' }], 43, 43);
  await until('published', async () => pub.counts.backlog === 0 && pub.counts.published === 5);
  const events = await readStream(ns.nc, ns.stream);
  assert.deepEqual(
    events.map((e) => e.msgId),
    [`42:${ns.prefix}.public.trades.X`, `42:${ns.prefix}.private.7`, `43:${ns.prefix}.public.trades.X`],
  );
});

test('with NATS down orders are still acknowledged; the backlog is bounded, counted, announced as a gap, and drained on reconnect', async (t) => {
  if (!OwnNats.available(t)) return;
  const nats = new OwnNats(await freePort());
  t.after(() => nats.dispose());
  const srv = await startServer({ NATS_URL: nats.url, STRIKEBOOK_NATS_BACKLOG_MAX: '10', STRIKEBOOK_NATS_STREAM: 'SB', STRIKEBOOK_NATS_SUBJECT_PREFIX: 'sb' });
  t.after(() => srv.stop());
  const admin = await adminToken(srv.url);
  const maker = await userToken(srv.url, admin, 'maker@example.com', { currency: 'BTC', amount: 10 });
  const m = await atmCall(srv.url);
  const placed: string[] = [];
  for (let i = 0; i < 20; i++) placed.push((await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.1, price: m.prices[m.prices.length - 1 - i] }, maker)).order.order_id);
  // the publisher's thread reports its counts a few times a second
  await until('the overflow counted', async () => (await metric(srv.url, 'strikebook_nats_dropped_total')) > 0);
  assert.equal(await metric(srv.url, 'strikebook_nats_connected'), 0);
  assert.ok((await metric(srv.url, 'strikebook_nats_backlog')) <= 10, 'bounded');
  assert.equal(await metric(srv.url, 'strikebook_nats_gaps_total'), 1);

  await nats.start();
  const nc = await connect({ servers: nats.url });
  t.after(() => nc.close());
  await until('the backlog drained', async () => (await metric(srv.url, 'strikebook_nats_backlog')) === 0 && (await metric(srv.url, 'strikebook_nats_connected')) === 1);
  // one more batch after the reconnect: the gap is announced before it
  const last = (await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.1, price: m.prices[m.prices.length - 30] }, maker)).order.order_id;
  const events = await until('the last order on the stream', async () => {
    const ev = await readStream(nc, 'SB').catch(() => []);
    return ev.some((e) => e.subject.startsWith('sb.private.') && e.data.orders.some((o: any) => o.order_id === last)) ? ev : null;
  });
  const gapAt = events.findIndex((e) => e.subject === 'sb.control.gap');
  assert.ok(gapAt >= 0, 'gap announced');
  const gap = events[gapAt].data;
  assert.ok(gap.from_seq <= gap.to_seq);
  const lastAt = events.findIndex((e) => e.subject.startsWith('sb.private.') && e.data.orders.some((o: any) => o.order_id === last));
  assert.ok(gapAt < lastAt, 'the gap comes before what followed it');
  assert.ok(events.length <= 10 + 1 + 2, 'only the bounded backlog, the gap and the new batch were sent');
});
