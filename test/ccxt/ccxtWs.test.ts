// The unmodified ccxt `deribit` WebSocket ("pro") client against a started Strikebook (issue 17):
// configured only with `urls.api.{rest,ws}` and `loadHttpProxyAgent()` (ccxt refuses a `ws://` URL
// without it). Every value a watch method yields is compared with what the HTTP API answers.
//
// ccxt keeps what its streams delivered in caches (orderbooks, trades, tickers, bidsasks, ohlcvs,
// orders, myTrades, balance); a watch call resolves on the next message only. So each check reads
// the cache and, until it holds the expected value, awaits the next message of that watch.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import ccxt from 'ccxt';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';

type Pro = InstanceType<typeof ccxt.pro.deribit>;

async function makePro(url: string, key: { client_id: string; client_secret: string }, clock: () => number): Promise<Pro> {
  const c = new ccxt.pro.deribit({
    apiKey: key.client_id,
    secret: key.client_secret,
    version: 'v1',
    urls: { api: { rest: url, ws: url.replace(/^http/, 'ws') + '/ws/api/v2' } },
    enableRateLimit: false,
    timeout: 10_000,
  });
  c.milliseconds = clock;
  await c.loadHttpProxyAgent();
  return c;
}

/** ccxt's option symbol for a Deribit instrument (as in ccxt.test.ts). */
function symbolOf(inst: any): string {
  const d = new Date(inst.expiration_timestamp);
  const yymmdd = `${String(d.getUTCFullYear() % 100).padStart(2, '0')}${String(d.getUTCMonth() + 1).padStart(2, '0')}${String(d.getUTCDate()).padStart(2, '0')}`;
  return `${inst.base_currency}/USD:${inst.settlement_currency}-${yymmdd}-${inst.strike}-${inst.option_type === 'call' ? 'C' : 'P'}`;
}

/**
 * Reads `read()` until `pred` holds; between reads waits for the next message of `watch` (or 200 ms,
 * in case the message came between the read and the watch call). Fails after `ms`.
 */
async function eventually<T>(watch: () => Promise<unknown>, read: () => T, pred: (v: T) => boolean, what: string, ms = 10_000): Promise<T> {
  const deadline = performance.now() + ms;
  let pending: Promise<unknown> | null = null;
  for (;;) {
    const v = read();
    if (pred(v)) return v;
    const left = deadline - performance.now();
    if (left <= 0) assert.fail(`timed out waiting for ${what}; last seen ${JSON.stringify(v)}`);
    if (pending === null) {
      const p = watch().finally(() => {
        if (pending === p) pending = null;
      });
      p.catch(() => {});
      pending = p;
    }
    await Promise.race([pending, new Promise((r) => setTimeout(r, Math.min(left, 200)))]);
  }
}

const pairs = (side: any[] | undefined) => Array.from(side ?? [], (l: number[]) => [l[0], l[1]]);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

