// Channels of issue 17 over the WebSocket, each value checked against the HTTP API: unknown channels
// are refused by name, `quote.{instrument}` follows the best bid/ask of get_order_book,
// `chart.trades.{instrument}.{resolution}` the candles of get_tradingview_chart_data.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { WsClient } from '../helpers/ws.ts';

let srv: TestServer;
let m: Market;
let tokA: string;
let tokB: string;
let admin: string;

before(async () => {
  srv = await startServer();
  admin = await adminToken(srv.url);
  tokA = await userToken(srv.url, admin, 'alice@example.com', { currency: 'BTC', amount: 10 });
  tokB = await userToken(srv.url, admin, 'bob@example.com', { currency: 'BTC', amount: 10 });
  m = await atmCall(srv.url);
});

after(async () => {
  await srv.stop();
});

test('a subscription to a channel the server does not serve is refused with an error naming it, and subscribes nothing', async () => {
  const ws = await WsClient.open(srv.url);
  await ws.auth('alice@example.com');
  const good = `book.${m.name}.100ms`;
  const bad = ['no.such.channel', 'book.NOPE-1JAN30-1-C.raw', `chart.trades.${m.name}.7`, `quote.${m.name}.100ms`];
  for (const method of ['public/subscribe', 'private/subscribe']) {
    const r = await ws.call(method, { channels: [good, ...bad] });
    assert.equal(r.result, undefined, 'no result');
    assert.equal(r.error.code, -32602);
    assert.equal(r.error.data.param, 'channels');
    for (const b of bad) assert.ok(r.error.data.reason.includes(b), `${b} is named in "${r.error.data.reason}"`);
    assert.ok(!r.error.data.reason.includes(good), 'the served channel is not named');
  }
  // nothing of the refused request was subscribed
  assert.deepEqual(await ws.ok('public/unsubscribe', { channels: [good] }), []);
  // one unknown channel alone is refused too (never a silent empty list)
  const one = await ws.call('public/subscribe', { channels: ['quote'] });
  assert.deepEqual([one.error?.code, one.error?.data?.reason], [-32602, 'unknown channel: quote']);
  // many unknown channels: the first five are named, the rest counted
  const many = Array.from({ length: 8 }, (_, k) => `nope.${k}`);
  const r = await ws.call('public/subscribe', { channels: many });
  assert.equal(r.error.data.reason, 'unknown channel: nope.0, nope.1, nope.2, nope.3, nope.4 (and 3 more)');
  assert.deepEqual(await ws.ok('public/subscribe', { channels: [good] }), [good]);
  await ws.close();
});

