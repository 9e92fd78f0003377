// Issue 14 finding 4: connections are timed out and capped. Short timeouts are configured here
// (300 ms headers, 600 ms request, 300 ms keep-alive, 400 ms WebSocket idle) and each test asserts
// the socket is closed within the configured timeout plus a generous slack (a correctness bound, not
// a speed measurement). The caps: the (cap+1)th connection from one address is refused while
// another address (127.0.0.2, bound with `localAddress`) still gets in.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import WebSocket from 'ws';
import { startServer, type TestServer } from '../helpers/server.ts';

/** Generous: the machine is shared and loaded; the bound only has to be finite and near the setting. */
const SLACK_MS = 2500;

function open(url: string, localAddress = '127.0.0.1'): Promise<Socket> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port: Number(port), localAddress }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Resolves with how long (ms) until the peer closed the socket and everything it sent; rejects after `limitMs`. */
function closedWithin(s: Socket, limitMs: number, t0 = performance.now()): Promise<{ ms: number; received: string }> {
  let received = '';
  s.setEncoding('utf8');
  s.on('data', (d) => (received += d));
  s.on('error', () => undefined);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`still open after ${limitMs} ms`));
    }, limitMs);
    s.once('close', () => {
      clearTimeout(timer);
      resolve({ ms: performance.now() - t0, received });
    });
  });
}

describe('timeouts', () => {
  let srv: TestServer;
  before(async () => {
    srv = await startServer({
      STRIKEBOOK_HEADERS_TIMEOUT_MS: '300',
      STRIKEBOOK_REQUEST_TIMEOUT_MS: '600',
      STRIKEBOOK_KEEP_ALIVE_TIMEOUT_MS: '300',
      STRIKEBOOK_WS_IDLE_TIMEOUT_MS: '400',
    });
  });
  after(async () => {
    await srv.stop();
  });

  test('a connection that sends nothing is closed within the headers timeout', async () => {
    const t0 = performance.now();
    const s = await open(srv.url);
    const { ms } = await closedWithin(s, 300 + SLACK_MS, t0);
    assert.ok(ms >= 250, `closed after ${ms} ms, before the timeout`);
  });

  test('headers sent one byte at a time and never finished are closed within the headers timeout', async () => {
    const t0 = performance.now();
    const s = await open(srv.url);
    s.write('GET /v1/public/get_time HTTP/1.1\r\nHost: x\r\n');
    const drip = setInterval(() => s.writable && s.write('X'), 50);
    try {
      const { received } = await closedWithin(s, 300 + SLACK_MS, t0);
      assert.match(received, /^HTTP\/1\.1 408/);
    } finally {
      clearInterval(drip);
    }
  });

  test('slowloris: headers and 1 byte of a 30,000-byte body are closed within the request timeout', async () => {
    const t0 = performance.now();
    const s = await open(srv.url);
    s.write('POST /api/v2/public/get_time HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 30000\r\n\r\n{');
    const { ms, received } = await closedWithin(s, 600 + SLACK_MS, t0);
    assert.ok(ms >= 500, `closed after ${ms} ms, before the timeout`);
    assert.match(received, /^HTTP\/1\.1 408/, 'answered 408 before closing');
  });

  test('a kept-alive connection is closed once idle for the keep-alive timeout', async () => {
    const s = await open(srv.url);
    s.write('GET /v1/public/get_time HTTP/1.1\r\nHost: x\r\n\r\n');
    const done = closedWithin(s, 300 + SLACK_MS + 1000);
    const { received } = await done;
    assert.match(received, /^HTTP\/1\.1 200/, 'the request was answered first');
    assert.match(received, /"result":\d+/);
  });

  test('a WebSocket that never answers pings is closed within the idle timeout', async () => {
    const ws = new WebSocket(srv.url.replace(/^http/, 'ws') + '/ws/api/v2', { autoPong: false });
    // counted from the start: a ping the server's sweep sent right after the upgrade arrives with it
    // and is emitted in the same turn as 'open', before code awaiting 'open' runs (seen on a loaded
    // machine: closed 213 ms after 'open' with no ping counted)
    let pings = 0;
    ws.on('ping', () => pings++);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const t0 = performance.now();
    const closed = await Promise.race([
      new Promise<number>((resolve) => ws.once('close', () => resolve(performance.now() - t0))),
      new Promise<number>((resolve) => setTimeout(() => resolve(Infinity), 400 + SLACK_MS)),
    ]);
    ws.terminate();
    assert.ok(closed <= 400 + SLACK_MS, 'closed within the idle timeout');
    assert.ok(pings >= 1, 'it was pinged first');
  });

  test('a WebSocket that answers pings stays open past the idle timeout', async () => {
    const ws = new WebSocket(srv.url.replace(/^http/, 'ws') + '/ws/api/v2');
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(ws.readyState, WebSocket.OPEN);
    ws.close();
  });
});

describe('connection caps', () => {
  let srv: TestServer;
  const held: Socket[] = [];
  before(async () => {
    srv = await startServer({ STRIKEBOOK_MAX_CONNECTIONS_PER_IP: '3', STRIKEBOOK_MAX_CONNECTIONS: '5' });
  });
  after(async () => {
    for (const s of held) s.destroy();
    await srv.stop();
  });

  test('the (cap+1)th connection from one address is refused, another address still gets in', async () => {
    for (let i = 0; i < 3; i++) held.push(await open(srv.url));
    const extra = await open(srv.url);
    const { received } = await closedWithin(extra, 5000);
    assert.match(received, /^HTTP\/1\.1 429/);
    assert.match(received, /"code":10028/);
    assert.match(received, /at most 3 connections from one address/);

    const other = await open(srv.url, '127.0.0.2');
    other.write('GET /v1/public/get_time HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const r = await closedWithin(other, 5000);
    assert.match(r.received, /^HTTP\/1\.1 200/);

    // a WebSocket upgrade from the full address is refused the same way
    const ws = new WebSocket(srv.url.replace(/^http/, 'ws') + '/ws/api/v2');
    const status = await new Promise<number>((resolve) => {
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('error', () => resolve(-1));
      ws.once('open', () => resolve(101));
    });
    ws.terminate();
    assert.ok(status === 429 || status === -1, `upgrade answered ${status}`);
  });

  test('past the total cap every address is refused (503)', async () => {
    held.push(await open(srv.url, '127.0.0.2'));
    held.push(await open(srv.url, '127.0.0.3'));
    const extra = await open(srv.url, '127.0.0.4');
    const { received } = await closedWithin(extra, 5000);
    assert.match(received, /^HTTP\/1\.1 503/);
    // a held one closing frees its place
    held.shift()!.destroy();
    await new Promise((r) => setTimeout(r, 200));
    const again = await open(srv.url, '127.0.0.4');
    again.write('GET /v1/public/get_time HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.match((await closedWithin(again, 5000)).received, /^HTTP\/1\.1 200/);
  });
});
