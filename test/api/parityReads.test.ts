// Deribit reads of issue 31: get_index_chart_data, get_last_settlements_by_currency/_by_instrument and
// get_user_locks.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../helpers/envelope.ts';
import { instruments } from '../helpers/market.ts';
import { adminToken, login, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('index chart, last settlements and user locks', () => {
  let srv: TestServer;
  let url: string;
  let admin: string;
  let user: string;

  before(async () => {
    srv = await startServer();
    url = srv.url;
    admin = await adminToken(url);
    user = await userToken(url, admin, 'locks@example.com', { currency: 'BTC', amount: 1 });
  });
  after(() => srv.stop());

  it('get_index_chart_data gives the index prints of the range, the last of each step, ascending', async () => {
    const t0 = await ok(url, 'public/get_time');
    const p0 = (await ok(url, 'public/get_index_price', { index_name: 'btc_usd' })).index_price;
    await ok(url, 'private/set_index_price', { index_name: 'btc_usd', price: p0 + 100 }, admin);
    await ok(url, 'private/set_test_time', { timestamp: t0 + 120_000 }, admin);
    await ok(url, 'private/set_index_price', { index_name: 'btc_usd', price: p0 + 200 }, admin);
    await ok(url, 'private/set_index_price', { index_name: 'btc_usd', price: p0 + 300 }, admin);
    const chart = await ok(url, 'public/get_index_chart_data', { index_name: 'btc_usd', range: '1h' });
    assert.ok(chart.length >= 2, JSON.stringify(chart));
    assert.deepEqual(chart.at(-1), [Math.floor((t0 + 120_000) / 60_000) * 60_000, p0 + 300], 'the last print of the latest minute');
    assert.ok(chart.some(([ts, price]: number[]) => ts === Math.floor(t0 / 60_000) * 60_000 && price === p0 + 100), 'the earlier minute');
    for (let i = 1; i < chart.length; i++) assert.ok(chart[i][0] > chart[i - 1][0], 'ascending');
    assert.deepEqual((await ok(url, 'public/get_index_chart_data', { index_name: 'btc_usd', range: 'all' })).at(-1)[1], p0 + 300);
    assertError(await rpc(url, 'public/get_index_chart_data', { index_name: 'btc_usd', range: '3h' }), -32602);
    assertError(await rpc(url, 'public/get_index_chart_data', { index_name: 'sol_usd', range: '1h' }), -32602);
    await ok(url, 'private/set_index_price', { index_name: 'btc_usd', price: p0 }, admin);
  });

  it('get_user_locks lists every currency unlocked for an account in good standing', async () => {
    const locks = await ok(url, 'private/get_user_locks', {}, user);
    assert.ok(locks.length >= 2);
    for (const l of locks) assert.deepEqual([typeof l.currency, l.enabled, l.message], ['string', false, '']);
    assert.ok(locks.some((l: any) => l.currency === 'BTC'));
    assertError(await rpc(url, 'private/get_user_locks', {}), 10000);
  });

  it('get_last_settlements lists the options delivered at an expiry, newest first, paged by expiry', async () => {
    const now = await ok(url, 'public/get_time');
    const list = (await instruments(url, 'BTC')).filter((x: any) => x.expiration_timestamp > now + 60_000);
    const expiry = Math.min(...list.map((x: any) => x.expiration_timestamp));
    const series = list.filter((x: any) => x.expiration_timestamp === expiry).map((x: any) => x.instrument_name).sort();
    assert.deepEqual(await ok(url, 'public/get_last_settlements_by_instrument', { instrument_name: series[0] }), { settlements: [], continuation: null }, 'nothing before the expiry');
    await ok(url, 'private/set_test_time', { timestamp: expiry + 1000 }, admin);
    admin = await login(url, 'admin@example.com', 'admin-password-1');
    const S = (await ok(url, 'public/get_delivery_prices', { index_name: 'btc_usd' })).data[0].delivery_price;
    const all = await ok(url, 'public/get_last_settlements_by_currency', { currency: 'BTC', count: 1000 });
    // an earlier expiry may have settled too when the clock starts just before one (test/clockEdges.ts)
    const ofExpiry = all.settlements.filter((x: any) => x.timestamp === expiry);
    assert.deepEqual(ofExpiry.map((x: any) => x.instrument_name).sort(), series);
    assert.deepEqual(all.settlements.slice(0, ofExpiry.length), ofExpiry, 'the newest expiry first');
    for (const x of ofExpiry) {
      assert.deepEqual([x.type, x.timestamp, x.index_price], ['delivery', expiry, S]);
      assert.equal(typeof x.mark_price, 'number');
    }
    const one = await ok(url, 'public/get_last_settlements_by_instrument', { instrument_name: series[0] });
    assert.deepEqual(one.settlements.map((x: any) => x.instrument_name), [series[0]]);
    assert.deepEqual(await ok(url, 'public/get_last_settlements_by_currency', { currency: 'ETH', type: 'settlement' }), { settlements: [], continuation: null }, 'no futures settlements here');
    assertError(await rpc(url, 'public/get_last_settlements_by_currency', { currency: 'BTC', type: 'funding' }), -32602);
    assertError(await rpc(url, 'public/get_last_settlements_by_instrument', { instrument_name: 'NOPE-1JAN30-1-C' }), 10020);
  });
});
