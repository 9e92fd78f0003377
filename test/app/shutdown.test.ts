// Graceful shutdown (issue 30 item 4, docs/operations.md "Stopping a server"): SIGTERM under load
// answers every request in flight (no reset, no 11094), closes WebSockets with 1001 (going away)
// after answering theirs, exits 0, and every acknowledged order is there after the restart; and
// `npm start` passes SIGTERM on to the server instead of leaving it running.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import { atmCall } from '../helpers/market.ts';
import { BOOTSTRAP, ROOT, adminToken, freePort, ok, rpc, spawnServer, tempDir, userToken, type ChildServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';
import { sleep } from '../helpers/drill.ts';

interface Outcome {
  kind: 'http' | 'ws';
  label: string;
  token: string;
  /** performance.now() when the request was sent. */
  sentAt: number;
  answer: 'result' | number | 'transport';
  orderId?: string;
}

function stopServer(t: TestContext, s: ChildServer): void {
  t.after(async () => {
    if (s.proc.exitCode === null && s.proc.signalCode === null) {
      s.proc.kill('SIGKILL');
      await s.exited;
    }
  });
}

test('SIGTERM under load answers every request in flight, closes WebSockets with 1001, exits 0, and every acknowledged order survives the restart', { timeout: 240_000 }, async (t) => {
  const dir = tempDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // info: the test waits for the server's "shutting down" line
  const server = await spawnServer(dir, { LOG_LEVEL: 'info' });
  stopServer(t, server);
  const admin = await adminToken(server.url);
  const emails = ['sd0@example.com', 'sd1@example.com', 'sd2@example.com', 'sd3@example.com'];
  const tokens: string[] = [];
  for (const e of emails) tokens.push(await userToken(server.url, admin, e, { currency: 'BTC', amount: 100 }));
  const m = await atmCall(server.url);
  const bids = m.prices.slice(0, 20);
  const outcomes: Outcome[] = [];
  let stopSending = false;

  // three clients over HTTP (kept-alive connections), one request after the other
  const httpLoops = tokens.slice(0, 3).map(async (token, u) => {
    for (let n = 0; !stopSending; n++) {
      const o: Outcome = { kind: 'http', label: `sd-h${u}-${n}`, token, sentAt: performance.now(), answer: 'transport' };
      outcomes.push(o);
      try {
        const r = await rpc(server.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: bids[n % bids.length], label: o.label }, token);
        if (r.body?.result) {
          o.answer = 'result';
          o.orderId = String(r.body.result.order.order_id);
        } else o.answer = r.body?.error?.code ?? r.status;
      } catch {
        o.answer = 'transport';
      }
    }
  });
  // three WebSockets of the fourth user, each with several requests in flight at a time
  const sockets: WsClient[] = [];
  const closeCodes: number[] = [];
  for (let i = 0; i < 3; i++) {
    const ws = await WsClient.open(server.url);
    await ws.auth(emails[3]!);
    ws.ws.on('close', (code) => closeCodes.push(code));
    sockets.push(ws);
  }
  const wsLoops = sockets.flatMap((ws, w) =>
    [0, 1, 2].map(async (lane) => {
      for (let n = 0; !stopSending && !ws.closed; n++) {
        const o: Outcome = { kind: 'ws', label: `sd-w${w}-${lane}-${n}`, token: tokens[3]!, sentAt: performance.now(), answer: 'transport' };
        outcomes.push(o);
        const r = await Promise.race([ws.call('private/buy', { instrument_name: m.name, amount: 0.1, price: bids[n % bids.length], label: o.label }), ws.closedP.then(() => null)]).catch(() => null);
        if (r?.result) {
          o.answer = 'result';
          o.orderId = String(r.result.order.order_id);
        } else if (r?.error) o.answer = r.error.code;
      }
    }),
  );

  const acks = (kind: Outcome['kind']) => outcomes.filter((o) => o.kind === kind && o.answer === 'result').length;
  for (const start = performance.now(); acks('http') < 60 || acks('ws') < 30; ) {
    if (performance.now() - start > 60_000) throw new Error('the load did not get going');
    await sleep(20);
  }
  server.proc.kill('SIGTERM');
  const termAt = performance.now();
  stopSending = true;
  // once the stop has begun (logged after the listening socket closed), a new connection is refused
  // while the requests in flight are still being answered
  for (const start = performance.now(); !server.output().includes('"msg":"shutting down"'); ) {
    if (performance.now() - start > 30_000) throw new Error(`no "shutting down" line: ${server.output()}`);
    await sleep(5);
  }
  const newConnection = await new Promise<string>((resolve) => {
    const sock = connect(Number(new URL(server.url).port), '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve('accepted');
    });
    sock.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
  });
  const aliveThen = server.proc.exitCode === null;
  const code = await Promise.race([server.exited, sleep(60_000).then(() => 'still running')]);
  await Promise.all([...httpLoops, ...wsLoops]);
  try {
    assert.equal(code, 0, 'the server exits 0');
    const inFlight = outcomes.filter((o) => o.sentAt < termAt);
    const unanswered = inFlight.filter((o) => o.answer === 'transport').map((o) => o.label);
    assert.deepEqual(unanswered, [], 'every request sent before SIGTERM was answered');
    const internal = inFlight.filter((o) => o.answer === 11094).map((o) => o.label);
    assert.deepEqual(internal, [], 'none with 11094');
    assert.deepEqual(closeCodes, [1001, 1001, 1001], 'every WebSocket was closed with 1001 (going away)');
    assert.ok(aliveThen, 'the server was still stopping when the new connection was tried');
    assert.equal(newConnection, 'ECONNREFUSED', 'a new connection during the stop is refused');
  } catch (err) {
    t.diagnostic(`server output:\n${server.output()}`);
    throw err;
  }
  const acked = outcomes.filter((o) => o.answer === 'result');
  const wsAcked = acked.filter((o) => o.kind === 'ws').length;
  assert.ok(wsAcked >= 30, 'orders were acknowledged over the WebSockets too');
  t.diagnostic(`${outcomes.length} requests, ${acked.length} acknowledged (${wsAcked} over WebSockets), ${outcomes.filter((o) => o.sentAt < termAt && o.answer !== 'result').length} sent before SIGTERM answered with an error: ${JSON.stringify([...new Set(outcomes.filter((o) => o.answer !== 'result').map((o) => o.answer))])}`);

  // the restart recovers every acknowledged order, once
  const again = await spawnServer(dir);
  stopServer(t, again);
  for (const o of acked) {
    const st = await rpc(again.url, 'private/get_order_state', { order_id: o.orderId }, o.token);
    assert.equal(st.body.result?.label, o.label, `acknowledged order ${o.label} survived the restart: ${JSON.stringify(st.body.error)}`);
  }
  for (const token of tokens) {
    const open = await ok(again.url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, token);
    const labels = open.map((x: any) => x.label);
    assert.equal(new Set(labels).size, labels.length, 'no order twice');
  }
  again.proc.kill('SIGTERM');
  assert.equal(await again.exited, 0);
});

