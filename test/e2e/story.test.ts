// The whole story through real HTTP against a started server: an administrator is bootstrapped,
// invites two users, they deposit, trade a call with each other, query their orders and trades,
// cancel, and hit the funds limits. Balances and positions are read from the engine directly.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, assertOk } from '../helpers/envelope.ts';
import { atmCall, cheapCall, market, nearMark, onGrid, twinPut, type Market } from '../helpers/market.ts';
import { BOOTSTRAP, login, ok, rpc, startServer, type TestServer } from '../helpers/server.ts';
import { parseOrderId } from '../../src/api/render.ts';

const ADMIN_EMAIL = 'root@example.com';
const ADMIN_PW = 'root-password-1';
const PW = 'user-password-1';
const COIN = 1e8;

/** Fee by hand (API.md 3.3): amount x min(0.0003, 0.125 x price), rounded up to 1e-8, in 1e-8. */
function feeMinor(amount: number, price: number): number {
  const a8 = BigInt(Math.round(amount * 1e8));
  const p4 = BigInt(Math.round(price * 1e4));
  // min(0.0003, p4/8e4) = min(24, p4) / 8e4 coin per contract; x a8/1e8 contracts; x 1e8 minor
  const num = a8 * (p4 < 24n ? p4 : 24n);
  const den = 80000n;
  return Number((num + den - 1n) / den);
}

