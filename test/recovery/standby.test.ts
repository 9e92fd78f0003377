// The hot standby on PostgreSQL (docs/operations.md): a second server on the same DATABASE_URL finds
// the writer lock taken and follows the leader's journal; its state hash equals a clean replay of
// the journal at every seq it applied; it serves public reads, private reads and market-data streams,
// refuses writes with 10040 naming the leader, and answers /ready 503. When the leader goes, it takes
// the lock and accepts orders. Without a reachable PostgreSQL the tests skip with the reason printed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Exchange } from '../../src/engine/exchange.ts';
import { stateHash } from '../../src/engine/snapshot.ts';
import { applyCommand } from '../../src/sequencer/sequencer.ts';
import { ConfigError, loadConfig } from '../../src/app/config.ts';
import { atmCall } from '../helpers/market.ts';
import { freshSchema, type TestSchema } from '../helpers/postgres.ts';
import { adminToken, ok, request, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The state hash after each seq of the journal table, replayed from seq 1 on a fresh engine. */
async function replayHashes(db: TestSchema, seqs: ReadonlySet<number>): Promise<{ hashes: Map<number, string>; last: string; seq: number }> {
  const rows = await db.query<{ seq: string; ts: string; cmd: string }>(`SELECT seq, ts, cmd FROM ${db.name}.journal ORDER BY seq`);
  const ex = new Exchange();
  const hashes = new Map<number, string>();
  for (const r of rows) {
    applyCommand(ex, decodeCommand(r.cmd, Number(r.seq), Number(r.ts)));
    if (seqs.has(Number(r.seq))) hashes.set(Number(r.seq), stateHash(ex));
  }
  return { hashes, last: stateHash(ex), seq: ex.seq };
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = performance.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

test('a second server on the same DATABASE_URL is a read-only standby equal to the leader at every seq, and takes over when the leader stops', { timeout: 60_000 }, async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const env = { DATABASE_URL: db.url, STRIKEBOOK_STANDBY_POLL_MS: '200' };
  let leader: TestServer | null = await startServer(env);
  let standby: TestServer | null = null;
  let ws: WsClient | null = null;
  t.after(async () => {
    ws?.ws.close();
    await leader?.stop();
    await standby?.stop();
  });
  const admin = await adminToken(leader.url);
  const maker = await userToken(leader.url, admin, 'maker@example.com', { currency: 'BTC', amount: 10 });
  const taker = await userToken(leader.url, admin, 'taker@example.com', { currency: 'BTC', amount: 10 });
  const m = await atmCall(leader.url);
  const px = m.prices[Math.floor(m.prices.length / 3)];
  await ok(leader.url, 'private/buy', { instrument_name: m.name, amount: 1, price: px }, maker);

  standby = await startServer(env);
  const sb = standby.app;
  assert.equal(sb.services.ha.role, 'standby');
  assert.equal(leader.app.services.ha.role, 'leader');
  // every record the standby applies from now on is hashed right after it (the leader's at that seq
  // is a clean replay up to it: the engine is deterministic)
  const hashes = new Map<number, string>();
  const seqr = sb.services.seq;
  const follow = seqr.follow.bind(seqr);
  seqr.follow = (records) => {
    for (const r of records) {
      follow([r]);
      hashes.set(r.seq, stateHash(sb.services.ex));
    }
  };

  // market data streams from the standby: a book channel, fed by the records it follows
  ws = await WsClient.open(standby.url);
  await ws.ok('public/subscribe', { channels: [`book.${m.name}.none.10.100ms`, `book.${m.name}.100ms`] });
  // private channels too, with a token the leader issued (public/auth on a standby is a write)
  const subscribed = await ws.ok('private/subscribe', { channels: [`user.orders.${m.name}.raw`], access_token: maker });
  assert.deepEqual(subscribed, [`user.orders.${m.name}.raw`]);

  // trading on the leader: resting orders, trades, a cancel
  for (let i = 0; i < 5; i++) await ok(leader.url, 'private/buy', { instrument_name: m.name, amount: 1, price: m.prices[i] }, maker);
  const sold = await ok(leader.url, 'private/sell', { instrument_name: m.name, amount: 0.5, price: px }, taker);
  assert.equal(sold.trades.length, 1);
  const open = await ok(leader.url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, maker);
  await ok(leader.url, 'private/cancel', { order_id: open[0].order_id }, maker);

  const leaderHash = await ok(leader.url, 'private/get_state_hash', {}, admin);
  const caughtUp = await until('the standby to reach the leader seq', async () => {
    const h = await request(standby!.url, '/health');
    return h.body.seq === leaderHash.seq ? h.body : undefined;
  });
  assert.equal(caughtUp.role, 'standby');
  assert.equal(caughtUp.leader, leader.url);
  assert.equal(caughtUp.lag.seq, 0);
  const standbyHash = await ok(standby.url, 'private/get_state_hash', {}, admin);
  assert.deepEqual(standbyHash, leaderHash, 'the same state hash at the same seq');
  const replay = await replayHashes(db, new Set(hashes.keys()));
  assert.ok(hashes.size >= 7, `the standby applied the live records one by one (${hashes.size})`);
  for (const [seq, h] of hashes) assert.equal(h, replay.hashes.get(seq), `state hash at seq ${seq}`);

  // reads: public and private, the same answers as the leader's
  for (const [method, params, token] of [
    ['public/get_order_book', { instrument_name: m.name }, undefined],
    ['private/get_open_orders_by_currency', { currency: 'BTC' }, maker],
    ['private/get_position', { instrument_name: m.name }, taker],
  ] as const) {
    const a = await ok(leader.url, method, params, token);
    const b = await ok(standby.url, method, params, token);
    assert.deepEqual(b, a, `${method} on the standby`);
  }
  await ws.until(() => ws!.notes.some((n) => n.data.bids?.length > 0), 5_000, 'a book notification from the standby');
  await ws.until(() => ws!.notes.some((n) => n.channel === `user.orders.${m.name}.raw` && n.data.order_state === 'cancelled'), 5_000, "the maker's cancel on its private channel, from the standby");

  // writes are refused naming the leader; so is a login (it issues a token: a command)
  const refused = await rpc(standby.url, 'private/buy', { instrument_name: m.name, amount: 1, price: px }, maker);
  assert.equal(refused.status, 503);
  assert.equal(refused.body.error.code, 10040);
  assert.equal(refused.body.error.data.leader, leader.url);
  const login = await rpc(standby.url, 'public/auth', { grant_type: 'password', username: 'maker@example.com', password: 'user-password-1' });
  assert.equal(login.body.error.code, 10040);
  const wsWrite = await ws.call('private/buy', { instrument_name: m.name, amount: 1, price: px, access_token: maker });
  assert.equal(wsWrite.error.code, 10040);
  // an operator setting kept in the meta table: refused too, before anything changed
  const limits = await rpc(standby.url, 'private/set_rate_limits', { user_id: 1, tier: 1 }, admin);
  assert.deepEqual([limits.status, limits.body.error.code, limits.body.error.data.leader], [503, 10040, leader.url]);
  assert.equal(sb.services.credits.overrides.size, 0);
  assert.equal((await request(standby.url, '/ready')).status, 503);
  assert.equal((await request(leader.url, '/ready')).status, 200);
  assert.match((await request(standby.url, '/metrics')).text, /^strikebook_leader 0$/m);
  assert.match((await request(standby.url, '/metrics')).text, /^strikebook_standby_lag_records 0$/m);
  assert.match((await request(leader.url, '/metrics')).text, /^strikebook_leader 1$/m);
  assert.equal((await ok(standby.url, 'private/get_state_hash', {}, admin)).seq, leaderHash.seq, 'a refused write changed nothing');

  // an operator setting made on the leader (kept in the meta table, not the journal): the standby
  // reads it when it takes over, before it accepts its first command
  await ok(leader.url, 'private/set_rate_limits', { user_id: 1, tier: 1 }, admin);

  // the leader goes (its session, and the lock, with it): the standby takes over
  const stopping = performance.now();
  await leader.stop();
  leader = null;
  const placed = await until(
    'the standby to accept an order',
    async () => {
      const r = await rpc(standby!.url, 'private/buy', { instrument_name: m.name, amount: 1, price: m.prices[1] }, maker);
      if (r.body.result) return r.body.result;
      assert.equal(r.body.error.code, 10040, 'until it takes over, a standby refusal');
      return undefined;
    },
    15_000,
  );
  assert.equal(placed.order.order_state, 'open');
  assert.deepEqual([...sb.services.credits.overrides.keys()], [1], "the old leader's rate-limit override, in force from the first order on");
  t.diagnostic(`planned switch-over: leader stop started -> first order on the standby ${(performance.now() - stopping).toFixed(0)} ms`);
  assert.equal(sb.services.ha.role, 'leader');
  assert.equal((await request(standby.url, '/ready')).status, 200);
  assert.equal((await request(standby.url, '/health')).body.role, 'leader');
  assert.match((await request(standby.url, '/metrics')).text, /^strikebook_leader 1$/m);
  // the incremental book stream of the standby went on across the takeover without a gap, and
  // snapshot + changes rebuild the new leader's book
  const book = await ok(standby.url, 'public/get_order_book', { instrument_name: m.name, depth: 1000 });
  const channel = `book.${m.name}.100ms`;
  await ws.until(() => ws!.notes.some((n) => n.channel === channel && n.data.change_id === book.change_id), 5_000, 'the book change of the first order after the takeover');
  const bids = new Map<number, number>();
  const asks = new Map<number, number>();
  let changeId = -1;
  for (const n of ws.notes.filter((x) => x.channel === channel)) {
    if (n.data.type === 'change') assert.equal(n.data.prev_change_id, changeId, `no gap before change ${n.data.change_id}`);
    changeId = n.data.change_id;
    for (const [side, levels] of [[bids, n.data.bids], [asks, n.data.asks]] as const) {
      for (const [action, price, amount] of levels) {
        if (action === 'delete') side.delete(price);
        else side.set(price, amount);
      }
    }
  }
  assert.equal(changeId, book.change_id);
  assert.deepEqual([...bids].sort((a, b) => b[0] - a[0]), book.bids);
  assert.deepEqual([...asks].sort((a, b) => a[0] - b[0]), book.asks);

  const after = await ok(standby.url, 'private/get_state_hash', {}, admin);
  const clean = await replayHashes(db, new Set());
  assert.equal(clean.seq, after.seq);
  assert.equal(after.state_hash, clean.last, 'the new leader equals a clean replay of the journal');
  const [dups] = await db.query<{ n: number; distinct: number; max: string }>(`SELECT count(*)::int AS n, count(DISTINCT seq)::int AS distinct, MAX(seq) AS max FROM ${db.name}.journal`);
  assert.deepEqual([dups!.n, dups!.distinct, Number(dups!.max)], [after.seq, after.seq, after.seq], 'seqs 1..n, each once');
  const [leaderMeta] = await db.query<{ value: string }>(`SELECT value FROM ${db.name}.meta WHERE key = 'leader_url'`);
  assert.equal(leaderMeta!.value, standby.url, 'the new leader announced itself');
});

test('without DATABASE_URL a server is the leader, and /ready says so', async (t) => {
  const s = await startServer();
  t.after(() => s.stop());
  assert.equal(s.app.services.ha.role, 'leader');
  const ready = await request(s.url, '/ready');
  assert.deepEqual([ready.status, ready.body], [200, { ready: true, role: 'leader' }]);
  assert.equal((await request(s.url, '/health')).body.role, 'leader');
});

test('with STRIKEBOOK_STANDBY=0 a second server waits for the writer lock instead of following, and leads once it has it', { timeout: 30_000 }, async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const first = await startServer({ DATABASE_URL: db.url });
  let second: TestServer | null = null;
  t.after(async () => {
    await first.stop().catch(() => undefined);
    await second?.stop();
  });
  const admin = await adminToken(first.url);
  let started = false;
  const starting = startServer({ DATABASE_URL: db.url, STRIKEBOOK_STANDBY: '0' }).then((s) => {
    started = true;
    return s;
  });
  await sleep(700);
  assert.equal(started, false, 'it waits while the first holds the lock');
  await first.stop();
  second = await starting;
  assert.equal(second.app.services.ha.role, 'leader');
  assert.equal(second.app.services.ha.follower, null);
  // it recovered what the first wrote: the administrator's token still works
  assert.ok((await ok(second.url, 'private/get_state_hash', {}, admin)).seq > 0);
});

