// Revocation ends exactly the subscriptions made with the revoked credential (issue 29 item 1), on
// the engine and through a gateway alike: a socket may hold private subscriptions made with its own
// login (public/auth) and others made with an `access_token` param (which authenticates that call
// only); each stays as long as its own credential is valid, whatever happens to the other, and the
// gateway's recheck (STRIKEBOOK_GATEWAY_RECHECK_MS) asks about each with that credential.
//
// "Reaches" is shown as in test/ws/revocation.test.ts: a control socket of the same user sees an
// order placed over HTTP, and a public/test answered afterwards on the socket under test proves the
// order's notification would have been ahead of it had the socket been subscribed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, type Market } from '../helpers/market.ts';
import { adminToken, ok, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';

/** The credential sweep and the gateway's recheck, shortened so that many pass in a test. */
const SWEEP_MS = '100';
/** How long a revoked subscription may go on streaming: many sweeps, for a loaded machine. */
const DEADLINE_MS = 15_000;

function suite(spec: TargetSpec): void {
  let tg: Target;
  let srv: TestServer;
  let admin: string;
  let m: Market;
  let n = 0;

  before(async () => {
    tg = await startTarget(spec.kind, { STRIKEBOOK_WS_CREDENTIAL_SWEEP_MS: SWEEP_MS, STRIKEBOOK_GATEWAY_RECHECK_MS: SWEEP_MS });
    srv = tg.srv;
    admin = await adminToken(srv.url);
    m = await atmCall(srv.url);
  });
  after(() => tg.stop());

  const login = (email: string): Promise<{ access_token: string }> => ok(srv.url, 'public/auth', { grant_type: 'password', username: email, password: 'user-password-1' });

  /** Places an order over HTTP and returns the channels of `ws` (of `channels`) it reached. */
  const probe = async (owner: string, ws: WsClient, control: WsClient, channels: string[]): Promise<string[]> => {
    const label = `probe-${n++}`;
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[0], type: 'limit', label }, owner);
    for (const ch of channels) await control.until(() => control.on(ch).some((x) => x.data.label === label), DEADLINE_MS, `control sees ${label} on ${ch}`);
    await ws.ok('public/test', {});
    await ok(srv.url, 'private/cancel_all', {}, owner);
    return channels.filter((ch) => ws.on(ch).some((x) => x.data.label === label));
  };

  test('a subscription made with a valid access_token param streams orders and portfolio across many rechecks', async () => {
    const email = `scope-valid-${spec.kind}@example.com`;
    const owner = await userToken(srv.url, admin, email, { currency: 'BTC', amount: 100 });
    const channels = [`user.orders.${m.name}.raw`, 'user.portfolio.btc'];
    const ws = await WsClient.open(tg.ws);
    assert.deepEqual((await ws.ok('private/subscribe', { channels, access_token: (await login(email)).access_token })).sort(), [...channels].sort());
    // many rechecks pass meanwhile
    await new Promise((resolve) => setTimeout(resolve, 10 * Number(SWEEP_MS)));
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[0], type: 'limit', label: 'after-rechecks' }, owner);
    await ws.until(() => ws.on(channels[0]).some((x) => x.data.label === 'after-rechecks'), DEADLINE_MS, 'the order after the rechecks');
    await ok(srv.url, 'private/cancel_all', {}, owner);
    const summaries = ws.on(channels[1]).length;
    await ok(srv.url, 'private/deposit_collateral', { currency: 'BTC', amount: 1 }, owner);
    await ws.until(() => ws.on(channels[1]).length > summaries, DEADLINE_MS, 'a portfolio summary after the deposit');
    await ws.close();
  });

  test('revoking an access_token param ends its subscriptions only, and the login ones stream on', async () => {
    const email = `scope-mixed-${spec.kind}@example.com`;
    const owner = await userToken(srv.url, admin, email, { currency: 'BTC', amount: 100 });
    const byLogin = `user.orders.${m.name}.raw`;
    const byParam = 'user.orders.option.BTC.raw';
    const ws = await WsClient.open(tg.ws);
    await ws.auth(email);
    assert.deepEqual(await ws.ok('private/subscribe', { channels: [byLogin] }), [byLogin]);
    const param = (await login(email)).access_token;
    assert.deepEqual(await ws.ok('private/subscribe', { channels: [byParam], access_token: param }), [byParam]);
    const control = await WsClient.open(tg.ws);
    await control.auth(email);
    await control.ok('private/subscribe', { channels: [byLogin, byParam] });
    assert.deepEqual(await probe(owner, ws, control, [byLogin, byParam]), [byLogin, byParam], 'both stream before the revocation');

    await ok(srv.url, 'private/logout', {}, param);
    const end = Date.now() + DEADLINE_MS;
    for (;;) {
      const reached = await probe(owner, ws, control, [byLogin, byParam]);
      assert.ok(reached.includes(byLogin), 'the login subscription streams on');
      if (!reached.includes(byParam)) break;
      assert.ok(Date.now() < end, `the param subscription still streams ${DEADLINE_MS} ms after its token's logout`);
    }
    assert.deepEqual(await probe(owner, ws, control, [byLogin, byParam]), [byLogin], 'for good');
    const again = await ws.call('private/subscribe', { channels: [byParam], access_token: param });
    assert.equal(again.error?.code, 13009, JSON.stringify(again));
    await Promise.all([ws.close(), control.close()]);
  });

  test('a private/subscribe without a token on a socket that only passed token params is refused with 10000', async () => {
    const email = `scope-nologin-${spec.kind}@example.com`;
    await userToken(srv.url, admin, email, { currency: 'BTC', amount: 100 });
    const ws = await WsClient.open(tg.ws);
    const channel = `user.orders.${m.name}.raw`;
    assert.deepEqual(await ws.ok('private/subscribe', { channels: [channel], access_token: (await login(email)).access_token }), [channel]);
    const bare = await ws.call('private/subscribe', { channels: ['user.portfolio.btc'] });
    assert.equal(bare.error?.code, 10000, JSON.stringify(bare));
    await ws.close();
  });

  test('a public/subscribe with a revoked access_token is refused with 13009, as any call with it', async () => {
    const email = `scope-public-${spec.kind}@example.com`;
    await userToken(srv.url, admin, email, { currency: 'BTC', amount: 100 });
    const revoked = (await login(email)).access_token;
    await ok(srv.url, 'private/logout', {}, revoked);
    const ws = await WsClient.open(tg.ws);
    const refused = await ws.call('public/subscribe', { channels: [`ticker.${m.name}.100ms`], access_token: revoked });
    assert.equal(refused.error?.code, 13009, JSON.stringify(refused));
    await ws.close();
  });
}

for (const spec of await wsTargets()) describe(spec.name, { skip: spec.skip }, () => suite(spec));
