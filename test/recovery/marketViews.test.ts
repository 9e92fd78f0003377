// The market read models (mark history, trade volumes) live in memory and are rebuilt by the
// journal replay on restart: a restarted server answers the same history and volumes.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall } from '../helpers/market.ts';
import { adminToken, login, ok, startServer, tempDir, userToken } from '../helpers/server.ts';

const ENV = { STRIKEBOOK_TEST_CLOCK: '1', STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000' };

describe('market read models across a restart', () => {
  it('rebuilds mark history and trade volumes from the journal', async () => {
    const dataDir = tempDir();
    let server = await startServer(ENV, dataDir);
    const admin = await adminToken(server.url);
    const buyer = await userToken(server.url, admin, 'rv-buyer@example.com', { currency: 'BTC', amount: 50 });
    const seller = await userToken(server.url, admin, 'rv-seller@example.com', { currency: 'BTC', amount: 50 });
    const m = await atmCall(server.url);
    const price = m.prices[Math.floor(m.prices.length / 2)];
    await ok(server.url, 'private/sell', { instrument_name: m.name, amount: 0.7, price }, seller);
    await ok(server.url, 'private/buy', { instrument_name: m.name, amount: 0.7, price }, buyer);
    const t0 = await ok(server.url, 'public/get_time');
    for (const k of [1, 2, 3]) {
      await ok(server.url, 'private/set_test_time', { timestamp: t0 + k * 60_000 }, admin);
      await ok(server.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100_000 + k * 50 }, admin);
    }
    const range = { instrument_name: m.name, start_timestamp: t0 - 120_000, end_timestamp: t0 + 600_000 };
    const history = await ok(server.url, 'public/get_mark_price_history', range);
    const volumes = await ok(server.url, 'public/get_trade_volumes', { extended: true });
    assert.ok(history.length >= 4);
    assert.equal(volumes.find((v: any) => v.currency === 'BTC').calls_volume, 0.7);
    await server.stop({ keepData: true });

    server = await startServer(ENV, dataDir);
    try {
      await login(server.url, 'admin@example.com', 'admin-password-1');
      assert.deepEqual(await ok(server.url, 'public/get_mark_price_history', range), history);
      assert.deepEqual(await ok(server.url, 'public/get_trade_volumes', { extended: true }), volumes);
    } finally {
      await server.stop();
    }
  });
});
