// The unmodified ccxt `deribit` class against a started Strikebook (issue 6 acceptance): ccxt is
// configured only with `version: 'v1'` and `urls.api.rest`, signs every private call with
// deri-hmac-sha256 over a GET query string, and reads Deribit shapes. Two ccxt clients trade with
// each other; each sees its own orders, trades, balance and position. ccxt's error mapping is
// checked for the codes Strikebook returns.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import ccxt from 'ccxt';
import { atmCall, instruments, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';

type Client = InstanceType<typeof ccxt.deribit>;

/**
 * A ccxt client whose clock agrees with the exchange's (the test server's clock is pinned, see
 * test/helpers/server.ts): ccxt reads `milliseconds()` for signature timestamps and for the default
 * ranges of fetchOHLCV and fetchMyTrades.
 */
function makeClient(url: string, key: { client_id: string; client_secret: string }, clock: () => number): Client {
  const c = new ccxt.deribit({
    apiKey: key.client_id,
    secret: key.client_secret,
    version: 'v1',
    urls: { api: { rest: url } },
    enableRateLimit: false,
    timeout: 10_000,
  });
  c.milliseconds = clock;
  return c;
}

/** ccxt's option symbol for a Deribit instrument: BASE/USD:SETTLE-YYMMDD-STRIKE-C|P (date from the expiry, UTC). */
function symbolOf(inst: any): string {
  const d = new Date(inst.expiration_timestamp);
  const yymmdd = `${String(d.getUTCFullYear() % 100).padStart(2, '0')}${String(d.getUTCMonth() + 1).padStart(2, '0')}${String(d.getUTCDate()).padStart(2, '0')}`;
  return `${inst.base_currency}/USD:${inst.settlement_currency}-${yymmdd}-${inst.strike}-${inst.option_type === 'call' ? 'C' : 'P'}`;
}

/** Deribit option fee per trade: amount * min(0.0003, 0.125 * price), rounded up to the satoshi. */
function fee(amount: number, price: number): number {
  return Math.ceil(Math.round(amount * Math.min(0.0003, 0.125 * price) * 1e12) / 1e4) / 1e8;
}

function close(actual: number | undefined, expected: number, what: string, eps = 1e-9): void {
  assert.ok(actual !== undefined && Math.abs(actual - expected) <= eps, `${what}: expected ${expected}, got ${actual}`);
}

async function rejects(p: Promise<unknown>, cls: new (...a: never[]) => Error, code: number): Promise<void> {
  await assert.rejects(p, (err: Error) => {
    assert.ok(err instanceof cls, `expected ${cls.name}, got ${err.constructor.name}: ${err.message}`);
    assert.match(err.message, new RegExp(`"code":${code}\\b`));
    return true;
  });
}

describe('ccxt deribit against Strikebook', () => {
  let server: TestServer;
  let url: string;
  let alice: Client;
  let bob: Client;
  let carol: Client;
  let mallory: Client;
  let x: Market;
  let sym: string;
  /** prices on the grid inside the band: p near the mark, hi/lo two ticks away */
  let p: number;
  let hi: number;
  let lo: number;
  /** bob's fills in order, with the taker's side (what a public trade shows) */
  const bobTrades: { price: number; amount: number; side: 'buy' | 'sell' }[] = [];

  before(async () => {
    server = await startServer();
    url = server.url;
    const admin = await adminToken(url);
    const aliceToken = await userToken(url, admin, 'alice@example.com', { currency: 'BTC', amount: 10 });
    const bobToken = await userToken(url, admin, 'bob@example.com', { currency: 'BTC', amount: 10 });
    const carolToken = await userToken(url, admin, 'carol@example.com', { currency: 'BTC', amount: 0.001 });
    const scope = 'account:read_write trade:read_write';
    const clock = () => server.app.services.clock.now();
    const client = (u: string, key: { client_id: string; client_secret: string }) => makeClient(u, key, clock);
    alice = client(url, await ok(url, 'private/create_api_key', { scope }, aliceToken));
    bob = client(url, await ok(url, 'private/create_api_key', { scope }, bobToken));
    const carolKey = await ok(url, 'private/create_api_key', { scope }, carolToken);
    carol = client(url, carolKey);
    mallory = client(url, { client_id: carolKey.client_id, client_secret: carolKey.client_secret.slice(0, -2) + 'xx' });
    x = await atmCall(url);
    sym = symbolOf(x.inst);
    p = nearMark(x);
    const i = x.prices.indexOf(p);
    hi = x.prices[Math.min(i + 2, x.prices.length - 1)];
    lo = x.prices[Math.max(i - 2, 0)];
    assert.ok(lo >= 0.005 && lo < p && p < hi, `prices on the 0.0005 grid (${lo} ${p} ${hi})`);
  });
  after(() => server.stop());

  it('loadMarkets lists the BTC and ETH options with ccxt symbols, precisions and expiries', async () => {
    const markets = await alice.loadMarkets();
    for (const currency of ['BTC', 'ETH']) {
      const listed = await instruments(url, currency);
      assert.ok(listed.length > 0);
      for (const inst of listed) {
        const m = alice.markets_by_id?.[inst.instrument_name]?.[0];
        assert.ok(m, `${inst.instrument_name} is a ccxt market`);
        assert.equal(m.symbol, symbolOf(inst));
        assert.equal(markets[m.symbol]?.id, inst.instrument_name);
        assert.equal(m.type, 'option');
        assert.equal(m.option, true);
        assert.equal(m.active, true);
        assert.equal(m.base, currency);
        assert.equal(m.quote, 'USD');
        assert.equal(m.settle, currency);
        assert.equal(m.inverse, true);
        assert.equal(m.contractSize, 1);
        assert.equal(m.strike, inst.strike);
        assert.equal(m.optionType, inst.option_type);
        assert.equal(m.expiry, inst.expiration_timestamp);
        assert.equal(new Date(m.expiry!).getUTCHours(), 8, 'expiries at 08:00 UTC');
        assert.equal(m.precision.price, 0.0001);
        assert.equal(m.precision.amount, currency === 'BTC' ? 0.1 : 1);
        assert.equal(m.limits.amount?.min, currency === 'BTC' ? 0.1 : 1);
        assert.equal(m.taker, 0.0003);
        assert.equal(m.maker, 0.0003);
      }
    }
    assert.equal(markets[sym]?.id, x.name);
  });

  it('fetchTime, fetchStatus and fetchCurrencies read the public endpoints', async () => {
    const t = await alice.fetchTime();
    // the exchange clock, which the test server pins (test/helpers/server.ts)
    const serverNow = (await (await fetch(`${url}/api/v2/public/get_time`)).json()).result;
    assert.ok(typeof t === 'number' && Math.abs(t - serverNow) < 5_000, `server time ${t}, get_time ${serverNow}`);
    const st = await alice.fetchStatus();
    assert.equal(st.status, 'ok');
    const cur = await alice.fetchCurrencies();
    assert.ok(cur.BTC && cur.ETH, 'BTC and ETH');
    assert.equal(cur.BTC.name, 'Bitcoin');
    assert.equal(cur.ETH.code, 'ETH');
  });

  it('two ccxt clients trade with each other: orders, book, trades, fees, balances and positions on both sides', async () => {
    const sell = await alice.createOrder(sym, 'limit', 'sell', 1, p);
    assert.equal(sell.status, 'open');
    assert.equal(sell.side, 'sell');
    assert.equal(sell.type, 'limit');
    assert.equal(sell.symbol, sym);
    assert.equal(sell.price, p);
    assert.equal(sell.amount, 1);
    assert.equal(sell.filled, 0);
    assert.equal(sell.remaining, 1);

    const book = await bob.fetchOrderBook(sym);
    assert.deepEqual(book.asks, [[p, 1]]);
    assert.deepEqual(book.bids, []);
    assert.equal(book.symbol, sym);
    assert.equal(typeof book.nonce, 'number');

    const buy = await bob.createOrder(sym, 'limit', 'buy', 1, p);
    assert.equal(buy.status, 'closed');
    assert.equal(buy.side, 'buy');
    assert.equal(buy.filled, 1);
    assert.equal(buy.remaining, 0);
    assert.equal(buy.average, p);
    assert.equal(buy.trades.length, 1);
    assert.equal(buy.trades[0].price, p);
    bobTrades.push({ price: p, amount: 1, side: 'buy' });

    const aliceOrder = await alice.fetchOrder(sell.id!, sym);
    assert.equal(aliceOrder.status, 'closed');
    assert.equal(aliceOrder.filled, 1);
    assert.equal(aliceOrder.average, p);

    const [at] = await alice.fetchMyTrades(sym);
    const [bt] = await bob.fetchMyTrades(sym);
    assert.equal(at.id, bt.id, 'the same trade');
    assert.equal(at.side, 'sell');
    assert.equal(bt.side, 'buy');
    assert.equal(at.takerOrMaker, 'maker');
    assert.equal(bt.takerOrMaker, 'taker');
    assert.equal(at.order, sell.id);
    assert.equal(bt.order, buy.id);
    assert.equal(at.price, p);
    assert.equal(at.amount, 1);
    assert.equal(at.symbol, sym);
    close(at.fee?.cost, fee(1, p), 'maker fee');
    assert.equal(at.fee?.currency, 'BTC');

    const orderTrades = await bob.fetchOrderTrades(buy.id!, sym);
    assert.deepEqual(orderTrades.map((t) => [t.id, t.price, t.amount, t.side]), [[bt.id, p, 1, 'buy']]);

    // balances: cash moved by the premium, both paid the fee; ccxt total = equity, free = available
    const f = fee(1, p);
    const ab = await alice.fetchBalance();
    const bb = await bob.fetchBalance({ code: 'BTC' });
    const aSummary = (ab.info as any).summaries.find((s: any) => s.currency === 'BTC');
    close(aSummary.balance, 10 + p - f, 'alice cash');
    close((bb.info as any).balance, 10 - p - f, 'bob cash');
    close(ab.BTC.total, aSummary.equity, 'alice total = equity');
    close(ab.BTC.free, aSummary.available_funds, 'alice free = available_funds');
    close(bb.BTC.total, (bb.info as any).equity, 'bob total = equity');
    close(bb.BTC.free, (bb.info as any).available_funds, 'bob free');
    // the option's value cancels between the long and the short (to the satoshi of rounding)
    close(ab.BTC.total! + bb.BTC.total!, 20 - 2 * f, 'equity sums to deposits minus fees', 2e-8);
    assert.ok(ab.BTC.free! < ab.BTC.total!, 'the short holds margin');
    close(bb.BTC.free, bb.BTC.total!, 'a long holds no margin');

    const ap = await alice.fetchPositions();
    assert.equal(ap.length, 1);
    assert.equal(ap[0].symbol, sym);
    assert.equal(ap[0].side, 'short');
    // ccxt passes Deribit's signed size through
    assert.equal(ap[0].contracts, -1);
    assert.equal(ap[0].entryPrice, p);
    const bp = await bob.fetchPosition(sym);
    assert.equal(bp.symbol, sym);
    assert.equal(bp.side, 'long');
    assert.equal(bp.contracts, 1);
    assert.equal(bp.entryPrice, p);
  });

  it('createOrder market buys and sells take the book and never rest', async () => {
    await alice.createOrder(sym, 'limit', 'sell', 0.5, hi);
    const mb = await bob.createOrder(sym, 'market', 'buy', 0.5);
    assert.equal(mb.type, 'market');
    assert.equal(mb.status, 'closed');
    assert.equal(mb.filled, 0.5);
    assert.equal(mb.average, hi);
    bobTrades.push({ price: hi, amount: 0.5, side: 'buy' });

    await bob.createOrder(sym, 'limit', 'buy', 0.3, lo);
    const ms = await alice.createOrder(sym, 'market', 'sell', 0.3);
    assert.equal(ms.status, 'closed');
    assert.equal(ms.side, 'sell');
    assert.equal(ms.filled, 0.3);
    assert.equal(ms.average, lo);
    bobTrades.push({ price: lo, amount: 0.3, side: 'sell' });

    // nothing left on the book, and a market order against an empty side is cancelled unfilled
    const book = await bob.fetchOrderBook(sym);
    assert.deepEqual([book.bids, book.asks], [[], []]);
    const empty = await bob.createOrder(sym, 'market', 'buy', 0.1);
    assert.equal(empty.status, 'canceled');
    assert.equal(empty.filled, 0);
    const pos = await bob.fetchPosition(sym);
    close(pos.contracts, 1.8, 'bob long 1 + 0.5 + 0.3');
  });

  it('createOrder honours post-only, reduce-only, IOC and FOK', async () => {
    const po = await bob.createOrder(sym, 'limit', 'buy', 0.1, lo, { postOnly: true });
    assert.equal(po.status, 'open');
    assert.equal(po.postOnly, true);
    await alice.createOrder(sym, 'limit', 'sell', 0.2, p);
    // ccxt sends post_only and reject_post_only: a crossing post-only order is refused
    await rejects(bob.createOrder(sym, 'limit', 'buy', 0.1, p, { postOnly: true }), ccxt.InvalidOrder, 11054);

    const ro = await bob.createOrder(sym, 'limit', 'sell', 0.1, hi, { reduceOnly: true });
    assert.equal(ro.status, 'open');
    // ccxt does not parse reduce_only; the order object carries it
    assert.equal((ro.info as any).reduce_only, true);

    // immediate_or_cancel keeps its fills and cancels the rest
    const ioc = await bob.createOrder(sym, 'limit', 'buy', 0.5, p, { timeInForce: 'IOC' });
    assert.equal(ioc.timeInForce, 'IOC');
    assert.equal(ioc.status, 'canceled');
    assert.equal(ioc.filled, 0.2);
    assert.equal(ioc.remaining, 0.3);
    bobTrades.push({ price: p, amount: 0.2, side: 'buy' });

    // fill_or_kill fills completely or not at all
    await alice.createOrder(sym, 'limit', 'sell', 0.2, p);
    const fok = await bob.createOrder(sym, 'limit', 'buy', 0.5, p, { timeInForce: 'FOK' });
    assert.equal(fok.timeInForce, 'FOK');
    assert.equal(fok.status, 'canceled');
    assert.equal(fok.filled, 0);
    const book = await bob.fetchOrderBook(sym);
    assert.deepEqual(book.asks, [[p, 0.2], [hi, 0.1]], 'the FOK took nothing (bob\'s reduce-only sell rests at hi)');
    const fok2 = await bob.createOrder(sym, 'limit', 'buy', 0.2, p, { timeInForce: 'FOK' });
    assert.equal(fok2.status, 'closed');
    assert.equal(fok2.filled, 0.2);
    bobTrades.push({ price: p, amount: 0.2, side: 'buy' });
    await bob.cancelAllOrders();
  });

  it('editOrder changes amount and price; fetchOpenOrders, cancelOrder and cancelAllOrders manage open orders', async () => {
    const o = await alice.createOrder(sym, 'limit', 'sell', 0.2, p);
    const edited = await alice.editOrder(o.id!, sym, 'limit', 'sell', 0.4, hi);
    assert.equal(edited.id, o.id);
    assert.equal(edited.status, 'open');
    assert.equal(edited.amount, 0.4);
    assert.equal(edited.price, hi);
    const open = await alice.fetchOpenOrders(sym);
    assert.deepEqual(open.map((x) => [x.id, x.amount, x.price, x.side]), [[o.id, 0.4, hi, 'sell']]);
    assert.deepEqual((await alice.fetchOpenOrders()).map((x) => x.id), [o.id]);
    assert.deepEqual((await bob.fetchOpenOrders()).map((x) => x.id), [], 'bob sees none of alice\'s orders');

    const cancelled = await alice.cancelOrder(o.id!, sym);
    assert.equal(cancelled.status, 'canceled');
    assert.deepEqual(await alice.fetchOpenOrders(sym), []);

    await alice.createOrder(sym, 'limit', 'sell', 0.1, hi);
    await alice.createOrder(sym, 'limit', 'sell', 0.1, p);
    assert.equal((await alice.fetchOpenOrders(sym)).length, 2);
    await alice.cancelAllOrders(sym);
    assert.deepEqual(await alice.fetchOpenOrders(sym), []);
    await alice.createOrder(sym, 'limit', 'sell', 0.1, hi);
    await alice.cancelAllOrders();
    assert.deepEqual(await alice.fetchOpenOrders(), []);
  });

  it('fetchClosedOrders lists filled orders, by symbol and by currency', async () => {
    const closed = await bob.fetchClosedOrders(sym);
    const filled = closed.filter((o) => o.filled! > 0);
    assert.equal(filled.length, 5, 'the limit buy, the market buy, the resting buy alice sold into, the IOC and the second FOK');
    for (const o of closed) assert.ok(o.status === 'closed' || o.status === 'canceled' || o.status === 'open', o.status);
    close(
      filled.reduce((s, o) => s + o.filled!, 0),
      1 + 0.5 + 0.3 + 0.2 + 0.2,
      'everything bob bought',
    );
    assert.deepEqual((await bob.fetchClosedOrders()).map((o) => o.id).sort(), closed.map((o) => o.id).sort());
  });

  it('fetchMyTrades with and without a symbol and since', async () => {
    const all = await bob.fetchMyTrades();
    assert.deepEqual(
      all.map((t) => [t.price, t.amount]),
      bobTrades.map((t) => [t.price, t.amount]),
    );
    for (const t of all) assert.equal(t.symbol, sym);
    const bySym = await bob.fetchMyTrades(sym);
    assert.deepEqual(bySym.map((t) => t.id), all.map((t) => t.id));
    const first = all[0].timestamp!;
    const last = all[all.length - 1].timestamp!;
    assert.deepEqual((await bob.fetchMyTrades(undefined, first)).map((t) => t.id), all.map((t) => t.id));
    assert.deepEqual(await bob.fetchMyTrades(undefined, last + 1), []);
    assert.deepEqual((await bob.fetchMyTrades(sym, first, 10)).map((t) => t.id), all.map((t) => t.id));
    assert.deepEqual(await bob.fetchMyTrades(sym, last + 1, 10), []);
    // alice's side of the same trades, plus nothing of bob's own
    const aliceTrades = await alice.fetchMyTrades(sym);
    assert.equal(aliceTrades.length, bobTrades.length);
    for (const t of aliceTrades) assert.equal(t.side, 'sell');
  });

  it('market data: fetchTicker, fetchTickers with a code, fetchTrades and fetchOHLCV', async () => {
    const book = await ok(url, 'public/get_order_book', { instrument_name: x.name });
    const t = await alice.fetchTicker(sym);
    assert.equal(t.symbol, sym);
    assert.equal(t.last, p, 'the last trade was at p');
    assert.equal(t.markPrice, book.mark_price);
    const tickers = await alice.fetchTickers(undefined, { code: 'BTC' });
    assert.equal(tickers[sym].last, p);
    assert.equal(Object.keys(tickers).length, (await instruments(url, 'BTC')).length, 'one ticker per BTC option');
    for (const s of Object.keys(tickers)) assert.ok(s.startsWith('BTC/USD:BTC-'), s);

    const trades = await alice.fetchTrades(sym);
    assert.deepEqual(
      trades.map((tr) => [tr.price, tr.amount, tr.side]),
      bobTrades.map((tr) => [tr.price, tr.amount, tr.side]),
    );
    const last2 = await alice.fetchTrades(sym, undefined, 2);
    assert.deepEqual(last2.map((tr) => tr.id), trades.slice(-2).map((tr) => tr.id));
    assert.deepEqual((await alice.fetchTrades(sym, trades[0].timestamp, 10)).map((tr) => tr.id), trades.map((tr) => tr.id));

    const candles = await alice.fetchOHLCV(sym, '1m', undefined, 60);
    assert.ok(candles.length >= 1);
    close(candles.reduce((s, c) => s + (c[5] as number), 0), 1 + 0.5 + 0.3 + 0.2 + 0.2, 'volume of all trades');
    assert.equal(Math.max(...candles.map((c) => c[2] as number)), hi);
    assert.equal(Math.min(...candles.map((c) => c[3] as number)), lo);
    assert.equal(candles[0][1], p, 'first open');
    assert.equal(candles[candles.length - 1][4], p, 'last close');
  });

  it('maps Strikebook errors to ccxt exceptions', async () => {
    await rejects(carol.createOrder(sym, 'limit', 'buy', 1, p), ccxt.InsufficientFunds, 10009);
    await rejects(alice.fetchOrder('987654321', sym), ccxt.OrderNotFound, 10004);
    await rejects(alice.cancelOrder('987654321', sym), ccxt.OrderNotFound, 10004);
    const mine = await alice.createOrder(sym, 'limit', 'sell', 0.1, hi);
    await rejects(bob.cancelOrder(mine.id!, sym), ccxt.OrderNotFound, 10004);
    await alice.cancelOrder(mine.id!, sym);
    await rejects(mallory.fetchBalance(), ccxt.AuthenticationError, 13009);
    await rejects(mallory.fetchOpenOrders(), ccxt.AuthenticationError, 13009);
    // above 0.005 the tick is 0.0005: ccxt rounds to 0.0001 only, the server refuses the rest
    await rejects(alice.createOrder(sym, 'limit', 'sell', 0.1, Number((p + 0.0001).toFixed(4))), ccxt.InvalidOrder, 10043);
    // an unknown option symbol: ccxt synthesises an id, the server answers 10020, not a crash
    const unknown = sym.replace(/-(\d+)-([CP])$/, '-99999-$2');
    await rejects(alice.fetchTicker(unknown), ccxt.ExchangeError, 10020);
    await rejects(alice.fetchOrderBook(unknown), ccxt.ExchangeError, 10020);
    await rejects(alice.fetchOpenOrders(unknown), ccxt.ExchangeError, 10020);
    assert.equal((await server.app.http.inject({ method: 'GET', url: '/health' })).statusCode, 200, 'the server is still up');
  });
});
