// PostgreSQL out of reach for both servers (docs/operations.md, "What each failure costs"): the
// leader and the standby reach the database through socat relays, which are frozen (SIGSTOP: the
// database stops answering, nothing is reset) and later resumed. While it is out of reach the leader
// acknowledges nothing and gives up at its write deadline (exit 70); the standby stays a standby and
// shows the outage in /health. Once it is back, the standby takes over with every acknowledged order,
// equal to a clean replay. Skips (with the reason) without socat or PostgreSQL.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { Exchange } from '../../src/engine/exchange.ts';
import { stateHash } from '../../src/engine/snapshot.ts';
import { applyCommand } from '../../src/sequencer/sequencer.ts';
import { atmCall } from '../helpers/market.ts';
import { TEST_DATABASE_URL, freshSchema } from '../helpers/postgres.ts';
import { adminToken, freePort, ok, request, rpc, spawnServer, tempDir, userToken, type ChildServer } from '../helpers/server.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A relay to PostgreSQL in a process group of its own (socat forks a child per connection). */
async function relay(t: TestContext): Promise<{ port: number; freeze(): void; resume(): void } | null> {
  try {
    execFileSync('socat', ['-V'], { stdio: 'ignore' });
  } catch {
    t.skip('socat is not installed (apt-get install socat)');
    return null;
  }
  const pgUrl = new URL(TEST_DATABASE_URL);
  const port = await freePort();
  const proc: ChildProcess = spawn('socat', [`TCP-LISTEN:${port},bind=127.0.0.1,reuseaddr,fork`, `TCP:${pgUrl.hostname}:${pgUrl.port || 5432}`], { stdio: 'ignore', detached: true });
  const group = -proc.pid!;
  t.after(() => {
    try {
      process.kill(group, 'SIGCONT');
      process.kill(group, 'SIGTERM');
    } catch {
      // gone already
    }
  });
  await sleep(200); // listening
  return { port, freeze: () => process.kill(group, 'SIGSTOP'), resume: () => process.kill(group, 'SIGCONT') };
}

function through(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

test('PostgreSQL out of reach: the leader acknowledges nothing and exits 70, the standby waits, and takes over once the database is back', { timeout: 150_000 }, async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const toLeader = await relay(t);
  if (!toLeader) return;
  const toStandby = (await relay(t))!;
  const env = { STRIKEBOOK_STANDBY_POLL_MS: '200' };
  const dirs = [tempDir(), tempDir()];
  const servers: ChildServer[] = [];
  t.after(async () => {
    for (const s of servers) {
      if (s.proc.exitCode === null && s.proc.signalCode === null) {
        s.proc.kill('SIGKILL');
        await s.exited;
      }
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const leader = await spawnServer(dirs[0]!, { ...env, DATABASE_URL: through(db.url, toLeader.port) });
  servers.push(leader);
  const standby = await spawnServer(dirs[1]!, { ...env, DATABASE_URL: through(db.url, toStandby.port) });
  servers.push(standby);
  try {
    assert.equal((await request(standby.url, '/health')).body.role, 'standby');
    const admin = await adminToken(leader.url);
    const trader = await userToken(leader.url, admin, 'outage@example.com', { currency: 'BTC', amount: 100 });
    const m = await atmCall(leader.url);
    const acked: string[] = [];
    for (let n = 0; n < 10; n++) acked.push(String((await ok(leader.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[n] }, trader)).order.order_id));

    toLeader.freeze();
    toStandby.freeze();
    let ackedDuring = 0;
    const during = Array.from({ length: 3 }, (_, n) =>
      rpc(leader.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[n] }, trader).then(
        (r) => {
          if (r.body.result) ackedDuring++;
        },
        () => undefined, // the connection ends when the leader exits
      ),
    );
    // the leader's write meets its deadline (30 s at the server, which is out of reach, 35 s at the client)
    const code = await Promise.race([leader.exited, sleep(60_000).then(() => 'still running')]);
    await Promise.all(during);
    assert.equal(code, 70, 'the leader stops on its failed write');
    assert.equal(ackedDuring, 0, 'nothing was acknowledged while the database was out of reach');
    const waiting = (await request(standby.url, '/health')).body;
    assert.equal(waiting.role, 'standby', 'the standby cannot take the lock while the database is out of reach');
    assert.ok(waiting.lag.since_last_read_ms > 5_000, `the outage shows in /health (${waiting.lag.since_last_read_ms} ms since the last read)`);
    assert.equal((await request(standby.url, '/ready')).status, 503);

    toLeader.resume();
    toStandby.resume();
    const back = performance.now();
    let first: any = null;
    while (first === null) {
      const r = await rpc(standby.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[0] }, trader);
      if (r.body.result) first = r.body.result;
      else {
        assert.equal(r.body.error.code, 10040);
        assert.ok(performance.now() - back < 60_000, 'the standby takes over within 60 s of the database coming back');
        await sleep(100);
      }
    }
    t.diagnostic(`database back -> first order on the standby: ${((performance.now() - back) / 1000).toFixed(1)} s`);
    acked.push(String(first.order.order_id));
    for (const id of acked) assert.ok((await rpc(standby.url, 'private/get_order_state', { order_id: id }, trader)).body.result, `acknowledged order ${id} is there`);
    const h = await ok(standby.url, 'private/get_state_hash', {}, admin);
    const rows = await db.query<{ seq: string; ts: string; cmd: string }>(`SELECT seq, ts, cmd FROM ${db.name}.journal ORDER BY seq`);
    const ex = new Exchange();
    for (const r of rows) applyCommand(ex, decodeCommand(r.cmd, Number(r.seq), Number(r.ts)));
    assert.equal(ex.seq, h.seq);
    assert.equal(stateHash(ex), h.state_hash, 'the new leader equals a clean replay of the journal');
  } catch (err) {
    t.diagnostic(`leader output:\n${leader.output()}\nstandby output:\n${standby.output()}`);
    throw err;
  }
});
