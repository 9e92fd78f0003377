// Every revocation reaches every live socket (issue 29 item 1): a socket that subscribed to private
// channels with a credential, in any form it can carry one (public/auth with a password, an API
// key's client_credentials or client_signature, a refresh token; an access_token param on the
// subscribe itself), stops receiving that user's private data within one credential sweep once the
// credential is revoked (logout, refresh-token rotation, API key removal or disable, the user's password
// change, the user disabled by an administrator), and its next private call is refused with 13009. On the engine and through a gateway (which rechecks its users every
// STRIKEBOOK_GATEWAY_RECHECK_MS).
//
// How "stops receiving" is shown without timing: a control socket of the same user with a credential
// that stays valid subscribes to the same channels; an order placed over HTTP reaches the control,
// and a public/test answered on the revoked socket afterwards proves the order's notification would
// have been ahead of it had the socket still been subscribed (both are written in order). A password
// change ends every password session, so that control holds an API key's session instead (keys stay
// valid); a disabled user has no session left and places no order, so there the probe is another
// user's order that fills the disabled user's resting one (open orders stay), seen on that user's socket.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hmacSha256Hex } from '../../src/auth/crypto.ts';
import { atmCall, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';

/** The credential sweep (and the gateway's recheck), shortened so a test waits for few of them. */
const SWEEP_MS = '100';
/** How long a revoked socket may go on receiving: many sweeps, for a loaded machine. */
const DEADLINE_MS = 15_000;

type Form = 'password' | 'client_credentials' | 'client_signature' | 'refresh_token' | 'access_token param' | 'key token as access_token param';
type Revocation = 'logout' | 'refresh rotation' | 'api key removal' | 'api key disable' | 'password change' | 'user disable';

const FORMS: Form[] = ['password', 'client_credentials', 'client_signature', 'refresh_token', 'access_token param', 'key token as access_token param'];
const KEY_FORMS = new Set<Form>(['client_credentials', 'client_signature', 'key token as access_token param']);
const PARAM_FORMS = new Set<Form>(['access_token param', 'key token as access_token param']);

const CASES: Array<[Form, Revocation]> = [];
for (const f of FORMS) {
  CASES.push([f, 'logout'], [f, 'refresh rotation']);
  if (KEY_FORMS.has(f)) CASES.push([f, 'api key removal'], [f, 'api key disable']);
  // a password change leaves API keys (and their tokens) valid: only the password forms
  if (!KEY_FORMS.has(f)) CASES.push([f, 'password change']);
  CASES.push([f, 'user disable']);
}

/**
 * A user with 100 BTC, created by the administrator: sign-ups by invite are limited per address (30 a
 * minute), and this file makes more users than that.
 */
async function member(url: string, admin: string, email: string): Promise<string> {
  await ok(url, 'private/create_user', { email, password: 'user-password-1' }, admin);
  const token = (await ok(url, 'public/auth', { grant_type: 'password', username: email, password: 'user-password-1' })).access_token;
  await ok(url, 'private/deposit_collateral', { currency: 'BTC', amount: 100 }, token);
  return token;
}

interface Grant {
  access_token: string;
  refresh_token: string;
}

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

  test('a socket that refreshes its own token keeps streaming its private channels', async () => {
    const email = `refresh-self-${spec.kind}@example.com`;
    const owner = await userToken(srv.url, admin, email, { currency: 'BTC', amount: 100 });
    const channel = `user.orders.${m.name}.raw`;
    const ws = await WsClient.open(tg.ws);
    let grant = await ws.ok('public/auth', { grant_type: 'password', username: email, password: 'user-password-1' });
    await ws.ok('private/subscribe', { channels: [channel] });
    // each refresh voids the token the subscription was made with when it applies, and the socket
    // learns the successor only with the answer: a sweep may fall in between (ten chances here)
    for (let i = 0; i < 10; i++) grant = await ws.ok('public/auth', { grant_type: 'refresh_token', refresh_token: grant.refresh_token });
    // sweeps pass meanwhile: an order placed after several of them still reaches the socket
    await new Promise((resolve) => setTimeout(resolve, 10 * Number(SWEEP_MS)));
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: m.prices[0], type: 'limit', label: 'after-refresh' }, owner);
    await ws.until(() => ws.on(channel).some((x) => x.data.label === 'after-refresh'), DEADLINE_MS, 'the order after the refresh');
    await ok(srv.url, 'private/cancel_all', {}, owner);
    await ws.close();
  });

  for (const [form, revocation] of CASES) {
    test(`a socket authenticated by ${form} stops streaming private data after ${revocation} and gets 13009 on its next private call`, async () => {
      const email = `revoke-${spec.kind}-${n++}@example.com`;
      let owner = await member(srv.url, admin, email);
      const disable = revocation === 'user disable';
      const key = KEY_FORMS.has(form) ? await ok(srv.url, 'private/create_api_key', { scope: 'trade:read_write account:read', name: 'bot' }, owner) : null;
      const login = (): Promise<Grant> => ok(srv.url, 'public/auth', { grant_type: 'password', username: email, password: 'user-password-1' });
      const channels = [`user.orders.${m.name}.raw`, 'user.portfolio.btc'];

      // the socket under test, and the credential it holds
      const ws = await WsClient.open(tg.ws);
      let grant: Grant;
      const sub: Record<string, unknown> = { channels };
      if (form === 'password') grant = await ws.ok('public/auth', { grant_type: 'password', username: email, password: 'user-password-1' });
      else if (form === 'client_credentials') grant = await ws.ok('public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret });
      else if (form === 'client_signature') {
        const timestamp = Date.now();
        const signature = hmacSha256Hex(key.client_secret, `${timestamp}\n${email}\n`);
        grant = await ws.ok('public/auth', { grant_type: 'client_signature', client_id: key.client_id, timestamp, signature, nonce: email, data: '' });
      } else if (form === 'refresh_token') grant = await ws.ok('public/auth', { grant_type: 'refresh_token', refresh_token: (await login()).refresh_token });
      else if (form === 'access_token param') grant = await login();
      else grant = await ok(srv.url, 'public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret });
      if (PARAM_FORMS.has(form)) sub.access_token = grant.access_token;
      assert.deepEqual((await ws.ok('private/subscribe', sub)).sort(), [...channels].sort());

      // the control: the same user on a session of its own that no case revokes
      const control = await WsClient.open(tg.ws);
      if (revocation === 'password change') {
        const ck = await ok(srv.url, 'private/create_api_key', { scope: 'trade:read_write account:read', name: 'control' }, owner);
        await control.ok('public/auth', { grant_type: 'client_credentials', client_id: ck.client_id, client_secret: ck.client_secret });
      } else await control.auth(email);
      await control.ok('private/subscribe', { channels });

      let k = 0;
      const price = m.prices[0];
      /** Places an order over HTTP; true when the socket under test was sent its notification. */
      const reaches = async (): Promise<boolean> => {
        const label = `probe-${k++}`;
        await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price, type: 'limit', label }, owner);
        const seen = () => control.on(channels[0]).some((x) => x.data.label === label);
        await control.until(seen, DEADLINE_MS, `control sees ${label}`);
        // answered after anything the server had written to the socket before it
        await ws.ok('public/test', {});
        await ok(srv.url, 'private/cancel_all', {}, owner);
        return ws.on(channels[0]).some((x) => x.data.label === label);
      };
      assert.equal(await reaches(), true, 'the socket streams its user orders before the revocation');

      // user disable: another user, whose orders fill the disabled user's resting buy, and its socket
      const takerEmail = `taker-${email}`;
      const taker = disable ? await member(srv.url, admin, takerEmail) : '';
      const takerWs = disable ? await WsClient.open(tg.ws) : null;
      /** Sells into the resting buy; true when the socket under test was sent a notification. */
      const fills = async (): Promise<boolean> => {
        const label = `fill-${k++}`;
        const seen = ws.on(channels[0]).length;
        const sold = await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.1, price, type: 'limit', time_in_force: 'immediate_or_cancel', label }, taker);
        assert.equal(sold.order.filled_amount, 0.1, 'the probe fills the resting buy');
        await takerWs!.until(() => takerWs!.on(channels[0]).some((x) => x.data.label === label), DEADLINE_MS, `taker sees ${label}`);
        await ws.ok('public/test', {});
        return ws.on(channels[0]).length > seen;
      };
      const userId: number = (await ok(srv.url, 'private/get_account_summary', { currency: 'BTC', extended: true }, owner)).id;
      if (disable) {
        await takerWs!.auth(takerEmail);
        await takerWs!.ok('private/subscribe', { channels: [channels[0]] });
        await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 10, price, type: 'limit', label: 'resting' }, owner);
        assert.equal(await fills(), true, 'the socket streams the fills of its resting order before the revocation');
      }
      const probe = disable ? fills : reaches;

      if (revocation === 'logout') assert.equal((await rpc(srv.url, 'private/logout', {}, grant.access_token)).body.error, undefined);
      else if (revocation === 'refresh rotation') await ok(srv.url, 'public/auth', { grant_type: 'refresh_token', refresh_token: grant.refresh_token });
      else if (revocation === 'api key removal') await ok(srv.url, 'private/remove_api_key', { id: key.id }, owner);
      else if (revocation === 'api key disable') await ok(srv.url, 'private/disable_api_key', { id: key.id }, owner);
      else if (revocation === 'password change') {
        await ok(srv.url, 'private/change_password', { old_password: 'user-password-1', new_password: 'user-password-2' }, owner);
        // the owner's own session went with the others: the probes place orders on a new one
        owner = (await ok(srv.url, 'public/auth', { grant_type: 'password', username: email, password: 'user-password-2' })).access_token;
      } else await ok(srv.url, 'private/set_user_disabled', { user_id: userId, disabled: true }, admin);

      // within a sweep (however many probes that takes on a loaded machine), then for good
      const end = Date.now() + DEADLINE_MS;
      while (await probe()) assert.ok(Date.now() < end, `the socket still streams private data ${DEADLINE_MS} ms after ${revocation}`);
      const portfolio = [ws.on(channels[1]).length, control.on(channels[1]).length];
      assert.equal(await probe(), false, 'nor does it stream them later');
      assert.equal(await probe(), false, 'nor does it stream them later');
      if (disable) {
        // an administrator's deposit moves the disabled account; a fill after it is seen by the taker
        await ok(srv.url, 'private/deposit_collateral', { currency: 'BTC', amount: 1, user_id: userId }, admin);
        assert.equal(await probe(), false, 'nor after a deposit');
      } else {
        // a deposit moves the account: the control is sent a summary, the socket under test none
        await ok(srv.url, 'private/deposit_collateral', { currency: 'BTC', amount: 1 }, owner);
        await control.until(() => control.on(channels[1]).length > portfolio[1], DEADLINE_MS, 'a summary on the control after the cut');
        await ws.ok('public/test', {});
      }
      assert.equal(ws.on(channels[1]).length, portfolio[0], 'no portfolio after the cut either');

      const next = await ws.call('private/get_open_orders_by_instrument', PARAM_FORMS.has(form) ? { instrument_name: m.name, access_token: grant.access_token } : { instrument_name: m.name });
      assert.equal(next.error?.code, 13009, JSON.stringify(next));
      // a gateway answers private/subscribe itself: it refuses as the leader does
      const again = await ws.call('private/subscribe', sub);
      assert.equal(again.error?.code, 13009, JSON.stringify(again));
      if (disable) {
        // enabled again, the user's resting buy goes, so no later case's order meets it
        await ok(srv.url, 'private/set_user_disabled', { user_id: userId, disabled: false }, admin);
        await ok(srv.url, 'private/cancel_all', {}, (await login()).access_token);
        await takerWs!.close();
      }
      await Promise.all([ws.close(), control.close()]);
    });
  }
}

for (const spec of await wsTargets()) describe(spec.name, { skip: spec.skip }, () => suite(spec));
