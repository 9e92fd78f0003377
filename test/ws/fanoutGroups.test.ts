// Issue 16, fan-out: a publish round writes each connection once, and connections subscribed to the
// same channels get the very same Buffer (serialized and framed once, joined once per channel set,
// nothing allocated per subscriber). Driven through the server's hub with recording subscribers, so
// the writes themselves can be counted and compared.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import type { Subscriber } from '../../src/api/ws/hub.ts';
import { frames, until } from '../helpers/hubWrites.ts';

let srv: TestServer;
let m: Market;
let maker: string;
let taker: string;

before(async () => {
  srv = await startServer();
  const admin = await adminToken(srv.url);
  maker = await userToken(srv.url, admin, 'maker@example.com', { currency: 'BTC', amount: 50 });
  taker = await userToken(srv.url, admin, 'taker@example.com', { currency: 'BTC', amount: 50 });
  m = await atmCall(srv.url);
});

after(async () => {
  await srv.stop();
});

let nextId = 1_000_000;

/** A subscriber that keeps every write. */
function recorder(): Subscriber & { writes: Buffer[] } {
  const writes: Buffer[] = [];
  return { id: nextId++, writes, sendFrame: (b: Buffer) => void writes.push(b) };
}

async function subscribe(sub: Subscriber, channels: string[]): Promise<void> {
  const hub = srv.app.ws.hub;
  // the hub needs no batch pending while it takes its snapshot
  await srv.app.services.seq.read(() => {
    for (const ch of channels) hub.subscribe(sub, ch, hub.parse(ch)!, null);
  });
}

async function unsubscribe(sub: Subscriber, channels: string[]): Promise<void> {
  const hub = srv.app.ws.hub;
  await srv.app.services.seq.read(() => {
    for (const ch of channels) hub.unsubscribe(sub, ch, hub.parse(ch)!, null);
  });
}

/** A resting ask and a buy that takes it: one book change and one trade. */
async function trade(k: number): Promise<void> {
  const price = m.prices[m.prices.indexOf(nearMark(m)) + 2 + (k % 3)];
  await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.1, price }, maker);
  await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price, time_in_force: 'immediate_or_cancel' }, taker);
}

test('connections with the same channels get each round as one write of the same Buffer, every channel in it in subscription order', async () => {
  const X = m.name;
  const book = `book.${X}.100ms`;
  const trades = `trades.${X}.100ms`;
  const a = recorder();
  const b = recorder();
  const c = recorder();
  await subscribe(a, [book, trades]);
  await subscribe(b, [book, trades]);
  await subscribe(c, [book]);
  assert.equal(srv.app.ws.hub.groupCount, 2, 'a and b share a group; c has one of its own');

  await trade(0);
  await until(() => a.writes.some((w) => frames(w).some((f) => f.channel === trades)), 'a round with a trade');

  assert.equal(b.writes.length, a.writes.length, 'b was written as often as a');
  for (let i = 0; i < a.writes.length; i++) assert.equal(b.writes[i], a.writes[i], `round ${i}: the very same Buffer`);
  const withTrade = a.writes.find((w) => frames(w).some((f) => f.channel === trades))!;
  const got = frames(withTrade);
  assert.deepEqual(got.map((f) => f.channel), [book, trades], 'one write carries both channels, book first as subscribed');
  assert.equal(got[1]!.data.at(-1).instrument_name, X);
  assert.equal(got[0]!.data.type, 'change');

  // c, subscribed to the book only, got the same book message bytes in a write of its own
  const cBooks = c.writes.flatMap(frames);
  assert.ok(cBooks.length > 0 && cBooks.every((f) => f.channel === book));
  assert.ok(cBooks.some((f) => f.data.change_id === got[0]!.data.change_id), 'c saw the change a saw');
  // each write is one round: the book changes chain without gaps and never repeat within a write
  const ids = a.writes.flatMap(frames).filter((f) => f.channel === book).map((f) => f.data);
  for (let i = 1; i < ids.length; i++) assert.equal(ids[i].prev_change_id, ids[i - 1].change_id);

  await unsubscribe(a, [book, trades]);
  await unsubscribe(b, [book, trades]);
  await unsubscribe(c, [book]);
  assert.equal(srv.app.ws.hub.groupCount, 0);
});

