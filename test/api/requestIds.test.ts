// Request ids: every HTTP answer carries x-request-id (the client's own when well-formed), an 11094's
// correlation id is that id, in the answer and in its log line, and STRIKEBOOK_ACCESS_LOG=1 writes
// one line per request with the id and without the query string (credentials travel there).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { Writable } from 'node:stream';
import pino from 'pino';
import { loadConfig } from '../../src/app/config.ts';
import { startExchange, type RunningExchange } from '../../src/app/services.ts';
import { BOOTSTRAP, login, ok, tempDir, userToken } from '../helpers/server.ts';

const lines: any[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const l of chunk.toString().split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l));
    done();
  },
});

describe('request ids', () => {
  let app: RunningExchange;
  let url: string;
  const dir = tempDir();

  before(async () => {
    const config = loadConfig({
      PORT: '0',
      STRIKEBOOK_DATA_DIR: dir,
      STRIKEBOOK_BOOTSTRAP_TOKEN: BOOTSTRAP,
      STRIKEBOOK_INDEX_FEED: 'manual',
      STRIKEBOOK_DEMO_MAKER: '0',
      STRIKEBOOK_RATE_LIMITS: '0',
      STRIKEBOOK_ACCESS_LOG: '1',
    });
    app = await startExchange(config, pino({ level: 'info' }, sink));
    url = app.url;
  });
  after(async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('are on every answer, fast path, Fastify path and refusals alike', async () => {
    const answers = [
      await fetch(`${url}/api/v2/public/get_time`),
      await fetch(`${url}/api/v2/public/get_time`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }),
      await fetch(`${url}/health`),
      await fetch(`${url}/api/v2/public/no_such_method`),
    ];
    const ids = answers.map((r) => r.headers.get('x-request-id'));
    for (const id of ids) assert.match(id ?? '', /^[a-z0-9]+-[a-z0-9]+$/);
    assert.equal(new Set(ids).size, ids.length, 'each request its own id');
  });

  it("keep a client's well-formed id and replace a malformed one", async () => {
    const kept = await fetch(`${url}/api/v2/public/get_time`, { headers: { 'x-request-id': 'lb-7f3a.42' } });
    assert.equal(kept.headers.get('x-request-id'), 'lb-7f3a.42');
    const replaced = await fetch(`${url}/api/v2/public/get_time`, { headers: { 'x-request-id': 'a "quoted" id' } });
    assert.notEqual(replaced.headers.get('x-request-id'), 'a "quoted" id');
  });

  it("are an 11094's correlation id, in the answer and in the log line of the error", async () => {
    const ex = app.services.ex;
    const real = ex.indexPrice;
    ex.indexPrice = () => {
      throw new Error('a bug in a handler');
    };
    try {
      const r = await fetch(`${url}/api/v2/public/get_index_price?index_name=btc_usd`, { headers: { 'x-request-id': 'trace-11094' } });
      const body = (await r.json()) as any;
      assert.equal(body.error.code, 11094);
      assert.equal(body.error.data.reason, 'correlation_id trace-11094');
      assert.equal(r.headers.get('x-request-id'), 'trace-11094');
      const logged = lines.find((l) => l.msg === 'unexpected error in handler');
      assert.equal(logged?.correlationId, 'trace-11094');
    } finally {
      ex.indexPrice = real;
    }
  });

  it("are an 11094's correlation id for an order too (buy and sell are answered from their durable batch)", async () => {
    await ok(url, 'private/create_admin', { email: 'ids-admin@example.com', password: 'admin-password-1', bootstrap_token: BOOTSTRAP });
    const admin = await login(url, 'ids-admin@example.com', 'admin-password-1');
    const token = await userToken(url, admin, 'ids-trader@example.com', { currency: 'BTC', amount: 1 });
    const [inst] = await ok(url, 'public/get_instruments', { currency: 'BTC', kind: 'option' });
    // a bug on the way to the sequencer (an engine's own exception is a journaled internal_error instead)
    const seq = app.services.seq;
    const { submit, submitThen } = seq;
    seq.submit = seq.submitThen = () => {
      throw new Error('a bug before the sequencer');
    };
    try {
      for (const side of ['buy', 'sell']) {
        const r = await fetch(`${url}/api/v2/private/${side}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': `trace-${side}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: `private/${side}`, params: { instrument_name: inst.instrument_name, amount: 1, type: 'limit', price: 0.1 } }),
        });
        const body = (await r.json()) as any;
        assert.equal(r.headers.get('x-request-id'), `trace-${side}`);
        assert.equal(body.id, 5);
        assert.equal(body.error.code, 11094, JSON.stringify(body));
        assert.equal(body.error.data.reason, `correlation_id trace-${side}`);
      }
    } finally {
      seq.submit = submit;
      seq.submitThen = submitThen;
    }
  });

  it('are in the access log, one line per request, without the query string', async () => {
    await fetch(`${url}/api/v2/public/auth?grant_type=password&username=a@example.com&password=secret-in-query`, { headers: { 'x-request-id': 'access-1' } });
    await new Promise((r) => setImmediate(r));
    const line = lines.find((l) => l.msg === 'request' && l.reqId === 'access-1');
    assert.ok(line, 'an access-log line with the request id');
    assert.deepEqual([line.method, line.path, typeof line.status, typeof line.ms], ['GET', '/api/v2/public/auth', 'number', 'number']);
    assert.ok(!JSON.stringify(lines).includes('secret-in-query'), 'the query string (a password here) is never logged');
  });
});
