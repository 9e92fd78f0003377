// The gateway's bound on the credentials one connection's private subscriptions hold
// (src/gateway/credentials.ts): each distinct `access_token` param is one call to the leader per
// recheck, so a client may hold only MAX_TOKENS_PER_CONNECTION of them; the next is refused (11029)
// and those it holds keep working.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_TOKENS_PER_CONNECTION } from '../../src/gateway/credentials.ts';
import { atmCall, type Market } from '../helpers/market.ts';
import { adminToken, ok, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';
import { startTarget, wsTargets, type Target } from '../helpers/targets.ts';

const gateway = (await wsTargets()).find((s) => s.kind === 'gateway');

describe('a gateway connection holding access_token params', { skip: gateway?.skip ?? 'STRIKEBOOK_WS_TARGETS excludes the gateway' }, () => {
  let tg: Target;
  let srv: TestServer;
  let m: Market;

  before(async () => {
    tg = await startTarget('gateway');
    srv = tg.srv;
    m = await atmCall(srv.url);
  });
  after(() => tg.stop());

  test('a private subscribe with one more distinct token than the bound is refused with 11029, and a held token still subscribes', async () => {
    const email = 'token-bound@example.com';
    await userToken(srv.url, await adminToken(srv.url), email, { currency: 'BTC', amount: 100 });
    const token = async () => (await ok(srv.url, 'public/auth', { grant_type: 'password', username: email, password: 'user-password-1' })).access_token as string;
    const channels = [`user.orders.${m.name}.raw`, `user.trades.${m.name}.raw`, 'user.portfolio.btc', 'user.portfolio.eth', 'user.orders.option.BTC.raw', 'user.trades.option.BTC.raw', 'user.orders.any.any.raw', 'user.trades.any.any.raw', 'user.changes.any.any.raw'];
    assert.ok(channels.length > MAX_TOKENS_PER_CONNECTION);
    const ws = await WsClient.open(tg.ws);
    const held: string[] = [];
    for (let i = 0; i < MAX_TOKENS_PER_CONNECTION; i++) {
      held.push(await token());
      assert.deepEqual(await ws.ok('private/subscribe', { channels: [channels[i]], access_token: held[i] }), [channels[i]]);
    }
    const over = await ws.call('private/subscribe', { channels: [channels[MAX_TOKENS_PER_CONNECTION]], access_token: await token() });
    assert.equal(over.error?.code, 11029, JSON.stringify(over));
    assert.deepEqual(await ws.ok('private/subscribe', { channels: [channels[MAX_TOKENS_PER_CONNECTION]], access_token: held[0] }), [channels[MAX_TOKENS_PER_CONNECTION]]);
    await ws.close();
  });
});
