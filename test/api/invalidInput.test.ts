// Invalid input gets the API.md section 4 error, in the envelope, and the process keeps serving.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { assertEnvelope, assertError, assertOk } from '../helpers/envelope.ts';
import { atmCall, cheapCall, type Market } from '../helpers/market.ts';
import { adminToken, ok, request, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('invalid input', () => {
  let server: TestServer;
  let url: string;
  let alice: string;
  let bob: string;
  let atm: Market;
  let cheap: Market;
  /** A valid resting sell, for variations. */
  let good: Record<string, unknown>;
  let admin: string;

  const post = (path: string, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    request(url, path, { method: 'POST', body, headers });
  const openOrders = async (token: string) => (await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, token)).map((o: any) => o.order_id);
  const tradeCount = () => [...server.app.services.ex.users.values()].reduce((n, u) => n + u.trades.length, 0);

  before(async () => {
    server = await startServer();
    url = server.url;
    admin = await adminToken(url);
    alice = await userToken(url, admin, 'alice@example.com', { currency: 'BTC', amount: 50 });
    bob = await userToken(url, admin, 'bob@example.com', { currency: 'BTC', amount: 50 });
    atm = await atmCall(url);
    cheap = await cheapCall(url);
    good = { instrument_name: atm.name, amount: 0.1, price: atm.prices[atm.prices.length - 1] };
  });
  after(() => server.stop());

  it('rejects parameters of the wrong type with -32602 naming the parameter, by POST and GET', async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['private/sell', { ...good, amount: 'abc' }, 'amount'],
      ['private/sell', { ...good, amount: '0.1' }, 'amount'],
      ['private/sell', { ...good, price: [0.1] }, 'price'],
      ['private/sell', { ...good, instrument_name: 42 }, 'instrument_name'],
      ['private/sell', { ...good, post_only: 'yes' }, 'post_only'],
      ['private/sell', { ...good, type: 'market_limit' }, 'type'],
      ['private/sell', { ...good, type: 'stop_limit' }, 'trigger'],
      ['private/sell', { ...good, time_in_force: 'forever' }, 'time_in_force'],
      ['private/sell', { ...good, label: 'x'.repeat(65) }, 'label'],
      ['private/cancel', { order_id: 17 }, 'order_id'],
      ['private/deposit_collateral', { currency: 'BTC', amount: { value: 1 } }, 'amount'],
      ['private/deposit_collateral', { currency: 'DOGE', amount: 1 }, 'currency'],
      ['private/get_user_trades_by_currency', { currency: 'BTC', count: 0 }, 'count'],
      ['private/get_user_trades_by_currency', { currency: 'BTC', count: 1001 }, 'count'],
      ['private/get_user_trades_by_currency', { currency: 'BTC', sorting: 'up' }, 'sorting'],
      ['private/get_user_trades_by_currency_and_time', { currency: 'BTC', start_timestamp: -1 }, 'start_timestamp'],
      ['private/get_open_orders_by_side', { side: 'both' }, 'side'],
      ['public/verify_invite_code', { code: '' }, 'code'],
      ['public/auth', { grant_type: 'password', username: 'a@b.c', password: 'x'.repeat(129) }, 'password'],
    ];
    for (const [m, p, param] of cases) {
      const r = await rpc(url, m, p, alice);
      assertEnvelope(r, { where: m });
      assertError(r, -32602, { param }, `${m} ${JSON.stringify(p).slice(0, 80)}`);
    }
    for (const [p, param] of [
      [{ ...good, amount: 'abc' }, 'amount'],
      [{ ...good, price: 'NaN' }, 'price'],
      [{ ...good, post_only: 'maybe' }, 'post_only'],
    ] as const) {
      assertError(await rpc(url, 'private/sell', p, alice, { get: true }), -32602, { param }, `GET ${JSON.stringify(p)}`);
    }
    assert.deepEqual(await openOrders(alice), [], 'nothing was placed');
  });

  it('rejects missing required parameters with -32602 naming the parameter', async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['private/sell', { amount: 0.1, price: 0.1 }, 'instrument_name'],
      ['private/sell', { instrument_name: atm.name, price: 0.1 }, 'amount'],
      ['private/cancel', {}, 'order_id'],
      ['private/deposit_collateral', { amount: 1 }, 'currency'],
      ['private/get_open_orders_by_currency', {}, 'currency'],
      ['private/get_user_trades_by_currency_and_time', { currency: 'BTC' }, 'start_timestamp'],
      ['public/verify_invite_code', {}, 'code'],
      ['public/auth', {}, 'grant_type'],
      ['public/auth', { grant_type: 'password', password: 'x' }, 'username'],
    ];
    for (const [m, p, param] of cases) assertError(await rpc(url, m, p, alice), -32602, { param }, m);
  });

  it('rejects a limit price that is zero or negative with 10023, and a limit order without a price', async () => {
    for (const price of [-0.1, 0, -1e9]) assertError(await rpc(url, 'private/sell', { ...good, price }, alice), 10023, { param: 'price' }, `price ${price}`);
    const { price: _p, ...noPrice } = good;
    assertError(await rpc(url, 'private/sell', noPrice, alice), 10023, { param: 'price' });
  });

  it('rejects a price off the tick grid, or with too many decimals, with 10043', async () => {
    // above 0.005 the tick is 0.0005: 0.0951 is on the 0.0001 grid but not on 0.0005
    const off = atm.prices[0] + 0.0001;
    assertError(await rpc(url, 'private/sell', { ...good, price: Number(off.toFixed(4)) }, alice), 10043, { param: 'price' });
    assertError(await rpc(url, 'private/sell', { ...good, price: 0.00015 }, alice), 10043);
    assertError(await rpc(url, 'private/sell', { ...good, price: 0.123456789 }, alice), 10043);
    assertError(await rpc(url, 'private/sell', { ...good, price: 1e-9 }, alice), 10043);
    assertError(await rpc(url, 'private/sell', { ...good, price: '0.12345' }, alice, { get: true }), 10043, {}, 'by GET');
  });

  it('rejects amounts off the lot, below the minimum, zero or negative with 10021 and 10002', async () => {
    assertError(await rpc(url, 'private/sell', { ...good, amount: 0.15 }, alice), 10021, { param: 'amount' });
    assertError(await rpc(url, 'private/sell', { ...good, amount: 0.123456789 }, alice), 10021);
    assertError(await rpc(url, 'private/sell', { ...good, amount: 0.05 }, alice), 10002, { param: 'amount' });
    assertError(await rpc(url, 'private/sell', { ...good, amount: 0.00000001 }, alice), 10002);
    for (const amount of [0, -0.1, -5]) assertError(await rpc(url, 'private/sell', { ...good, amount }, alice), 10021, {}, `amount ${amount}`);
    assertError(await rpc(url, 'private/sell', { instrument_name: atm.name, contracts: 0.15, price: good.price }, alice), 10021);
    assertError(await rpc(url, 'private/sell', { ...good, amount: 0.1, contracts: 0.2 }, alice), 11029, {}, 'amount and contracts disagree');
    assertError(await rpc(url, 'private/sell', { ...good, amount: '0.15' }, alice, { get: true }), 10021, {}, 'by GET');
  });

  it('rejects an unknown instrument with 10020 everywhere an instrument is named', async () => {
    for (const instrument_name of ['BTC-1JAN20-1000-C', 'nonsense', 'btc-' + atm.name.slice(4)]) {
      assertError(await rpc(url, 'private/sell', { ...good, instrument_name }, alice), 10020, {}, instrument_name);
      assertError(await rpc(url, 'private/buy', { ...good, instrument_name }, alice), 10020);
    }
    assertError(await rpc(url, 'private/cancel_all_by_instrument', { instrument_name: 'nonsense' }, alice), 10020);
    assertError(await rpc(url, 'private/get_open_orders_by_instrument', { instrument_name: 'nonsense' }, alice), 10020);
    assertError(await rpc(url, 'private/get_user_trades_by_instrument', { instrument_name: 'nonsense' }, alice), 10020);
    assertError(await rpc(url, 'private/get_user_trades_by_instrument_and_time', { instrument_name: 'nonsense', start_timestamp: 0 }, alice), 10020);
  });

  it('rejects a price outside the band with 10005 or 10007, naming the limit', async () => {
    const below = Number((atm.book.min_price - 0.0005).toFixed(4));
    const above = Number((Math.ceil((atm.book.max_price + 0.0005) * 2000) / 2000).toFixed(4));
    const lo = await rpc(url, 'private/sell', { ...good, price: Number((Math.floor(below * 2000) / 2000).toFixed(4)) }, alice);
    assertError(lo, 10005, { param: 'price' });
    assert.equal(lo.body.error.message, `price_too_low ${atm.book.min_price}`);
    const hi = await rpc(url, 'private/buy', { ...good, price: above }, alice);
    assertError(hi, 10007, { param: 'price' });
    assert.equal(hi.body.error.message, `price_too_high ${atm.book.max_price}`);
    // the edges of the band are accepted
    assertOk(await rpc(url, 'private/sell', { ...good, price: atm.prices[atm.prices.length - 1] }, alice));
    assertOk(await rpc(url, 'private/buy', { ...good, price: atm.prices[0] }, alice));
    await ok(url, 'private/cancel_all', {}, alice);
  });

  it('rejects a crossing post_only order with reject_post_only by 11054, and reprices it without', async () => {
    const ask = atm.prices[60];
    const maker = (await ok(url, 'private/sell', { ...good, price: ask }, bob)).order;
    const r = await rpc(url, 'private/buy', { ...good, price: ask, post_only: true, reject_post_only: true }, alice);
    assertError(r, 11054);
    assert.deepEqual(await openOrders(alice), []);
    const repriced = await ok(url, 'private/buy', { ...good, price: atm.prices[70], post_only: true }, alice);
    assert.deepEqual(repriced.trades, [], 'a post_only order never takes');
    assert.equal(repriced.order.order_state, 'open');
    assert.equal(repriced.order.price, atm.prices[59], 'moved one tick inside the spread');
    assert.equal(repriced.order.post_only, true);
    await ok(url, 'private/cancel', { order_id: maker.order_id }, bob);
    await ok(url, 'private/cancel_all', {}, alice);
  });

  it('rejects a self-trade with 11030 reason self_trade before anything is filled', async () => {
    const price = atm.prices[50];
    const mine = (await ok(url, 'private/sell', { ...good, amount: 0.2, price }, alice)).order;
    const before = tradeCount();
    for (const amount of [0.1, 0.3]) {
      const r = await rpc(url, 'private/buy', { instrument_name: atm.name, amount, price }, alice);
      assertError(r, 11030, { reason: 'self_trade' });
    }
    assertError(await rpc(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, type: 'market' }, alice), 11030, { reason: 'self_trade' });
    assert.equal(tradeCount(), before, 'no trade');
    assert.deepEqual(await openOrders(alice), [mine.order_id], 'the resting order is untouched');
    const book = await ok(url, 'public/get_order_book', { instrument_name: atm.name });
    assert.deepEqual(book.asks, [[price, 0.2]]);
    // another user trades with it normally
    assert.equal((await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.2, price }, bob)).trades.length, 1);
  });

  it('cancels a fill_or_kill order that cannot fill completely, with no trades', async () => {
    const price = atm.prices[40];
    await ok(url, 'private/sell', { ...good, amount: 0.1, price }, bob);
    const before = tradeCount();
    const r = await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.5, price, time_in_force: 'fill_or_kill' }, alice);
    assert.equal(r.order.order_state, 'cancelled');
    assert.equal(r.order.filled_amount, 0);
    assert.deepEqual(r.trades, []);
    assert.equal(tradeCount(), before);
    assert.deepEqual(await openOrders(alice), []);
    const book = await ok(url, 'public/get_order_book', { instrument_name: atm.name });
    assert.deepEqual(book.asks, [[price, 0.1]], 'the maker keeps its size');
    // the same order that can fill does fill
    const filled = await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price, time_in_force: 'fill_or_kill' }, alice);
    assert.equal(filled.order.order_state, 'filled');
    assert.equal(filled.trades.length, 1);
  });

  it('cancels a market order against an empty side with zero fills, not an error', async () => {
    const book = await ok(url, 'public/get_order_book', { instrument_name: cheap.name });
    assert.deepEqual([book.bids, book.asks], [[], []]);
    for (const side of ['private/buy', 'private/sell']) {
      const r = await ok(url, side, { instrument_name: cheap.name, amount: 0.1, type: 'market' }, alice);
      assert.equal(r.order.order_state, 'cancelled', side);
      assert.equal(r.order.filled_amount, 0);
      assert.equal(r.order.order_type, 'market');
      assert.deepEqual(r.trades, []);
    }
    assert.deepEqual(await openOrders(alice), []);
  });

  it('rejects a body over 32 KiB with -32600 (HTTP 413) and accepts one just under', async () => {
    const big = JSON.stringify({ currency: 'BTC', junk: 'x'.repeat(33 * 1024) });
    const r = await post('/v1/private/get_open_orders_by_currency', big, { 'content-type': 'application/json', authorization: `Bearer ${alice}` });
    assertEnvelope(r, { status: 413 });
    assert.equal(r.body.error.code, -32600);
    const justUnder = JSON.stringify({ currency: 'BTC', junk: 'x'.repeat(31 * 1024) });
    const s = await post('/v1/private/get_open_orders_by_currency', justUnder, { 'content-type': 'application/json', authorization: `Bearer ${alice}` });
    assertOk(s);
  });

  it('rejects a request line and headers too large for the HTTP parser with -32600 (HTTP 431) in the envelope', async () => {
    const r = await request(url, `/v1/public/verify_invite_code?code=${'x'.repeat(20_000)}`);
    assertEnvelope(r, { status: 431 });
    assert.equal(r.body.error.code, -32600);
    const h = await request(url, '/v1/public/get_time', { headers: { 'x-padding': 'y'.repeat(20_000) } });
    assertEnvelope(h, { status: 431 });
    assert.equal(h.body.error.code, -32600);
  });

  it('answers a request that is not HTTP at all with -32600 in the envelope', async () => {
    const { port } = new URL(url);
    const raw = await new Promise<string>((resolve, reject) => {
      const sock = connect(Number(port), '127.0.0.1', () => sock.write('HELLO /v1/public/get_time SMTP/9\r\n\r\n'));
      let data = '';
      sock.on('data', (d) => (data += d));
      sock.on('end', () => resolve(data));
      sock.on('error', reject);
    });
    assert.match(raw, /^HTTP\/1\.1 400 /);
    const body = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
    assertEnvelope({ status: 400, body });
    assert.equal(body.error.code, -32600);
  });

  it('rejects a password that is not well-formed text with -32602 rather than failing inside', async () => {
    const code = (await ok(url, 'private/generate_invite_code', {}, admin)).code;
    for (const password of ['abcdefgh\ud800', '\udc00abcdefgh', 'abc\udbffdefgh']) {
      assertError(await rpc(url, 'private/create_user', { email: 'lone@example.com', password, invite_code: code }), -32602, { param: 'password' });
      assertError(await rpc(url, 'private/create_admin', { email: 'lone@example.com', password }, admin), -32602, { param: 'password' });
    }
    // astral characters (surrogate pairs) are fine
    assertOk(await rpc(url, 'private/create_user', { email: 'astral@example.com', password: 'pass-\u{1F600}-word', invite_code: code }));
  });

  it('rejects malformed JSON with -32700, and a body that is not an object with -32600', async () => {
    for (const body of ['{', '{"currency": "BTC",}', 'currency=BTC', '{"a":1}}', '\u0000']) {
      const r = await post('/v1/public/verify_invite_code', body);
      assertEnvelope(r, { where: JSON.stringify(body) });
      assertError(r, -32700, {}, JSON.stringify(body));
    }
    for (const body of ['[]', '[{"code":"x"}]', '"code"', '42', 'null', 'true']) {
      const r = await post('/v1/public/verify_invite_code', body);
      assertEnvelope(r, { where: body });
      assertError(r, -32600, {}, body);
    }
    const r = await post('/v1/public/verify_invite_code', JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'public/verify_invite_code', params: ['x'] }));
    assertEnvelope(r, { id: 3 });
    assertError(r, -32602);
  });

  it('keeps serving after all of that', async () => {
    const r = await rpc(url, 'private/sell', good, alice);
    assert.equal(assertOk(r).order.order_state, 'open');
    assert.ok(Number.isInteger(await ok(url, 'public/get_time')));
    const h = await request(url, '/health');
    assert.equal(h.status, 200);
    assert.equal(h.body.status, 'ok');
    for (const c of Object.values(server.app.services.ex.conservation())) assert.equal(c.balances, c.expected);
  });
});
