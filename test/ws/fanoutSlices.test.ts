// Issue 36, fan-out in pieces: a released raw round is written WRITES_PER_TURN connections per
// piece, the rest in later turns, so no piece of fan-out holds the engine thread long; each
// connection still gets its rounds in order, each once, and a connection that writes its own frame
// (an answer) while it is owed a round gets the round first. Counted, not timed: the hub reports the
// sockets each piece wrote, recording subscribers note the piece that wrote them, and the journal's
// completions are held by hand so that two rounds are queued at once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import type { Subscriber } from '../../src/api/ws/hub.ts';
import { WRITES_PER_TURN } from '../../src/api/ws/hubState.ts';
import { Connection } from '../../src/api/ws/connection.ts';
import { frames, until } from '../helpers/hubWrites.ts';

let srv: TestServer;
let m: Market;
let maker: string;

before(async () => {
  srv = await startServer();
  const admin = await adminToken(srv.url);
  maker = await userToken(srv.url, admin, 'slices-maker@example.com', { currency: 'BTC', amount: 50 });
  m = await atmCall(srv.url);
});

after(async () => {
  await srv.stop();
});

const N = 2 * WRITES_PER_TURN + 50;
const ANSWER = Buffer.from('answer');

test(`a raw round to ${N} connections is written at most ${WRITES_PER_TURN} a piece; every connection gets its rounds in order, once, and an answer after what it is owed`, async () => {
  const hub = srv.app.ws.hub;
  const channel = `book.${m.name}.raw`;
  // the piece a write was made in: writes come before the hub reports their piece
  const pieces: number[] = [];
  const subs = Array.from({ length: N }, (_, i) => {
    const writes: Array<{ bytes: Buffer; piece: number }> = [];
    const sub: Subscriber & { writes: typeof writes } = { id: 8_000_000 + i, writes, sendFrame: (bytes) => void writes.push({ bytes, piece: pieces.length }) };
    return sub;
  });
  await srv.app.services.seq.read(() => {
    for (const s of subs) hub.subscribe(s, channel, hub.parse(channel)!, null);
  });

  // every batch's journal write completes only when the test says so: two rounds queue together
  const seq = srv.app.services.seq as unknown as { journal: { append: (r: unknown[]) => unknown } };
  const journal = seq.journal;
  const append = journal.append.bind(journal);
  const gates: Array<() => void> = [];
  journal.append = (records) => {
    const written = append(records);
    return new Promise<unknown>((resolve, reject) => gates.push(() => void Promise.resolve(written).then(resolve, reject)));
  };
  // the last connection answers something of its own after the first piece, before its turn came
  const late = subs[N - 1]!;
  let answeredBeforeTurn = false;
  hub.onPiece = (writes) => {
    pieces.push(writes);
    if (pieces.length === 1 && late.writes.length === 0) {
      answeredBeforeTurn = true;
      hub.flushOwed(late);
      late.sendFrame(ANSWER);
    }
  };
  try {
    const i = m.prices.indexOf(nearMark(m));
    const a = ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.1, price: m.prices[i + 3] }, maker);
    await until(() => gates.length === 1, 'batch 1 handed over');
    const b = ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.2, price: m.prices[i + 5] }, maker);
    await until(() => gates.length === 2, 'batch 2 handed over');
    assert.equal(pieces.length, 0, 'nothing written before a batch is durable');
    gates[0]!();
    gates[1]!();
    await Promise.all([a, b]);
    await until(() => subs.every((s) => s.writes.filter((w) => w.bytes !== ANSWER).length === 2), 'both rounds to every connection');
  } finally {
    journal.append = append;
    for (const g of gates) g();
    hub.onPiece = null;
  }

  // no piece wrote more than the bound, and there were as many pieces as the bound requires
  const total = pieces.reduce((x, y) => x + y, 0);
  assert.equal(total, 2 * N - 1, 'every round write made by a piece, but the one the answer took early');
  assert.ok(pieces.every((w) => w > 0 && w <= WRITES_PER_TURN), `sockets per piece: ${pieces.join(',')}`);
  assert.ok(pieces.length >= Math.ceil(total / WRITES_PER_TURN), `${pieces.length} pieces`);
  const first = subs[0]!.writes.map((w) => w.bytes);
  const [r1, r2] = first.map((bytes) => frames(bytes)[0]!.data);
  assert.equal(r2.prev_change_id, r1.change_id, 'round 1, then round 2');
  for (const s of subs) {
    const rounds = s.writes.filter((w) => w.bytes !== ANSWER);
    // the same two Buffers, in order, each once
    assert.equal(rounds[0]!.bytes, first[0]);
    assert.equal(rounds[1]!.bytes, first[1]);
    assert.ok(rounds[0]!.piece <= rounds[1]!.piece);
  }
  // the connections were spread over the pieces: the last ones waited for later turns
  assert.ok(subs[N - 2]!.writes[0]!.piece > 0, 'a connection past the first slice was written in a later piece');
  // the connection that answered early: its round 1 came before its answer, its round 2 after
  assert.equal(answeredBeforeTurn, true, 'the last connection was not in the first piece');
  assert.deepEqual(late.writes.map((w) => (w.bytes === ANSWER ? 'answer' : w.bytes === first[0] ? 'round 1' : 'round 2')), ['round 1', 'answer', 'round 2']);

  await srv.app.services.seq.read(() => {
    for (const s of subs) hub.unsubscribe(s, channel, hub.parse(channel)!, null);
  });
});

test("a connection owed a round has the hub write it before the connection's own answer", () => {
  const order: string[] = [];
  const socket = { write: () => void order.push('answer'), cork() {}, uncork() {} };
  const ws = { readyState: 1, OPEN: 1, bufferedAmount: 0 };
  const c = new Connection(ws as never, socket as never, '127.0.0.1', 1 << 20, () => assert.fail('no overflow'));
  c.hub = {
    flushOwed(sub) {
      order.push(`flush ${sub.owed}`);
      sub.owed = 0;
    },
  };
  c.answer(0, '{"id":0}');
  assert.deepEqual(order, ['answer'], 'nothing owed: no flush');
  c.owed = 2;
  c.answer(1, '{"id":1}');
  c.send('{"method":"heartbeat"}');
  assert.deepEqual(order, ['answer', 'flush 2', 'answer', 'answer'], 'the owed rounds first, once');
});