test('quote.{instrument} sends the best bid and ask of get_order_book on subscribe and whenever they change', async () => {
  const X = m.name;
  const i = m.prices.indexOf(nearMark(m));
  const px = (k: number) => m.prices[i + k];
  const ws = await WsClient.open(srv.url);
  const ch = `quote.${X}`;
  assert.deepEqual(await ws.ok('public/subscribe', { channels: [ch] }), [ch]);
  const notes = () => ws.on(ch);
  const same = async (label: string) => {
    const ob = await ok(srv.url, 'public/get_order_book', { instrument_name: X });
    const want = { instrument_name: X, best_bid_price: ob.best_bid_price, best_bid_amount: ob.best_bid_amount, best_ask_price: ob.best_ask_price, best_ask_amount: ob.best_ask_amount };
    const matches = (d: any) => Object.entries(want).every(([k, v]) => d[k] === v);
    await ws.until(() => notes().length > 0 && matches(notes()[notes().length - 1].data), 5000, `quote ${label}`);
    const d = notes()[notes().length - 1].data;
    assert.deepEqual(Object.keys(d).sort(), ['best_ask_amount', 'best_ask_price', 'best_bid_amount', 'best_bid_price', 'instrument_name', 'timestamp']);
    assert.equal(d.timestamp, ob.timestamp, `timestamp ${label}`);
    return d;
  };
  const first = await same('on subscribe');
  assert.deepEqual([first.best_bid_price, first.best_bid_amount, first.best_ask_price, first.best_ask_amount], [0, 0, 0, 0], 'an empty book quotes zeros, as get_order_book');

  await ok(srv.url, 'private/sell', { instrument_name: X, amount: 0.5, price: px(3) }, tokA);
  assert.equal((await same('after an ask')).best_ask_price, px(3));
  await ok(srv.url, 'private/buy', { instrument_name: X, amount: 0.4, price: px(-3) }, tokB);
  await same('after a bid');
  // an order behind the best price changes no quote: the next quote is the one the top change makes
  const before = notes().length;
  await ok(srv.url, 'private/sell', { instrument_name: X, amount: 0.2, price: px(4) }, tokA);
  const top = await ok(srv.url, 'private/sell', { instrument_name: X, amount: 0.1, price: px(2) }, tokA);
  const d = await same('after a better ask');
  assert.equal(notes().length, before + 1, 'no quote for the order behind the top');
  assert.deepEqual([d.best_ask_price, d.best_ask_amount], [px(2), 0.1]);
  // a trade that takes part of the best ask changes its amount
  await ok(srv.url, 'private/buy', { instrument_name: X, amount: 0.3, price: px(3) }, tokB);
  assert.deepEqual([(await same('after a trade')).best_ask_price], [px(3)]);
  await ok(srv.url, 'private/cancel_all', {}, tokA);
  await ok(srv.url, 'private/cancel_all', {}, tokB);
  const empty = await same('after cancels');
  assert.deepEqual([empty.best_bid_price, empty.best_ask_price], [0, 0]);
  assert.ok(top.order.order_id);
  await ws.close();
});

test('chart.trades.{instrument}.{resolution} sends the candles get_tradingview_chart_data answers', async () => {
  const X = m.name;
  const i = m.prices.indexOf(nearMark(m));
  const px = (k: number) => m.prices[i + k];
  const ws = await WsClient.open(srv.url);
  const ch1 = `chart.trades.${X}.1`;
  const ch60 = `chart.trades.${X}.60`;
  assert.deepEqual(await ws.ok('public/subscribe', { channels: [ch1, ch60, `chart.trades.${X}.1D`] }), [ch1, ch60, `chart.trades.${X}.1D`]);
  const candles = async (resolution: string) => {
    const now = await ok(srv.url, 'public/get_time');
    const r = await ok(srv.url, 'public/get_tradingview_chart_data', { instrument_name: X, start_timestamp: now - 86_400_000, end_timestamp: now, resolution });
    return r.ticks.map((t: number, k: number) => ({ tick: t, open: r.open[k], high: r.high[k], low: r.low[k], close: r.close[k], volume: r.volume[k], cost: r.cost[k] }));
  };
  const trade = async (price: number, amount: number) => {
    await ok(srv.url, 'private/sell', { instrument_name: X, amount, price }, tokA);
    await ok(srv.url, 'private/buy', { instrument_name: X, amount, price }, tokB);
  };
  await trade(px(1), 0.2);
  await trade(px(3), 0.1);
  await trade(px(-1), 0.3);
  for (const [ch, res] of [[ch1, '1'], [ch60, '60']] as const) {
    const want = (await candles(res)).at(-1);
    assert.ok(want, `a ${res}-minute candle`);
    await ws.until(() => ws.on(ch).some((n) => n.data.tick === want.tick && n.data.volume === want.volume), 5000, `candle on ${ch}`);
    const got = ws.on(ch).filter((n) => n.data.tick === want.tick).at(-1)!.data;
    assert.deepEqual(got, want, `${ch} carries the candle of get_tradingview_chart_data`);
  }
  const c = ws.on(ch1).at(-1)!.data;
  assert.equal(c.high, px(3));
  assert.equal(c.low, px(-1));
  assert.equal(c.close, px(-1));
  // a new subscriber gets the current candle at once
  const late = await WsClient.open(srv.url);
  await late.ok('public/subscribe', { channels: [ch1] });
  await late.until(() => late.on(ch1).length > 0, 5000, 'candle on subscribe');
  assert.deepEqual(late.on(ch1)[0].data, (await candles('1')).at(-1));
  await late.close();
  await ws.close();
});