/** Premium in minor units: price x amount (contract size 1), exact. */
function premiumMinor(amount: number, price: number): number {
  return Number((BigInt(Math.round(amount * 1e8)) * BigInt(Math.round(price * 1e4))) / 10000n);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ids = (orders: any[]) => orders.map((o) => o.order_id);
const tradeIds = (trades: any[]) => trades.map((t) => t.trade_id);

describe('the Strikebook story over HTTP', () => {
  let server: TestServer;
  let url: string;
  let admin: string;
  let adminId: number;
  let code: string;
  const A = { id: 0, token: '', email: 'alice@example.com' };
  const B = { id: 0, token: '', email: 'bob@example.com' };
  let atm: Market;
  let cheap: Market;
  let put: Market;
  let ethCall: Market;
  let pA: number;
  let pCheap: number;
  let sellA: any;
  let putBuy: any;
  let ethBuy: any;
  let cheapSell: any;
  const bOrders: any[] = [];
  /** B's trades T1..T4 as B sees them. */
  const T: any[] = [];

  const user = (id: number) => server.app.services.ex.users.get(id)!;

  before(async () => {
    server = await startServer();
    url = server.url;
  });
  after(() => server.stop());

  it('bootstraps the first administrator with the bootstrap token', async () => {
    const r = await rpc(url, 'private/create_admin', { email: ADMIN_EMAIL, password: ADMIN_PW, bootstrap_token: BOOTSTRAP });
    const res = assertOk(r);
    assert.equal(res.email, ADMIN_EMAIL);
    assert.equal(res.role, 'admin');
    assert.ok(Number.isInteger(res.user_id));
    assert.ok(Number.isInteger(res.creation_timestamp));
    adminId = res.user_id;
    admin = await login(url, ADMIN_EMAIL, ADMIN_PW);
  });

  it('generates an invite code that verification reports valid without consuming it', async () => {
    const inv = await ok(url, 'private/generate_invite_code', { max_uses: 2, note: 'story' }, admin);
    code = inv.code;
    // at least 128 bits in a URL-safe alphabet: 22+ base64url characters
    assert.match(code, /^[A-Za-z0-9_-]{22,}$/);
    assert.equal(inv.max_uses, 2);
    assert.equal(inv.uses, 0);
    assert.equal(inv.note, 'story');
    assert.equal(inv.created_by, adminId);
    assert.equal(inv.expires_at, inv.creation_timestamp + 604800 * 1000);
    for (let i = 0; i < 3; i++) {
      const v = await ok(url, 'public/verify_invite_code', { code });
      assert.deepEqual(v, { code, valid: true, reason: null, uses_left: 2, expires_at: inv.expires_at });
    }
    const unknown = await ok(url, 'public/verify_invite_code', { code: 'no-such-code-0000000000' });
    assert.equal(unknown.valid, false);
    assert.equal(unknown.reason, 'unknown');
  });

  it('signs two users up with the code, after which the code is exhausted', async () => {
    const a = await ok(url, 'private/create_user', { email: A.email, password: PW, invite_code: code });
    const b = await ok(url, 'private/create_user', { email: B.email, password: PW, invite_code: code });
    assert.deepEqual([a.role, b.role], ['user', 'user']);
    assert.deepEqual([a.email, b.email], [A.email, B.email]);
    assert.notEqual(a.user_id, b.user_id);
    A.id = a.user_id;
    B.id = b.user_id;
    const v = await ok(url, 'public/verify_invite_code', { code });
    assert.equal(v.valid, false);
    assert.equal(v.reason, 'exhausted');
    assert.equal(v.uses_left, 0);
    const third = await rpc(url, 'private/create_user', { email: 'carol@example.com', password: PW, invite_code: code });
    assertError(third, 11029, { reason: 'invite_code_exhausted', param: 'invite_code' });
  });

  it('admits exactly one of two concurrent sign-ups with a single-use code', async () => {
    const single = (await ok(url, 'private/generate_invite_code', {}, admin)).code;
    const before = server.app.services.ex.users.size;
    const [r1, r2] = await Promise.all([
      rpc(url, 'private/create_user', { email: 'race1@example.com', password: PW, invite_code: single }),
      rpc(url, 'private/create_user', { email: 'race2@example.com', password: PW, invite_code: single }),
    ]);
    const wins = [r1, r2].filter((r) => r.body.result);
    const losses = [r1, r2].filter((r) => r.body.error);
    assert.equal(wins.length, 1, 'one sign-up succeeds');
    assert.equal(losses.length, 1, 'the other fails');
    assertError(losses[0], 11029, { reason: 'invite_code_exhausted' });
    assert.equal(server.app.services.ex.users.size, before + 1, 'exactly one user was created');
    assert.equal(server.app.services.ex.auth.invites.get(single)!.uses, 1);
  });

  it('logs both users in and credits their deposits', async () => {
    for (const u of [A, B]) {
      const t = await ok(url, 'public/auth', { grant_type: 'password', username: u.email, password: PW });
      assert.equal(t.token_type, 'bearer');
      assert.equal(t.expires_in, 3600);
      assert.equal(typeof t.refresh_token, 'string');
      assert.match(t.scope, /trade:read_write/);
      u.token = t.access_token;
      const d = await ok(url, 'private/deposit_collateral', { currency: 'BTC', amount: 10 }, u.token);
      assert.equal(d.user_id, u.id);
      assert.equal(d.currency, 'BTC');
      assert.equal(d.amount, 10);
      assert.equal(d.balance, 10);
      assert.equal(user(u.id).accounts.BTC.balance, 10 * COIN);
    }
    const eth = await ok(url, 'private/deposit_collateral', { currency: 'ETH', amount: 25.5 }, A.token);
    assert.equal(eth.balance, 25.5);
  });

  it('rests user A\'s sell of a call at a price on the tick grid inside the band', async () => {
    atm = await atmCall(url);
    cheap = await cheapCall(url);
    put = await twinPut(url, atm);
    ethCall = await atmCall(url, 'ETH');
    pA = nearMark(atm);
    assert.ok(onGrid(atm.inst, pA) && pA >= atm.book.min_price && pA <= atm.book.max_price);
    const r = await ok(url, 'private/sell', { instrument_name: atm.name, amount: 1, price: pA, label: 'story' }, A.token);
    sellA = r.order;
    assert.deepEqual(r.trades, []);
    assert.equal(sellA.order_state, 'open');
    assert.equal(sellA.direction, 'sell');
    assert.equal(sellA.amount, 1);
    assert.equal(sellA.filled_amount, 0);
    assert.equal(sellA.price, pA);
    assert.equal(sellA.label, 'story');
    assert.equal(sellA.instrument_name, atm.name);
    const book = await ok(url, 'public/get_order_book', { instrument_name: atm.name });
    assert.deepEqual(book.asks, [[pA, 1]]);
  });

  it('lists open orders to their owner by currency, instrument, side and instrument summary', async () => {
    putBuy = (await ok(url, 'private/buy', { instrument_name: put.name, amount: 0.2, price: put.prices[0] }, A.token)).order;
    ethBuy = (await ok(url, 'private/buy', { instrument_name: ethCall.name, amount: 2, price: ethCall.prices[0] }, A.token)).order;
    const q = (m: string, p: Record<string, unknown>, t = A.token) => ok(url, m, p, t);

    assert.deepEqual(ids(await q('private/get_open_orders_by_currency', { currency: 'BTC' })), [sellA.order_id, putBuy.order_id]);
    assert.deepEqual(ids(await q('private/get_open_orders_by_currency', { currency: 'ETH' })), [ethBuy.order_id]);
    assert.deepEqual(await q('private/get_open_orders_by_currency', { currency: 'USDC' }), []);
    // Deribit filters: options are the only kind, limit orders the only resting type
    assert.deepEqual(ids(await q('private/get_open_orders_by_currency', { currency: 'BTC', kind: 'option', type: 'limit' })), [sellA.order_id, putBuy.order_id]);
    assert.deepEqual(ids(await q('private/get_open_orders_by_currency', { currency: 'BTC', kind: 'any', type: 'all' })), [sellA.order_id, putBuy.order_id]);
    assert.deepEqual(await q('private/get_open_orders_by_currency', { currency: 'BTC', kind: 'future' }), []);
    assert.deepEqual(await q('private/get_open_orders_by_currency', { currency: 'BTC', type: 'stop_all' }), []);
    assert.deepEqual(await q('private/get_open_orders_by_instrument', { instrument_name: atm.name, type: 'trigger_all' }), []);

    const byInst = await q('private/get_open_orders_by_instrument', { instrument_name: atm.name });
    assert.deepEqual(byInst, [sellA]);
    assert.deepEqual(ids(await q('private/get_open_orders_by_instrument', { instrument_name: put.name })), [putBuy.order_id]);
    assert.deepEqual(await q('private/get_open_orders_by_instrument', { instrument_name: cheap.name }), []);

    assert.deepEqual(ids(await q('private/get_open_orders_by_side', { side: 'sell' })), [sellA.order_id]);
    assert.deepEqual(ids(await q('private/get_open_orders_by_side', { side: 'buy' })), [putBuy.order_id, ethBuy.order_id]);
    assert.deepEqual(ids(await q('private/get_open_orders_by_side', { side: 'buy', currency: 'BTC' })), [putBuy.order_id]);
    assert.deepEqual(ids(await q('private/get_open_orders_by_side', { side: 'buy', instrument_name: ethCall.name })), [ethBuy.order_id]);
    assert.deepEqual(await q('private/get_open_orders_by_side', { side: 'sell', instrument_name: put.name }), []);

    const summary = await q('private/get_open_orders_instrument_by_currency', { currency: 'BTC' });
    assert.deepEqual(
      summary.map((r: any) => r.instrument_name),
      [atm.name, put.name].sort(),
      'one row per instrument, sorted by name',
    );
    const rowAtm = summary.find((r: any) => r.instrument_name === atm.name);
    assert.deepEqual({ ...rowAtm, orders: ids(rowAtm.orders) }, { instrument_name: atm.name, buy_orders: 0, sell_orders: 1, buy_amount: 0, sell_amount: 1, orders: [sellA.order_id] });
    const rowPut = summary.find((r: any) => r.instrument_name === put.name);
    assert.deepEqual({ ...rowPut, orders: ids(rowPut.orders) }, { instrument_name: put.name, buy_orders: 1, sell_orders: 0, buy_amount: 0.2, sell_amount: 0, orders: [putBuy.order_id] });

    // user B has no open orders and sees none of A's
    for (const [m, p] of [
      ['private/get_open_orders_by_currency', { currency: 'BTC' }],
      ['private/get_open_orders_by_instrument', { instrument_name: atm.name }],
      ['private/get_open_orders_by_side', { side: 'sell' }],
      ['private/get_open_orders_instrument_by_currency', { currency: 'BTC' }],
    ] as const) {
      assert.deepEqual(await q(m, p, B.token), [], `${m} for B`);
    }
  });

  it('fills user B\'s buy at the maker\'s price in exactly one trade, with the fees computed by hand', async () => {
    const i = atm.prices.indexOf(pA);
    const pB = atm.prices[i + 2];
    assert.ok(pB > pA);
    const r = await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.4, price: pB }, B.token);
    assert.equal(r.trades.length, 1, 'exactly one trade');
    const t = r.trades[0];
    assert.equal(t.price, pA, 'at the maker price');
    assert.equal(t.amount, 0.4);
    assert.equal(t.direction, 'buy');
    assert.equal(t.liquidity, 'T');
    assert.equal(t.order_id, r.order.order_id);
    assert.equal(t.instrument_name, atm.name);
    assert.equal(t.fee_currency, 'BTC');
    assert.equal(t.fee, feeMinor(0.4, pA) / COIN);
    assert.equal(r.order.order_state, 'filled');
    assert.equal(r.order.filled_amount, 0.4);
    assert.equal(r.order.average_price, pA);
    assert.equal(r.order.commission, feeMinor(0.4, pA) / COIN);
    bOrders.push(r.order);
    T.push(t);

    const makerView = await ok(url, 'private/get_user_trades_by_order', { order_id: sellA.order_id }, A.token);
    assert.equal(makerView.length, 1);
    assert.equal(makerView[0].trade_id, t.trade_id);
    assert.equal(makerView[0].liquidity, 'M');
    assert.equal(makerView[0].direction, 'sell');
    assert.equal(makerView[0].fee, feeMinor(0.4, pA) / COIN);
    const book = await ok(url, 'public/get_order_book', { instrument_name: atm.name });
    assert.deepEqual(book.asks, [[pA, 0.6]]);
    assert.equal(book.last_price, pA);
  });

  it('trades again at distinct times, including a cheap call where the 12.5% fee cap applies', async () => {
    for (const amount of [0.1, 0.2]) {
      await sleep(5);
      const r = await ok(url, 'private/buy', { instrument_name: atm.name, amount, price: pA }, B.token);
      assert.equal(r.trades.length, 1);
      assert.equal(r.trades[0].fee, feeMinor(amount, pA) / COIN);
      bOrders.push(r.order);
      T.push(r.trades[0]);
    }
    pCheap = cheap.prices.find((p) => p >= 0.001 && p < 0.0024) ?? cheap.prices[0];
    assert.ok(pCheap < 0.0024, 'the fee cap binds below 0.0024');
    cheapSell = (await ok(url, 'private/sell', { instrument_name: cheap.name, amount: 0.5, price: pCheap }, A.token)).order;
    await sleep(5);
    const r = await ok(url, 'private/buy', { instrument_name: cheap.name, amount: 0.5, price: pCheap }, B.token);
    assert.equal(r.trades.length, 1);
    const capped = feeMinor(0.5, pCheap);
    assert.equal(capped, Math.ceil(0.5 * 0.125 * pCheap * COIN - 1e-6));
    assert.ok(capped < feeMinor(0.5, 1), 'lower than the 0.0003 commission');
    assert.equal(r.trades[0].fee, capped / COIN);
    bOrders.push(r.order);
    T.push(r.trades[0]);
    assert.deepEqual(new Set(T.map((t) => t.trade_id)).size, 4);
    for (let k = 1; k < T.length; k++) assert.ok(T[k].timestamp > T[k - 1].timestamp, 'distinct, increasing timestamps');
  });

  it('moves the premium from buyer to seller, charges both fees and opens opposite positions', () => {
    const fills: [number, number][] = [[0.4, pA], [0.1, pA], [0.2, pA], [0.5, pCheap]];
    const premium = fills.reduce((s, [a, p]) => s + premiumMinor(a, p), 0);
    const fees = fills.reduce((s, [a, p]) => s + feeMinor(a, p), 0);
    assert.equal(user(A.id).accounts.BTC.balance, 10 * COIN + premium - fees, 'seller: +premium - maker fees');
    assert.equal(user(B.id).accounts.BTC.balance, 10 * COIN - premium - fees, 'buyer: -premium - taker fees');
    assert.equal(server.app.services.ex.system.fees.BTC.balance, 2 * fees, 'fees reach the fee account');

    const ex = server.app.services.ex;
    const lot = atm.inst.min_trade_amount;
    const pos = (u: number, m: Market) => (user(u).positions.get(ex.instruments.get(m.name)!.id)?.size ?? 0) * lot;
    assert.equal(Math.round(pos(A.id, atm) * 10) / 10, -0.7);
    assert.equal(Math.round(pos(B.id, atm) * 10) / 10, 0.7);
    assert.equal(Math.round(pos(A.id, cheap) * 10) / 10, -0.5);
    assert.equal(Math.round(pos(B.id, cheap) * 10) / 10, 0.5);
    for (const c of Object.values(ex.conservation())) assert.equal(c.balances, c.expected, 'balances sum to deposits - withdrawals');
  });

  it('answers every user-trade query with the right trades, paging and sorting', async () => {
    const q = (m: string, p: Record<string, unknown>, t = B.token) => ok(url, m, p, t);
    const [t1, t2, t3, t4] = T;
    const tid = (r: any) => tradeIds(r.trades);

    // by currency: default desc, count pages with has_more
    let r = await q('private/get_user_trades_by_currency', { currency: 'BTC' });
    assert.deepEqual(tid(r), [t4, t3, t2, t1].map((t) => t.trade_id));
    assert.equal(r.has_more, false);
    assert.deepEqual(r.trades[3], t1, 'the same user trade object as the order reply');
    r = await q('private/get_user_trades_by_currency', { currency: 'BTC', count: 2 });
    assert.deepEqual(tid(r), [t4.trade_id, t3.trade_id]);
    assert.equal(r.has_more, true);
    r = await q('private/get_user_trades_by_currency', { currency: 'BTC', count: 4 });
    assert.equal(r.has_more, false);
    r = await q('private/get_user_trades_by_currency', { currency: 'BTC', count: 3, sorting: 'asc' });
    assert.deepEqual(tid(r), [t1, t2, t3].map((t) => t.trade_id));
    assert.equal(r.has_more, true);
    r = await q('private/get_user_trades_by_currency', { currency: 'BTC', sorting: 'desc', start_id: t2.trade_id, end_id: t3.trade_id });
    assert.deepEqual(tid(r), [t3.trade_id, t2.trade_id]);
    r = await q('private/get_user_trades_by_currency', { currency: 'ETH' });
    assert.deepEqual(r, { trades: [], has_more: false });
    r = await q('private/get_user_trades_by_currency', { currency: 'BTC', kind: 'option', count: 1 });
    assert.deepEqual(tid(r), [t4.trade_id]);
    r = await q('private/get_user_trades_by_currency', { currency: 'BTC', kind: 'future' });
    assert.deepEqual(r, { trades: [], has_more: false });
    r = await q('private/get_user_trades_by_currency_and_time', { currency: 'BTC', kind: 'spot', start_timestamp: 0 });
    assert.deepEqual(r, { trades: [], has_more: false });

    // by currency and time (inclusive range; end defaults to now)
    r = await q('private/get_user_trades_by_currency_and_time', { currency: 'BTC', start_timestamp: t2.timestamp, end_timestamp: t3.timestamp });
    assert.deepEqual(tid(r), [t3.trade_id, t2.trade_id]);
    r = await q('private/get_user_trades_by_currency_and_time', { currency: 'BTC', start_timestamp: t2.timestamp });
    assert.deepEqual(tid(r), [t4, t3, t2].map((t) => t.trade_id));
    r = await q('private/get_user_trades_by_currency_and_time', { currency: 'BTC', start_timestamp: 0, count: 1, sorting: 'asc' });
    assert.deepEqual(tid(r), [t1.trade_id]);
    assert.equal(r.has_more, true);
    r = await q('private/get_user_trades_by_currency_and_time', { currency: 'BTC', start_timestamp: t4.timestamp + 1 });
    assert.deepEqual(r, { trades: [], has_more: false });

    // by instrument (with trade_seq range)
    r = await q('private/get_user_trades_by_instrument', { instrument_name: atm.name });
    assert.deepEqual(tid(r), [t3, t2, t1].map((t) => t.trade_id));
    assert.equal(r.has_more, false);
    r = await q('private/get_user_trades_by_instrument', { instrument_name: atm.name, count: 1, sorting: 'asc' });
    assert.deepEqual(tid(r), [t1.trade_id]);
    assert.equal(r.has_more, true);
    r = await q('private/get_user_trades_by_instrument', { instrument_name: atm.name, start_seq: t2.trade_seq, sorting: 'asc' });
    assert.deepEqual(tid(r), [t2.trade_id, t3.trade_id]);
    r = await q('private/get_user_trades_by_instrument', { instrument_name: cheap.name });
    assert.deepEqual(tid(r), [t4.trade_id]);
    r = await q('private/get_user_trades_by_instrument', { instrument_name: put.name });
    assert.deepEqual(r, { trades: [], has_more: false });

    // by instrument and time
    r = await q('private/get_user_trades_by_instrument_and_time', { instrument_name: atm.name, start_timestamp: t2.timestamp });
    assert.deepEqual(tid(r), [t3.trade_id, t2.trade_id]);
    r = await q('private/get_user_trades_by_instrument_and_time', { instrument_name: atm.name, start_timestamp: 0, end_timestamp: t1.timestamp });
    assert.deepEqual(tid(r), [t1.trade_id]);
    r = await q('private/get_user_trades_by_instrument_and_time', { instrument_name: atm.name, start_timestamp: 0, count: 2, sorting: 'asc' });
    assert.deepEqual(tid(r), [t1.trade_id, t2.trade_id]);
    assert.equal(r.has_more, true);

    // by order: a bare array; the maker order holds three trades
    let arr = await q('private/get_user_trades_by_order', { order_id: bOrders[0].order_id });
    assert.deepEqual(tradeIds(arr), [t1.trade_id]);
    arr = await q('private/get_user_trades_by_order', { order_id: sellA.order_id }, A.token);
    assert.deepEqual(tradeIds(arr), [t3, t2, t1].map((t) => t.trade_id));
    assert.ok(arr.every((t: any) => t.liquidity === 'M' && t.direction === 'sell' && t.order_id === sellA.order_id));
    arr = await q('private/get_user_trades_by_order', { order_id: sellA.order_id, sorting: 'asc' }, A.token);
    assert.deepEqual(tradeIds(arr), [t1, t2, t3].map((t) => t.trade_id));
    assertError(await rpc(url, 'private/get_user_trades_by_order', { order_id: sellA.order_id }, B.token), 10004);

    // the seller sees the same four trades as maker
    r = await q('private/get_user_trades_by_currency', { currency: 'BTC', sorting: 'asc' }, A.token);
    assert.deepEqual(tid(r), [t1, t2, t3, t4].map((t) => t.trade_id));
    assert.ok(r.trades.every((t: any) => t.liquidity === 'M' && t.direction === 'sell'));
  });

  it('shows a partly filled order with its open amount in the open-order queries', async () => {
    const open = await ok(url, 'private/get_open_orders_by_instrument', { instrument_name: atm.name }, A.token);
    assert.equal(open.length, 1);
    assert.equal(open[0].order_id, sellA.order_id);
    assert.equal(open[0].amount, 1);
    assert.equal(open[0].filled_amount, 0.7);
    assert.equal(open[0].average_price, pA);
    const row = (await ok(url, 'private/get_open_orders_instrument_by_currency', { currency: 'BTC' }, A.token)).find((x: any) => x.instrument_name === atm.name);
    assert.equal(Math.round(row.sell_amount * 10) / 10, 0.3, 'summed open amount');
    assert.equal(row.sell_orders, 1);
    // the filled cheap sell is no longer open
    assert.deepEqual(await ok(url, 'private/get_open_orders_by_instrument', { instrument_name: cheap.name }, A.token), []);
    assert.equal(cheapSell.order_state, 'open');
  });

  it('cancels an order with reason user_request and refuses to cancel it twice', async () => {
    const r = await ok(url, 'private/cancel', { order_id: putBuy.order_id }, A.token);
    assert.equal(r.order_id, putBuy.order_id);
    assert.equal(r.order_state, 'cancelled');
    assert.equal(r.cancel_reason, 'user_request');
    assertError(await rpc(url, 'private/cancel', { order_id: putBuy.order_id }, A.token), 10010);
    assertError(await rpc(url, 'private/cancel', { order_id: '987654321' }, A.token), 10004);
    assert.deepEqual(ids(await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, A.token)), [sellA.order_id]);
  });

  it('cancels in bulk by currency, instrument and all, returning counts or detailed reports', async () => {
    // B keeps an order resting: A's bulk cancels never touch it
    const bRest = (await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0] }, B.token)).order;

    assert.equal(await ok(url, 'private/cancel_all_by_currency', { currency: 'ETH' }, A.token), 1);
    assert.deepEqual(await ok(url, 'private/get_open_orders_by_currency', { currency: 'ETH' }, A.token), []);
    assert.equal(user(A.id).orders.get(parseOrderId(ethBuy.order_id)!)!.state, 'cancelled');
    assert.equal(await ok(url, 'private/cancel_all_by_currency', { currency: 'ETH' }, A.token), 0);

    const detailed = await ok(url, 'private/cancel_all_by_instrument', { instrument_name: atm.name, detailed: true }, A.token);
    assert.ok(Array.isArray(detailed));
    const reported = detailed.flatMap((d: any) => d.result);
    assert.deepEqual(ids(reported), [sellA.order_id]);
    assert.equal(reported[0].order_state, 'cancelled');
    assert.equal(reported[0].cancel_reason, 'user_request');
    assert.equal(reported[0].filled_amount, 0.7);

    const hi = atm.prices[atm.prices.length - 1];
    const place = async () => [
      (await ok(url, 'private/sell', { instrument_name: atm.name, amount: 0.1, price: hi }, A.token)).order,
      (await ok(url, 'private/sell', { instrument_name: atm.name, amount: 0.2, price: hi }, A.token)).order,
      (await ok(url, 'private/sell', { instrument_name: cheap.name, amount: 0.1, price: cheap.prices[cheap.prices.length - 1] }, A.token)).order,
    ];
    let placed = await place();
    assert.equal(await ok(url, 'private/cancel_all_by_instrument', { instrument_name: cheap.name }, A.token), 1);
    assert.equal(await ok(url, 'private/cancel_all_by_instrument', { instrument_name: cheap.name, type: 'all' }, A.token), 0);
    assert.equal(await ok(url, 'private/cancel_all', {}, A.token), 2);
    assert.equal(await ok(url, 'private/cancel_all', {}, A.token), 0);
    for (const o of placed) {
      const s = server.app.services.ex.users.get(A.id)!.orders.get(parseOrderId(o.order_id)!)!;
      assert.equal(s.state, 'cancelled');
      assert.equal(s.cancelReason, 'user_request');
    }

    placed = await place();
    assert.equal(await ok(url, 'private/cancel_all_by_currency', { currency: 'BTC', kind: 'option', type: 'limit' }, A.token), 3);
    placed = await place();
    const all = await ok(url, 'private/cancel_all', { detailed: true }, A.token);
    assert.deepEqual(ids(all.flatMap((d: any) => d.result)).sort(), ids(placed).sort());
    placed = await place();
    const byCur = await ok(url, 'private/cancel_all_by_currency', { currency: 'BTC', detailed: true }, A.token);
    assert.deepEqual(ids(byCur.flatMap((d: any) => d.result)).sort(), ids(placed).sort());
    assert.ok(byCur.every((d: any) => d.currency === 'BTC'));

    assert.deepEqual(await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, A.token), []);
    assert.deepEqual(ids(await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, B.token)), [bRest.order_id]);
    assert.equal(await ok(url, 'private/cancel_all', {}, B.token), 1);
  });

  it('refuses a short that would exceed the available funds with not_enough_funds', async () => {
    const before = user(A.id).accounts.BTC.balance;
    const hi = atm.prices[atm.prices.length - 1];
    const r = await rpc(url, 'private/sell', { instrument_name: atm.name, amount: 100, price: hi }, A.token);
    assertError(r, 10009);
    assert.equal(r.body.error.message, 'not_enough_funds');
    // the same short, small enough, is accepted
    const small = await ok(url, 'private/sell', { instrument_name: atm.name, amount: 1, price: hi }, A.token);
    assert.equal(small.order.order_state, 'open');
    await ok(url, 'private/cancel', { order_id: small.order.order_id }, A.token);
    // a buy whose premium exceeds the balance is refused too
    assertError(await rpc(url, 'private/buy', { instrument_name: atm.name, amount: 200, price: atm.prices[0] }, B.token), 10009);
    assert.equal(user(A.id).accounts.BTC.balance, before, 'a refused order moves no money');
    assert.deepEqual(await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, A.token), []);
  });

  it('refuses a withdrawal beyond the available funds and pays one within them', async () => {
    const ex = server.app.services.ex;
    const risk = ex.trading.risk.account(user(A.id), 'BTC');
    assert.ok(risk.availableWithdrawal > 0 && risk.availableWithdrawal < risk.balance, 'short positions hold margin');
    const tooMuch = (risk.availableWithdrawal + 1) / COIN;
    const r = await rpc(url, 'private/withdraw_collateral', { currency: 'BTC', amount: Number(tooMuch.toFixed(8)) }, A.token);
    assertError(r, 10009);
    const w = await ok(url, 'private/withdraw_collateral', { currency: 'BTC', amount: 0.001 }, A.token);
    assert.equal(w.balance, (risk.balance - 0.001 * COIN) / COIN);
    assert.equal(user(A.id).accounts.BTC.balance, risk.balance - 0.001 * COIN);
    assertError(await rpc(url, 'private/withdraw_collateral', { currency: 'ETH', amount: 26 }, A.token), 10009);
    for (const c of Object.values(ex.conservation())) assert.equal(c.balances, c.expected);
    const sizes = new Map<number, number>();
    for (const u of ex.users.values()) for (const [id, p] of u.positions) sizes.set(id, (sizes.get(id) ?? 0) + p.size);
    for (const s of sizes.values()) assert.equal(s, 0, 'positions in every instrument sum to zero');
  });

  it('still lists the market after the story', async () => {
    const m = await market(url, atm.inst);
    assert.equal(m.book.last_price, pA);
    assert.deepEqual(m.book.asks, []);
  });
});
