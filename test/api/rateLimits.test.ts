// Issue 14, finding 5: Deribit-style credit rate limits (src/app/credits.ts), with the exact credit
// arithmetic. The exchange clock stands still (set_test_time), so no credit refills unless a test
// moves the clock; every count below is exact.
// - non-matching calls: 500 credits from 50,000 refilling 10,000/s, per user (HTTP);
// - matching calls: the tier's pool (tier 4: 10,000 refilling 2,500/s), over WebSocket, where the
//   connection stays open after 10028;
// - unauthenticated calls per IP; big replies cost more by their size;
// - admins read and set a user's limits.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { replyCost } from '../../src/app/credits.ts';
import { assertError, assertOk } from '../helpers/envelope.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark } from '../helpers/market.ts';
import { WsClient } from '../helpers/ws.ts';

/** GET `path` from the loopback address `from` (a client IP of its own). */
function getFrom(url: string, from: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string; body: any; headers: Record<string, unknown> }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: Number(port), localAddress: from, method: 'GET', path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, body: JSON.parse(text), headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('credit rate limits', () => {
  let server: TestServer;
  let url: string;
  let admin: string;
  let now: number;
  const advance = async (ms: number) => {
    now += ms;
    await ok(url, 'private/set_test_time', { timestamp: now }, admin);
  };
  const userId = (email: string) => server.app.services.ex.usersByEmail.get(email)!.id;

  before(async () => {
    server = await startServer({ STRIKEBOOK_RATE_LIMITS: '1' });
    url = server.url;
    admin = await adminToken(url);
    // the admin acts often below: a pool big enough never to be the one that runs out
    const adminId = userId('admin@example.com');
    await ok(url, 'private/set_rate_limits', { user_id: adminId, non_matching_max_credits: 1e9, non_matching_refill_per_sec: 1e9 }, admin);
    now = (await ok(url, 'public/get_time')) + 1000;
    await ok(url, 'private/set_test_time', { timestamp: now }, admin);
  });
  after(() => server.stop());

  // buy and sell over WebSocket take their own path to the engine (callDeferred: answered from the
  // durable batch); a flood of orders past the pool must be refused there too, and place nothing
  it('over WebSocket: 20 buys rest, the 21st is 10028 and places no order; 200 ms admit exactly one more', async () => {
    await userToken(url, admin, 'buyer@example.com', { currency: 'BTC', amount: 10 });
    const m = await atmCall(url);
    const ws = await WsClient.open(url);
    try {
      await ws.auth('buyer@example.com');
      await ok(url, 'private/set_rate_limits', { user_id: userId('buyer@example.com'), reset: true }, admin);
      let idx = m.prices.indexOf(nearMark(m)) - 5;
      const buy = () => ws.call('private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[idx--], type: 'limit' });
      for (let i = 0; i < 20; i++) {
        const r = await buy();
        assert.equal(r.result?.order?.order_state, 'open', `buy ${i + 1}: ${JSON.stringify(r)}`);
      }
      const refused = await buy();
      assert.equal(refused.error?.code, 10028, JSON.stringify(refused));
      assert.equal(refused.error.data.retry_after_ms, 200);
      assert.equal(server.app.services.ex.users.get(userId('buyer@example.com'))!.openOrderCount, 20, 'the refused buy placed nothing');
      // 200 ms bring 500 credits: one buy
      await advance(200);
      assert.equal((await buy()).result?.order?.order_state, 'open');
      assert.equal((await buy()).error?.code, 10028);
      assert.equal(server.app.services.ex.users.get(userId('buyer@example.com'))!.openOrderCount, 21);
      assert.equal(ws.closed, false);
    } finally {
      await ws.close();
    }
  });

  // the cancel-on-disconnect settings are answered by the socket itself and journal a command each:
  // uncharged, a toggle loop would grow the journal as fast as batches commit
  it('over WebSocket: 100 cancel-on-disconnect toggles pass, the 101st is 10028 and journals nothing', async () => {
    await userToken(url, admin, 'toggler@example.com');
    const id = userId('toggler@example.com');
    const ws = await WsClient.open(url);
    try {
      await ws.auth('toggler@example.com');
      await ok(url, 'private/set_rate_limits', { user_id: id, reset: true }, admin);
      const toggle = (i: number) => ws.call(i % 2 === 0 ? 'private/enable_cancel_on_disconnect' : 'private/disable_cancel_on_disconnect', { scope: 'account' });
      // 50,000 non-matching credits at 500 a call
      for (let i = 0; i < 100; i++) assert.equal((await toggle(i)).result, 'ok', `toggle ${i + 1}`);
      const seq = server.app.services.ex.seq;
      const refused = await toggle(100);
      assert.equal(refused.error?.code, 10028, JSON.stringify(refused));
      assert.equal(refused.error.data.retry_after_ms, 50);
      assert.equal(server.app.services.ex.seq, seq, 'the refused toggle journaled nothing');
      assert.equal(server.app.services.ex.codAccounts.has(id), false, 'the flag is as the 100th call left it');
      assert.equal(ws.closed, false);
    } finally {
      await ws.close();
    }
  });

  it('over HTTP: 100 reads pass, the 101st is 10028 / 429 with retry_after_ms 50 and Retry-After; 120 ms refill exactly 2 more', async () => {
    const user = await userToken(url, admin, 'reader@example.com');
    // a full pool (setting limits starts one): 50,000 credits
    await ok(url, 'private/set_rate_limits', { user_id: userId('reader@example.com'), reset: true }, admin);
    const read = () => rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, user);
    for (let i = 0; i < 100; i++) assertOk(await read(), `call ${i + 1}`);
    const refused = await read();
    assertError(refused, 10028, { reason: 'rate_limit_exceeded' });
    assert.equal(refused.status, 429);
    // 500 credits missing at 10,000 per second: 50 ms
    assert.equal(refused.body.error.data.retry_after_ms, 50);
    const raw = await fetch(`${url}/v1/private/get_open_orders_by_currency?currency=BTC`, { headers: { authorization: `Bearer ${user}` } });
    assert.equal(raw.status, 429);
    assert.equal(raw.headers.get('retry-after'), '1');
    // a refused call takes nothing: 120 ms bring 1,200 credits, two calls' worth, 200 left
    await advance(120);
    assertOk(await read());
    assertOk(await read());
    const third = await read();
    assertError(third, 10028);
    assert.equal(third.body.error.data.retry_after_ms, 30, '300 credits missing');
    const limits = await ok(url, 'private/get_rate_limits', { user_id: userId('reader@example.com') }, admin);
    assert.equal(limits.non_matching_engine.credits, 200);
    assert.deepEqual(
      [limits.tier, limits.non_matching_engine.max_credits, limits.non_matching_engine.refill_per_sec, limits.matching_engine.max_credits, limits.matching_engine.refill_per_sec],
      [4, 50_000, 10_000, 10_000, 2_500],
    );
  });

  it('over WebSocket: tier 4 admits 20 cancels, the 21st is 10028 with retry_after_ms 200 and the connection stays; 400 ms admit exactly 2 more', async () => {
    await userToken(url, admin, 'trader@example.com');
    const ws = await WsClient.open(url);
    try {
      await ws.auth('trader@example.com');
      await ok(url, 'private/set_rate_limits', { user_id: userId('trader@example.com'), reset: true }, admin);
      for (let i = 0; i < 20; i++) assert.equal((await ws.ok('private/cancel_all', {})), 0, `cancel ${i + 1}`);
      const refused = await ws.call('private/cancel_all', {});
      assert.equal(refused.error?.code, 10028, JSON.stringify(refused));
      assert.equal(refused.error.message, 'too_many_requests');
      // 500 credits at 2,500 per second
      assert.equal(refused.error.data.retry_after_ms, 200);
      // the connection is kept, and the other pool is untouched
      assert.equal(ws.closed, false);
      assert.deepEqual(await ws.ok('private/get_open_orders_by_currency', { currency: 'BTC' }), []);
      await advance(400);
      await ws.ok('private/cancel_all', {});
      await ws.ok('private/cancel_all', {});
      assert.equal((await ws.call('private/cancel_all', {})).error?.code, 10028);
      // tier 1: a pool of 50,000 credits, 100 cancels
      await ok(url, 'private/set_rate_limits', { user_id: userId('trader@example.com'), tier: 1 }, admin);
      for (let i = 0; i < 100; i++) await ws.ok('private/cancel_all', {});
      const t1 = await ws.call('private/cancel_all', {});
      assert.equal(t1.error?.code, 10028);
      assert.equal(t1.error.data.retry_after_ms, 34, '500 credits at 15,000 per second: 33.3 ms, rounded up');
    } finally {
      await ws.close();
    }
  });

  it('holds the refusals of a client that resends while refused (one refill step each), and answers a client that waited at once', async () => {
    const user = await userToken(url, admin, 'impatient@example.com');
    for (let i = 0; i < 20; i++) await ok(url, 'private/cancel_all', {}, user);
    const first = await rpc(url, 'private/cancel_all', {}, user);
    assertError(first, 10028);
    assert.equal(first.body.error.data.retry_after_ms, 200, 'the first refusal: the full wait, answered at once');
    // three resends at once, ignoring retry_after: queued 400, 600 and 800 ms behind it (real
    // time; the exchange clock stands still, so no credit refills meanwhile)
    const started = performance.now();
    const resent = await Promise.all([0, 1, 2].map(async () => {
      const r = await rpc(url, 'private/cancel_all', {}, user);
      return { r, ms: performance.now() - started };
    }));
    for (const { r } of resent) {
      assertError(r, 10028);
      assert.equal(r.body.error.data.retry_after_ms, 1, 'the hold served the wait');
    }
    assert.ok(Math.max(...resent.map((x) => x.ms)) >= 790, `the last resend was held 800 ms (took ${Math.max(...resent.map((x) => x.ms))} ms)`);
    // a client that waits as told (the clock moved past the horizon) passes, unheld
    await advance(1000);
    await ok(url, 'private/cancel_all', {}, user);
  });

  it('charges unauthenticated calls to the client IP: 100 pass, the 101st is refused; another IP is unaffected', async () => {
    for (let i = 0; i < 100; i++) assert.equal((await getFrom(url, '127.0.0.21', '/api/v2/public/get_time')).status, 200, `call ${i + 1}`);
    const refused = await getFrom(url, '127.0.0.21', '/api/v2/public/get_time');
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, 10028);
    assert.equal(refused.headers['retry-after'], '1');
    assert.equal((await getFrom(url, '127.0.0.22', '/api/v2/public/get_time')).status, 200);
  });

  it('charges a public call that carries credentials to its user, not to the IP', async () => {
    const user = await userToken(url, admin, 'behind-nat@example.com');
    const id = userId('behind-nat@example.com');
    await ok(url, 'private/set_rate_limits', { user_id: id, reset: true }, admin);
    for (let i = 0; i < 100; i++) await getFrom(url, '127.0.0.25', '/api/v2/public/get_time');
    assert.equal((await getFrom(url, '127.0.0.25', '/api/v2/public/get_time')).status, 429, 'the IP is out of credits');
    const authed = await getFrom(url, '127.0.0.25', '/api/v2/public/get_time', { authorization: `Bearer ${user}` });
    assert.equal(authed.status, 200, authed.text);
    assert.equal((await ok(url, 'private/get_rate_limits', { user_id: id }, admin)).non_matching_engine.credits, 49_500);
    // a token that does not resolve leaves the call anonymous: the IP's, refused
    assert.equal((await getFrom(url, '127.0.0.25', '/api/v2/public/get_time', { authorization: 'Bearer not-a-token' })).status, 429);
  });

  it('charges a big reply by its size: 500 credits plus 500 per started 32 KiB past the first', async () => {
    const big = await getFrom(url, '127.0.0.23', '/api/v2/public/get_instruments?currency=any');
    assert.equal(big.status, 200);
    assert.ok(big.text.length > 64 * 1024, `a big reply (${big.text.length} bytes)`);
    const cost = 500 + replyCost(big.text.length);
    assert.equal(replyCost(big.text.length), Math.ceil((big.text.length - 32 * 1024) / (32 * 1024)) * 500);
    // what is left pays for exactly floor(left / 500) small calls
    const left = 50_000 - cost;
    const n = Math.floor(left / 500);
    for (let i = 0; i < n; i++) assert.equal((await getFrom(url, '127.0.0.23', '/api/v2/public/get_time')).status, 200, `call ${i + 1} of ${n}`);
    const refused = await getFrom(url, '127.0.0.23', '/api/v2/public/get_time');
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.data.retry_after_ms, Math.ceil(((500 - (left - n * 500)) * 1000) / 10_000));
  });

  it('lets only administrators read and set limits, and keeps them across a restart', async () => {
    const user = await userToken(url, admin, 'nosy@example.com');
    assertError(await rpc(url, 'private/get_rate_limits', { user_id: 1 }, user), 13021);
    assertError(await rpc(url, 'private/set_rate_limits', { user_id: 1, tier: 1 }, user), 13021);
    assertError(await rpc(url, 'private/get_rate_limits', { user_id: 999_999 }, admin), 13020);
    const set = await ok(url, 'private/set_rate_limits', { user_id: userId('nosy@example.com'), tier: 2, non_matching_max_credits: 5_000 }, admin);
    assert.deepEqual([set.tier, set.custom, set.matching_engine.max_credits, set.matching_engine.refill_per_sec, set.non_matching_engine.max_credits], [2, true, 25_000, 10_000, 5_000]);
    // 5,000 credits: 10 reads
    for (let i = 0; i < 10; i++) assertOk(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, user));
    assertError(await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, user), 10028);
    const dataDir = server.dataDir;
    await server.stop({ keepData: true });
    server = await startServer({ STRIKEBOOK_RATE_LIMITS: '1' }, dataDir);
    url = server.url;
    admin = (await ok(url, 'public/auth', { grant_type: 'password', username: 'admin@example.com', password: 'admin-password-1' })).access_token;
    const again = await ok(url, 'private/get_rate_limits', { user_id: userId('nosy@example.com') }, admin);
    assert.deepEqual([again.tier, again.non_matching_engine.max_credits], [2, 5_000]);
  });
});

describe('credit rate limits off', () => {
  it('STRIKEBOOK_RATE_LIMITS=0 admits a flood', async () => {
    const server = await startServer({ STRIKEBOOK_RATE_LIMITS: '0' });
    try {
      for (let i = 0; i < 150; i++) assert.equal((await getFrom(server.url, '127.0.0.24', '/api/v2/public/get_time')).status, 200);
    } finally {
      await server.stop();
    }
  });
});
