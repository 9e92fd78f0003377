// Deribit field fidelity on trades, positions, the transaction log and order history (issue 31 item
// 4): values, not only presence. A trade's `iv` inverts its price with the index and time it was
// made at; the log's fields after a fill agree with the position and account summary read then;
// order history pages by continuation; ETH's order and trade ids carry `ETH-` as Deribit's do.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { impliedVol, yearFraction } from '../../src/domain/pricing.ts';
import { atmCall, nearDatedAtmCall, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

describe('trade, position, log and history fields', () => {
  let server: TestServer;
  let url: string;
  let maker: string;
  let taker: string;
  let call: Market;

  before(async () => {
    server = await startServer();
    url = server.url;
    const admin = await adminToken(url);
    maker = await userToken(url, admin, 'maker@example.com', { currency: 'BTC', amount: 50 });
    taker = await userToken(url, admin, 'taker@example.com', { currency: 'BTC', amount: 50 });
    await ok(url, 'private/deposit_collateral', { currency: 'ETH', amount: 500 }, maker);
    await ok(url, 'private/deposit_collateral', { currency: 'ETH', amount: 500 }, taker);
    call = await nearDatedAtmCall(url);
  });

  after(async () => {
    await server?.stop();
  });

  it('gives a trade at the mark the mark iv, a dearer trade a higher iv, the same in every trade object and channel', async () => {
    const ticker = await ok(url, 'public/ticker', { instrument_name: call.name });
    const atMark = nearMark(call);
    const ws = await WsClient.open(url);
    await ws.auth('taker@example.com');
    const subscribed = await ws.ok('private/subscribe', { channels: [`trades.${call.name}.raw`, `user.trades.${call.name}.raw`] });
    assert.equal(subscribed.length, 2, JSON.stringify(subscribed));
    await ok(url, 'private/sell', { instrument_name: call.name, amount: 0.1, price: atMark }, maker);
    const reply = await ok(url, 'private/buy', { instrument_name: call.name, amount: 0.1, price: atMark }, taker);
    const t = reply.trades[0];
    // a tick off the mark moves the vol by (tick in USD) / vega; the ticker's iv has 2 decimals
    const offUsd = Math.abs(atMark - ticker.mark_price) * ticker.index_price;
    const tolerance = offUsd / ticker.greeks.vega + 0.011;
    assert.ok(Math.abs(t.iv - ticker.mark_iv) <= tolerance, `trade iv ${t.iv} vs mark iv ${ticker.mark_iv} (within ${tolerance})`);
    // the iv prices the trade back: Black-76 at iv gives the trade price (coin) within the rounding of iv
    const T = yearFraction(t.timestamp, call.inst.expiration_timestamp);
    const exact = impliedVol('call', t.price * t.index_price, t.index_price, call.inst.strike, T)!;
    assert.equal(t.iv, Number((exact * 100).toFixed(2)));

    const dearer = call.prices[call.prices.indexOf(atMark) + 10];
    await ok(url, 'private/sell', { instrument_name: call.name, amount: 0.1, price: dearer }, maker);
    const hi = (await ok(url, 'private/buy', { instrument_name: call.name, amount: 0.1, price: dearer }, taker)).trades[0];
    assert.ok(hi.iv > t.iv + 0.5, `a trade 10 ticks dearer has a higher iv (${hi.iv} > ${t.iv})`);
    assert.equal(hi.liquidation, undefined, 'no side was liquidated: no liquidation field');

    const ivs = new Map([[t.trade_id, t.iv], [hi.trade_id, hi.iv]]);
    const check = (list: any[], where: string) => {
      const seen = list.filter((x) => ivs.has(x.trade_id));
      assert.equal(seen.length, 2, `${where} lists both trades`);
      for (const x of seen) assert.equal(x.iv, ivs.get(x.trade_id), `${where}: iv of ${x.trade_id}`);
    };
    check((await ok(url, 'public/get_last_trades_by_instrument', { instrument_name: call.name })).trades, 'public trades');
    check((await ok(url, 'public/get_last_trades_by_currency', { currency: 'BTC' })).trades, 'public trades by currency');
    check((await ok(url, 'private/get_user_trades_by_instrument', { instrument_name: call.name }, maker)).trades, "the maker's trades");
    check((await ok(url, 'private/get_user_trades_by_currency', { currency: 'BTC' }, taker)).trades, "the taker's trades");
    await ws.until(() => ws.on(`trades.${call.name}.raw`).flatMap((n) => n.data).length >= 2 && ws.on(`user.trades.${call.name}.raw`).flatMap((n) => n.data).length >= 2);
    check(ws.on(`trades.${call.name}.raw`).flatMap((n) => n.data), 'the trades channel');
    check(ws.on(`user.trades.${call.name}.raw`).flatMap((n) => n.data), 'the user.trades channel');
    await ws.close();
  });

  it("logs a fill with its order, roles, price, the position and equity after it, and numbers a user's entries", async () => {
    const atMark = nearMark(call);
    await ok(url, 'private/sell', { instrument_name: call.name, amount: 0.3, price: atMark, label: 'log-maker' }, maker);
    const placed = await ok(url, 'private/buy', { instrument_name: call.name, amount: 0.3, price: atMark }, taker);
    const trade = placed.trades[0];
    const pos = await ok(url, 'private/get_position', { instrument_name: call.name }, taker);
    const summary = await ok(url, 'private/get_account_summary', { currency: 'BTC', extended: true }, taker);
    const logs = (await ok(url, 'private/get_transaction_log', { currency: 'BTC', start_timestamp: 0, end_timestamp: trade.timestamp + 60_000, count: 100 }, taker)).logs;
    const e = logs.find((x: any) => x.trade_id === trade.trade_id);
    assert.ok(e, 'the fill is logged');
    assert.equal(e.order_id, placed.order.order_id);
    assert.equal(e.user_role, 'taker');
    assert.equal(e.fee_role, 'taker');
    assert.equal(e.side, 'buy');
    assert.equal(e.amount, 0.3);
    assert.equal(e.contracts, 0.3);
    assert.equal(e.price, trade.price);
    assert.equal(e.price_currency, 'BTC');
    assert.equal(e.position, pos.size, 'the position after the fill');
    assert.equal(e.mark_price, trade.mark_price);
    assert.equal(e.index_price, trade.index_price);
    // nothing moved since the fill: the equity then is the equity now
    assert.equal(e.equity, summary.equity);
    assert.equal(e.user_id, summary.id);
    assert.equal(e.username, 'taker@example.com');
    assert.equal(e.profit_as_cashflow, true);
    assert.deepEqual(e.info, {});
    assert.equal(e.session_rpl, null);
    // newest first, numbered one by one from the first deposit (over all of the user's currencies)
    const everything = (await ok(url, 'private/get_transaction_log', { currency: 'any', start_timestamp: 0, end_timestamp: trade.timestamp + 60_000, count: 100 }, taker)).logs;
    assert.ok(everything.length > logs.length, 'the ETH deposit is in the whole log');
    assert.deepEqual(everything.map((x: any) => x.user_seq), Array.from({ length: everything.length }, (_, i) => everything.length - i));
    const deposit = logs.at(-1);
    assert.equal(deposit.type, 'deposit');
    assert.equal(deposit.side, '-');
    for (const k of ['order_id', 'trade_id', 'user_role', 'position', 'price', 'amount', 'mark_price']) assert.equal(deposit[k], null, `a deposit has no ${k}`);
    assert.equal(deposit.equity, deposit.balance, 'before any trade the equity is the cash');

    const makerLog = (await ok(url, 'private/get_transaction_log', { currency: 'BTC', start_timestamp: 0, end_timestamp: trade.timestamp + 60_000 }, maker)).logs;
    const m = makerLog.find((x: any) => x.trade_id === trade.trade_id);
    assert.equal(m.user_role, 'maker');
    assert.equal(m.side, 'sell');
    assert.equal(m.position, (await ok(url, 'private/get_position', { instrument_name: call.name }, maker)).size);
  });

  it('shows a position with size_currency (its coin size) and no settlement price or leverage before delivery', async () => {
    const pos = await ok(url, 'private/get_position', { instrument_name: call.name }, taker);
    assert.ok(pos.size > 0);
    assert.equal(pos.size_currency, pos.size);
    assert.equal(pos.settlement_price, null);
    assert.equal(pos.leverage, null);
    const all = await ok(url, 'private/get_positions', { currency: 'BTC' }, taker);
    assert.deepEqual(all.find((p: any) => p.instrument_name === call.name), pos);
  });

  it('pages order history by continuation: the pages make the whole list, the last one says there is no more', async () => {
    const whole = await ok(url, 'private/get_order_history_by_currency', { currency: 'BTC', count: 100 }, taker);
    assert.ok(whole.length >= 3);
    const pages: any[] = [];
    let continuation: string | undefined;
    for (let i = 0; i < 10; i++) {
      const r = await ok(url, 'private/get_order_history_by_instrument', { instrument_name: call.name, count: 2, with_continuation: true, ...(continuation ? { continuation } : {}) }, taker);
      assert.ok(Array.isArray(r.orders));
      pages.push(...r.orders);
      if (r.continuation === null) break;
      assert.equal(typeof r.continuation, 'string');
      continuation = r.continuation;
    }
    assert.deepEqual(pages, whole.filter((o: any) => o.instrument_name === call.name));
    const bad = await rpc(url, 'private/get_order_history_by_currency', { currency: 'BTC', continuation: 'nonsense' }, taker);
    assert.equal(bad.body.error.code, -32602);
  });

  it('prefixes ETH order and trade ids with ETH- and reads them back; BTC ids stay plain numbers', async () => {
    const eth = await atmCall(url, 'ETH');
    const p = eth.prices[Math.floor(eth.prices.length / 2)];
    const sell = await ok(url, 'private/sell', { instrument_name: eth.name, amount: 2, price: p }, maker);
    const buy = await ok(url, 'private/buy', { instrument_name: eth.name, amount: 1, price: p }, taker);
    assert.match(sell.order.order_id, /^ETH-\d+$/);
    assert.match(buy.order.order_id, /^ETH-\d+$/);
    assert.match(buy.trades[0].trade_id, /^ETH-\d+$/);
    assert.equal(buy.trades[0].order_id, buy.order.order_id);
    const pub = (await ok(url, 'public/get_last_trades_by_instrument', { instrument_name: eth.name })).trades;
    assert.equal(pub[0].trade_id, buy.trades[0].trade_id);
    assert.equal((await ok(url, 'private/get_order_state', { order_id: sell.order.order_id }, maker)).order_id, sell.order.order_id);
    const byOrder = await ok(url, 'private/get_user_trades_by_order', { order_id: buy.order.order_id }, taker);
    assert.deepEqual(byOrder.map((t: any) => t.trade_id), [buy.trades[0].trade_id]);
    const log = (await ok(url, 'private/get_transaction_log', { currency: 'ETH', start_timestamp: 0, end_timestamp: buy.trades[0].timestamp + 60_000 }, taker)).logs;
    assert.equal(log.find((e: any) => e.type === 'trade').order_id, buy.order.order_id);
    const cancelled = await ok(url, 'private/cancel', { order_id: sell.order.order_id }, maker);
    assert.equal(cancelled.order_state, 'cancelled');
    assert.equal(cancelled.order_id, sell.order.order_id);
    const btc = await ok(url, 'private/buy', { instrument_name: call.name, amount: 0.1, price: call.prices[0] }, taker);
    assert.match(btc.order.order_id, /^\d+$/);
  });
});
