// Issue 33's sandbox market, on the pinned test clock (manual index): within 30 s of start every
// listed BTC and ETH series has a two-sided book of at least 3 levels, the books move when the index
// does, and the takers' public trades arrive at the configured rate, on the trades channels as in the
// trade history. Counts, not timing: the taker
// stream is a seeded Poisson process on the exchange's clock, so the number of taker orders in a
// window of exchange time is Poisson(rate x window) whatever the machine's load.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, startServer, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

const PER_MINUTE = 120;
const LEVELS = 3;

describe('the sandbox demo market (issue 33)', { timeout: 180_000 }, () => {
  let srv: TestServer;
  let started: number;
  before(async () => {
    started = Date.now();
    srv = await startServer({ STRIKEBOOK_DEMO_MAKER: '1', STRIKEBOOK_DEMO_TAKERS_PER_MIN: String(PER_MINUTE), STRIKEBOOK_DEMO_LEVELS: String(LEVELS) });
  });
  after(() => srv?.stop());

  const listed = async () => (await Promise.all(['BTC', 'ETH'].map((currency) => ok(srv.url, 'public/get_instruments', { currency, kind: 'option' })))).flat();

  it('quotes every listed BTC and ETH series with at least 3 levels a side within 30 s of start', async (t) => {
    const series = await listed();
    assert.ok(series.length > 1000, `${series.length} series listed`);
    let thin: string[] = [];
    const deadline = started + 30_000;
    do {
      thin = [];
      for (const i of series) {
        const b = await ok(srv.url, 'public/get_order_book', { instrument_name: i.instrument_name, depth: 5 });
        const ordered = b.bids.every((l: number[], k: number) => k === 0 || l[0] < b.bids[k - 1][0]) && b.asks.every((l: number[], k: number) => k === 0 || l[0] > b.asks[k - 1][0]);
        if (b.bids.length < 3 || b.asks.length < 3 || !(b.bids[0][0] < b.asks[0][0]) || !ordered) thin.push(`${i.instrument_name} ${JSON.stringify([b.bids, b.asks])}`);
      }
    } while (thin.length > 0 && Date.now() < deadline);
    assert.deepEqual(thin.slice(0, 5), [], `${thin.length} of ${series.length} series without 3 levels a side ${Date.now() - started} ms after start`);
    t.diagnostic(`${series.length} series with 3+ levels a side ${Date.now() - started} ms after start`);
  });

  it('spreads widen away from the money and with time to expiry', async () => {
    const btc = (await ok(srv.url, 'public/get_instruments', { currency: 'BTC', kind: 'option' })).filter((i: any) => i.option_type === 'call');
    const expiries: number[] = [...new Set<number>(btc.map((i: any) => i.expiration_timestamp as number))].sort((a, b) => a - b);
    const spreadIv = async (i: any) => {
      const b = await ok(srv.url, 'public/get_order_book', { instrument_name: i.instrument_name });
      return b.ask_iv - b.bid_iv;
    };
    const atmOf = (e: number) => btc.filter((i: any) => i.expiration_timestamp === e).sort((a: any, b: any) => Math.abs(a.strike - 100000) - Math.abs(b.strike - 100000))[0];
    const wingOf = (e: number) => btc.filter((i: any) => i.expiration_timestamp === e && i.strike >= 130000).sort((a: any, b: any) => a.strike - b.strike)[0];
    const last = expiries.at(-1)!;
    const mid = expiries[Math.floor(expiries.length / 2)];
    // in vol points: the wing's bid-ask is wider than the money's, the long expiry's than a nearer one's
    assert.ok((await spreadIv(wingOf(last))) > (await spreadIv(atmOf(last))), 'wider in the wing');
    assert.ok((await spreadIv(atmOf(last))) > (await spreadIv(atmOf(mid))), 'wider further out');
  });

  it('requotes when the index moves', async () => {
    const admin = await adminToken(srv.url);
    const call = (await ok(srv.url, 'public/get_instruments', { currency: 'BTC', kind: 'option' })).filter((i: any) => i.option_type === 'call').sort((a: any, b: any) => b.expiration_timestamp - a.expiration_timestamp || Math.abs(a.strike - 100000) - Math.abs(b.strike - 100000))[0];
    const was = await ok(srv.url, 'public/get_order_book', { instrument_name: call.instrument_name });
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 104000 }, admin);
    const deadline = Date.now() + 20_000;
    let now = was;
    while (Date.now() < deadline) {
      now = await ok(srv.url, 'public/get_order_book', { instrument_name: call.instrument_name });
      if (now.best_bid_price > was.best_bid_price && now.best_ask_price > was.best_ask_price) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(now.best_bid_price > was.best_bid_price && now.best_ask_price > was.best_ask_price, `a call's quotes rise with the index: ${was.best_bid_price}/${was.best_ask_price} -> ${now.best_bid_price}/${now.best_ask_price}`);
    assert.ok(now.bids.length >= 3 && now.asks.length >= 3);
  });

  it('public trades arrive at the configured rate: the trades channel and the trade history agree, and a window of exchange time holds Poisson(rate x window) taker prints', async (t) => {
    // a subscriber to the public trades channels sees the takers' trades as they happen (raw needs a
    // signed-in socket, as on Deribit; 100ms batches carry every trade)
    const ws = await WsClient.open(srv.url);
    const channels = ['BTC', 'ETH'].map((c) => `trades.option.${c}.100ms`);
    assert.equal((await ws.ok('public/subscribe', { channels })).length, 2);
    const t0 = await ok(srv.url, 'public/get_time');
    // wait until the exchange's clock has run 30 s past t0 (it advances with real time from its pinned start)
    while ((await ok(srv.url, 'public/get_time')) < t0 + 32_000) await new Promise((r) => setTimeout(r, 250));
    const window = 30_000;
    const from = t0 + 1000;
    const inWindow = (x: any) => x.timestamp >= from && x.timestamp <= from + window;
    const pushed = ws.notes.filter((n) => channels.includes(n.channel)).flatMap((n) => n.data).filter(inWindow);
    ws.close();
    const history: any[] = [];
    for (const currency of ['BTC', 'ETH']) {
      const r = await ok(srv.url, 'public/get_last_trades_by_currency_and_time', { currency, kind: 'option', start_timestamp: from, end_timestamp: from + window, count: 1000 });
      assert.equal(r.has_more, false);
      history.push(...r.trades);
    }
    // every public trade of the window reached the channel subscriber, and nothing else did
    assert.deepEqual(pushed.map((x) => x.trade_id).sort(), history.map((x) => x.trade_id).sort(), 'the trades channels carry exactly the public trades of the window');
    // a taker order prints one trade per maker level it takes: same instrument, side and time
    const prints = new Map<string, number>();
    for (const x of history) prints.set(`${x.instrument_name} ${x.direction} ${x.timestamp}`, (prints.get(`${x.instrument_name} ${x.direction} ${x.timestamp}`) ?? 0) + 1);
    const mean = (PER_MINUTE / 60) * (window / 1000);
    const bound = 5 * Math.sqrt(mean);
    t.diagnostic(`${history.length} public trades from ${prints.size} taker orders in ${window / 1000} s of exchange time (mean ${mean} orders)`);
    // Poisson(60): sd 7.7; five of them either way fails only on a broken stream
    assert.ok(Math.abs(prints.size - mean) <= bound, `${prints.size} taker prints, expected about ${mean}`);
    // and the trades themselves: at least one a taker order, at most one per quoted level
    assert.ok(history.length >= mean - bound && history.length <= LEVELS * (mean + bound), `${history.length} public trades, expected between ${mean - bound} and ${LEVELS * (mean + bound)}`);
    assert.ok([...prints.values()].every((n) => n <= LEVELS), 'no taker order prints more trades than there are levels');
  });
});
