// Market-maker protection across a restart: configs, a freeze and the quotes' ids come back from the
// latest snapshot plus the journal after it (snapshots every few records here), with the state hash
// of a clean replay; a frozen group stays frozen, and quotes keep their slots.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, twinPut } from '../helpers/market.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { adminToken, ok, rpc, startServer, tempDir, userToken } from '../helpers/server.ts';

const ENV = { STRIKEBOOK_SNAPSHOT_EVERY: '7', STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000' };

describe('MMP and mass quotes across a restart', () => {
  it('a frozen group stays frozen, quotes keep their ids and slots, and the recovered state hashes as a clean replay', async () => {
    const dataDir = tempDir();
    let server = await startServer(ENV, dataDir);
    const admin = await adminToken(server.url);
    const mm = await userToken(server.url, admin, 'mm-r@example.com', { currency: 'BTC', amount: 50 });
    const taker = await userToken(server.url, admin, 'tk-r@example.com', { currency: 'BTC', amount: 50 });
    const call = await atmCall(server.url);
    const put = await twinPut(server.url, call);
    const mid = (m: typeof call, k: number) => m.prices[Math.floor(m.prices.length / 2) + k];
    await ok(server.url, 'private/set_mmp_config', { index_name: 'btc_usd', mmp_group: 'frozen', interval: 60, frozen_time: 0, quantity_limit: 0.3 }, mm);
    await ok(server.url, 'private/set_mmp_config', { index_name: 'btc_usd', mmp_group: 'live', interval: 60, frozen_time: 0, quantity_limit: 5 }, mm);
    await ok(server.url, 'private/mass_quote', { quote_id: 'f', mmp_group: 'frozen', quotes: [{ instrument_name: call.name, ask: { price: mid(call, 2), amount: 1 } }] }, mm);
    const live = await ok(server.url, 'private/mass_quote', { quote_id: 'l', mmp_group: 'live', quotes: [{ instrument_name: put.name, quote_set_id: 'S', bid: { price: mid(put, -2), amount: 0.5 } }] }, mm);
    await ok(server.url, 'private/buy', { instrument_name: call.name, amount: 0.3, price: mid(call, 2) }, taker);
    const before = await ok(server.url, 'private/get_state_hash', {}, admin);
    const status = await ok(server.url, 'private/get_mmp_status', {}, mm);
    assert.deepEqual(status, [{ index_name: 'btc_usd', mmp_group: 'frozen', frozen_until: 0 }]);
    await server.stop({ keepData: true });

    server = await startServer(ENV, dataDir);
    try {
      // tokens are state: the ones issued before the restart still work (a login would be a command)
      const after = await ok(server.url, 'private/get_state_hash', {}, admin);
      assert.deepEqual(after, before, 'recovered state');
      const replay = cleanReplay(dataDir);
      assert.ok(replay.snapshotSeq > 0, 'recovery started from a snapshot');
      assert.equal(replay.hash, after.state_hash, 'a clean replay of the journal agrees');
      const mm2 = mm;
      assert.deepEqual(await ok(server.url, 'private/get_mmp_status', {}, mm2), status);
      const refused = await rpc(server.url, 'private/mass_quote', { quote_id: 'f2', mmp_group: 'frozen', quotes: [{ instrument_name: call.name, ask: { price: mid(call, 2), amount: 0.1 } }] }, mm2);
      assert.equal(refused.body.error?.data?.reason, 'mmp_frozen');
      // the live group's quote is still in its slot: the same price and size keeps the order
      const again = await ok(server.url, 'private/mass_quote', { quote_id: 'l2', mmp_group: 'live', quotes: [{ instrument_name: put.name, bid: { price: mid(put, -2), amount: 0.5 } }] }, mm2);
      assert.equal(again.orders[0].order_id, live.orders[0].order_id);
      assert.deepEqual([again.orders[0].quote_id, again.orders[0].quote_set_id, again.orders[0].mmp_group], ['l', 'S', 'live']);
    } finally {
      await server.stop();
    }
  });
});
