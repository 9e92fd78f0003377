// Liquidation end to end (API.md 5.3): the admin moves the manual index until a short-call account is
// below maintenance margin; the background check (a journaled `liquidate` command per second) cancels
// its orders, refuses opening orders, waits flagged while the book has no asks, then buys the short
// back against resting liquidity and pays the insurance account.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cheapCall, nearDatedAtmCall, market, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 8000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe('liquidation through the API', () => {
  let server: TestServer;
  let url: string;
  let admin: string;
  let writer: string;
  let maker: string;
  let call: Market;
  let cheap: Market;
  let restingId: string;

  before(async () => {
    server = await startServer();
    url = server.url;
    admin = await adminToken(url);
    writer = await userToken(url, admin, 'writer@example.com', { currency: 'BTC', amount: 0.3 });
    const buyer = await userToken(url, admin, 'buyer@example.com', { currency: 'BTC', amount: 100 });
    maker = await userToken(url, admin, 'maker@example.com', { currency: 'BTC', amount: 100 });
    call = await nearDatedAtmCall(url);
    cheap = await cheapCall(url);
    const p = nearMark(call);
    await ok(url, 'private/buy', { instrument_name: call.name, amount: 1, price: p }, buyer);
    await ok(url, 'private/sell', { instrument_name: call.name, amount: 1, price: p }, writer);
    restingId = (await ok(url, 'private/buy', { instrument_name: cheap.name, amount: 0.1, price: cheap.prices[0] }, writer)).order.order_id;
  });

  after(async () => {
    await server?.stop();
  });

  it('cancels with autoliquidation, refuses opening orders, retries without liquidity, then buys the short back, credits insurance and leaves the account healthy', async () => {
    const ex = server.app.services.ex;
    const before = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, writer);
    assert.ok(before.equity >= before.maintenance_margin);
    const U = ex.indexPrice('BTC');
    await ok(url, 'private/set_index_price', { index_name: 'btc_usd', price: U * 1.25 }, admin);
    const breached = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, writer);
    assert.ok(breached.equity < breached.maintenance_margin, 'the rally puts the writer below maintenance margin');

    await until('the account to be flagged', async () => (await ok(url, 'private/get_account_summary', { currency: 'BTC' }, writer)).in_liquidation === true);
    assert.deepEqual(await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, writer), []);
    const cancelled = ex.usersByEmail.get('writer@example.com')!.orders.get(Number(restingId))!;
    assert.equal(cancelled.state, 'cancelled');
    assert.equal(cancelled.cancelReason, 'autoliquidation');
    const shown = await ok(url, 'private/get_order_state', { order_id: restingId }, writer);
    assert.equal(shown.order_state, 'cancelled');
    assert.equal(shown.cancel_reason, 'autoliquidation');

    const fresh = await market(url, call.inst);
    const opening = await rpc(url, 'private/sell', { instrument_name: cheap.name, amount: 0.1, price: cheap.prices[cheap.prices.length - 1] }, writer);
    assert.equal(opening.body.error.code, 10009);
    assert.equal(opening.body.error.data.reason, 'account_in_liquidation');

    // no asks: the check keeps retrying (journaled) and the account stays flagged
    const seqBefore = ex.seq;
    await until('a retry', () => ex.seq > seqBefore + 1, 4000);
    assert.equal((await ok(url, 'private/get_account_summary', { currency: 'BTC' }, writer)).in_liquidation, true);
    assert.equal(ex.system.insurance.BTC.balance, 0);

    // liquidity arrives
    await ok(url, 'private/sell', { instrument_name: call.name, amount: 2, price: nearMark(fresh) }, maker);
    await until('the liquidation to finish', async () => (await ok(url, 'private/get_account_summary', { currency: 'BTC' }, writer)).in_liquidation === false);

    const trades = (await ok(url, 'private/get_user_trades_by_currency', { currency: 'BTC', count: 100 }, writer)).trades;
    const liq = trades.filter((t: any) => t.order_type === 'liquidation');
    assert.ok(liq.length > 0);
    for (const t of liq) {
      assert.equal(t.liquidation, 'T');
      assert.equal(t.direction, 'buy');
      assert.equal(t.reduce_only, true);
      assert.equal(t.instrument_name, call.name);
    }
    // the liquidated side is the trade's, not the viewer's: the maker and the public see it too
    const liqIds = new Set(liq.map((t: any) => t.trade_id));
    const makers = (await ok(url, 'private/get_user_trades_by_currency', { currency: 'BTC', count: 100 }, maker)).trades.filter((t: any) => liqIds.has(t.trade_id));
    assert.equal(makers.length, liq.length);
    for (const t of makers) assert.equal(t.liquidation, 'T', 'the maker of a liquidation fill sees its taker was liquidated');
    const pub = (await ok(url, 'public/get_last_trades_by_instrument', { instrument_name: call.name, count: 100 })).trades;
    for (const t of pub) assert.equal(t.liquidation, liqIds.has(t.trade_id) ? 'T' : undefined, 'a public trade names a liquidated side only when there was one');
    const liqOrder = await ok(url, 'private/get_order_state', { order_id: liq[0].order_id }, writer);
    assert.equal(liqOrder.is_liquidation, true);
    assert.equal(liqOrder.reduce_only, true);
    assert.equal(liqOrder.time_in_force, 'immediate_or_cancel');
    const bought = liq.reduce((s: number, t: any) => s + t.amount, 0);
    assert.equal(ex.system.insurance.BTC.balance, Math.ceil(bought * 0.0019 * 1e8 - 1e-6));
    const pos = await ok(url, 'private/get_position', { instrument_name: call.name }, writer);
    assert.equal(Number((pos.size - bought).toFixed(8)), -1);
    const after = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, writer);
    assert.ok(after.equity >= after.maintenance_margin, `equity ${after.equity} < mm ${after.maintenance_margin}`);
    const c = ex.conservation().BTC;
    assert.equal(c.balances, c.expected);
    const state = await ok(url, 'private/get_state_hash', {}, admin);
    assert.equal(typeof state.state_hash, 'string');
  });
});