test("a standby's /health and metrics show how far behind the leader it is, and the lag clears once it has caught up", { timeout: 30_000 }, async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const env = { DATABASE_URL: db.url, STRIKEBOOK_STANDBY_POLL_MS: '100' };
  const leader = await startServer(env);
  let standby: TestServer | null = null;
  t.after(async () => {
    await leader.stop();
    await standby?.stop();
  });
  const admin = await adminToken(leader.url);
  standby = await startServer(env);
  const sbApp = standby.app;
  assert.equal(sbApp.storage, 'postgres');
  if (sbApp.storage !== 'postgres') return;
  // the standby's reads of the journal find nothing for a while (a slow or stuck reader); the
  // leader's notifications still say how far it is
  const reader = sbApp.journal;
  const readAfter = reader.readAfter.bind(reader);
  // the leader's seq is learnt from its notifications: they must be listened to before it commits
  await until('the standby to LISTEN', async () => (sbApp.services.ha.follower!.isListening ? true : undefined));
  reader.readAfter = async function* () {};
  for (let i = 0; i < 3; i++) await ok(leader.url, 'private/generate_invite_code', {}, admin);
  const leaderSeq = (await ok(leader.url, 'private/get_state_hash', {}, admin)).seq;
  const behind = await until('the standby to see it is behind', async () => {
    const h = await request(standby!.url, '/health');
    // each commit's notification raises what it knows of the leader: wait for the last one
    return h.body.lag.leader_seq === leaderSeq ? h.body : undefined;
  });
  assert.ok(behind.lag.seq > 0);
  assert.equal(behind.lag.seq, leaderSeq - behind.seq);
  await sleep(150);
  const later = (await request(standby.url, '/health')).body;
  assert.ok(later.lag.ms >= 150, `lag.ms counts the time behind (${later.lag.ms})`);
  assert.match((await request(standby.url, '/metrics')).text, new RegExp(`^strikebook_standby_lag_records ${later.lag.seq}$`, 'm'));

  reader.readAfter = readAfter;
  const caughtUp = await until('the standby to catch up', async () => {
    const h = await request(standby!.url, '/health');
    return h.body.seq === leaderSeq ? h.body : undefined;
  });
  assert.deepEqual(caughtUp.lag.seq, 0);
  assert.deepEqual(caughtUp.lag.ms, 0);
});