describe('ccxt pro deribit (WebSocket) against Strikebook', () => {
  let server: TestServer;
  let url: string;
  let tokA: string;
  let tokB: string;
  /** carol watches the public streams and her own (empty) private ones; alice trades and watches hers */
  let carol: Pro;
  let alice: Pro;
  let x: Market;
  let sym: string;
  let px: (k: number) => number;

  before(async () => {
    server = await startServer();
    url = server.url;
    const admin = await adminToken(url);
    tokA = await userToken(url, admin, 'alice@example.com', { currency: 'BTC', amount: 10 });
    tokB = await userToken(url, admin, 'bob@example.com', { currency: 'BTC', amount: 10 });
    const tokC = await userToken(url, admin, 'carol@example.com', { currency: 'BTC', amount: 1 });
    const scope = 'account:read_write trade:read_write';
    const clock = () => server.app.services.clock.now();
    alice = await makePro(url, await ok(url, 'private/create_api_key', { scope }, tokA), clock);
    carol = await makePro(url, await ok(url, 'private/create_api_key', { scope }, tokC), clock);
    x = await atmCall(url);
    sym = symbolOf(x.inst);
    const i = x.prices.indexOf(nearMark(x));
    px = (k: number) => x.prices[i + k];
    await alice.loadMarkets();
    await carol.loadMarkets();
  });
  after(async () => {
    await alice?.close();
    await carol?.close();
    await server.stop();
  });

  it('watchOrderBook equals get_order_book after each place, edit and cancel by other users', async () => {
    const book = () => carol.orderbooks[sym] as any;
    const check = async (label: string) => {
      const rest = await ok(url, 'public/get_order_book', { instrument_name: x.name, depth: 10000 });
      await eventually(
        () => carol.watchOrderBook(sym),
        () => [pairs(book()?.bids), pairs(book()?.asks)],
        (v) => same(v, [rest.bids, rest.asks]),
        `book after ${label}: ${JSON.stringify([rest.bids, rest.asks])}`,
      );
    };
    await carol.watchOrderBook(sym);
    await check('subscribe');
    const a1 = await ok(url, 'private/sell', { instrument_name: x.name, amount: 0.5, price: px(3) }, tokA);
    await check('alice asks at +3');
    const b1 = await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.4, price: px(-3) }, tokB);
    await check('bob bids at -3');
    await ok(url, 'private/sell', { instrument_name: x.name, amount: 0.2, price: px(3) }, tokA);
    await check('alice adds at +3');
    await ok(url, 'private/edit', { order_id: a1.order.order_id, amount: 0.7, price: px(2) }, tokA);
    await check('alice moves and grows her first ask');
    await ok(url, 'private/edit', { order_id: b1.order.order_id, amount: 0.1, price: px(-3) }, tokB);
    await check('bob reduces his bid in place');
    await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.3, price: px(2) }, tokB);
    await check('bob takes part of +2');
    await ok(url, 'private/cancel', { order_id: b1.order.order_id }, tokB);
    await check('bob cancels his bid');
    await ok(url, 'private/cancel_all', {}, tokA);
    await check('alice cancels all');
    assert.deepEqual([pairs(book().bids), pairs(book().asks)], [[], []]);
  });

  it('watchTrades, watchTicker, watchBidsAsks and watchOHLCV carry the values of the HTTP API', async () => {
    await carol.watchTicker(sym);
    await carol.watchBidsAsks([sym]);
    const tradesBefore = (await ok(url, 'public/get_last_trades_by_instrument', { instrument_name: x.name, count: 100 })).trades.length;
    // the trades and candle channels are fed by trades; subscribe first, then trade
    const trades = carol.watchTrades(sym);
    const candles = carol.watchOHLCV(sym, '1m');
    await ok(url, 'private/sell', { instrument_name: x.name, amount: 0.3, price: px(1) }, tokA);
    await ok(url, 'private/sell', { instrument_name: x.name, amount: 0.2, price: px(4) }, tokA);
    await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.3, price: px(1) }, tokB);
    await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.1, price: px(-2) }, tokB);
    await trades;
    await candles;

    const last = await ok(url, 'public/get_last_trades_by_instrument', { instrument_name: x.name, count: 100, sorting: 'asc' });
    const want = last.trades.slice(tradesBefore).map((t: any) => [t.trade_id, t.price, t.amount, t.direction, t.timestamp]);
    assert.equal(want.length, 1);
    await eventually(
      () => carol.watchTrades(sym),
      () => (carol.trades[sym] ?? []).map((t: any) => [t.id, t.price, t.amount, t.side, t.timestamp]),
      (v) => same(v, want),
      'watchTrades = get_last_trades_by_instrument',
    );

    const ticker = await ok(url, 'public/ticker', { instrument_name: x.name });
    await eventually(
      () => carol.watchTicker(sym),
      () => carol.tickers[sym] as any,
      (t) => t?.last === ticker.last_price && t?.bid === ticker.best_bid_price && t?.ask === ticker.best_ask_price,
      'watchTicker = public/ticker',
    );
    const t = carol.tickers[sym] as any;
    assert.equal(t.symbol, sym);
    assert.equal(t.last, px(1));
    assert.equal(t.ask, px(4));
    assert.equal(t.bid, px(-2));
    assert.equal(t.bidVolume, 0.1);
    assert.equal(t.askVolume, 0.2);
    assert.equal(t.markPrice, ticker.mark_price);

    const ob = await ok(url, 'public/get_order_book', { instrument_name: x.name });
    const ba = await eventually(
      () => carol.watchBidsAsks([sym]),
      () => carol.bidsasks[sym] as any,
      (q) => q?.bid === ob.best_bid_price && q?.ask === ob.best_ask_price && q?.bidVolume === ob.best_bid_amount && q?.askVolume === ob.best_ask_amount,
      'watchBidsAsks = get_order_book best bid/ask',
    );
    assert.deepEqual([ba.symbol, ba.bid, ba.bidVolume, ba.ask, ba.askVolume], [sym, px(-2), 0.1, px(4), 0.2]);

    const now = await ok(url, 'public/get_time');
    const chart = await ok(url, 'public/get_tradingview_chart_data', { instrument_name: x.name, start_timestamp: now - 3_600_000, end_timestamp: now, resolution: '1' });
    const k = chart.ticks.length - 1;
    const candle = [chart.ticks[k], chart.open[k], chart.high[k], chart.low[k], chart.close[k], chart.volume[k]];
    await eventually(
      () => carol.watchOHLCV(sym, '1m'),
      () => ((carol.ohlcvs[sym]?.['1m'] ?? []) as number[][]).at(-1),
      (c) => same(c, candle),
      `watchOHLCV = get_tradingview_chart_data ${JSON.stringify(candle)}`,
    );
    await ok(url, 'private/cancel_all', {}, tokA);
    await ok(url, 'private/cancel_all', {}, tokB);
  });

  it('watchOrders, watchMyTrades and watchBalance carry the user\'s values; another client sees none of them', async () => {
    await alice.watchBalance();
    await carol.watchBalance();
    // ccxt keeps my trades only in what watchMyTrades resolves with (it never sets `myTrades`)
    let aliceMyTrades: any[] = [];
    let carolMyTrades: any[] = [];
    const watchAliceTrades = () => alice.watchMyTrades(sym).then((v) => (aliceMyTrades = v));
    const aliceOrders = alice.watchOrders(sym);
    const aliceTrades = watchAliceTrades();
    const carolOrders = carol.watchOrders();
    const carolTrades = carol.watchMyTrades().then((v) => (carolMyTrades = v));
    carolTrades.catch(() => {});
    const tradesBefore = (await alice.fetchMyTrades(sym)).length;

    const rest = await alice.createOrder(sym, 'limit', 'sell', 0.4, px(2));
    await aliceOrders;
    const resting = await eventually(
      () => alice.watchOrders(sym),
      () => (alice.orders ?? []).find((o: any) => o.id === rest.id) as any,
      (o) => o?.status === 'open',
      'the resting order on watchOrders',
    );
    assert.deepEqual([resting.symbol, resting.side, resting.price, resting.amount, resting.filled], [sym, 'sell', px(2), 0.4, 0]);

    await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.4, price: px(2) }, tokB);
    await aliceTrades;
    const fetched = await alice.fetchOrder(rest.id!, sym);
    const filled = await eventually(
      () => alice.watchOrders(sym),
      () => (alice.orders ?? []).find((o: any) => o.id === rest.id) as any,
      (o) => o?.status === 'closed',
      'the filled order on watchOrders',
    );
    assert.deepEqual([filled.status, filled.filled, filled.remaining, filled.average], [fetched.status, fetched.filled, fetched.remaining, fetched.average]);
    assert.deepEqual([filled.filled, filled.average], [0.4, px(2)]);

    const mine = await alice.fetchMyTrades(sym);
    const want = mine.slice(tradesBefore).map((tr) => [tr.id, tr.order, tr.side, tr.price, tr.amount, tr.takerOrMaker, tr.fee?.cost]);
    assert.equal(want.length, 1);
    await eventually(
      watchAliceTrades,
      () => aliceMyTrades.map((tr) => [tr.id, tr.order, tr.side, tr.price, tr.amount, tr.takerOrMaker, tr.fee?.cost]),
      (v) => same(v, want),
      `watchMyTrades = fetchMyTrades ${JSON.stringify(want)}`,
    );

    const summary = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, tokA);
    const bal = await eventually(
      () => alice.watchBalance(),
      () => (alice.balance as any)?.BTC?.BTC,
      (b) => b?.total === summary.equity && b?.free === summary.available_funds,
      `watchBalance = get_account_summary (equity ${summary.equity}, available ${summary.available_funds})`,
    );
    assert.equal(bal.used, summary.maintenance_margin);
    assert.ok(summary.balance > 10, 'alice sold: her cash grew by the premium less the fee');

    // carol's own order is the marker: the hub sends batches in order, so whatever of alice's
    // streams could have reached carol's connection came before it
    const own = await carol.createOrder(sym, 'limit', 'buy', 0.1, px(-4));
    await carolOrders;
    await eventually(() => carol.watchOrders(), () => (carol.orders ?? []).find((o: any) => o.id === own.id), (o) => o !== undefined, 'carol\'s own order');
    await carol.cancelOrder(own.id!, sym);
    await eventually(() => carol.watchOrders(), () => (carol.orders ?? []).find((o: any) => o.id === own.id) as any, (o) => o?.status === 'canceled', 'carol\'s cancel');
    assert.deepEqual(Array.from(carol.orders as any[], (o) => o.id), [own.id], 'carol sees only her own order');
    assert.equal(carolMyTrades.length, 0, 'carol sees no trades');
    const carolSummary = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, await userTokenOf('carol@example.com'));
    const cb = await eventually(() => carol.watchBalance(), () => (carol.balance as any)?.BTC?.BTC, (b) => b?.total === carolSummary.equity, 'carol\'s balance');
    assert.equal(cb.total, 1, 'carol\'s own equity, not alice\'s');
  });

  async function userTokenOf(email: string): Promise<string> {
    const r = await ok(url, 'public/auth', { grant_type: 'password', username: email, password: 'user-password-1' });
    return r.access_token;
  }
});
