// public/get_historical_volatility (realized vol of the index, per hour) and
// public/get_volatility_index_data (a DVOL-like 30-day index from the marks), over HTTP and the
// WebSocket, with values computed from the index prints and vol smiles the test sets.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, login, ok, rpc, startServer, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

const HOUR = 3_600_000;
const MIN = 60_000;
let srv: TestServer;
let ws: WsClient;

before(async () => {
  srv = await startServer();
  await adminToken(srv.url);
  ws = await WsClient.open(srv.url);
});
after(async () => {
  await ws.close();
  await srv.stop();
});

/** The admin's token, fresh: the test clock jumps hours ahead and tokens live one hour. */
const admin = () => login(srv.url, 'admin@example.com', 'admin-password-1');

async function both(method: string, params: Record<string, unknown>): Promise<any> {
  const http = await ok(srv.url, method, params);
  assert.deepEqual(await ws.ok(method, params), http, `${method} answers alike over HTTP and WebSocket`);
  return http;
}

async function at(ts: number): Promise<void> {
  await ok(srv.url, 'private/set_test_time', { timestamp: ts }, await admin());
}

test('get_historical_volatility is the annualised root mean square of each hour\'s minute returns of the index', async () => {
  const now = await ok(srv.url, 'public/get_time');
  const p0 = (await ok(srv.url, 'public/get_index_price', { index_name: 'btc_usd' })).index_price;
  const H = Math.ceil(now / HOUR) * HOUR + HOUR;
  await at(H + 10 * MIN);
  await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: p0 * 1.01 }, await admin());
  await at(H + 20 * MIN + 5_000);
  await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: p0 }, await admin());
  await at(H + HOUR + 30_000);
  // a command at the new time (a print of the same price, in the next hour's first minute)
  await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: p0 }, await admin());

  const hv = await both('public/get_historical_volatility', { currency: 'BTC' });
  const point = hv.find(([t]: number[]) => t === H + HOUR);
  assert.ok(point, `a point for the hour ending ${new Date(H + HOUR).toISOString()}`);
  const r = Math.log(1.01);
  const want = Number((100 * Math.sqrt(((2 * r * r) / 60) * 365 * 24 * 60)).toFixed(4));
  assert.equal(point[1], want, 'two moves of 1% in an hour');
  assert.deepEqual(hv.find(([t]: number[]) => t === H), [H, 0], 'the flat hour before is 0');
  for (let k = 1; k < hv.length; k++) assert.equal(hv[k][0] - hv[k - 1][0], HOUR, 'hourly points, ascending');
  assert.equal(hv.at(-1)[0], H + HOUR, 'up to the last full hour');
  for (const [, v] of await both('public/get_historical_volatility', { currency: 'ETH' })) assert.equal(v, 0, 'ETH did not move');
  assert.equal((await rpc(srv.url, 'public/get_historical_volatility', { currency: 'USDC' })).body.error.code, -32602);
});

test('get_volatility_index_data follows the marks\' smile: a flat smile gives its vol, a smile adds the wings', async () => {
  const tok = await admin();
  const latest = async (): Promise<number[]> => {
    const now = await ok(srv.url, 'public/get_time');
    const r = await both('public/get_volatility_index_data', { currency: 'BTC', start_timestamp: now - 10 * MIN, end_timestamp: now, resolution: '60' });
    assert.equal(r.continuation, null);
    return r.data.at(-1);
  };
  const step = async (atm: number, skew: number, curvature: number): Promise<number[]> => {
    const now = await ok(srv.url, 'public/get_time');
    await at(now + MIN);
    await ok(srv.url, 'private/set_volatility', { currency: 'BTC', atm_vol: atm, skew, curvature }, tok);
    return latest();
  };
  const flat60 = await step(0.6, 0, 0);
  // the strip of listed strikes (50% to 200% of the index) and its spacing leave a small error
  assert.ok(Math.abs(flat60[4] - 60) < 0.5, `flat 60% smile: DVOL ${flat60[4]}`);
  const flat90 = await step(0.9, 0, 0);
  assert.ok(Math.abs(flat90[4] - 90) < 0.5, `flat 90% smile: DVOL ${flat90[4]}`);
  const smile = await step(0.6, -0.1, 0.5);
  assert.ok(smile[4] > flat60[4] + 0.5, `a smile raises the index above its ATM vol: ${smile[4]} vs ${flat60[4]}`);
  for (const c of [flat60, flat90, smile]) assert.ok(c[2] >= Math.max(c[1], c[4]) && c[3] <= Math.min(c[1], c[4]), `a candle: ${c}`);
  // two set_vol commands in one minute make one minute candle from the first to the last
  await ok(srv.url, 'private/set_volatility', { currency: 'BTC', atm_vol: 0.9, skew: 0, curvature: 0 }, tok);
  const moved = await latest();
  assert.deepEqual([moved[0], moved[1], moved[4]], [smile[0], smile[1], flat90[4]]);
  assert.equal(moved[2], flat90[4], 'high');
  // an hour's candle spans the minutes
  const now = await ok(srv.url, 'public/get_time');
  const hourly = await both('public/get_volatility_index_data', { currency: 'BTC', start_timestamp: now - 5 * HOUR, end_timestamp: now, resolution: '3600' });
  const last = hourly.data.at(-1);
  assert.equal(last[0], Math.floor(now / HOUR) * HOUR);
  assert.ok(last[2] >= flat90[4] && last[3] <= flat60[4], `hourly high/low span the minutes: ${last}`);
  const eth = await both('public/get_volatility_index_data', { currency: 'ETH', start_timestamp: now - 10 * MIN, end_timestamp: now, resolution: '1' });
  // ETH keeps the default smile (60% ATM, skew -0.1, curvature 0.5) that BTC had a minute ago
  assert.ok(eth.data.length > 0 && Math.abs(eth.data.at(-1)[4] - smile[4]) < 1, `ETH ${JSON.stringify(eth.data.at(-1))} vs BTC ${smile[4]} on the same smile`);
  assert.equal((await rpc(srv.url, 'public/get_volatility_index_data', { currency: 'BTC', start_timestamp: 0, end_timestamp: 1, resolution: '7' })).body.error.code, -32602);
  assert.equal((await rpc(srv.url, 'public/get_volatility_index_data', { currency: 'BTC', start_timestamp: 2, end_timestamp: 1, resolution: '60' })).body.error.code, 11029);
});
