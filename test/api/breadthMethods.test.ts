// Methods of issue 17 over HTTP and the WebSocket (each answer compared across both), with values
// checked against the rest of the API: get_open_orders, get_order_margin_by_ids, the index names,
// the account log of every balance movement and the settlement history read from it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, login, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { atmCall, instruments, market, nearMark } from '../helpers/market.ts';
import { WsClient } from '../helpers/ws.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { parseOrderId } from '../../src/api/render.ts';

const sat = (x: number) => Math.round(x * 1e8);

/** Calls `method` over HTTP and over an authenticated socket; asserts both answer alike. */
async function both(url: string, ws: WsClient, method: string, params: Record<string, unknown>, token?: string): Promise<any> {
  const http = await ok(url, method, params, token);
  assert.deepEqual(await ws.ok(method, params), http, `${method} answers alike over HTTP and WebSocket`);
  return http;
}

describe('order reads and index names', () => {
  let srv: TestServer;
  let url: string;
  let tokA: string;
  let tokB: string;
  let ws: WsClient;

  before(async () => {
    srv = await startServer();
    url = srv.url;
    const admin = await adminToken(url);
    tokA = await userToken(url, admin, 'alice@example.com', { currency: 'BTC', amount: 10 });
    await ok(url, 'private/deposit_collateral', { currency: 'ETH', amount: 100 }, tokA);
    tokB = await userToken(url, admin, 'bob@example.com', { currency: 'BTC', amount: 10 });
    ws = await WsClient.open(url);
    await ws.auth('alice@example.com');
  });
  after(async () => {
    await ws.close();
    await srv.stop();
  });

  it('private/get_open_orders lists every open order of every currency, filtered by kind and type', async () => {
    const x = await atmCall(url);
    const y = await atmCall(url, 'ETH');
    const i = x.prices.indexOf(nearMark(x));
    const j = y.prices.indexOf(nearMark(y));
    const a1 = await ok(url, 'private/buy', { instrument_name: x.name, amount: 0.3, price: x.prices[i - 3] }, tokA);
    const a2 = await ok(url, 'private/sell', { instrument_name: y.name, amount: 2, price: y.prices[j + 3] }, tokA);
    const a3 = await ok(url, 'private/sell', { instrument_name: x.name, amount: 0.2, price: x.prices[i + 3] }, tokA);
    await ok(url, 'private/sell', { instrument_name: x.name, amount: 0.1, price: x.prices[i + 4] }, tokB);

    const all = await both(url, ws, 'private/get_open_orders', {}, tokA);
    assert.deepEqual(all.map((o: any) => o.order_id), [a1, a2, a3].map((r) => r.order.order_id), 'alice\'s three orders, oldest first, none of bob\'s');
    const btc = await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, tokA);
    const eth = await ok(url, 'private/get_open_orders_by_currency', { currency: 'ETH' }, tokA);
    assert.deepEqual(all, [...btc, ...eth].sort((a: any, b: any) => parseOrderId(a.order_id)! - parseOrderId(b.order_id)!), 'the union of the by-currency lists');
    for (const params of [{ kind: 'option' }, { type: 'limit' }, { kind: 'any', type: 'all' }]) assert.deepEqual(await both(url, ws, 'private/get_open_orders', params, tokA), all, JSON.stringify(params));
    for (const params of [{ kind: 'future' }, { type: 'stop_all' }, { type: 'trigger_all' }]) assert.deepEqual(await both(url, ws, 'private/get_open_orders', params, tokA), [], JSON.stringify(params));
    assert.equal((await rpc(url, 'private/get_open_orders', { type: 'nonsense' }, tokA)).body.error.code, -32602);
    assert.equal((await rpc(url, 'private/get_open_orders', {})).body.error.code, 10000);
  });

  it('private/get_order_margin_by_ids gives each order\'s initial margin, summing to the account\'s', async () => {
    const open = await ok(url, 'private/get_open_orders', {}, tokA);
    const ids = open.map((o: any) => o.order_id);
    const margins = await both(url, ws, 'private/get_order_margin_by_ids', { ids }, tokA);
    assert.deepEqual(margins.map((m: any) => [m.order_id, m.initial_margin_currency]), open.map((o: any) => [o.order_id, o.instrument_name.slice(0, 3)]));
    for (const m of margins) assert.ok(m.initial_margin > 0, `order ${m.order_id} holds margin`);
    // by GET: one id, ids separated by commas, a repeated parameter
    const get = async (query: string) => (await (await fetch(`${url}/api/v2/private/get_order_margin_by_ids?${query}`, { headers: { authorization: `Bearer ${tokA}` } })).json()).result;
    assert.deepEqual(await get(`ids=${ids[1]}`), [margins[1]]);
    assert.deepEqual(await get(`ids=${ids.join(',')}`), margins);
    assert.deepEqual(await get(ids.map((id: string) => `ids=${id}`).join('&')), margins);
    // alice holds no position: her initial margin is her orders' (one order per side and instrument)
    for (const c of ['BTC', 'ETH']) {
      const summary = await ok(url, 'private/get_account_summary', { currency: c }, tokA);
      const sum = margins.filter((m: any) => m.initial_margin_currency === c).reduce((s: number, m: any) => s + sat(m.initial_margin), 0);
      assert.equal(sum, sat(summary.initial_margin), `${c}: the orders' margins sum to the account's initial margin`);
    }
    // a buy holds its premium and fee: 0.3 x price + fee at the larger commission
    const buy = open[0];
    assert.equal(sat(margins[0].initial_margin), sat(0.3 * buy.price) + Math.ceil(sat(0.3 * Math.min(0.0003, 0.125 * buy.price)) - 1e-9));
    // a closed order holds nothing; another user's order is not found
    await ok(url, 'private/cancel', { order_id: ids[0] }, tokA);
    assert.deepEqual((await both(url, ws, 'private/get_order_margin_by_ids', { ids: [ids[0]] }, tokA))[0].initial_margin, 0);
    const bobs = (await ok(url, 'private/get_open_orders', {}, tokB))[0].order_id;
    const foreign = await rpc(url, 'private/get_order_margin_by_ids', { ids: [ids[1], bobs] }, tokA);
    assert.deepEqual([foreign.body.error.code, foreign.body.error.data.param], [10004, 'ids']);
    assert.equal((await rpc(url, 'private/get_order_margin_by_ids', { ids: Array.from({ length: 1001 }, (_, k) => String(k + 1)) }, tokA)).body.error.code, -32602);
    assert.equal((await rpc(url, 'private/get_order_margin_by_ids', { ids: [] }, tokA)).body.error.code, -32602);
  });

  it('public/get_index_price_names and get_supported_index_names name the indices get_index_price serves', async () => {
    const names = await both(url, ws, 'public/get_index_price_names', {});
    assert.deepEqual(names, [{ name: 'btc_usd' }, { name: 'eth_usd' }]);
    assert.deepEqual(await both(url, ws, 'public/get_index_price_names', { extended: true }), names.map((n: any) => ({ ...n, future_combo_creation_enabled: false, option_combo_creation_enabled: false })));
    const indices = ['btc_usd', 'eth_usd'].map((name) => ({ name, future_combo_creation_enabled: false, option_combo_creation_enabled: false }));
    assert.deepEqual(await both(url, ws, 'public/get_supported_index_names', {}), indices);
    assert.deepEqual(await both(url, ws, 'public/get_supported_index_names', { type: 'spot' }), indices);
    assert.deepEqual(await both(url, ws, 'public/get_supported_index_names', { type: 'derivative' }), []);
    for (const { name } of names) assert.ok((await ok(url, 'public/get_index_price', { index_name: name })).index_price > 0, name);
  });
});

