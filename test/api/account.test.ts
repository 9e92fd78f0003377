// Account management group (API.md 3.4) against a hand-computed portfolio: long and short calls and
// puts, in and out of the money, one partially closed position (realized PnL) and one open order.
// Every money field is recomputed here from the trade prices, the engine's marks and the margin
// formulas of API.md 5.3, and compared to the minor unit.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { yearFraction } from '../../src/domain/pricing.ts';
import { optionGreeksCoin } from '../../src/market/smile.ts';
import { market, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

const SAT = 1e8;
const DEPOSIT = 100 * SAT;

/** Premium in satoshi of `amount` BTC at `price` coin: price units x lots x 1000 (exact). */
function premium(price: number, amount: number): number {
  return Math.round(price * 1e4) * Math.round(amount * 10) * 1000;
}
/** Fee in satoshi: amount x min(0.0003, 0.125 x price), rounded up. */
function fee(price: number, amount: number): number {
  const perContract = Math.min(30_000, Math.round(price * 1e4) * 1250);
  return Math.ceil((perContract * Math.round(amount * 10)) / 10);
}
const up = (coinAmount: number) => Math.ceil(coinAmount * SAT - 1e-6);
const down = (coinAmount: number) => Math.floor(coinAmount * SAT + 1e-6);
const btc = (s: number) => Number((s / SAT).toFixed(8));
const r5 = (x: number) => {
  const r = Math.round(x * 1e5) / 1e5;
  return r === 0 ? 0 : r;
};

interface Leg {
  m: Market;
  size: number;
  openCost: number;
  realized: number;
}

describe('account management', () => {
  let server: TestServer;
  let url: string;
  let admin: string;
  let a: string;
  let b: string;
  let U: number;
  const legs: Record<string, Leg> = {};
  let balanceA = DEPOSIT;
  let orderReserve = 0;

  before(async () => {
    server = await startServer();
    url = server.url;
    admin = await adminToken(url);
    a = await userToken(url, admin, 'alice@example.com', { currency: 'BTC', amount: 100 });
    b = await userToken(url, admin, 'bob@example.com', { currency: 'BTC', amount: 1000 });
    const ex = server.app.services.ex;
    U = ex.indexPrice('BTC');
    const open = [...ex.instruments.values()].filter((i) => i.currency === 'BTC' && i.state === 'open');
    const expiry = Math.max(...open.map((i) => i.expiry));
    const series = open.filter((i) => i.expiry === expiry);
    const nearest = (target: number, type: 'call' | 'put') =>
      series.filter((i) => i.optionType === type).sort((x, y) => Math.abs(x.strike - target) - Math.abs(y.strike - target))[0];
    const inst = async (i: { name: string }) => market(url, await ok(url, 'public/get_instrument', { instrument_name: i.name }));
    const callItm = await inst(nearest(U * 0.9, 'call'));
    const callOtm = await inst(nearest(U * 1.1, 'call'));
    const putOtm = await inst(nearest(U * 0.9, 'put'));
    const putItm = await inst(nearest(U * 1.1, 'put'));
    assert.ok(callItm.inst.strike < U && callOtm.inst.strike > U);

    // Bob makes, Alice takes: Alice pays taker fees
    const trade = async (m: Market, aliceSide: 'buy' | 'sell', price: number, amount: number) => {
      await ok(url, aliceSide === 'buy' ? 'private/sell' : 'private/buy', { instrument_name: m.name, amount, price }, b);
      const r = await ok(url, `private/${aliceSide}`, { instrument_name: m.name, amount, price }, a);
      assert.equal(r.order.order_state, 'filled');
      const p = premium(price, amount);
      balanceA += aliceSide === 'buy' ? -p : p;
      balanceA -= fee(price, amount);
      return p;
    };
    const p1 = nearMark(callItm);
    const prem1 = await trade(callItm, 'buy', p1, 0.4);
    const i1 = callItm.prices.indexOf(p1);
    const p1b = callItm.prices[Math.max(0, i1 - 3)];
    const prem1b = await trade(callItm, 'sell', p1b, 0.1);
    const removed = Math.floor(prem1 / 4);
    legs.callItm = { m: callItm, size: 0.3, openCost: prem1 - removed, realized: prem1b - removed };
    legs.callOtm = { m: callOtm, size: -0.5, openCost: -(await trade(callOtm, 'sell', nearMark(callOtm), 0.5)), realized: 0 };
    legs.putOtm = { m: putOtm, size: 0.2, openCost: await trade(putOtm, 'buy', nearMark(putOtm), 0.2), realized: 0 };
    legs.putItm = { m: putItm, size: -0.3, openCost: -(await trade(putItm, 'sell', nearMark(putItm), 0.3)), realized: 0 };
    // one resting buy: it reserves premium plus the larger fee
    const p5 = callOtm.prices[0];
    await ok(url, 'private/buy', { instrument_name: callOtm.name, amount: 0.2, price: p5 }, a);
    orderReserve = premium(p5, 0.2) + fee(p5, 0.2);
  });

  after(async () => {
    await server?.stop();
  });

  /** Everything Alice's BTC account should show, recomputed by hand from the engine's marks. */
  function expected() {
    const ex = server.app.services.ex;
    const out: Record<string, any> = {};
    let value = 0;
    let im = 0;
    let mm = 0;
    let floating = 0;
    let realized = 0;
    const greeks = { delta: 0, gamma: 0, vega: 0, theta: 0 };
    for (const [k, leg] of Object.entries(legs)) {
      const inst = ex.instruments.get(leg.m.name)!;
      const mk = ex.markets.get(inst.id)!;
      const m = mk.markCoin;
      const n = Math.abs(leg.size);
      const v = leg.size > 0 ? down(m * n) : -up(m * n);
      const K = inst.strike;
      const otm = inst.optionType === 'call' ? Math.max(K - U, 0) : Math.max(U - K, 0);
      const mmPer = inst.optionType === 'call' ? 0.075 + m : Math.max(0.075, 0.075 * m) + m;
      const imPer = inst.optionType === 'call' ? Math.max(0.15 - otm / U, 0.1) + m : Math.max(Math.max(0.15 - otm / U, 0.1) + m, mmPer);
      const posIm = leg.size < 0 ? up(imPer * n) : 0;
      const posMm = leg.size < 0 ? up(mmPer * n) : 0;
      const T = yearFraction(ex.now, inst.expiry);
      const g = optionGreeksCoin(inst.optionType, U, K, T, mk.markIv);
      const fl = v - leg.openCost;
      out[k] = {
        instrument_name: inst.name,
        kind: 'option',
        direction: leg.size > 0 ? 'buy' : 'sell',
        size: leg.size,
        average_price: Number((Math.abs(leg.openCost) / SAT / n).toFixed(8)),
        mark_price: Number(m.toFixed(8)),
        index_price: U,
        initial_margin: btc(posIm),
        maintenance_margin: btc(posMm),
        floating_profit_loss: btc(fl),
        floating_profit_loss_usd: Number((btc(fl) * U).toFixed(2)),
        realized_profit_loss: btc(leg.realized),
        total_profit_loss: btc(fl + leg.realized),
        delta: r5(leg.size * g.delta),
        gamma: r5(leg.size * g.gamma),
        vega: r5(leg.size * g.vega),
        theta: r5(leg.size * g.theta),
        mint: createHash('sha256').update(inst.name).digest('hex'),
        minted_amount: leg.size < 0 ? n : 0,
        collateral_locked: btc(posIm),
      };
      value += v;
      im += posIm;
      mm += posMm;
      floating += fl;
      realized += leg.realized;
      greeks.delta += leg.size * g.delta;
      greeks.gamma += leg.size * g.gamma;
      greeks.vega += leg.size * g.vega;
      greeks.theta += leg.size * g.theta;
    }
    // the open buy is on the short call's instrument: it opens no short, so it holds its reservation only
    const equity = balanceA + value;
    const initial = im + orderReserve;
    const available = equity - initial;
    out.account = {
      balance: balanceA, value, equity, positionsIm: im, ordersIm: orderReserve, initial, mm, available,
      withdrawal: Math.max(0, Math.min(balanceA, available)), floating, realized, greeks,
    };
    return out;
  }

  it('get_account_balance and get_all_account_balances show balance, equity, available funds and reserved margin to the satoshi', async () => {
    const e = expected().account;
    const bal = await ok(url, 'private/get_account_balance', { currency: 'BTC' }, a);
    assert.deepEqual(bal, { currency: 'BTC', balance: btc(e.balance), equity: btc(e.equity), available_funds: btc(e.available), reserved: btc(e.initial) });
    const all = await ok(url, 'public/get_all_account_balances', {}, a);
    assert.deepEqual(all.map((x: any) => x.currency), ['BTC', 'ETH', 'USDC']);
    assert.deepEqual(all[0], bal);
    assert.deepEqual(all[1], { currency: 'ETH', balance: 0, equity: 0, available_funds: 0, reserved: 0 });
  });

  it('get_account_collateral splits the margin into positions and orders and gives the margin ratio', async () => {
    const e = expected().account;
    const c = await ok(url, 'public/get_account_collateral', { currency: 'BTC' }, a);
    assert.deepEqual(c, {
      currency: 'BTC',
      collateral: btc(e.balance),
      deposited: 100,
      withdrawn: 0,
      locked_by_positions: btc(e.positionsIm),
      locked_by_orders: btc(e.ordersIm),
      free: btc(e.available),
      maintenance_margin: btc(e.mm),
      margin_ratio: Number((e.mm / e.equity).toFixed(8)),
    });
    const eth = await ok(url, 'public/get_account_collateral', { currency: 'ETH' }, a);
    assert.equal(eth.margin_ratio, 0);
  });

  it('get_account_summary carries the Deribit fields: values, margins, PnL and greek totals', async () => {
    const e = expected().account;
    const s = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, a);
    const want: Record<string, unknown> = {
      currency: 'BTC',
      balance: btc(e.balance),
      equity: btc(e.equity),
      margin_balance: btc(e.equity),
      available_funds: btc(e.available),
      available_withdrawal_funds: btc(e.withdrawal),
      initial_margin: btc(e.initial),
      maintenance_margin: btc(e.mm),
      options_value: btc(e.value),
      options_pl: btc(e.floating + e.realized),
      options_session_rpl: btc(e.realized),
      options_session_upl: btc(e.floating),
      total_pl: btc(e.floating + e.realized),
      session_rpl: btc(e.realized),
      session_upl: btc(e.floating),
      options_delta: r5(e.greeks.delta),
      options_gamma: r5(e.greeks.gamma),
      options_vega: r5(e.greeks.vega),
      options_theta: r5(e.greeks.theta),
      delta_total: r5(e.greeks.delta),
      fee_balance: 0,
      margin_model: 'segregated_sm',
      portfolio_margining_enabled: false,
      cross_collateral_enabled: false,
    };
    for (const [k, v] of Object.entries(want)) assert.deepEqual(s[k], v, k);
    assert.notEqual(e.realized, 0);
    assert.ok(e.greeks.delta !== 0 && e.greeks.vega !== 0);
    assert.equal(s.id, undefined);
    const ext = await ok(url, 'private/get_account_summary', { currency: 'BTC', extended: true }, a);
    assert.equal(ext.email, 'alice@example.com');
    assert.equal(ext.username, 'alice@example.com');
    assert.equal(ext.type, 'main');
    assert.equal(typeof ext.id, 'number');
    assert.equal(typeof ext.creation_timestamp, 'number');
    // Deribit's fees: per index, per instrument type, the default (here every account's) maker and taker fee
    assert.deepEqual(ext.fees, { btc_usd: { option: { default: { type: 'fixed', maker: 0.0003, taker: 0.0003 } } } });
    for (const k of Object.keys(want)) assert.deepEqual(ext[k], s[k], k);
    // the greeks per index: the one index of the currency, the same totals
    assert.deepEqual(s.options_gamma_map, { btc_usd: r5(e.greeks.gamma) });
    assert.deepEqual(s.options_vega_map, { btc_usd: r5(e.greeks.vega) });
    assert.deepEqual(s.options_theta_map, { btc_usd: r5(e.greeks.theta) });
    assert.deepEqual(s.delta_total_map, { btc_usd: r5(e.greeks.delta) });
    // USD totals (with extended): the BTC figures at the index, exact, rounded once to 10^-6 USD
    // (alice holds nothing in ETH or USDC)
    assert.equal(s.total_equity_usd, undefined, 'the totals read every currency: with extended only');
    const idx = BigInt(Math.round(U * 1e8));
    const usd = (sat: number) => Number((BigInt(sat) * idx + 5_000_000_000n) / 10_000_000_000n) / 1e6;
    assert.equal(ext.total_equity_usd, usd(e.equity));
    assert.equal(ext.total_margin_balance_usd, usd(e.equity));
    assert.equal(ext.total_initial_margin_usd, usd(e.initial));
    assert.equal(ext.total_maintenance_margin_usd, usd(e.mm));
    assert.ok(Math.abs(ext.total_delta_total_usd - e.greeks.delta * U) < 1e-3 * Math.max(1, Math.abs(e.greeks.delta * U)));
  });

  it('get_account_summaries (Deribit alias for ccxt fetchBalance) wraps one summary per currency', async () => {
    const r = await ok(url, 'private/get_account_summaries', {}, a);
    assert.equal(r.email, 'alice@example.com');
    assert.equal(r.type, 'main');
    assert.deepEqual(r.summaries.map((x: any) => x.currency), ['BTC', 'ETH', 'USDC']);
    const single = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, a);
    assert.deepEqual(r.summaries[0], single);
    const get = await rpc(url, 'private/get_account_summaries', {}, a, { prefix: '/api/v2/', get: true });
    assert.deepEqual(get.body.result.summaries[0], single);
  });

  it('get_position and get_positions show size, average price, PnL, margins and greeks of each position', async () => {
    const e = expected();
    const fields = ['instrument_name', 'kind', 'direction', 'size', 'average_price', 'mark_price', 'index_price', 'initial_margin', 'maintenance_margin',
      'floating_profit_loss', 'floating_profit_loss_usd', 'realized_profit_loss', 'total_profit_loss', 'delta', 'gamma', 'vega', 'theta'];
    const all = await ok(url, 'private/get_positions', { currency: 'BTC', kind: 'option' }, a);
    assert.equal(all.length, 4);
    for (const k of ['callItm', 'callOtm', 'putOtm', 'putItm']) {
      const want = e[k];
      const one = await ok(url, 'private/get_position', { instrument_name: want.instrument_name }, a);
      for (const f of fields) assert.deepEqual(one[f], want[f], `${k}.${f}`);
      assert.equal(one.average_price_usd, Number((want.average_price * U).toFixed(2)));
      assert.deepEqual(all.find((p: any) => p.instrument_name === want.instrument_name), one);
    }
    // the open buy's reservation shows as that instrument's open-orders margin
    const withOrder = await ok(url, 'private/get_position', { instrument_name: e.callOtm.instrument_name }, a);
    assert.equal(withOrder.open_orders_margin, btc(orderReserve));
    // a flat instrument: zeros
    const flat = [...server.app.services.ex.instruments.values()].find((i) => i.currency === 'BTC' && !Object.values(legs).some((l) => l.m.name === i.name))!;
    const z = await ok(url, 'private/get_position', { instrument_name: flat.name }, a);
    assert.equal(z.direction, 'zero');
    assert.equal(z.size, 0);
    assert.equal(z.floating_profit_loss, 0);
    assert.equal(z.delta, 0);
    assert.deepEqual(await ok(url, 'private/get_positions', { currency: 'ETH' }, a), []);
    assert.deepEqual(await ok(url, 'private/get_positions', { kind: 'future' }, a), []);
    assert.equal((await ok(url, 'private/get_positions', {}, a)).length, 4);
    const unknown = await rpc(url, 'private/get_position', { instrument_name: 'BTC-1JAN20-1-C' }, a);
    assert.equal(unknown.body.error.code, 10020);
    // Bob holds the other side of every position
    const bobs = await ok(url, 'private/get_positions', {}, b);
    for (const p of bobs) assert.equal(p.size, -all.find((x: any) => x.instrument_name === p.instrument_name).size);
  });

  it('get_positions_with_mints reports the series mint, the short size as minted amount and its initial margin as collateral', async () => {
    const e = expected();
    const rows = await ok(url, 'public/get_positions_with_mints', {}, a);
    assert.equal(rows.length, 4);
    for (const k of ['callItm', 'callOtm', 'putOtm', 'putItm']) {
      const want = e[k];
      const row = rows.find((r: any) => r.instrument_name === want.instrument_name);
      assert.equal(row.mint, want.mint);
      assert.match(row.mint, /^[0-9a-f]{64}$/);
      assert.equal(row.minted_amount, want.minted_amount);
      assert.equal(row.collateral_locked, want.collateral_locked);
      assert.equal(row.collateral_locked, row.initial_margin);
    }
    assert.equal(rows.find((r: any) => r.instrument_name === e.callItm.instrument_name).minted_amount, 0);
    assert.equal(rows.find((r: any) => r.instrument_name === e.callOtm.instrument_name).minted_amount, 0.5);
  });

  it("get_exercisable_options lists exactly the caller's in-the-money longs with their intrinsic values", async () => {
    const e = expected();
    const rows = await ok(url, 'public/get_exercisable_options', {}, a);
    const K = legs.callItm.m.inst.strike;
    const per = down(1 - K / U);
    assert.deepEqual(rows, [
      {
        instrument_name: e.callItm.instrument_name,
        amount: 0.3,
        option_type: 'call',
        strike: K,
        expiration_timestamp: legs.callItm.m.inst.expiration_timestamp,
        underlying_price: U,
        intrinsic_value: btc(per),
        total_value: btc(down((1 - K / U) * 0.3)),
        state: 'open',
      },
    ]);
    // Bob's in-the-money long is the put Alice wrote, and only his
    const bobs = await ok(url, 'private/get_exercisable_options', { currency: 'BTC' }, b);
    assert.deepEqual(bobs.map((r: any) => r.instrument_name), [e.putItm.instrument_name]);
    assert.equal(bobs[0].intrinsic_value, btc(down(legs.putItm.m.inst.strike / U - 1)));
    assert.equal(bobs[0].amount, 0.3);
    assert.deepEqual(await ok(url, 'public/get_exercisable_options', { currency: 'ETH' }, a), []);
  });

  it('margin is live: an index move changes marks, equity and maintenance margin without any order', async () => {
    const before = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, a);
    await ok(url, 'private/set_index_price', { index_name: 'btc_usd', price: U * 1.02 }, admin);
    U = U * 1.02;
    try {
      const s = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, a);
      assert.notEqual(s.maintenance_margin, before.maintenance_margin);
      assert.notEqual(s.equity, before.equity);
      const e = expected().account;
      assert.equal(s.equity, btc(e.equity));
      assert.equal(s.maintenance_margin, btc(e.mm));
      assert.equal(s.initial_margin, btc(e.initial));
    } finally {
      U = U / 1.02;
      await ok(url, 'private/set_index_price', { index_name: 'btc_usd', price: U }, admin);
    }
  });

  it('refuses a withdrawal beyond available_withdrawal_funds with 10009 and moves the balance for one within it', async () => {
    const s = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, a);
    const avail = Math.round(s.available_withdrawal_funds * SAT);
    assert.ok(avail > 0);
    const over = await rpc(url, 'private/withdraw_collateral', { currency: 'BTC', amount: btc(avail + 1) }, a);
    assert.equal(over.body.error.code, 10009);
    assert.equal((await ok(url, 'private/get_account_balance', { currency: 'BTC' }, a)).balance, btc(balanceA));
    const w = await ok(url, 'private/withdraw_collateral', { currency: 'BTC', amount: 1.5 }, a);
    balanceA -= 1.5 * SAT;
    assert.equal(w.balance, btc(balanceA));
    const after = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, a);
    assert.equal(after.balance, btc(balanceA));
    assert.equal(Math.round(after.available_withdrawal_funds * SAT), avail - 1.5 * SAT);
    const c = await ok(url, 'public/get_account_collateral', { currency: 'BTC' }, a);
    assert.equal(c.withdrawn, 1.5);
  });

  it('answers every operation at /v1/public, /v1/private and the Deribit prefixes, by GET too, and only with credentials', async () => {
    const calls: [string, Record<string, unknown>][] = [
      ['get_account_balance', { currency: 'BTC' }],
      ['get_account_collateral', { currency: 'BTC' }],
      ['get_account_summary', { currency: 'BTC' }],
      ['get_all_account_balances', {}],
      ['get_exercisable_options', {}],
      ['get_position', { instrument_name: legs.callItm.m.name }],
      ['get_positions', {}],
      ['get_positions_with_mints', {}],
    ];
    for (const [m, params] of calls) {
      const ref = await ok(url, `public/${m}`, params, a);
      for (const prefix of ['/v1/', '/api/v2/', '/api/v1/']) {
        for (const scope of ['public', 'private']) {
          const r = await rpc(url, `${scope}/${m}`, params, a, { prefix, get: true });
          assert.equal(r.status, 200, `${prefix}${scope}/${m}`);
          assert.deepEqual(r.body.result, ref, `${prefix}${scope}/${m}`);
        }
      }
      const anon = await rpc(url, `public/${m}`, params);
      assert.equal(anon.body.error.code, 10000, m);
    }
  });
});