test('the standby settings are checked at start', () => {
  const c = loadConfig({});
  assert.deepEqual([c.standby, c.standbyPollMs, c.advertisedUrl], [true, 1000, null]);
  const set = loadConfig({ STRIKEBOOK_STANDBY: '0', STRIKEBOOK_STANDBY_POLL_MS: '250', STRIKEBOOK_ADVERTISED_URL: 'https://b.example:8443/' });
  assert.deepEqual([set.standby, set.standbyPollMs, set.advertisedUrl], [false, 250, 'https://b.example:8443']);
  for (const [key, value] of [
    ['STRIKEBOOK_STANDBY', 'yes'],
    ['STRIKEBOOK_STANDBY_POLL_MS', '0'],
    ['STRIKEBOOK_ADVERTISED_URL', 'b.example:8443'],
    ['STRIKEBOOK_ADVERTISED_URL', 'ftp://b.example'],
    ['STRIKEBOOK_ADVERTISED_URL', 'https://user:secret@b.example'],
  ]) {
    assert.throws(() => loadConfig({ [key!]: value }), ConfigError, `${key}=${value}`);
  }
});

test("ccxt's deribit class against a standby: it reads with an API key the leader issued, and an order is ExchangeNotAvailable (10040)", { timeout: 60_000 }, async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const env = { DATABASE_URL: db.url, STRIKEBOOK_STANDBY_POLL_MS: '100' };
  const leader = await startServer(env);
  let standby: TestServer | null = null;
  t.after(async () => {
    await leader.stop();
    await standby?.stop();
  });
  const admin = await adminToken(leader.url);
  const trader = await userToken(leader.url, admin, 'ccxt@example.com', { currency: 'BTC', amount: 3 });
  const key = await ok(leader.url, 'private/create_api_key', { scope: 'account:read_write trade:read_write' }, trader);
  const m = await atmCall(leader.url);
  standby = await startServer(env);
  const seq = (await ok(leader.url, 'private/get_state_hash', {}, admin)).seq;
  await until('the standby to catch up', async () => ((await request(standby!.url, '/health')).body.seq === seq ? true : undefined));

  const { default: ccxt } = await import('ccxt');
  const sbServices = standby.app.services;
  const client = new ccxt.deribit({ apiKey: key.client_id, secret: key.client_secret, version: 'v1', urls: { api: { rest: standby.url } }, enableRateLimit: false, timeout: 10_000 });
  client.milliseconds = () => sbServices.clock.now();
  // the API-key secret is checked with the server key the standby read from the leader's meta table
  const balance = await client.fetchBalance({ code: 'BTC' });
  assert.equal((balance.info as { balance: number }).balance, 3);
  const markets = await client.loadMarkets();
  const symbol = Object.values(markets).find((x) => x?.id === m.name)!.symbol;
  await assert.rejects(client.createOrder(symbol, 'limit', 'buy', 1, m.prices[0]), (err: Error) => {
    assert.ok(err instanceof ccxt.ExchangeNotAvailable, `expected ExchangeNotAvailable, got ${err.constructor.name}: ${err.message}`);
    assert.match(err.message, /"code":10040/);
    assert.ok(err.message.includes(leader.url), 'the message names the leader');
    return true;
  });
});
