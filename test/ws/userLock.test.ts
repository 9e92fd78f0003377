// user.lock and private/get_user_locks (issue 31): an account in liquidation in a currency is locked
// there (only reducing orders are accepted); the channel says so as it happens, and when it ends.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { market, nearDatedAtmCall, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';

function suite(spec: TargetSpec): void {
  let tg: Target;
  let server: TestServer;
  let url: string;
  let admin: string;
  let writer: string;
  let maker: string;
  let call: Market;

  before(async () => {
    tg = await startTarget(spec.kind);
    server = tg.srv;
    url = server.url;
    admin = await adminToken(url);
    writer = await userToken(url, admin, 'lock-writer@example.com', { currency: 'BTC', amount: 0.3 });
    const buyer = await userToken(url, admin, 'lock-buyer@example.com', { currency: 'BTC', amount: 100 });
    maker = await userToken(url, admin, 'lock-maker@example.com', { currency: 'BTC', amount: 100 });
    call = await nearDatedAtmCall(url);
    const p = nearMark(call);
    await ok(url, 'private/buy', { instrument_name: call.name, amount: 1, price: p }, buyer);
    await ok(url, 'private/sell', { instrument_name: call.name, amount: 1, price: p }, writer);
  });
  after(() => tg.stop());

  it('notifies the lock when the account enters liquidation and the unlock when it leaves; get_user_locks agrees', async () => {
    const ws = await WsClient.open(tg.ws);
    try {
      await ws.auth('lock-writer@example.com');
      assert.deepEqual(await ws.ok('private/subscribe', { channels: ['user.lock'] }), ['user.lock']);
      const U = server.app.services.ex.indexPrice('BTC');
      await ok(url, 'private/set_index_price', { index_name: 'btc_usd', price: U * 1.25 }, admin);
      // the background check flags the account within a second or two (a generous bound under load)
      await ws.until(() => ws.on('user.lock').length > 0, 15_000, 'the lock');
      assert.deepEqual(ws.on('user.lock')[0]!.data, { currency: 'BTC', locked: true });
      const locks = await ok(url, 'private/get_user_locks', {}, writer);
      assert.equal(locks.find((l: any) => l.currency === 'BTC').enabled, true);
      assert.equal(locks.find((l: any) => l.currency === 'ETH').enabled, false);
      const fresh = await market(url, call.inst);
      await ok(url, 'private/sell', { instrument_name: call.name, amount: 2, price: nearMark(fresh) }, maker);
      await ws.until(() => ws.on('user.lock').length > 1, 15_000, 'the unlock');
      assert.deepEqual(ws.on('user.lock')[1]!.data, { currency: 'BTC', locked: false });
      assert.equal((await ok(url, 'private/get_user_locks', {}, writer)).find((l: any) => l.currency === 'BTC').enabled, false);
    } finally {
      await ws.close();
    }
  });
}

for (const spec of await wsTargets()) describe(`user.lock ${spec.name}`, { skip: spec.skip }, () => suite(spec));
