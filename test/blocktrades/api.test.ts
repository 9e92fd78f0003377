// Block trades over HTTP and WebSocket (issue 34): one party signs (verify_block_trade), the other
// executes with that signature (execute_block_trade). A replayed signature, an altered amount, price
// or instrument, an invalidated or stale signature execute nothing; the legs show in both parties'
// trades and in the public trades with their block_trade_id, and in the trades channels.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, cheapCall, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

const MAKER = 'block-maker@example.com';
const TAKER = 'block-taker@example.com';

describe('block trades over HTTP and WebSocket', () => {
  let server: TestServer;
  let url: string;
  let maker: string;
  let other: string;
  let poor: string;
  let call: Market;
  let cheap: Market;
  let ws: WsClient;

  before(async () => {
    server = await startServer({ STRIKEBOOK_BLOCK_TRADE_MIN_BTC: '0.1', STRIKEBOOK_BLOCK_TRADE_SIGNATURE_TTL_MS: '60000' });
    url = server.url;
    const admin = await adminToken(url);
    maker = await userToken(url, admin, MAKER, { currency: 'BTC', amount: 10 });
    await userToken(url, admin, TAKER, { currency: 'BTC', amount: 10 });
    other = await userToken(url, admin, 'block-other@example.com', { currency: 'BTC', amount: 10 });
    poor = await userToken(url, admin, 'block-poor@example.com', { currency: 'BTC', amount: 0.01 });
    call = await atmCall(url);
    cheap = await cheapCall(url);
    ws = await WsClient.open(url);
    await ws.auth(TAKER);
  });

  after(async () => {
    await ws?.close();
    await server?.stop();
  });

  const agreement = async (nonce: string, amount = 1) => ({
    timestamp: await ok(url, 'public/get_time'),
    nonce,
    trades: [{ instrument_name: call.name, direction: 'sell', price: nearMark(call), amount }],
  });

  it('signs for the maker over HTTP and executes for the taker over WebSocket, once, only for the signed fields', async () => {
    const deal = await agreement('deal-1');
    const { signature } = await ok(url, 'private/verify_block_trade', { ...deal, role: 'maker' }, maker);
    assert.match(signature, /^\d+\.[0-9a-z]+\.[A-Za-z0-9_-]{43}$/);
    assert.equal(await ws.ok('private/simulate_block_trade', { role: 'taker', trades: deal.trades }), true);
    await ws.ok('private/subscribe', { channels: [`user.trades.${call.name}.raw`, `trades.${call.name}.raw`] });

    // altered amount, price, instrument, direction or nonce: not what the maker signed
    const leg = deal.trades[0]!;
    const altered = [
      { ...deal, trades: [{ ...leg, amount: 2 }] },
      { ...deal, trades: [{ ...leg, price: call.prices[call.prices.indexOf(leg.price) + 1] }] },
      { ...deal, trades: [{ ...leg, instrument_name: cheap.name, price: nearMark(cheap) }] },
      { ...deal, trades: [{ ...leg, direction: 'buy' }] },
      { ...deal, nonce: 'deal-1b' },
    ];
    for (const a of altered) {
      const r = await ws.call('private/execute_block_trade', { ...a, role: 'taker', counterparty_signature: signature });
      assert.equal(r.error?.code, 11029, JSON.stringify(r));
      assert.equal(r.error.data?.reason, 'block_trade_signature_invalid');
    }
    // the maker's own signature cannot be executed in the maker role (it signed the other side)
    const sameRole = await rpc(url, 'private/execute_block_trade', { ...deal, role: 'maker', counterparty_signature: signature }, other);
    assert.equal(sameRole.body.error?.data?.reason, 'block_trade_signature_invalid');

    const done = await ws.ok('private/execute_block_trade', { ...deal, role: 'taker', counterparty_signature: signature });
    assert.equal(typeof done.id, 'string');
    assert.equal(done.trades.length, 1);
    const t = done.trades[0];
    assert.equal(t.direction, 'buy', "the taker's side of a maker's sell");
    assert.equal(t.block_trade_id, done.id);
    assert.equal(t.amount, 1);
    assert.equal(t.price, leg.price);
    assert.ok(t.fee > 0);

    // replayed: refused, over either transport
    const again = await ws.call('private/execute_block_trade', { ...deal, role: 'taker', counterparty_signature: signature });
    assert.equal(again.error?.data?.reason, 'block_trade_already_executed');

    // both parties see it, each from its own side; another account does not
    const mine = await ok(url, 'private/get_block_trade', { id: done.id }, maker);
    assert.equal(mine.trades[0].direction, 'sell');
    assert.equal(mine.trades[0].trade_id, t.trade_id);
    assert.equal((await rpc(url, 'private/get_block_trade', { id: done.id }, other)).body.error?.code, 13020);
    const list = await ws.ok('private/get_block_trades', { currency: 'BTC' });
    assert.deepEqual(list.map((x: any) => x.id), [done.id]);
    const userTrades = await ok(url, 'private/get_user_trades_by_instrument', { instrument_name: call.name }, maker);
    assert.equal(userTrades.trades.find((x: any) => x.trade_id === t.trade_id)?.block_trade_id, done.id);
    const pub = await ok(url, 'public/get_last_trades_by_instrument', { instrument_name: call.name });
    const p = pub.trades.find((x: any) => x.trade_id === t.trade_id);
    assert.equal(p.block_trade_id, done.id);
    assert.equal(p.block_trade_leg_count, 1);
    const pos = await ok(url, 'private/get_position', { instrument_name: call.name }, maker);
    assert.equal(pos.size, -1);

    // the channels mark the leg as Deribit does
    await ws.until(() => ws.on(`user.trades.${call.name}.raw`).length > 0 && ws.on(`trades.${call.name}.raw`).length > 0, 5000, 'trade notifications');
    const own = ws.on(`user.trades.${call.name}.raw`).flatMap((n) => n.data as any[]);
    assert.equal(own.find((x) => x.trade_id === t.trade_id)?.block_trade_id, done.id);
    const pubNote = ws.on(`trades.${call.name}.raw`).flatMap((n) => n.data as any[]);
    assert.equal(pubNote.find((x) => x.trade_id === t.trade_id)?.block_trade_id, done.id);
  });

  it('refuses an invalidated signature, another account\'s invalidation and a stale timestamp', async () => {
    const deal = await agreement('deal-2');
    const { signature } = await ws.ok('private/verify_block_trade', { ...deal, role: 'taker' });
    // only its signer may invalidate it
    assert.equal((await rpc(url, 'private/invalidate_block_trade_signature', { signature }, maker)).body.error?.code, 13020);
    assert.equal(await ws.ok('private/invalidate_block_trade_signature', { signature }), 'ok');
    const r = await rpc(url, 'private/execute_block_trade', { ...deal, role: 'maker', counterparty_signature: signature }, maker);
    assert.equal(r.body.error?.data?.reason, 'block_trade_signature_invalidated');
    const stale = { ...deal, timestamp: deal.timestamp - 120_000 };
    const v = await rpc(url, 'private/verify_block_trade', { ...stale, role: 'maker' }, maker);
    assert.equal(v.body.error?.data?.reason, 'block_trade_timestamp_out_of_window');
    assert.equal((await rpc(url, 'private/execute_block_trade', { ...deal, role: 'maker', counterparty_signature: 'not-a-signature' }, maker)).body.error?.code, 11029);
  });

  it('says whether margin allows a side, and refuses a leg below the block minimum or outside the band', async () => {
    const short = [{ instrument_name: call.name, direction: 'buy', price: nearMark(call), amount: 5 }];
    // as taker, `poor` would sell 5 calls against 0.01 BTC
    assert.equal(await ok(url, 'private/simulate_block_trade', { role: 'taker', trades: short }, poor), false);
    assert.equal(await ok(url, 'private/simulate_block_trade', { role: 'taker', trades: short }, other), true);
    const deal = await agreement('deal-3');
    const poorSig = await rpc(url, 'private/verify_block_trade', { ...deal, trades: short, role: 'taker' }, poor);
    assert.equal(poorSig.body.error?.code, 10009);
    const tiny = await rpc(url, 'private/verify_block_trade', { ...deal, trades: [{ ...deal.trades[0], amount: 0.05 }], role: 'maker' }, maker);
    assert.equal(tiny.body.error?.code, 10021);
    const far = await rpc(url, 'private/verify_block_trade', { ...deal, trades: [{ ...deal.trades[0], price: 5 }], role: 'maker' }, maker);
    assert.equal(far.body.error?.code, 10007);
  });
});
