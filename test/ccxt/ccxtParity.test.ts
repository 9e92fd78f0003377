// Issue 31 through the unmodified ccxt clients: the REST client's signed implicit API for the label
// methods, edit_by_label and close_position; the pro (WebSocket) client's one subscribe request that
// names a channel the server does not serve, which subscribes the rest, as on Deribit.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import ccxt from 'ccxt';
import { atmCall, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';

type Rest = InstanceType<typeof ccxt.deribit>;
type Pro = InstanceType<typeof ccxt.pro.deribit>;

const options = (url: string, key: { client_id: string; client_secret: string }) => ({
  apiKey: key.client_id,
  secret: key.client_secret,
  version: 'v1',
  urls: { api: { rest: url, ws: url.replace(/^http/, 'ws') + '/ws/api/v2' } },
  enableRateLimit: false,
  timeout: 10_000,
});

describe('ccxt and ccxt pro: issue 31 methods and subscriptions', () => {
  let server: TestServer;
  let url: string;
  let alice: Rest;
  let bob: Rest;
  let pro: Pro;
  let tokA: string;
  let x: Market;
  let p: number;
  let hi: number;
  let lo: number;

  before(async () => {
    server = await startServer();
    url = server.url;
    const admin = await adminToken(url);
    tokA = await userToken(url, admin, 'alice@example.com', { currency: 'BTC', amount: 10 });
    const tokB = await userToken(url, admin, 'bob@example.com', { currency: 'BTC', amount: 10 });
    const scope = 'account:read_write trade:read_write';
    // ccxt signs with its own clock: the exchange's (pinned in tests)
    const clock = () => server.app.services.clock.now();
    alice = new ccxt.deribit(options(url, await ok(url, 'private/create_api_key', { scope }, tokA)));
    alice.milliseconds = clock;
    bob = new ccxt.deribit(options(url, await ok(url, 'private/create_api_key', { scope }, tokB)));
    bob.milliseconds = clock;
    pro = new ccxt.pro.deribit(options(url, await ok(url, 'private/create_api_key', { scope }, tokB)));
    pro.milliseconds = clock;
    await pro.loadHttpProxyAgent();
    x = await atmCall(url);
    p = nearMark(x);
    const i = x.prices.indexOf(p);
    hi = x.prices[Math.min(i + 2, x.prices.length - 1)]!;
    lo = x.prices[Math.max(i - 2, 0)]!;
  });
  after(async () => {
    await pro?.close();
    await server.stop();
  });

  it('get_open_orders_by_label, edit_by_label and get_order_state_by_label through the signed REST client', async () => {
    const a = (await alice.privateGetSell({ instrument_name: x.name, amount: 0.1, price: hi, label: 'ccxt-l' })) as any;
    const b = (await alice.privateGetSell({ instrument_name: x.name, amount: 0.1, price: hi, label: 'ccxt-m' })) as any;
    const byLabel = (await alice.privateGetGetOpenOrdersByLabel({ currency: 'BTC', label: 'ccxt-l' })) as any;
    assert.deepEqual(byLabel.result.map((o: any) => o.order_id), [a.result.order.order_id]);
    const edited = (await alice.privateGetEditByLabel({ label: 'ccxt-l', instrument_name: x.name, amount: 0.3, price: hi })) as any;
    assert.equal(edited.result.order.order_id, a.result.order.order_id);
    assert.equal(edited.result.order.amount, 0.3);
    await alice.privateGetCancel({ order_id: b.result.order.order_id });
    const states = (await alice.privateGetGetOrderStateByLabel({ currency: 'BTC', label: 'ccxt-m' })) as any;
    assert.deepEqual(states.result.map((o: any) => [o.order_id, o.order_state]), [[b.result.order.order_id, 'cancelled']]);
    await alice.privateGetCancelAll({});
  });

  it('close_position through the signed REST client closes the position at market', async () => {
    await bob.privateGetSell({ instrument_name: x.name, amount: 0.2, price: p });
    await alice.privateGetBuy({ instrument_name: x.name, amount: 0.2, price: p });
    assert.equal((await ok(url, 'private/get_position', { instrument_name: x.name }, tokA)).size, 0.2);
    await bob.privateGetBuy({ instrument_name: x.name, amount: 0.5, price: lo });
    const closed = (await alice.privateGetClosePosition({ instrument_name: x.name, type: 'market' })) as any;
    assert.equal(closed.result.order.direction, 'sell');
    assert.equal(closed.result.order.reduce_only, true);
    assert.equal(closed.result.order.filled_amount, 0.2);
    assert.equal((await ok(url, 'private/get_position', { instrument_name: x.name }, tokA)).size, 0);
    await bob.privateGetCancelAll({});
  });

  it('a ccxt pro subscribe naming an unserved channel gets the served one', async () => {
    const wsUrl = pro.urls.api.ws as string;
    const channel = `ticker.${x.name}.100ms`;
    const request = { jsonrpc: '2.0', method: 'public/subscribe', params: { channels: [channel, 'announcements.nope', `book.${x.name}.7.10.100ms`] }, id: pro.requestId() };
    // ccxt pro's own path: one request, resolved by the first message of `channel`
    const ticker = (await Promise.race([
      pro.watch(wsUrl, channel, request, channel, request),
      new Promise((_, reject) => setTimeout(() => reject(new Error('no ticker within 10 s')), 10_000)),
    ])) as any;
    assert.equal(ticker.symbol, pro.safeSymbol(x.name));
    const http = await ok(url, 'public/ticker', { instrument_name: x.name });
    assert.equal(ticker.info.mark_price, http.mark_price);
  });
});
