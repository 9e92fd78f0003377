// DATABASE_URL end to end (API.md 9, DESIGN.md rules 3 and 4): the real exchange journals to
// PostgreSQL instead of the embedded file, and a restart on the same database recovers every
// acknowledged command, after a clean shutdown and after SIGKILL under load. The recovered state
// must hash equal to a clean replay of the journal table, read here with plain SQL (not through the
// adapter under test). Each test has a schema of its own; without a reachable server they skip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Exchange } from '../../src/engine/exchange.ts';
import { stateHash } from '../../src/engine/snapshot.ts';
import { DB_FILE_NAME } from '../../src/journal/sqliteJournal.ts';
import { applyCommand } from '../../src/sequencer/sequencer.ts';
import { atmCall } from '../helpers/market.ts';
import { freshSchema, type TestSchema } from '../helpers/postgres.ts';
import { adminToken, ok, rpc, spawnServer, startServer, tempDir, userToken, type ChildServer } from '../helpers/server.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Replays the journal table from seq 1 on a fresh engine, ignoring snapshots, up to `uptoSeq`. */
async function cleanReplay(db: TestSchema, uptoSeq: number): Promise<{ seq: number; hash: string; errors: unknown[]; snapshotSeq: number }> {
  const rows = await db.query<{ seq: string; ts: string; cmd: string }>(`SELECT seq, ts, cmd FROM ${db.name}.journal WHERE seq <= $1 ORDER BY seq`, [uptoSeq]);
  const ex = new Exchange();
  const errors: unknown[] = [];
  for (const r of rows) applyCommand(ex, decodeCommand(r.cmd, Number(r.seq), Number(r.ts)), (err) => errors.push(err));
  const [snap] = await db.query<{ seq: string | null }>(`SELECT MAX(seq) AS seq FROM ${db.name}.snapshots`);
  return { seq: ex.seq, hash: stateHash(ex), errors, snapshotSeq: Number(snap?.seq ?? 0) };
}

async function assertRecoveredEqualsReplay(db: TestSchema, url: string, admin: string): Promise<{ seq: number; snapshotSeq: number }> {
  const h = await ok(url, 'private/get_state_hash', {}, admin);
  const replay = await cleanReplay(db, h.seq);
  assert.deepEqual(replay.errors, [], 'the clean replay met no engine exception');
  assert.equal(replay.seq, h.seq, 'the journal holds every command up to the live seq');
  assert.equal(h.state_hash, replay.hash, `recovered state differs from a clean replay at seq ${h.seq}`);
  return { seq: h.seq, snapshotSeq: replay.snapshotSeq };
}

