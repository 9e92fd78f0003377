// The web app's shared WebSocket (web/src/lib/ws.ts): a connection whose set-up gets no answer (a
// server that accepts the socket but never answers public/set_heartbeat) is closed after the set-up
// limit and opened again, instead of leaving every screen "Connecting" for good; and a channel a subscribe answer leaves out (as an
// older stream gateway's combo channels were) is told to its subscriber, who can then poll instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket, { WebSocketServer } from 'ws';
import { LiveSocket, leftOut } from '../../web/src/lib/ws.ts';

test('a set-up that gets no answer is given up and the socket opened again; once answered it is open', async (t) => {
  let wss!: WebSocketServer;
  await new Promise<void>((resolve) => (wss = new WebSocketServer({ port: 0, host: '127.0.0.1' }, resolve)));
  t.after(
    () =>
      new Promise((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close(r);
      }),
  );
  const port = (wss.address() as { port: number }).port;
  let connections = 0;
  wss.on('connection', (sock) => {
    connections++;
    // the first connection is never answered; later ones are
    if (connections === 1) return;
    sock.on('message', (raw) => {
      const req = JSON.parse(raw.toString()) as { id: number };
      sock.send(JSON.stringify({ jsonrpc: '2.0', id: req.id, result: 'ok' }));
    });
  });
  // the browser's WebSocket, as the app uses it (Node 20 has none of its own)
  const g = globalThis as unknown as { WebSocket?: unknown };
  const before = g.WebSocket;
  g.WebSocket = WebSocket;
  t.after(() => {
    g.WebSocket = before;
  });
  const live = new LiveSocket(`ws://127.0.0.1:${port}`, 300);
  t.after(() => live.close());
  const states: string[] = [];
  live.onState((st) => states.push(st));
  const deadline = Date.now() + 10_000;
  while (live.state !== 'open' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.equal(live.state, 'open', `states: ${states.join(' ')}`);
  assert.equal(connections, 2, 'the unanswered socket was given up and a second one opened');
  assert.deepEqual(states, ['reconnecting', 'open']);
});

test('a channel left out of the subscribe answer is told to its subscriber as refused; a served one as served', async (t) => {
  let wss!: WebSocketServer;
  await new Promise<void>((resolve) => (wss = new WebSocketServer({ port: 0, host: '127.0.0.1' }, resolve)));
  t.after(
    () =>
      new Promise((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close(r);
      }),
  );
  const port = (wss.address() as { port: number }).port;
  // an older gateway's answer: the combo channels are left out of the list subscribed
  wss.on('connection', (sock) => {
    sock.on('message', (raw) => {
      const req = JSON.parse(raw.toString()) as { id: number; method: string; params: { channels?: string[] } };
      const result = req.method === 'public/subscribe' ? req.params.channels!.filter((c) => !c.includes('-CS-')) : 'ok';
      sock.send(JSON.stringify({ jsonrpc: '2.0', id: req.id, result }));
    });
  });
  const g = globalThis as unknown as { WebSocket?: unknown };
  const before = g.WebSocket;
  g.WebSocket = WebSocket;
  t.after(() => {
    g.WebSocket = before;
  });
  const live = new LiveSocket(`ws://127.0.0.1:${port}`);
  t.after(() => live.close());
  const heard = new Map<string, boolean>();
  const combo = 'book.BTC-CS-28NOV26-50000_55000.100ms';
  const option = 'book.BTC-28NOV26-50000-C.100ms';
  live.subscribe(combo, () => undefined, (served) => heard.set(combo, served));
  live.subscribe(option, () => undefined, (served) => heard.set(option, served));
  const deadline = Date.now() + 10_000;
  while (heard.size < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(Object.fromEntries(heard), { [combo]: false, [option]: true });
  assert.deepEqual(leftOut([combo, option], [option]), [combo]);
  assert.deepEqual(leftOut([combo], 'ok'), [], 'an answer that is no list refuses nothing');
});
