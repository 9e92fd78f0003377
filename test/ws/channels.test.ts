// Channels of issue 17 over the WebSocket, each value checked against the HTTP API: unknown channels
// are left out of the answer (issue 31; a gateway refuses them by name), `quote.{instrument}` follows the best bid/ask of get_order_book,
// `chart.trades.{instrument}.{resolution}` the candles of get_tradingview_chart_data.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, login, ok, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, nearMark, twinPut, type Market } from '../helpers/market.ts';
import { WsClient } from '../helpers/ws.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';

function suite(spec: TargetSpec): void {
  let tg: Target;
  let srv: TestServer;
  let m: Market;
  let tokA: string;
  let tokB: string;
  let admin: string;

  before(async () => {
    tg = await startTarget(spec.kind);
    srv = tg.srv;
    admin = await adminToken(srv.url);
    tokA = await userToken(srv.url, admin, 'alice@example.com', { currency: 'BTC', amount: 10 });
    tokB = await userToken(srv.url, admin, 'bob@example.com', { currency: 'BTC', amount: 10 });
    m = await atmCall(srv.url);
  });

  after(async () => {
    await tg.stop();
  });

  test('a subscription naming channels the server does not serve subscribes the rest and leaves them out of the answer, as Deribit does, through a gateway too', async () => {
    const ws = await WsClient.open(tg.ws);
    await ws.auth('alice@example.com');
    const good = `book.${m.name}.100ms`;
    const bad = ['no.such.channel', 'book.NOPE-1JAN30-1-C.raw', `chart.trades.${m.name}.7`, `quote.${m.name}.100ms`];
    for (const method of ['public/subscribe', 'private/subscribe']) {
      assert.deepEqual(await ws.ok(method, { channels: [...bad.slice(0, 2), good, ...bad.slice(2)] }), [good], `${method}: only the served channel`);
    }
    await ws.until(() => ws.on(good).length > 0, 5000, 'the served channel\'s snapshot');
    assert.deepEqual(await ws.ok('public/unsubscribe', { channels: [good] }), [good]);
    // only unknown channels: an empty answer, nothing subscribed
    assert.deepEqual(await ws.ok('public/subscribe', { channels: ['quote', 'nope.1'] }), []);
    await ws.close();
  });

  test('quote.{instrument} sends the best bid and ask of get_order_book on subscribe and whenever they change', async () => {
    const X = m.name;
    const i = m.prices.indexOf(nearMark(m));
    const px = (k: number) => m.prices[i + k];
    const ws = await WsClient.open(tg.ws);
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
    const ws = await WsClient.open(tg.ws);
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
    // the minute's candle is of the trades in that minute: all three, or the last ones when the
    // trades straddled a minute's end (on the real clock)
    const c = ws.on(ch1).at(-1)!.data;
    const { trades } = await ok(srv.url, 'public/get_last_trades_by_instrument', { instrument_name: X, count: 100, sorting: 'asc' });
    const inMinute = (trades as { timestamp: number; price: number }[]).filter((t) => t.timestamp >= c.tick && t.timestamp < c.tick + 60_000).map((t) => t.price);
    assert.equal(inMinute.at(-1), px(-1), 'the last trade is in the last candle');
    assert.ok(inMinute.length >= 1 && (inMinute.length < 3 || inMinute.slice(-3).join() === [px(1), px(3), px(-1)].join()));
    assert.equal(c.high, Math.max(...inMinute));
    assert.equal(c.low, Math.min(...inMinute));
    assert.equal(c.close, px(-1));
    // a new subscriber gets the current candle at once
    const late = await WsClient.open(tg.ws);
    await late.ok('public/subscribe', { channels: [ch1] });
    await late.until(() => late.on(ch1).length > 0, 5000, 'candle on subscribe');
    assert.deepEqual(late.on(ch1)[0].data, (await candles('1')).at(-1));
    await late.close();
    await ws.close();
  });

  /** A channel name from a get_channels template: the first value of each parameter (an instrument or a combo: the test's). */
  function instantiate(template: string, params: Record<string, string[]>, instrument: string, combo: string): string {
    return template.replace(/\{(\w+)\}/g, (_, k: string) => (k === 'instrument_name' ? instrument : k === 'combo_name' ? combo : params[k][0]));
  }

  test('public/get_channels lists every channel of API.md 6 and issue 17, each one subscribable, over HTTP and WebSocket and in OpenAPI', async () => {
    const listed = await ok(srv.url, 'public/get_channels');
    const names = listed.map((c: any) => c.channel);
    for (const want of [
      'book.{instrument_name}.{interval}', 'book.{instrument_name}.{group}.{depth}.{interval}', 'trades.{instrument_name}.{interval}', 'trades.{kind}.{currency}.{interval}',
      'ticker.{instrument_name}.{interval}', 'deribit_price_index.{index_name}', 'markprice.options.{index_name}', 'user.orders.{instrument_name}.{interval}',
      'user.orders.{kind}.{currency}.{interval}', 'user.trades.{instrument_name}.{interval}', 'user.trades.{kind}.{currency}.{interval}', 'user.portfolio.{currency}',
      'user.changes.{kind}.{currency}.{interval}', 'user.changes.{instrument_name}.{interval}', 'quote.{instrument_name}', 'chart.trades.{instrument_name}.{resolution}',
      'estimated_expiration_price.{index_name}', 'instrument.state.{kind}.{currency}', 'platform_state', 'user.mmp_trigger.{index_name}',
      // issue 34's combos, as Deribit's list has them (a combo's name where Deribit writes instrument_name)
      'book.{combo_name}.{interval}', 'book.{combo_name}.{group}.{depth}.{interval}', 'ticker.{combo_name}.{interval}', 'trades.{combo_name}.{interval}',
      'user.combo_trades.{combo_name}.{interval}', 'user.combo_trades.{kind}.{currency}.{interval}',
    ]) assert.ok(names.includes(want), `${want} is listed`);
    assert.ok(listed.find((c: any) => c.channel === 'trades.{kind}.{currency}.{interval}').params.kind.includes('option_combo'), 'trades.option_combo.{currency}.{interval}');
    assert.deepEqual(await ok(srv.url, 'public/get_channels', { access: 'public' }), listed.filter((c: any) => c.access === 'public'));
    // a combo for the {combo_name} families: made after the gateway started (it learns it from the stream)
    const put = await twinPut(srv.url, m);
    const combo = (await ok(srv.url, 'private/create_combo', { trades: [{ instrument_name: m.name, direction: 'buy', amount: 1 }, { instrument_name: put.name, direction: 'buy', amount: 1 }] }, tokA)).id;
    const ws = await WsClient.open(tg.ws);
    await ws.auth('alice@example.com');
    assert.deepEqual(await ws.ok('public/get_channels'), listed, 'the same over the WebSocket');
    assert.deepEqual(await ws.ok('public/get_channels', { access: 'private' }), listed.filter((c: any) => c.access === 'private'));
    // every family, with every value of every parameter, is accepted by subscribe, through a gateway too
    for (const c of listed) {
      const variants = new Set<string>([instantiate(c.channel, c.params, m.name, combo)]);
      for (const [k, values] of Object.entries(c.params as Record<string, string[]>)) {
        if (k === 'instrument_name' || k === 'combo_name') continue;
        for (const v of values) variants.add(instantiate(c.channel, { ...c.params, [k]: [v] }, m.name, combo));
      }
      const chans = [...variants];
      assert.deepEqual(await ws.ok(c.access === 'private' ? 'private/subscribe' : 'public/subscribe', { channels: chans }), chans, c.channel);
      await ws.ok('public/unsubscribe_all');
    }
    const doc = (await (await fetch(`${srv.url}/docs/openapi.json`)).json()) as any;
    assert.deepEqual(doc['x-websocket-channels'], listed, 'the OpenAPI document lists the channels');
    assert.ok(doc.paths['/api/v2/public/get_channels'], 'and the method');
    const page = await (await fetch(`${srv.url}/docs`)).text();
    for (const n of names) assert.ok(page.includes(n.replace(/&/g, '&#38;')), `/docs lists ${n}`);
    await ws.close();
  });

  test('markprice.options carries every open option\'s mark and IV as get_book_summary_by_currency; user.changes.{instrument} the orders, trades and position of the HTTP API', async () => {
    const X = m.name;
    const i = m.prices.indexOf(nearMark(m));
    const ws = await WsClient.open(tg.ws);
    await ws.auth('bob@example.com');
    const chans = ['markprice.options.btc_usd', 'deribit_price_index.btc_usd', `user.changes.${X}.raw`, `user.changes.${X}.100ms`];
    assert.deepEqual(await ws.ok('private/subscribe', { channels: chans }), chans);

    const index = (await ok(srv.url, 'public/get_index_price', { index_name: 'btc_usd' })).index_price;
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: index + 250 }, admin);
    await ws.until(() => ws.on('markprice.options.btc_usd').length > 0 && ws.on('deribit_price_index.btc_usd').length > 0, 5000, 'marks');
    // the options' summaries (an earlier test made a combo: kind left out lists it too)
    const summaries = await ok(srv.url, 'public/get_book_summary_by_currency', { currency: 'BTC', kind: 'option' });
    const marks = ws.on('markprice.options.btc_usd').at(-1)!.data;
    assert.equal(marks.length, summaries.length, 'one entry per open BTC option');
    for (const s of summaries) {
      const e = marks.find((x: any) => x.instrument_name === s.instrument_name);
      assert.ok(e, s.instrument_name);
      assert.equal(e.mark_price, s.mark_price, `mark of ${s.instrument_name}`);
      assert.ok(Math.abs(e.iv * 100 - s.mark_iv) < 1e-9, `iv of ${s.instrument_name}: ${e.iv} vs ${s.mark_iv}%`);
    }
    const idx = ws.on('deribit_price_index.btc_usd').at(-1)!.data;
    assert.deepEqual([idx.price, idx.timestamp], [index + 250, marks[0].timestamp]);

    await ok(srv.url, 'private/sell', { instrument_name: X, amount: 0.5, price: m.prices[i + 1] }, tokA);
    const r = await ok(srv.url, 'private/buy', { instrument_name: X, amount: 0.3, price: m.prices[i + 1] }, tokB);
    for (const ch of [`user.changes.${X}.raw`, `user.changes.${X}.100ms`]) {
      await ws.until(() => ws.on(ch).some((n) => n.data.trades.length > 0), 5000, ch);
      const d = ws.on(ch).find((n) => n.data.trades.length > 0)!.data;
      assert.equal(d.instrument_name, X);
      assert.deepEqual(d.orders, [await ok(srv.url, 'private/get_order_state', { order_id: r.order.order_id }, tokB)], `${ch} orders`);
      assert.deepEqual(d.trades, await ok(srv.url, 'private/get_user_trades_by_order', { order_id: r.order.order_id }, tokB), `${ch} trades`);
      const pos = await ok(srv.url, 'private/get_position', { instrument_name: X }, tokB);
      assert.deepEqual(
        d.positions.map((p: any) => [p.instrument_name, p.size, p.average_price, p.direction]),
        [[pos.instrument_name, pos.size, pos.average_price, pos.direction]],
        `${ch} position`,
      );
    }
    assert.ok(ws.on(`user.changes.${X}.raw`).every((n) => n.data.instrument_name === X), 'only that instrument');
    await ok(srv.url, 'private/cancel_all', {}, tokA);
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: index }, admin);
    await ws.close();
  });

  test('platform_state reports an index locked and unlocked as public/status does', async () => {
    const ws = await WsClient.open(tg.ws);
    assert.deepEqual(await ws.ok('public/subscribe', { channels: ['platform_state'] }), ['platform_state']);
    await ws.until(() => ws.on('platform_state').length >= 2, 5000, 'state on subscribe');
    assert.deepEqual(ws.on('platform_state').map((n) => n.data), [{ price_index: 'btc_usd', locked: false }, { price_index: 'eth_usd', locked: false }]);
    assert.deepEqual(await ok(srv.url, 'public/status'), { locked: 'false', locked_indices: [] });

    // an automatic ETH feed that falls silent past its 30 s bound locks the index
    const s = srv.app.services;
    const eth = s.ex.index.ETH!.price;
    await s.seq.submit({ t: 'index', currency: 'ETH', price: eth, manual: false, by: null }, (r) => r);
    const now = await ok(srv.url, 'public/get_time');
    await ok(srv.url, 'private/set_test_time', { timestamp: now + 31_000 }, admin);
    await ok(srv.url, 'private/deposit_collateral', { currency: 'BTC', amount: 0.1 }, tokA);
    assert.deepEqual(await ok(srv.url, 'public/status'), { locked: 'partial', locked_indices: ['eth_usd'] });
    await ws.until(() => ws.on('platform_state').length >= 3, 5000, 'locked');
    assert.deepEqual(ws.on('platform_state')[2].data, { price_index: 'eth_usd', locked: true });
    await s.seq.submit({ t: 'index', currency: 'ETH', price: eth, manual: true, by: null }, (r) => r);
    await ws.until(() => ws.on('platform_state').length >= 4, 5000, 'unlocked');
    assert.deepEqual(ws.on('platform_state')[3].data, { price_index: 'eth_usd', locked: false });
    assert.deepEqual(await ok(srv.url, 'public/status'), { locked: 'false', locked_indices: [] });
    await ws.close();
  });

  test('estimated_expiration_price follows the delivery TWAP of get_index_price and ends at the delivery price; instrument.state announces settled and new series', async () => {
    const min = 60_000;
    const nearest = async () => Math.min(...(await ok(srv.url, 'public/get_instruments', { currency: 'BTC' })).map((x: any) => x.expiration_timestamp));
    // the estimate on subscribe must come from before the nearest expiry's 30-minute delivery window
    // (the test walks through that window below): an expiry less than 35 minutes away (a start
    // inside or just before its window, issue 28) is settled first, and the next one taken
    if ((await nearest()) - (await ok(srv.url, 'public/get_time')) < 35 * min) {
      const admin0 = await login(srv.url, 'admin@example.com', 'admin-password-1');
      await ok(srv.url, 'private/set_test_time', { timestamp: (await nearest()) + 1000 }, admin0);
      // a barrier: a gateway relays the stream in order, so once an ETH print made after that
      // settlement reaches a subscriber, the settlement's own messages have passed (they must not
      // reach the subscription below as if they were the next expiry's)
      const probe = await WsClient.open(tg.ws);
      await probe.ok('public/subscribe', { channels: ['deribit_price_index.eth_usd'] });
      const marker = (await ok(srv.url, 'public/get_index_price', { index_name: 'eth_usd' })).index_price + 1;
      await ok(srv.url, 'private/set_index_price', { index_name: 'eth_usd', price: marker }, admin0);
      await probe.until(() => probe.on('deribit_price_index.eth_usd').some((n) => n.data.price === marker), 5000, 'the barrier print');
      await probe.close();
    }
    // subscribed once that expiry is settled: what follows is the next expiry's
    const ws = await WsClient.open(tg.ws);
    const chans = ['estimated_expiration_price.btc_usd', 'instrument.state.option.BTC', 'instrument.state.any.any', 'instrument.state.option.ETH'];
    assert.deepEqual(await ws.ok('public/subscribe', { channels: chans }), chans);
    const est = () => ws.on('estimated_expiration_price.btc_usd');
    const before = await ok(srv.url, 'public/get_instruments', { currency: 'BTC' });
    const expiry = Math.min(...before.map((x: any) => x.expiration_timestamp));
    // the engine's time (of its last command), which the estimate counts from
    const now0 = (await ok(srv.url, 'public/get_order_book', { instrument_name: before[0].instrument_name })).timestamp;
    const p0 = (await ok(srv.url, 'public/get_index_price', { index_name: 'btc_usd' })).index_price;
    await ws.until(() => est().length > 0, 5000, 'estimate on subscribe');
    assert.deepEqual(est()[0].data, { seconds: Math.floor((expiry - now0) / 1000), price: p0, is_estimated: false });
    assert.equal((await ok(srv.url, 'public/get_index_price', { index_name: 'btc_usd' })).estimated_delivery_price, p0);

    // inside the 30-minute window: the average so far, as settlement will compute it
    // tokens live an hour: the admin logs in again after each jump of the clock
    await ok(srv.url, 'private/set_test_time', { timestamp: expiry - 10 * min }, admin);
    admin = await login(srv.url, 'admin@example.com', 'admin-password-1');
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: p0 + 600 }, admin);
    await ok(srv.url, 'private/set_test_time', { timestamp: expiry - 5 * min }, admin);
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: p0 - 300 }, admin);
    const cents = (x: number) => Math.round(x * 100) / 100;
    const want = cents((p0 * 20 + (p0 + 600) * 5) / 25);
    await ws.until(() => est().length >= 3, 5000, 'estimates in the window');
    assert.deepEqual(est()[1].data, { seconds: 600, price: p0, is_estimated: true });
    assert.deepEqual(est()[2].data, { seconds: 300, price: want, is_estimated: true });
    assert.equal((await ok(srv.url, 'public/get_index_price', { index_name: 'btc_usd' })).estimated_delivery_price, want);

    // past the expiry: settled, and the delivery price is the full window's average
    await ok(srv.url, 'private/set_test_time', { timestamp: expiry + 1000 }, admin);
    const delivered = (await ok(srv.url, 'public/get_delivery_prices', { index_name: 'btc_usd' })).data[0].delivery_price;
    assert.equal(delivered, cents((p0 * 20 + (p0 + 600) * 5 + (p0 - 300) * 5) / 30));
    // the schedule may already hold the replacement series (a daily that is also a weekly): settle
    // the next expiries too until one is listed
    let after = await ok(srv.url, 'public/get_instruments', { currency: 'BTC' });
    const isNew = (n: string) => !before.some((b: any) => b.instrument_name === n);
    let lastSettled = expiry;
    for (let k = 0; k < 4 && !after.some((x: any) => isNew(x.instrument_name)); k++) {
      lastSettled = Math.min(...after.map((x: any) => x.expiration_timestamp));
      await ok(srv.url, 'private/set_test_time', { timestamp: lastSettled + 1000 }, await login(srv.url, 'admin@example.com', 'admin-password-1'));
      after = await ok(srv.url, 'public/get_instruments', { currency: 'BTC' });
    }
    const newNames = after.map((x: any) => x.instrument_name).filter(isNew).sort();
    assert.ok(newNames.length > 0, 'a series was listed to replace the expired one');
    const settledNames = before.filter((x: any) => x.expiration_timestamp <= lastSettled).map((x: any) => x.instrument_name).sort();
    const states = (ch: string) => ws.on(ch).map((n) => n.data);
    const byState = (ch: string, st: string) => states(ch).filter((d) => d.state === st).map((d) => d.instrument_name).sort();
    await ws.until(() => byState('instrument.state.option.BTC', 'started').length >= newNames.length, 5000, 'instrument states');
    for (const ch of ['instrument.state.option.BTC', 'instrument.state.any.any']) {
      assert.deepEqual(byState(ch, 'settled').filter((n) => n.startsWith('BTC-')), settledNames, `${ch}: settled`);
      assert.deepEqual(byState(ch, 'created').filter((n) => n.startsWith('BTC-')), newNames, `${ch}: created`);
      assert.deepEqual(byState(ch, 'started').filter((n) => n.startsWith('BTC-')), newNames, `${ch}: started`);
    }
    const expired = await ok(srv.url, 'public/get_instruments', { currency: 'BTC', expired: true });
    for (const n of settledNames) assert.equal(expired.find((x: any) => x.instrument_name === n)?.state, 'delivered', n);
    assert.ok(states('instrument.state.option.BTC').every((d) => d.instrument_name.startsWith('BTC-') && typeof d.timestamp === 'number'));
    assert.ok(states('instrument.state.option.ETH').every((d) => d.instrument_name.startsWith('ETH-')), 'the ETH channel carries only ETH');
    await ws.close();
  });
}

for (const spec of await wsTargets()) describe(spec.name, { skip: spec.skip }, () => suite(spec));