describe('the account log and the settlement history', () => {
  let srv: TestServer;
  let url: string;

  before(async () => {
    srv = await startServer();
    url = srv.url;
  });
  after(() => srv.stop());

  it('logs every balance movement with the balance after it, and lists deliveries as settlements', async () => {
    let admin = await adminToken(url);
    let tokA = await userToken(url, admin, 'alice@example.com', { currency: 'BTC', amount: 10 });
    let tokB = await userToken(url, admin, 'bob@example.com', { currency: 'BTC', amount: 10 });
    await ok(url, 'private/withdraw_collateral', { currency: 'BTC', amount: 1 }, tokA);
    // an in-the-money call of the nearest expiry, so its delivery moves money both ways
    const now = await ok(url, 'public/get_time');
    const index = (await ok(url, 'public/get_index_price', { index_name: 'btc_usd' })).index_price;
    const list = (await instruments(url, 'BTC')).filter((x: any) => x.option_type === 'call' && x.expiration_timestamp > now + 60_000);
    const expiry = Math.min(...list.map((x: any) => x.expiration_timestamp));
    const inst = list.filter((x: any) => x.expiration_timestamp === expiry && x.strike < index * 0.95).sort((a: any, b: any) => b.strike - a.strike)[0];
    assert.ok(inst, 'an in-the-money call');
    const m = await market(url, inst);
    const p = nearMark(m);
    await ok(url, 'private/sell', { instrument_name: m.name, amount: 0.5, price: p }, tokA);
    await ok(url, 'private/buy', { instrument_name: m.name, amount: 0.5, price: p }, tokB);
    const [trade] = (await ok(url, 'private/get_user_trades_by_instrument', { instrument_name: m.name }, tokA)).trades;

    // past the expiry: settled at the (constant) index; tokens are an hour old by then
    await ok(url, 'private/set_test_time', { timestamp: expiry + 1000 }, admin);
    admin = await login(url, 'admin@example.com', 'admin-password-1');
    tokA = await login(url, 'alice@example.com', 'user-password-1');
    tokB = await login(url, 'bob@example.com', 'user-password-1');
    const S = (await ok(url, 'public/get_delivery_prices', { index_name: 'btc_usd' })).data[0].delivery_price;
    assert.equal(S, index);
    const intrinsic = (S - inst.strike) / S;

    const ws = await WsClient.open(url);
    await ws.auth('alice@example.com');
    const log = (await both(url, ws, 'private/get_transaction_log', { currency: 'BTC' }, tokA)).logs;
    assert.deepEqual(log.map((e: any) => e.type), ['delivery', 'trade', 'withdrawal', 'deposit'], 'newest first');
    const [delivery, tr, withdrawal, deposit] = log;
    assert.deepEqual([sat(deposit.change), sat(deposit.balance)], [sat(10), sat(10)]);
    assert.deepEqual([sat(withdrawal.change), sat(withdrawal.balance)], [-sat(1), sat(9)]);
    // the trade: premium received less the fee, as the user trade says
    assert.deepEqual([tr.instrument_name, tr.side, tr.amount, tr.price, tr.trade_id, sat(tr.commission)], [m.name, 'sell', 0.5, p, trade.trade_id, sat(trade.fee)]);
    assert.equal(sat(tr.change), sat(0.5 * p) - sat(trade.fee));
    // the delivery: the short pays 0.5 x intrinsic, rounded up
    assert.deepEqual([delivery.instrument_name, delivery.position], [m.name, -0.5]);
    assert.equal(sat(delivery.change), -Math.ceil(0.5 * intrinsic * 1e8 - 1e-6));
    // each balance is the one before it plus its change, and the newest is the account's balance
    for (let k = 0; k + 1 < log.length; k++) assert.equal(sat(log[k].balance), sat(log[k + 1].balance) + sat(log[k].change), `balance after entry ${log[k].id}`);
    assert.equal(sat(delivery.balance), sat((await ok(url, 'private/get_account_summary', { currency: 'BTC' }, tokA)).balance));
    // filters and paging
    assert.deepEqual((await both(url, ws, 'private/get_transaction_log', { currency: 'BTC', query: 'trade' }, tokA)).logs, [tr]);
    const page1 = await both(url, ws, 'private/get_transaction_log', { currency: 'any', count: 2 }, tokA);
    assert.deepEqual(page1.logs, log.slice(0, 2));
    assert.deepEqual((await both(url, ws, 'private/get_transaction_log', { currency: 'any', count: 2, continuation: page1.continuation }, tokA)).logs, log.slice(2));

    // bob's side: the long is paid intrinsic less the delivery fee; the settlement history says so
    const bobLog = (await ok(url, 'private/get_transaction_log', { currency: 'BTC' }, tokB)).logs;
    const bobDelivery = bobLog[0];
    const payout = Math.floor(0.5 * intrinsic * 1e8 + 1e-6);
    const fee = Math.min(payout, Math.ceil(0.5 * Math.min(0.00015, 0.125 * intrinsic) * 1e8 - 1e-6));
    assert.deepEqual([bobDelivery.type, sat(bobDelivery.change), sat(bobDelivery.commission), bobDelivery.position], ['delivery', payout - fee, fee, 0.5]);

    const bws = await WsClient.open(url);
    await bws.auth('bob@example.com');
    const mark = Number(intrinsic.toFixed(8));
    for (const [who, w, tok, entry, position] of [['alice', ws, tokA, delivery, -0.5], ['bob', bws, tokB, bobDelivery, 0.5]] as const) {
      const byInst = await both(url, w, 'private/get_settlement_history_by_instrument', { instrument_name: m.name }, tok);
      assert.deepEqual(byInst, {
        settlements: [{ type: 'delivery', timestamp: entry.timestamp, instrument_name: m.name, position, mark_price: mark, index_price: S, profit_loss: entry.change, session_profit_loss: entry.change }],
        continuation: null,
      }, `${who}'s settlement history`);
      assert.deepEqual(await both(url, w, 'private/get_settlement_history_by_currency', { currency: 'BTC' }, tok), byInst, `${who}: by currency`);
      assert.deepEqual((await both(url, w, 'private/get_settlement_history_by_currency', { currency: 'BTC', type: 'settlement' }, tok)).settlements, []);
      assert.deepEqual((await both(url, w, 'private/get_settlement_history_by_currency', { currency: 'ETH' }, tok)).settlements, []);
      assert.deepEqual((await both(url, w, 'private/get_settlement_history_by_currency', { currency: 'BTC', search_start_timestamp: expiry - 1 }, tok)).settlements, [], 'nothing before the expiry');
    }
    assert.equal((await rpc(url, 'private/get_settlement_history_by_instrument', { instrument_name: 'BTC-1JAN20-1-C' }, tokA)).body.error.code, 10020);
    // the exchange's books still balance
    for (const [cur, v] of Object.entries(srv.app.services.ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${cur}`);
    await ws.close();
    await bws.close();
    // the log is engine state: a clean replay of the journal, and a restart, reproduce it and the hash
    const live = await ok(url, 'private/get_state_hash', {}, admin);
    const replay = cleanReplay(srv.dataDir, live.seq);
    assert.deepEqual(replay.errors, []);
    assert.equal(replay.hash, live.state_hash, 'a clean replay has the same state hash');
    assert.deepEqual(replay.ex.usersByEmail.get('alice@example.com')!.log, srv.app.services.ex.usersByEmail.get('alice@example.com')!.log);
    const dataDir = srv.dataDir;
    await srv.stop({ keepData: true });
    srv = await startServer({}, dataDir);
    url = srv.url;
    const again = await ok(url, 'private/get_transaction_log', { currency: 'BTC' }, await login(url, 'alice@example.com', 'user-password-1'));
    assert.deepEqual(again.logs, log, 'the log after a restart');
  });
});
