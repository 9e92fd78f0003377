// The market read models (mark history, trade volumes) live in memory and are rebuilt by the
// journal replay on restart: a restarted server answers the same history and volumes. A planned
// stop snapshots the state and saves the read models beside it (src/app/plannedStop.ts): the
// restart replays nothing, and the history from before earlier snapshots survives too.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { recover } from '../../src/app/recovery.ts';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { MarketViews } from '../../src/views/marketViews.ts';
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

  it('after a planned stop, a restart replays nothing and serves the same mark history, volatility minutes, volumes and candles', { timeout: 60_000 }, async () => {
    const dataDir = tempDir();
    // snapshots every few records: the history before the latest of them is in no replayed record
    const env = { ...ENV, STRIKEBOOK_SNAPSHOT_EVERY: '5' };
    let server = await startServer(env, dataDir);
    try {
      const admin = await adminToken(server.url);
      const buyer = await userToken(server.url, admin, 'ps-buyer@example.com', { currency: 'BTC', amount: 50 });
      const seller = await userToken(server.url, admin, 'ps-seller@example.com', { currency: 'BTC', amount: 50 });
      const m = await atmCall(server.url);
      const price = m.prices[Math.floor(m.prices.length / 2)];
      const t0 = await ok(server.url, 'public/get_time');
      for (const k of [1, 2, 3, 4, 5, 6]) {
        await ok(server.url, 'private/set_test_time', { timestamp: t0 + k * 60_000 }, admin);
        await ok(server.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100_000 + k * 50 }, admin);
        await ok(server.url, 'private/sell', { instrument_name: m.name, amount: 0.1, price }, seller);
        await ok(server.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price }, buyer);
      }
      const end = t0 + 3_600_000;
      const reads = async () => ({
        history: await ok(server.url, 'public/get_mark_price_history', { instrument_name: m.name, start_timestamp: t0 - 120_000, end_timestamp: end }),
        vol: await ok(server.url, 'public/get_volatility_index_data', { currency: 'BTC', start_timestamp: t0 - 120_000, end_timestamp: end, resolution: '60' }),
        volumes: await ok(server.url, 'public/get_trade_volumes', { extended: true }),
        candles: await ok(server.url, 'public/get_tradingview_chart_data', { instrument_name: m.name, start_timestamp: t0 - 120_000, end_timestamp: end, resolution: '1' }),
      });
      const before = await reads();
      assert.ok(before.history.length >= 7, `mark history points: ${before.history.length}`);
      assert.ok(before.vol.data.length >= 1);
      assert.equal(before.candles.ticks.length, 6);
      await server.stop({ keepData: true });

      // the journal ends with the stop's snapshot, and the read models saved beside it
      const journal = openSqliteJournal(dataDir);
      try {
        assert.equal(journal.latestSnapshot()!.seq, journal.lastSeq(), 'the snapshot covers the last record');
        assert.equal(MarketViews.savedSeq(journal.getMeta('market_views')!), journal.lastSeq());
        assert.equal(recover(journal).replayed, 0, 'a restart replays no record');
      } finally {
        journal.close();
      }

      server = await startServer(env, dataDir);
      await login(server.url, 'admin@example.com', 'admin-password-1');
      assert.deepEqual(await reads(), before);
    } finally {
      await server.stop();
    }
  });

  it('read models saved at a stop are loaded only beside the snapshot of their own seq', { timeout: 60_000 }, async () => {
    const dataDir = tempDir();
    const server = await startServer(ENV, dataDir);
    let name: string;
    let t0: number;
    try {
      const admin = await adminToken(server.url);
      name = (await atmCall(server.url)).name;
      t0 = await ok(server.url, 'public/get_time');
      await ok(server.url, 'private/set_test_time', { timestamp: t0 + 60_000 }, admin);
      await ok(server.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100_100 }, admin);
    } finally {
      await server.stop({ keepData: true });
    }
    const journal = openSqliteJournal(dataDir);
    try {
      const history = (views: MarketViews, ex: ReturnType<typeof recover>['ex']) => views.markHistory(ex.instruments.get(name)!.id, t0 - 120_000, t0 + 600_000);
      const saved = journal.getMeta('market_views')!;
      const matching = new MarketViews();
      const r = recover(journal, undefined, matching);
      assert.equal(r.replayed, 0);
      assert.ok(history(matching, r.ex).length >= 2, 'loaded beside the stop\'s snapshot');
      // the same text tagged one seq earlier: a snapshot of another state, whose history it is not
      journal.setMeta('market_views', saved.replace(/"seq":\d+/, `"seq":${journal.lastSeq() - 1}`));
      const other = new MarketViews();
      const r2 = recover(journal, undefined, other);
      assert.deepEqual(history(other, r2.ex), [], 'not loaded: only the replay (of nothing) rebuilds them');
    } finally {
      journal.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
