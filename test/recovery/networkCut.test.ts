// A network cut between the leader and PostgreSQL (issue 18, docs/operations.md): the leader runs in
// a network namespace of its own, reaching PostgreSQL over one veth pair and serving HTTP over
// another; the standby runs on the host. The cut takes the database link down. The old leader must
// stop acknowledging (its write never completes: its replies wait, then the write's deadline makes
// it exit 70), and the standby must take over once the database ends the old leader's session.
//
// PostgreSQL listens on 127.0.0.1 only, so the namespace reaches it through socat on the host side
// of the database link. The relay's socket towards the leader carries the same keepalive and
// TCP_USER_TIMEOUT settings the leader asks the server for (postgresSetup.ts detectDeadClient): a
// direct connection would end at the server after the same ~25-30 s of silence; through the relay,
// the relay gives up then and closes its connection to the server, which ends the session and frees
// the writer lock. Skips (with the reason) without root, `ip netns`, socat or PostgreSQL.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { Exchange } from '../../src/engine/exchange.ts';
import { stateHash } from '../../src/engine/snapshot.ts';
import { applyCommand } from '../../src/sequencer/sequencer.ts';
import { atmCall } from '../helpers/market.ts';
import { TEST_DATABASE_URL, freshSchema } from '../helpers/postgres.ts';
import { BOOTSTRAP, ROOT, adminToken, freePort, ok, request, rpc, spawnServer, tempDir, userToken, type ChildServer } from '../helpers/server.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function sh(args: string[]): void {
  execFileSync(args[0]!, args.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Two veth pairs into a fresh namespace: `db` (to the relay) and `http` (to the leader's API). */
function makeNamespace(t: TestContext): { ns: string; dbHost: string; httpNs: string; cut(): void } | null {
  if (process.getuid?.() !== 0) {
    t.skip('network namespaces need root');
    return null;
  }
  const id = randomBytes(3).toString('hex');
  const ns = `sbk${id}`;
  const net = randomInt(0, 250);
  const [dbHost, dbNs, httpHost, httpNs] = [`10.249.${net}.1`, `10.249.${net}.2`, `10.249.${net}.5`, `10.249.${net}.6`];
  try {
    execFileSync('socat', ['-V'], { stdio: 'ignore' });
    sh(['ip', 'netns', 'add', ns]);
  } catch (e) {
    t.skip(`network namespaces or socat not available: ${e instanceof Error ? e.message : String(e)}`);
    return null;
  }
  t.after(() => {
    try {
      sh(['ip', 'netns', 'del', ns]); // takes the veth pairs with it
    } catch {
      // already gone
    }
  });
  sh(['ip', 'netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up']);
  for (const [pair, host, inNs] of [[`d${id}`, dbHost, dbNs], [`h${id}`, httpHost, httpNs]] as const) {
    sh(['ip', 'link', 'add', `${pair}a`, 'type', 'veth', 'peer', 'name', `${pair}b`]);
    sh(['ip', 'link', 'set', `${pair}b`, 'netns', ns]);
    sh(['ip', 'addr', 'add', `${host}/30`, 'dev', `${pair}a`]);
    sh(['ip', 'link', 'set', `${pair}a`, 'up']);
    sh(['ip', 'netns', 'exec', ns, 'ip', 'addr', 'add', `${inNs}/30`, 'dev', `${pair}b`]);
    sh(['ip', 'netns', 'exec', ns, 'ip', 'link', 'set', `${pair}b`, 'up']);
  }
  return {
    ns,
    dbHost,
    httpNs,
    // the database link goes down inside the namespace: packets are lost, nothing is reset
    cut: () => sh(['ip', 'netns', 'exec', ns, 'ip', 'link', 'set', `d${id}b`, 'down']),
  };
}

/** The leader, inside the namespace (as spawnServer does it, with `ip netns exec` in front). */
async function spawnInNamespace(ns: string, host: string, env: Record<string, string>): Promise<ChildServer> {
  const port = await freePort();
  const dataDir = tempDir();
  const proc: ChildProcess = spawn('ip', ['netns', 'exec', ns, process.execPath, '--import', 'tsx', path.join(ROOT, 'src/app/main.ts')], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: host,
      STRIKEBOOK_DATA_DIR: dataDir,
      STRIKEBOOK_BOOTSTRAP_TOKEN: BOOTSTRAP,
      STRIKEBOOK_INDEX_FEED: 'manual',
      STRIKEBOOK_DEMO_MAKER: '0',
      STRIKEBOOK_RATE_LIMITS: '0',
      STRIKEBOOK_TEST_CLOCK: '1',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => {
    rmSync(dataDir, { recursive: true, force: true });
    resolve(code);
  }));
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-20_000));
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  const url = `http://${host}:${port}`;
  for (const deadline = performance.now() + 30_000; performance.now() < deadline; ) {
    if (proc.exitCode !== null) throw new Error(`leader exited early: ${out}`);
    try {
      if ((await fetch(`${url}/health`)).ok) return { url, proc, exited, output: () => out };
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  proc.kill('SIGKILL');
  throw new Error(`leader did not start: ${out}`);
}

test('a leader cut off from PostgreSQL stops acknowledging, and the standby takes over', { timeout: 150_000 }, async (t) => {
  const db = await freshSchema(t);
  if (!db) return;
  const net = makeNamespace(t);
  if (!net) return;

  // the relay: host side of the database link -> PostgreSQL on loopback
  const pgUrl = new URL(TEST_DATABASE_URL);
  const relayPort = await freePort();
  const relay = spawn('socat', [
    `TCP-LISTEN:${relayPort},bind=${net.dbHost},reuseaddr,fork,keepalive,keepidle=10,keepintvl=5,keepcnt=3,setsockopt-int=6:18:30000`,
    `TCP:${pgUrl.hostname}:${pgUrl.port || 5432}`,
  ], { stdio: 'ignore' });
  t.after(() => {
    relay.kill('SIGTERM');
  });
  const leaderDbUrl = new URL(db.url);
  leaderDbUrl.hostname = net.dbHost;
  leaderDbUrl.port = String(relayPort);

  const env = { STRIKEBOOK_STANDBY_POLL_MS: '200' };
  const leader = await spawnInNamespace(net.ns, net.httpNs, { ...env, DATABASE_URL: leaderDbUrl.toString() });
  let standby: ChildServer | null = null;
  const standbyDir = tempDir();
  t.after(async () => {
    for (const s of [leader, standby]) {
      if (s && s.proc.exitCode === null && s.proc.signalCode === null) {
        s.proc.kill('SIGKILL');
        await s.exited;
      }
    }
    rmSync(standbyDir, { recursive: true, force: true });
  });
  try {
    assert.equal((await request(leader.url, '/health')).body.role, 'leader');
    standby = await spawnServer(standbyDir, { ...env, DATABASE_URL: db.url });
    assert.equal((await request(standby.url, '/health')).body.role, 'standby');

    const admin = await adminToken(leader.url);
    const trader = await userToken(leader.url, admin, 'cut-trader@example.com', { currency: 'BTC', amount: 100 });
    const m = await atmCall(leader.url);
    const acked: string[] = [];
    for (let n = 0; n < 20; n++) {
      acked.push(String((await ok(leader.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[n % 10] }, trader)).order.order_id));
    }

    net.cut();
    const cutAt = performance.now();
    // orders sent to the old leader after the cut: none is acknowledged
    let ackedAfterCut = 0;
    const late = Array.from({ length: 5 }, (_, n) =>
      rpc(leader.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[n] }, trader).then(
        (r) => {
          if (r.body.result) ackedAfterCut++;
        },
        () => undefined, // the connection ends when the old leader exits
      ),
    );

    // the standby takes over once the database has ended the old leader's session
    let tookOverMs = 0;
    let first: any = null;
    while (first === null) {
      const r = await rpc(standby.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[0] }, trader);
      if (r.body.result) {
        first = r.body.result;
        tookOverMs = performance.now() - cutAt;
      } else {
        assert.equal(r.body.error.code, 10040);
        assert.ok(performance.now() - cutAt < 90_000, 'the standby takes over within 90 s of the cut');
        await sleep(200);
      }
    }
    acked.push(String(first.order.order_id));
    t.diagnostic(`network cut -> first order accepted by the standby: ${(tookOverMs / 1000).toFixed(1)} s`);

    // the old leader gives up on its write (statement deadline) and exits 70, having acknowledged nothing
    const code = await Promise.race([leader.exited, sleep(60_000).then(() => 'still running')]);
    await Promise.all(late);
    assert.equal(code, 70, `the cut-off leader exits 70: ${leader.output()}`);
    assert.equal(ackedAfterCut, 0, 'the cut-off leader acknowledged nothing after the cut');

    for (const id of acked) {
      const st = await rpc(standby.url, 'private/get_order_state', { order_id: id }, trader);
      assert.ok(st.body.result, `acknowledged order ${id} is on the new leader`);
    }
    const h = await ok(standby.url, 'private/get_state_hash', {}, admin);
    const rows = await db.query<{ seq: string; ts: string; cmd: string }>(`SELECT seq, ts, cmd FROM ${db.name}.journal ORDER BY seq`);
    const ex = new Exchange();
    for (const r of rows) applyCommand(ex, decodeCommand(r.cmd, Number(r.seq), Number(r.ts)));
    assert.equal(ex.seq, h.seq);
    assert.equal(stateHash(ex), h.state_hash, 'the new leader equals a clean replay of the journal');
    const countRows: { n: number; max: string }[] = await db.query(`SELECT count(DISTINCT seq)::int AS n, MAX(seq) AS max FROM ${db.name}.journal`);
    assert.deepEqual([countRows[0]!.n, Number(countRows[0]!.max)], [h.seq, h.seq]);
  } catch (err) {
    t.diagnostic(`leader output:\n${leader.output()}\nstandby output:\n${standby?.output() ?? ''}`);
    throw err;
  }
});