test('an exchange on DATABASE_URL keeps a resting order and a balance across a restart, and recovery equals a clean replay', async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const env = { DATABASE_URL: db.url, STRIKEBOOK_SNAPSHOT_EVERY: '10' };
  const dataDir = tempDir();
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));

  const first = await startServer(env, dataDir);
  let order: any;
  let balance: number;
  let admin: string;
  let trader: string;
  try {
    assert.equal(first.app.storage, 'postgres');
    admin = await adminToken(first.url);
    trader = await userToken(first.url, admin, 'trader@example.com', { currency: 'BTC', amount: 5 });
    const m = await atmCall(first.url);
    // the lowest price of the band: a bid nobody crosses, so it rests
    const placed = await ok(first.url, 'private/buy', { instrument_name: m.name, amount: 1, price: m.prices[0], label: 'pg-resting' }, trader);
    order = placed.order;
    assert.equal(order.order_state, 'open');
    balance = (await ok(first.url, 'private/get_account_summary', { currency: 'BTC' }, trader)).balance;
    assert.equal(balance, 5);
  } finally {
    await first.stop({ keepData: true });
  }
  assert.ok(!existsSync(path.join(dataDir, DB_FILE_NAME)), 'nothing went to the embedded database');
  const [count] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${db.name}.journal`);
  assert.ok(count!.n > 5, `the commands are in PostgreSQL (${count!.n} records)`);

  const second = await startServer(env, dataDir);
  try {
    assert.equal(second.app.storage, 'postgres');
    const open = await ok(second.url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, trader);
    assert.deepEqual(
      open.map((o: any) => [o.order_id, o.instrument_name, o.price, o.amount, o.label]),
      [[order.order_id, order.instrument_name, order.price, order.amount, 'pg-resting']],
    );
    assert.equal((await ok(second.url, 'private/get_account_summary', { currency: 'BTC' }, trader)).balance, balance);
    const { snapshotSeq } = await assertRecoveredEqualsReplay(db, second.url, admin);
    assert.ok(snapshotSeq > 0, 'a snapshot was taken in PostgreSQL (STRIKEBOOK_SNAPSHOT_EVERY=10)');
    // the API-key server key lives in the journal's meta table: the same one after the restart
    assert.equal(second.app.services.serverKey.length, 32);
    const [meta] = await db.query<{ value: string }>(`SELECT value FROM ${db.name}.meta WHERE key = 'api_key_server_key'`);
    assert.equal(meta!.value, second.app.services.serverKey.toString('base64'));
  } finally {
    await second.stop();
  }
});

test('acknowledged orders survive SIGKILL of a server on DATABASE_URL, and recovery equals a clean replay', { timeout: 90_000 }, async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const env = { DATABASE_URL: db.url, STRIKEBOOK_SNAPSHOT_EVERY: '25' };
  const dataDir = tempDir();
  let server: ChildServer = await spawnServer(dataDir, env);
  const alive = (c: ChildServer) => c.proc.exitCode === null && c.proc.signalCode === null;
  try {
    const admin = await adminToken(server.url);
    const users: string[] = [];
    for (let n = 0; n < 4; n++) users.push(await userToken(server.url, admin, `pg-trader${n}@example.com`, { currency: 'BTC', amount: 100 }));
    const m = await atmCall(server.url);
    const bids = m.prices.slice(0, 20); // all below the mark, all bids: nothing crosses, every order rests

    const acked = new Map<string, number>(); // order id -> user index
    let inFlight = 0;
    let inFlightAtKill = 0;
    let stop = false;
    const loops = users.map(async (token, u) => {
      for (let n = 0; !stop; n++) {
        inFlight++;
        try {
          const r = await rpc(server.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: bids[n % bids.length], client_order_id: `u${u}-${n}` }, token);
          if (r.body.result) acked.set(String(r.body.result.order.order_id), u);
        } catch {
          // killed mid-request: the outcome is unknown, nothing was acknowledged
        } finally {
          inFlight--;
        }
      }
    });
    await sleep(700);
    inFlightAtKill = inFlight;
    server.proc.kill('SIGKILL');
    stop = true;
    await server.exited;
    await Promise.all(loops);
    assert.equal(server.proc.signalCode, 'SIGKILL');
    assert.ok(inFlightAtKill > 0, 'requests were in flight when the process was killed');
    assert.ok(acked.size > 20, `enough orders were acknowledged to mean something (${acked.size})`);

    // the killed server's session, and with it the advisory lock, ended with its connection
    server = await spawnServer(dataDir, env);
    const { seq, snapshotSeq } = await assertRecoveredEqualsReplay(db, server.url, admin);
    assert.ok(snapshotSeq > 0 && snapshotSeq <= seq, `recovery started from a snapshot (${snapshotSeq} of ${seq})`);
    const open = new Set<string>();
    for (const token of users) {
      for (const o of await ok(server.url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, token)) open.add(String(o.order_id));
    }
    const missing = [...acked.keys()].filter((id) => !open.has(id));
    assert.deepEqual(missing, [], 'every acknowledged order is open after the restart');
    t.diagnostic(`acknowledged ${acked.size}, open after restart ${open.size}, seq ${seq}, latest snapshot ${snapshotSeq}`);
  } catch (err) {
    t.diagnostic(`server output:\n${server.output()}`);
    throw err;
  } finally {
    if (alive(server)) {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
});
