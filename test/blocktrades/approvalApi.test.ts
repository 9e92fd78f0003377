// Block trade approvals over HTTP and WebSocket (issue 34): an account that requires approval sees
// the block trades executed with it wait in get_block_trade_requests; approve_block_trade executes
// them, reject_block_trade closes them; block_trade_confirmations tells both parties (and no one
// else) of every change. Adversarial: the signature binds every field it signed (each one altered
// is refused), approval by the wrong party, after a rejection or after the signature's expiry is
// refused and executes nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, cheapCall, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

const MAKER = 'appr-maker@example.com';
const TAKER = 'appr-taker@example.com';
const THIRD = 'appr-third@example.com';

describe('block trade approvals over HTTP and WebSocket', () => {
  let server: TestServer;
  let url: string;
  let admin: string;
  let maker: string;
  let taker: string;
  let third: string;
  let call: Market;
  let cheap: Market;
  let wsTaker: WsClient;
  let wsMaker: WsClient;
  let wsThird: WsClient;

  before(async () => {
    server = await startServer({ STRIKEBOOK_BLOCK_TRADE_MIN_BTC: '0.1', STRIKEBOOK_BLOCK_TRADE_SIGNATURE_TTL_MS: '60000' });
    url = server.url;
    admin = await adminToken(url);
    maker = await userToken(url, admin, MAKER, { currency: 'BTC', amount: 10 });
    taker = await userToken(url, admin, TAKER, { currency: 'BTC', amount: 10 });
    third = await userToken(url, admin, THIRD, { currency: 'BTC', amount: 10 });
    call = await atmCall(url);
    cheap = await cheapCall(url);
    wsTaker = await WsClient.open(url);
    await wsTaker.auth(TAKER);
    wsMaker = await WsClient.open(url);
    await wsMaker.auth(MAKER);
    wsThird = await WsClient.open(url);
    await wsThird.auth(THIRD);
    await wsTaker.ok('private/subscribe', { channels: ['block_trade_confirmations'] });
    await wsMaker.ok('private/subscribe', { channels: ['block_trade_confirmations.BTC', 'block_trade_confirmations.ETH'] });
    await wsThird.ok('private/subscribe', { channels: ['block_trade_confirmations'] });
  });

  after(async () => {
    for (const w of [wsTaker, wsMaker, wsThird]) await w?.close();
    await server?.stop();
  });

  const agreement = async (nonce: string, amount = 1) => ({
    timestamp: await ok(url, 'public/get_time'),
    nonce,
    trades: [{ instrument_name: call.name, direction: 'sell', price: nearMark(call), amount }],
  });
  /** The maker signs, the taker executes: held while the taker requires approval. */
  const held = async (nonce: string) => {
    const deal = await agreement(nonce);
    const { signature } = await ok(url, 'private/verify_block_trade', { ...deal, role: 'maker' }, maker);
    const r = await ok(url, 'private/execute_block_trade', { ...deal, role: 'taker', counterparty_signature: signature }, taker);
    assert.equal(r.state, 'waiting_for_approval');
    assert.deepEqual(r.trades, []);
    return deal;
  };
  const position = async (token: string) => (await ok(url, 'private/get_positions', { currency: 'BTC' }, token)).find((p: any) => p.instrument_name === call.name)?.size ?? 0;

  it('holds a block trade until its account approves, then executes it once, and tells both parties', async () => {
    assert.equal(await wsTaker.ok('private/set_block_trade_approval', { enabled: true }), 'ok');
    assert.deepEqual(await ok(url, 'private/get_block_trade_approval', {}, taker), { enabled: true });
    const before = await position(taker);
    const deal = await held('appr-1');
    assert.equal(await position(taker), before, 'nothing executed while waiting');
    const reqs = await ok(url, 'private/get_block_trade_requests', {}, taker);
    const mine = reqs.find((r: any) => r.nonce === 'appr-1');
    assert.equal(mine.role, 'taker');
    assert.equal(mine.state.value, 'initial');
    assert.equal(mine.counterparty_state.value, 'accepted');
    assert.equal(mine.username, MAKER);
    assert.equal(mine.trades[0].instrument_name, call.name);
    assert.equal(mine.trades[0].direction, 'sell');
    assert.equal(mine.trades[0].amount, 1);
    const theirs = (await ok(url, 'private/get_block_trade_requests', {}, maker)).find((r: any) => r.nonce === 'appr-1');
    assert.equal(theirs.role, 'maker');
    assert.equal(theirs.state.value, 'accepted');
    assert.equal(theirs.counterparty_state.value, 'initial');
    assert.deepEqual(await ok(url, 'private/get_block_trade_requests', {}, third), []);

    // the wrong party: the maker (it needs no approval) or a third account
    const byMaker = await rpc(url, 'private/approve_block_trade', { timestamp: deal.timestamp, nonce: 'appr-1', role: 'maker' }, maker);
    assert.equal(byMaker.body.error?.data?.reason, 'block_trade_request_not_waiting');
    const byThird = await rpc(url, 'private/approve_block_trade', { timestamp: deal.timestamp, nonce: 'appr-1', role: 'taker' }, third);
    assert.equal(byThird.body.error?.code, 13020);
    assert.equal(await position(taker), before);

    assert.equal(await wsTaker.ok('private/approve_block_trade', { timestamp: deal.timestamp, nonce: 'appr-1', role: 'taker' }), 'ok');
    assert.equal(await position(taker), before + 1);
    const again = await rpc(url, 'private/approve_block_trade', { timestamp: deal.timestamp, nonce: 'appr-1', role: 'taker' }, taker);
    assert.equal(again.body.error?.data?.reason, 'block_trade_already_executed');
    assert.equal(await position(taker), before + 1);
    const done = (await ok(url, 'private/get_block_trade_requests', {}, taker)).find((r: any) => r.nonce === 'appr-1');
    assert.equal(done.state.value, 'executed');
    const trades = await ok(url, 'private/get_block_trades', { currency: 'BTC' }, taker);
    assert.equal(trades[0].id, done.block_trade_id);

    // block_trade_confirmations: made (initial) then executed, to both parties; nothing to the third
    const states = (w: WsClient, ch: string) => w.on(ch).filter((n) => n.data.nonce === 'appr-1').map((n) => `${n.data.state.value}/${n.data.counterparty_state.value}`);
    await wsTaker.until(() => states(wsTaker, 'block_trade_confirmations').length >= 2, 5000, 'taker confirmations');
    assert.deepEqual(states(wsTaker, 'block_trade_confirmations'), ['initial/accepted', 'executed/executed']);
    await wsMaker.until(() => states(wsMaker, 'block_trade_confirmations.BTC').length >= 2, 5000, 'maker confirmations');
    assert.deepEqual(states(wsMaker, 'block_trade_confirmations.BTC'), ['accepted/initial', 'executed/executed']);
    assert.equal(wsMaker.on('block_trade_confirmations.ETH').length, 0, 'another currency: nothing');
    const note = wsTaker.on('block_trade_confirmations')[0]!.data;
    for (const k of ['nonce', 'timestamp', 'trades', 'username', 'role', 'user_id', 'state', 'counterparty_state']) assert.ok(k in note, k);
    assert.equal(wsThird.on('block_trade_confirmations').length, 0, 'private to the parties');
  });

  it('never executes a rejected request: approve after reject is refused', async () => {
    const before = await position(taker);
    const deal = await held('appr-2');
    assert.equal(await ok(url, 'private/reject_block_trade', { timestamp: deal.timestamp, nonce: 'appr-2', role: 'taker' }, taker), 'ok');
    const r = await rpc(url, 'private/approve_block_trade', { timestamp: deal.timestamp, nonce: 'appr-2', role: 'taker' }, taker);
    assert.equal(r.body.error?.data?.reason, 'block_trade_request_rejected');
    assert.equal(await position(taker), before);
    const seen = (await ok(url, 'private/get_block_trade_requests', {}, maker)).find((x: any) => x.nonce === 'appr-2');
    assert.equal(seen.counterparty_state.value, 'rejected');
    await wsMaker.until(() => wsMaker.on('block_trade_confirmations.BTC').some((n) => n.data.nonce === 'appr-2' && n.data.counterparty_state.value === 'rejected'), 5000, 'rejection notified');
    // the same signature executed again: still the rejected agreement
    const sig = await ok(url, 'private/verify_block_trade', { ...deal, role: 'maker' }, maker);
    const re = await rpc(url, 'private/execute_block_trade', { ...deal, role: 'taker', counterparty_signature: sig.signature }, taker);
    assert.equal(re.body.error?.data?.reason, 'block_trade_already_requested');
  });

  it('refuses every field the signature did not sign, and executes the signed agreement once', async () => {
    await ok(url, 'private/set_block_trade_approval', { enabled: false }, taker);
    const deal = await agreement('sig-1');
    const { signature } = await ok(url, 'private/verify_block_trade', { ...deal, role: 'maker' }, maker);
    const [expiry, signer, mac] = signature.split('.');
    const leg = deal.trades[0]!;
    const altered: Array<[string, Record<string, unknown>]> = [
      ['amount', { ...deal, trades: [{ ...leg, amount: 2 }] }],
      ['price', { ...deal, trades: [{ ...leg, price: call.prices[call.prices.indexOf(leg.price) + 1] }] }],
      ['instrument', { ...deal, trades: [{ ...leg, instrument_name: cheap.name, price: nearMark(cheap) }] }],
      ['direction', { ...deal, trades: [{ ...leg, direction: 'buy' }] }],
      ['an added leg', { ...deal, trades: [leg, { instrument_name: cheap.name, direction: 'sell', price: nearMark(cheap), amount: 1 }] }],
      ['nonce', { ...deal, nonce: 'sig-1x' }],
      ['timestamp', { ...deal, timestamp: deal.timestamp + 1 }],
      ['role', { ...deal, role: 'maker' }],
    ];
    for (const [what, a] of altered) {
      const r = await rpc(url, 'private/execute_block_trade', { role: 'taker', ...a, counterparty_signature: signature }, taker);
      assert.equal(r.body.error?.data?.reason, 'block_trade_signature_invalid', `${what}: ${JSON.stringify(r.body)}`);
    }
    // the signature's own text: a later expiry, another signer, another MAC
    for (const [what, sig] of [
      ['expiry', `${Number(expiry) + 60_000}.${signer}.${mac}`],
      ['signer', `${expiry}.${(parseInt(signer!, 36) + 1).toString(36)}.${mac}`],
      ['mac', `${expiry}.${signer}.${mac!.slice(0, -1)}${mac!.endsWith('A') ? 'B' : 'A'}`],
    ]) {
      const r = await rpc(url, 'private/execute_block_trade', { ...deal, role: 'taker', counterparty_signature: sig }, taker);
      assert.equal(r.body.error?.data?.reason, 'block_trade_signature_invalid', `${what}: ${JSON.stringify(r.body)}`);
    }
    const before = await position(taker);
    const done = await ok(url, 'private/execute_block_trade', { ...deal, role: 'taker', counterparty_signature: signature }, taker);
    assert.equal(done.trades.length, 1);
    const twice = await rpc(url, 'private/execute_block_trade', { ...deal, role: 'taker', counterparty_signature: signature }, taker);
    assert.equal(twice.body.error?.data?.reason, 'block_trade_already_executed');
    // the maker's signature executed by a third account: signed for the agreement with anyone, once
    const third1 = await rpc(url, 'private/execute_block_trade', { ...deal, role: 'taker', counterparty_signature: signature }, third);
    assert.equal(third1.body.error?.data?.reason, 'block_trade_already_executed');
    assert.equal(await position(taker), before + 1);
  });

  it("refuses an approval after the signature's expiry (this test moves the clock: last)", async () => {
    await ok(url, 'private/set_block_trade_approval', { enabled: true }, taker);
    const before = await position(taker);
    const deal = await held('appr-3');
    await ok(url, 'private/set_test_time', { timestamp: deal.timestamp + 60_001 }, admin);
    const r = await rpc(url, 'private/approve_block_trade', { timestamp: deal.timestamp, nonce: 'appr-3', role: 'taker' }, taker);
    assert.equal(r.body.error?.data?.reason, 'block_trade_signature_expired');
    assert.equal(await position(taker), before);
  });
});