test('a connection that changes its channels moves to the group of its new set and keeps its message order', async () => {
  const X = m.name;
  const book = `book.${X}.100ms`;
  const trades = `trades.${X}.100ms`;
  const a = recorder();
  const b = recorder();
  await subscribe(a, [book]);
  await subscribe(b, [book, trades]);
  assert.equal(srv.app.ws.hub.groupCount, 2);
  await unsubscribe(b, [trades]);
  assert.equal(srv.app.ws.hub.groupCount, 1, 'b now has the same set as a');

  const before = a.writes.length;
  await trade(1);
  await until(() => a.writes.length > before, 'a round after the change');
  await new Promise((r) => setTimeout(r, 150));
  assert.deepEqual(b.writes.slice(-1), a.writes.slice(-1), 'the same round to both');
  assert.equal(b.writes.at(-1), a.writes.at(-1), 'as the same Buffer');
  assert.ok(b.writes.slice(before).flatMap(frames).every((f) => f.channel === book), 'nothing of the channel b left');

  // a subscriber with no channels left is in no group, and is no longer written to
  await unsubscribe(b, [book]);
  assert.equal(srv.app.ws.hub.groupCount, 1);
  const bWrites = b.writes.length;
  const aWrites = a.writes.length;
  await trade(2);
  await until(() => a.writes.length > aWrites, 'the next round');
  assert.equal(b.writes.length, bWrites);
  await unsubscribe(a, [book]);
  assert.equal(srv.app.ws.hub.groupCount, 0);
});

test('a round to many connections is written a slice a turn; a later subscribe first gets what is owed to its own connection', async () => {
  const X = m.name;
  const book = `book.${X}.100ms`;
  const hub = srv.app.ws.hub;
  const subs = Array.from({ length: 450 }, recorder);
  for (const s of subs) await subscribe(s, [book]);
  const written = () => subs.filter((s) => s.writes.length > 0).length;
  let atRoundEnd = -1;
  let afterSubscribe = -1;
  let lastWasWritten = false;
  hub.onRound = (cadence) => {
    if (cadence !== 'agg' || atRoundEnd >= 0 || written() === 0) return;
    // the round's first turn has ended: only the first slice is written
    atRoundEnd = written();
    lastWasWritten = subs[449]!.writes.length > 0;
    // a subscribe now (its answer would follow) first writes what is queued for its connection,
    // and only that: the other connections keep their place in the slices
    hub.subscribe(subs[449]!, `trades.${X}.100ms`, hub.parse(`trades.${X}.100ms`)!, null);
    afterSubscribe = written();
  };
  try {
    await trade(3);
    await until(() => atRoundEnd >= 0, 'the round');
  } finally {
    hub.onRound = null;
  }
  assert.ok(atRoundEnd > 0 && atRoundEnd < 450, `first turn wrote ${atRoundEnd} of 450`);
  assert.equal(lastWasWritten, false, 'the last subscriber was not in the first slice');
  assert.equal(afterSubscribe, atRoundEnd + 1, "the subscribe wrote its own connection's round, no other");
  await until(() => written() === 450, 'the rest of the round, in later turns');
  const bytes = subs[0]!.writes[0]!;
  assert.ok(subs.every((s) => s.writes[0] === bytes), 'the same Buffer to all 450');
  assert.equal(subs[449]!.writes.filter((w) => w === bytes).length, 1, 'written once to the subscriber that took it early');
  assert.equal(frames(bytes)[0]!.data.type, 'change');
  await unsubscribe(subs[449]!, [`trades.${X}.100ms`]);
  for (const s of subs) await unsubscribe(s, [book]);
  assert.equal(hub.groupCount, 0);
});