test('SIGTERM to `npm start` stops the server, which exits 0', { timeout: 180_000 }, async (t) => {
  const dir = tempDir();
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const npm = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      STRIKEBOOK_DATA_DIR: dir,
      STRIKEBOOK_BOOTSTRAP_TOKEN: BOOTSTRAP,
      STRIKEBOOK_INDEX_FEED: 'manual',
      STRIKEBOOK_DEMO_MAKER: '0',
      DATABASE_URL: '',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  npm.stdout.on('data', (d: Buffer) => (out += d.toString()));
  npm.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const npmExited = new Promise<number | null>((resolve) => npm.on('exit', (c) => resolve(c)));
  const url = `http://127.0.0.1:${port}`;
  const up = async () => fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false);
  for (const start = performance.now(); !(await up()); ) {
    if (performance.now() - start > 120_000 || npm.exitCode !== null) throw new Error(`npm start did not bring the server up: ${out}`);
    await sleep(100);
  }
  // the server's own pid, from its log line, to clean up after a failure
  const serverPid = Number(/"pid":(\d+)/.exec(out)?.[1] ?? 0);
  t.after(() => {
    try {
      if (serverPid > 0) process.kill(serverPid, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  npm.kill('SIGTERM');
  await Promise.race([npmExited, sleep(60_000)]);
  let stillUp = true;
  for (const start = performance.now(); performance.now() - start < 30_000; ) {
    stillUp = await up();
    if (!stillUp) break;
    await sleep(200);
  }
  assert.equal(stillUp, false, `the server stopped: ${out}`);
  assert.match(out, /"msg":"stopped"/, 'the server went through its shutdown');
});
