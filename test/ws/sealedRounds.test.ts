// A stream round shows the state its batch left, and goes out only once that batch is durable.
// With the journal pipelined, later commands are applied while an earlier batch is being written:
// a round rendered when the earlier batch became durable used to diff the live book, so it showed
// the later batch's order before that order was on disk (a crash then would have streamed a level
// that never existed). The journal's completions are held here by hand, so which batch is durable
// when is decided by the test, not by timing. Engine only: it drives the engine process's own hub
// and journal (a gateway's rounds come from the NATS events, rendered at the same seal).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import type { Subscriber } from '../../src/api/ws/hub.ts';
import { frames, until } from '../helpers/hubWrites.ts';

let srv: TestServer;
let m: Market;
let maker: string;

before(async () => {
  srv = await startServer();
  const admin = await adminToken(srv.url);
  maker = await userToken(srv.url, admin, 'sealed-maker@example.com', { currency: 'BTC', amount: 50 });
  m = await atmCall(srv.url);
});

after(async () => {
  await srv.stop();
});

test('a raw book round shows only its own batch, and only once that batch is durable', async () => {
  const seq = srv.app.services.seq as unknown as { journal: { append: (r: unknown[]) => unknown }; writing: number };
  const hub = srv.app.ws.hub;
  const channel = `book.${m.name}.raw`;
  const writes: Buffer[] = [];
  const sub: Subscriber = { id: 9_000_001, sendFrame: (b) => void writes.push(b) };
  await srv.app.services.seq.read(() => void hub.subscribe(sub, channel, hub.parse(channel)!, null));

  // every batch's write completes only when the test says so
  const journal = seq.journal;
  const append = journal.append.bind(journal);
  const gates: Array<() => void> = [];
  journal.append = (records) => {
    const written = append(records);
    return new Promise<unknown>((resolve, reject) => gates.push(() => void Promise.resolve(written).then(resolve, reject)));
  };
  try {
    const i = m.prices.indexOf(nearMark(m));
    const [pA, pB] = [m.prices[i + 3]!, m.prices[i + 5]!];
    // batch 1: an ask at pA, handed to the journal and held there
    const a = ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.1, price: pA }, maker);
    await until(() => gates.length === 1, 'batch 1 handed over');
    // batch 2: an ask at pB, applied (the live book has it) and handed over too
    const b = ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.2, price: pB }, maker);
    await until(() => gates.length === 2, 'batch 2 handed over');
    assert.equal(writes.length, 0, 'nothing is written before a batch is durable');

    gates[0]!();
    await a;
    await until(() => writes.length > 0, 'batch 1 round');
    const first = writes.flatMap(frames).map((f) => f.data);
    assert.equal(first.length, 1, 'one change for batch 1');
    assert.deepEqual(first[0].asks, [['new', pA, 0.1]], "batch 1's round shows its own ask only, not batch 2's (not durable yet)");
    assert.deepEqual(first[0].bids, []);

    gates[1]!();
    await b;
    await until(() => writes.flatMap(frames).length === 2, 'batch 2 round');
    const second = writes.flatMap(frames)[1]!.data;
    assert.equal(second.prev_change_id, first[0].change_id, 'the rounds chain');
    assert.deepEqual(second.asks, [['new', pB, 0.2]], "batch 2's round has batch 2's ask");
  } finally {
    journal.append = append;
    for (const g of gates) g();
    await srv.app.services.seq.read(() => hub.unsubscribe(sub, channel, hub.parse(channel)!, null));
  }
});
