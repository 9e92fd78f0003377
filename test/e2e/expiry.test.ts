// A series through expiry over HTTP with the test clock (API.md 7.1, 7.3, 8): the delivery price is
// the TWAP of the recorded index, positions settle at intrinsic value with the delivery fee,
// conservation holds, the instrument shows `delivered`, and the catalog lists the series that
// replaced it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../helpers/envelope.ts';
import { prepareExpiry, type ExpiryScenario } from '../helpers/expiry.ts';
import { market } from '../helpers/market.ts';
import { expirySchedule } from '../../src/market/catalog.ts';
import { adminToken, ok, rpc, startServer, type TestServer } from '../helpers/server.ts';

describe('expiry and settlement with the test clock', () => {
  let server: TestServer;
  let admin: string;
  let sc: ExpiryScenario;
  let before0: { buyer: number; seller: number; fees: number };
  let gtd: { instrument: string; orderId: string };

  const balances = () => {
    const ex = server.app.services.ex;
    return {
      buyer: ex.usersByEmail.get(sc.buyerEmail)!.accounts.BTC.balance,
      seller: ex.usersByEmail.get(sc.sellerEmail)!.accounts.BTC.balance,
      fees: ex.system.fees.BTC.balance,
    };
  };

  before(async () => {
    // tokens must outlive the hours the test clock jumps
    server = await startServer({ STRIKEBOOK_TEST_CLOCK: '1', STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000' });
    admin = await adminToken(server.url);
    sc = await prepareExpiry(server.url, admin);
    // a good-til-day order in a later series: it expires at the next 08:00 of the services clock
    const later = (await ok(server.url, 'public/get_instruments', { currency: 'BTC' })).find((i: any) => i.expiration_timestamp > sc.expiry && i.option_type === 'call');
    const lm = await market(server.url, later);
    const placed = await ok(server.url, 'private/buy', { instrument_name: later.instrument_name, amount: 0.1, price: lm.prices[0], time_in_force: 'good_til_day' }, sc.buyer);
    gtd = { instrument: later.instrument_name, orderId: placed.order.order_id };
    before0 = balances();
    const res = await ok(server.url, 'private/set_test_time', { timestamp: sc.expiry + 1_000 }, admin);
    assert.equal(res.timestamp, sc.expiry + 1_000);
  });
  after(() => server.stop());

  it('publishes the 30-minute TWAP of the recorded index as the delivery price', async () => {
    const r = await ok(server.url, 'public/get_delivery_prices', { index_name: 'btc_usd' });
    // an earlier (empty) expiry has its own record when the wall clock was within 45 min of it
    const date = new Date(sc.expiry).toISOString().slice(0, 10);
    assert.deepEqual(r.data.filter((d: any) => d.date === date), [{ date, delivery_price: sc.deliveryPrice }]);
    assert.equal(sc.deliveryPrice, 101_166.67);
  });

  it('credits the long and debits the short at intrinsic value, charging the delivery fee on the exercise', () => {
    const now = balances();
    assert.equal(now.buyer - before0.buyer, sc.buyerDelta);
    assert.equal(now.seller - before0.seller, sc.sellerDelta);
    assert.equal(now.fees - before0.fees, sc.deliveryFee + (-sc.sellerDelta - (sc.buyerDelta + sc.deliveryFee)));
    assert.equal(sc.deliveryFee, 15_000);
  });

  it('keeps every balance conserved and leaves no position in the delivered series', () => {
    const ex = server.app.services.ex;
    for (const [c, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
    const id = ex.instruments.get(sc.instrument)!.id;
    for (const u of ex.users.values()) assert.equal(u.positions.get(id)?.size ?? 0, 0);
  });

  it('shows the instrument delivered and inactive, with its delivery price on the book', async () => {
    const inst = await ok(server.url, 'public/get_instrument', { instrument_name: sc.instrument });
    assert.equal(inst.state, 'delivered');
    assert.equal(inst.is_active, false);
    const book = await ok(server.url, 'public/get_order_book', { instrument_name: sc.instrument });
    assert.equal(book.state, 'delivered');
    assert.equal(book.delivery_price, sc.deliveryPrice);
    assert.equal(book.settlement_price, Number((1 - 90_000 / sc.deliveryPrice).toFixed(8)));
    assertError(await rpc(server.url, 'private/buy', { instrument_name: sc.instrument, amount: 1, price: 0.1 }, sc.buyer), 10020);
  });

  it('lists the series that replaced the expired one and moves the delivered one to expired listings', async () => {
    const active = await ok(server.url, 'public/get_instruments', { currency: 'BTC' });
    assert.ok(!active.some((i: any) => i.expiration_timestamp === sc.expiry), 'the expired series is no longer active');
    const expiries = (await ok(server.url, 'public/get_expiration_timestamps', { currency: 'BTC' })).BTC as number[];
    // what the schedule wants now is listed; it is new unless it coincides with a listed expiry (the
    // daily that replaces a Wednesday's falls on Friday, already listed as the weekly)
    const wanted = expirySchedule(server.app.services.catalog, await ok(server.url, 'public/get_time')).map((e) => e.expiry);
    for (const e of wanted) assert.ok(expiries.includes(e), `the schedule's ${new Date(e).toISOString()} is listed (listed ${expiries})`);
    const fresh = wanted.filter((e) => !sc.expiriesBefore.includes(e));
    assert.deepEqual(fresh, expiries.filter((e) => !sc.expiriesBefore.includes(e)), 'what is new is what the schedule added');
    for (const e of fresh) {
      const series = active.filter((i: any) => i.expiration_timestamp === e);
      assert.ok(series.some((i: any) => i.option_type === 'call') && series.some((i: any) => i.option_type === 'put'));
      assert.ok(series.every((i: any) => i.creation_timestamp >= sc.expiry), 'listed after the expiry');
    }
    const expired = await ok(server.url, 'public/get_instruments', { currency: 'BTC', expired: true });
    assert.ok(expired.some((i: any) => i.instrument_name === sc.instrument));
  });

  it('expires good-til-day orders at the 08:00 the test clock passed', async () => {
    const open = await ok(server.url, 'private/get_open_orders_by_instrument', { instrument_name: gtd.instrument }, sc.buyer);
    assert.ok(!open.some((o: any) => o.order_id === gtd.orderId), 'the good-til-day order is no longer open');
    const order = server.app.services.ex.usersByEmail.get(sc.buyerEmail)!.orders.get(Number(gtd.orderId))!;
    assert.equal(order.state, 'cancelled');
    assert.equal(order.cancelReason, 'good_til_day');
  });

  it('refuses to move the test clock backwards, and refuses non-admins', async () => {
    assertError(await rpc(server.url, 'private/set_test_time', { timestamp: sc.expiry }, admin), 11029);
    assertError(await rpc(server.url, 'private/set_test_time', { timestamp: sc.expiry + 10_000 }, sc.buyer), 13021);
    assert.equal(await ok(server.url, 'public/get_time'), sc.expiry + 1_000);
  });
});

describe('the test clock outside test mode', () => {
  it('does not exist without STRIKEBOOK_TEST_CLOCK=1', async () => {
    const server = await startServer({ STRIKEBOOK_TEST_CLOCK: '0' });
    try {
      const admin = await adminToken(server.url);
      assertError(await rpc(server.url, 'private/set_test_time', { timestamp: Date.now() + 3_600_000 }, admin), -32601);
    } finally {
      await server.stop();
    }
  });
});
