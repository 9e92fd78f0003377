// Issue 14 finding 3: one WebSocket that sends hundreds of heavy requests and disconnects must not
// leave the server running them after it has gone. A connection holds at most
// STRIKEBOOK_WS_MAX_QUEUED unanswered requests (more are answered 10028 at once, not run), and
// requests still waiting when the socket closes are dropped.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { ok, request, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';

function suite(spec: TargetSpec): void {
  let tg: Target;
  const CAP = 100;
  let srv: TestServer;

  before(async () => {
    tg = await startTarget(spec.kind, { STRIKEBOOK_WS_MAX_QUEUED: String(CAP) });
    srv = tg.srv;
  });

  after(async () => {
    await tg.stop();
  });

  /** How many get_instruments calls the server ran to completion (its own request counter). */
  async function instrumentCallsRun(): Promise<number> {
    const r = await request(srv.url, '/metrics');
    const line = r.text.split('\n').find((l) => l.startsWith('strikebook_rpc_requests_total{method="public/get_instruments",outcome="ok"}'));
    return line ? Number(line.split(' ').pop()) : 0;
  }

  test('a socket that sends 700 heavy requests and closes gets at most the queue cap run, and a victim is answered', async () => {
    const before0 = await instrumentCallsRun();
    const ws = await openRaw();
    const answers: any[] = [];
    ws.on('message', (raw) => answers.push(JSON.parse(raw.toString())));
    const frames = [];
    for (let i = 1; i <= 700; i++) frames.push(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'public/get_instruments', params: { currency: 'any' } }));
    // all 700 at once, then the close: the server sees them queued behind each other
    sendAll(ws, frames);
    ws.close();
    await new Promise((resolve) => ws.once('close', resolve));

    // whatever the server still runs for that socket, it is done once its in-flight requests are
    const deadline = Date.now() + 20_000;
    let last = -1;
    for (;;) {
      const n = await instrumentCallsRun();
      if (n === last || Date.now() > deadline) break;
      last = n;
      await new Promise((r) => setTimeout(r, 200));
    }
    const run = (await instrumentCallsRun()) - before0;
    // Requests answered while the 700 frames were still being read make room in the queue for
    // later ones (the cap bounds what is unanswered, not what one socket may ever run): each such
    // answer reached this client before its close did, since the server reads the close after
    // every frame. What the close may leave running is the queue, at most CAP.
    const bound = answers.length + CAP;
    assert.ok(run <= bound, `the server ran ${run} of the 700 requests; at most ${bound} may run (${answers.length} answered before the close, and the queue cap ${CAP})`);
    assert.ok(run < 700, 'the requests queued at the close were dropped');
    assert.equal(srv.app.ws.connections, 0, 'the socket is gone');
    assert.ok(srv.app.ws.requestsRun <= bound);

    // a victim connecting now is answered
    const victim = await WsClient.open(tg.ws);
    const t = await victim.ok('public/get_time');
    assert.equal(typeof t, 'number');
    await victim.close();
  });

  test('past the queue cap a frame is answered 10028 with its id, and the queued ones still answer', async () => {
    const ws = await openRaw();
    const replies = new Map<number, any>();
    ws.on('message', (raw) => {
      const msg = JSON.parse(raw.toString());
      replies.set(msg.id, msg);
    });
    // cheap answers (an empty list), so that the replies of 150 requests never fill the send buffer
    sendAll(ws, Array.from({ length: CAP + 50 }, (_, i) => JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: 'public/get_instruments', params: { currency: 'BTC', kind: 'future' } })));
    const deadline = Date.now() + 20_000;
    while (replies.size < CAP + 50 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(replies.size, CAP + 50, 'every request is answered, one way or the other');
    const refused = [...replies.values()].filter((r) => r.error);
    assert.ok(refused.length >= 50, `${refused.length} refused`);
    for (const r of refused) {
      assert.equal(r.error.code, 10028);
      assert.match(r.error.data.reason, /more than 100 requests waiting on this connection/);
    }
    // the first CAP were queued and answered
    for (let id = 1; id <= CAP; id++) assert.deepEqual(replies.get(id).result, [], `request ${id}`);
    ws.close();
    // once answered, a connection may send again
    const c = await WsClient.open(tg.ws);
    assert.ok(Array.isArray(await c.ok('public/get_instruments', { currency: 'BTC' })));
    await c.close();
    await ok(srv.url, 'public/get_time');
  });

  function openRaw(): Promise<WebSocket> {
    const ws = new WebSocket(tg.ws.replace(/^http/, 'ws') + '/ws/api/v2');
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(ws));
      ws.once('error', reject);
    });
  }

  /** Sends the frames in one TCP write, so the server reads them all before it answers any. */
  function sendAll(ws: WebSocket, frames: string[]): void {
    const socket = (ws as unknown as { _socket: import('node:net').Socket })._socket;
    socket.cork();
    for (const f of frames) ws.send(f);
    socket.uncork();
  }
}

for (const spec of await wsTargets()) describe(spec.name, { skip: spec.skip }, () => suite(spec));
