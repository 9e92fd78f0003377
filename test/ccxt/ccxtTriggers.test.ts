// Trigger orders through the unmodified ccxt `deribit` class (issue 17): a stop-loss, a take-profit
// and a trailing stop created with ccxt's own parameters (stopLossPrice, takeProfitPrice,
// trailingAmount, trigger), read back as ccxt orders (untriggered -> "open", the level as
// triggerPrice), listed and cancelled, and a stop-loss fired by an index move into a filled order.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import ccxt from 'ccxt';
import { nearDatedAtmCall, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';

type Client = InstanceType<typeof ccxt.deribit>;

/** ccxt's option symbol for a Deribit instrument: BASE/USD:SETTLE-YYMMDD-STRIKE-C|P. */
function symbolOf(inst: any): string {
  const d = new Date(inst.expiration_timestamp);
  const yymmdd = `${String(d.getUTCFullYear() % 100).padStart(2, '0')}${String(d.getUTCMonth() + 1).padStart(2, '0')}${String(d.getUTCDate()).padStart(2, '0')}`;
  return `${inst.base_currency}/USD:${inst.settlement_currency}-${yymmdd}-${inst.strike}-${inst.option_type === 'call' ? 'C' : 'P'}`;
}

describe('ccxt deribit: trigger orders', () => {
  let server: TestServer;
  let url: string;
  let admin: string;
  let alice: Client;
  let bobToken: string;
  let x: Market;
  let sym: string;
  let index: number;

  before(async () => {
    server = await startServer();
    url = server.url;
    admin = await adminToken(url);
    const aliceToken = await userToken(url, admin, 'alice@example.com', { currency: 'BTC', amount: 10 });
    bobToken = await userToken(url, admin, 'bob@example.com', { currency: 'BTC', amount: 10 });
    const key = await ok(url, 'private/create_api_key', { scope: 'account:read_write trade:read_write' }, aliceToken);
    alice = new ccxt.deribit({ apiKey: key.client_id, secret: key.client_secret, version: 'v1', urls: { api: { rest: url } }, enableRateLimit: false, timeout: 10_000 });
    alice.milliseconds = () => server.app.services.clock.now();
    x = await nearDatedAtmCall(url);
    sym = symbolOf(x.inst);
    index = (await ok(url, 'public/get_index_price', { index_name: 'btc_usd' })).index_price;
    await alice.loadMarkets();
  });
  after(() => server.stop());

  it('creates, lists and cancels stop-loss, take-profit and trailing orders with ccxt parameters', async () => {
    const p = x.prices[x.prices.indexOf(nearMark(x)) - 4];
    const sl = await alice.createOrder(sym, 'limit', 'sell', 0.1, p, { stopLossPrice: index - 1000, trigger: 'index_price' });
    assert.equal(sl.status, 'open');
    assert.equal(sl.type, 'limit');
    assert.equal(sl.triggerPrice, index - 1000);
    assert.equal(sl.info.order_state, 'untriggered');
    assert.equal(sl.info.order_type, 'stop_limit');
    const tp = await alice.createOrder(sym, 'market', 'buy', 0.2, undefined, { takeProfitPrice: index - 2000, trigger: 'index_price' });
    assert.equal(tp.info.order_type, 'take_market');
    assert.equal(tp.info.price, 'market_price');
    const tr = await alice.createOrder(sym, 'market', 'sell', 0.1, undefined, { trailingAmount: 1500, trigger: 'index_price' });
    assert.equal(tr.info.order_type, 'trailing_stop');
    assert.equal(tr.triggerPrice, index - 1500);

    const open = await alice.fetchOpenOrders(sym, undefined, undefined, { type: 'trigger_all' });
    assert.deepEqual(open.map((o) => [o.id, o.status, o.amount]), [[sl.id, 'open', 0.1], [tp.id, 'open', 0.2], [tr.id, 'open', 0.1]]);
    assert.deepEqual(await alice.fetchOpenOrders(sym, undefined, undefined, { type: 'limit' }), []);
    const fetched = await alice.fetchOrder(sl.id!, sym);
    assert.equal(fetched.triggerPrice, index - 1000);
    const cancelled = await alice.cancelOrder(tp.id!, sym);
    assert.equal(cancelled.status, 'canceled');
    await alice.cancelAllOrders(sym); // cancel_all_by_instrument, type all: the sl and the trailing stop
    assert.deepEqual(await alice.fetchOpenOrders(sym, undefined, undefined, { type: 'trigger_all' }), []);
  });

  it('a ccxt stop-loss fires on an index move into an order that fills', async () => {
    const p = x.prices[x.prices.indexOf(nearMark(x)) - 4];
    await ok(url, 'private/buy', { instrument_name: x.name, amount: 1, price: p }, bobToken);
    const sl = await alice.createOrder(sym, 'market', 'sell', 0.3, undefined, { stopLossPrice: index - 500, trigger: 'index_price' });
    await ok(url, 'private/set_index_price', { index_name: 'btc_usd', price: index - 500 }, admin);
    const trigger = await alice.fetchOrder(sl.id!, sym);
    assert.equal(trigger.info.order_state, 'triggered');
    const child = await alice.fetchOrder(trigger.info.triggered_order_id, sym);
    assert.equal(child.status, 'closed');
    assert.equal(child.filled, 0.3);
    assert.equal(child.average, p);
    assert.equal(child.info.trigger_order_id, sl.id);
    const trades = await alice.fetchMyTrades(sym);
    assert.deepEqual(trades.map((t) => [t.order, t.side, t.amount, t.price]), [[child.id, 'sell', 0.3, p]]);
  });
});
