// Funds safety over HTTP (issue 13): the four ways a trader made others pay, each tried as that
// trader would, with every balance checked to the satoshi.
//   1. withdraw the cash promised to an open buy, then let the buy fill;
//   2. sell calls that cannot be bought back and go deep in the money at expiry;
//   3. fund short calls with long puts, and be liquidated step by step as the index climbs;
//   4. fall below maintenance margin with an empty book.
// Manual index, pinned test clock; the background liquidation check runs every second as in
// production, so the tests wait for its outcome rather than for a moment.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assertError } from '../helpers/envelope.ts';
import { instruments, market, nearMark, nearDatedAtmCall, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

const MIN = 60_000;
const sat = (coin: number) => Math.round(coin * 1e8);
/** Deribit's option fee: amount x min(0.0003, 0.125 x price), rounded up to the satoshi. */
const feeSat = (amount: number, price: number) => Math.ceil(Math.round(amount * Math.min(0.0003, 0.125 * price) * 1e12) / 1e4);

async function until(what: string, cond: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function balance(url: string, token: string, currency = 'BTC'): Promise<number> {
  return sat((await ok(url, 'private/get_account_summary', { currency }, token)).balance);
}

/** The option of the given type whose strike is nearest `strike`, in the nearest expiry at least `minDays` away. */
async function option(url: string, type: 'call' | 'put', strike: number, minDays = 1): Promise<Market> {
  const now = await ok(url, 'public/get_time');
  const list = (await instruments(url, 'BTC')).filter((i) => i.option_type === type && i.expiration_timestamp > now + minDays * 86_400_000);
  const expiry = Math.min(...list.map((i) => i.expiration_timestamp));
  const series = list.filter((i) => i.expiration_timestamp === expiry).sort((a, b) => Math.abs(a.strike - strike) - Math.abs(b.strike - strike));
  return market(url, series[0]);
}

async function setIndex(url: string, admin: string, price: number): Promise<void> {
  await ok(url, 'private/set_index_price', { index_name: 'btc_usd', price }, admin);
}

describe('funds safety over HTTP', () => {
  let server: TestServer;
  let url: string;
  let admin: string;

  before(async () => {
    server = await startServer({ STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000' });
    url = server.url;
    admin = await adminToken(url);
  });
  after(() => server.stop());

  it('withdraw reserved cash, then fill: a withdrawal leaves the cash open buys promise', async () => {
    const w = await userToken(url, admin, 'w@example.com', { currency: 'BTC', amount: 1 });
    const s = await userToken(url, admin, 's@example.com', { currency: 'BTC', amount: 10 });
    // W holds a deep in-the-money put (its mark, about 0.5 BTC, is equity) ...
    const put = await option(url, 'put', 150_000);
    const p = nearMark(put);
    await ok(url, 'private/sell', { instrument_name: put.name, amount: 1, price: p }, s);
    await ok(url, 'private/buy', { instrument_name: put.name, amount: 1, price: p }, w);
    const cash = sat(1) - sat(p) - feeSat(1, p);
    assert.equal(await balance(url, w), cash);
    // ... and rests a bid that promises part of its cash
    const call = await option(url, 'call', 100_000);
    const q = call.prices[Math.floor(call.prices.length / 3)];
    await ok(url, 'private/buy', { instrument_name: call.name, amount: 0.8, price: q }, w);
    const promised = sat(0.8 * q) + feeSat(0.8, q);
    const summary = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, w);
    assert.equal(sat(summary.available_withdrawal_funds), cash - promised, 'what can be withdrawn is the cash not promised');

    // all the cash: refused (the long's mark does not pay for the bid)
    assertError(await rpc(url, 'private/withdraw_collateral', { currency: 'BTC', amount: cash / 1e8 }, w), 10009, { reason: 'withdrawal_exceeds_available' });
    assertError(await rpc(url, 'private/withdraw_collateral', { currency: 'BTC', amount: (cash - promised + 1) / 1e8 }, w), 10009);
    await ok(url, 'private/withdraw_collateral', { currency: 'BTC', amount: (cash - promised) / 1e8 }, w);
    assert.equal(await balance(url, w), promised);

    // the bid fills: the promised cash pays for it, to the satoshi, and nothing goes below zero
    await ok(url, 'private/sell', { instrument_name: call.name, amount: 0.8, price: q }, s);
    const paid = sat(0.8 * q) + feeSat(0.8, q);
    assert.equal(await balance(url, w), promised - paid);
    assert.equal(promised - paid, 0);
    const ex = server.app.services.ex;
    for (const [c, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
  });
});

describe('a short that defaults at expiry with no liquidity', () => {
  let server: TestServer;
  let url: string;

  before(async () => {
    server = await startServer({ STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000' });
    url = server.url;
  });
  after(() => server.stop());

  it("is paid by the defaulter's other currencies first, then socialized: an innocent depositor keeps every satoshi", async () => {
    const admin = await adminToken(url);
    const a = await userToken(url, admin, 'a@example.com', { currency: 'BTC', amount: 1 });
    const b = await userToken(url, admin, 'b@example.com', { currency: 'BTC', amount: 1 });
    await ok(url, 'private/deposit_collateral', { currency: 'ETH', amount: 50 }, b);
    const c = await userToken(url, admin, 'c@example.com', { currency: 'BTC', amount: 10 });

    // the highest strike of the first expiry at least 45 minutes away: far out of the money
    const now = await ok(url, 'public/get_time');
    const listed = (await instruments(url, 'BTC')).filter((i) => i.option_type === 'call' && i.expiration_timestamp - 45 * MIN > now);
    const expiry = Math.min(...listed.map((i) => i.expiration_timestamp));
    const inst = listed.filter((i) => i.expiration_timestamp === expiry).sort((x, y) => y.strike - x.strike)[0];
    await ok(url, 'private/sell', { instrument_name: inst.instrument_name, amount: 9, price: 0.005 }, b);
    await ok(url, 'private/buy', { instrument_name: inst.instrument_name, amount: 9, price: 0.005 }, a);
    const tradeFee = feeSat(9, 0.005);
    const bCash = sat(1) + sat(9 * 0.005) - tradeFee;
    const aCash = sat(1) - sat(9 * 0.005) - tradeFee;

    // the index triples before the delivery window opens and stays there: B owes far more than it has
    await ok(url, 'private/set_test_time', { timestamp: expiry - 40 * MIN }, admin);
    await setIndex(url, admin, 300_000);
    // B may try to take its ETH out before anything happens: refused or already covering its loss
    const early = await rpc(url, 'private/withdraw_collateral', { currency: 'ETH', amount: 50 }, b);
    assert.ok(early.body.error?.code === 10009, `B withdrew its ETH while short ${JSON.stringify(early.body)}`);
    await ok(url, 'private/set_test_time', { timestamp: expiry + 1_000 }, admin);
    await until('the expiry to be delivered', async () => (await ok(url, 'public/get_instrument', { instrument_name: inst.instrument_name })).state === 'delivered');

    const S = (await ok(url, 'public/get_delivery_prices', { index_name: 'btc_usd' })).data.find((d: any) => d.date === new Date(expiry).toISOString().slice(0, 10)).delivery_price;
    assert.equal(S, 300_000);
    const payoff = 1 - inst.strike / S;
    const payout = Math.floor(9e8 * payoff + 1e-6);
    const liability = Math.ceil(9e8 * payoff - 1e-6);
    const deliveryFee = Math.ceil(9e8 * Math.min(0.00015, 0.125 * payoff) - 1e-6);
    // what B could not pay in BTC: cut from A's payout (A is this settlement's only profitable position)
    const shortfall = liability - bCash;
    assert.ok(shortfall > 0 && shortfall < payout - deliveryFee);

    assert.equal(await balance(url, c), sat(10), 'C keeps exactly its 10 BTC');
    assert.equal(await balance(url, b), 0, "B's BTC is zero, not below");
    assert.equal(await balance(url, b, 'ETH'), 0, "B's ETH went to cover its BTC loss");
    assert.equal(await balance(url, a), aCash + payout - deliveryFee - shortfall, 'A receives its payout less the shortfall');
    assert.equal(await balance(url, a, 'ETH'), sat(50), "and B's ETH in compensation for the cut");
    const ex = server.app.services.ex;
    assert.equal(ex.insurance.accounts.BTC.balance, 0);
    assert.equal(ex.insurance.accounts.ETH.balance, 0);
    assert.equal(ex.system.fees.BTC.balance, 2 * tradeFee + deliveryFee + (liability - payout));
    for (const [cur, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${cur}`);

    // each movement is in the users' logs, with the balance after it
    const aLog = (await ok(url, 'private/get_transaction_log', { currency: 'any', count: 50 }, a)).logs;
    const cut = aLog.find((e: any) => e.type === 'socialized_loss');
    assert.equal(sat(cut.change), -shortfall);
    assert.equal(sat(cut.balance), aCash + payout - deliveryFee - shortfall);
    const comp = aLog.find((e: any) => e.type === 'socialized_loss_compensation');
    assert.deepEqual([comp.currency, sat(comp.change), sat(comp.balance)], ['ETH', sat(50), sat(50)]);
    const bLog = (await ok(url, 'private/get_transaction_log', { currency: 'ETH', count: 50 }, b)).logs;
    assert.ok(bLog.some((e: any) => e.type === 'conversion' && sat(e.change) === -sat(50) && e.balance === 0), JSON.stringify(bLog));

    // A takes out what the waterfall paid, not a satoshi more; B has nothing left to take
    const aBtc = await balance(url, a);
    assertError(await rpc(url, 'private/withdraw_collateral', { currency: 'BTC', amount: (aBtc + 1) / 1e8 }, a), 10009);
    await ok(url, 'private/withdraw_collateral', { currency: 'BTC', amount: aBtc / 1e8 }, a);
    await ok(url, 'private/withdraw_collateral', { currency: 'ETH', amount: 50 }, a);
    assertError(await rpc(url, 'private/withdraw_collateral', { currency: 'ETH', amount: 0.00000001 }, b), 10009);
    // the exchange still holds C's 10 BTC, plus the fees it earned
    const held = ex.deposits.BTC - ex.withdrawals.BTC;
    assert.equal(held, sat(10) + ex.system.fees.BTC.balance);
  });
});

describe('an account funded by long puts, liquidated as the index climbs', () => {
  let server: TestServer;
  let url: string;

  before(async () => {
    server = await startServer({ STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000' });
    url = server.url;
  });
  after(() => server.stop());

  it('sells its puts for the cash to buy its calls back, never below zero, every satoshi accounted for', async () => {
    const admin = await adminToken(url);
    const l = await userToken(url, admin, 'l@example.com', { currency: 'BTC', amount: 1 });
    const m = await userToken(url, admin, 'maker@example.com', { currency: 'BTC', amount: 1000 });
    const put = await option(url, 'put', 150_000, 7);
    const call = await option(url, 'call', 120_000, 7);
    assert.equal(put.inst.expiration_timestamp, call.inst.expiration_timestamp);
    // L spends almost all its cash on deep in-the-money puts and sells 7 out-of-the-money calls on
    // their mark: buying the calls back will need the puts sold first
    await ok(url, 'private/sell', { instrument_name: put.name, amount: 1.9, price: nearMark(put) }, m);
    await ok(url, 'private/buy', { instrument_name: put.name, amount: 1.9, price: nearMark(put) }, l);
    assert.ok((await balance(url, l)) < sat(0.06));
    await ok(url, 'private/buy', { instrument_name: call.name, amount: 7, price: nearMark(call) }, m);
    await ok(url, 'private/sell', { instrument_name: call.name, amount: 7, price: nearMark(call) }, l);

    const ex = server.app.services.ex;
    const user = ex.usersByEmail.get('l@example.com')!;
    let lowest = Infinity;
    let steps = 0;
    let index = 100_000;
    for (let step = 0; step < 40; step++) {
      index = Math.round(index * 1.02);
      await setIndex(url, admin, index);
      // the maker quotes around the new marks: asks on the calls, bids on the puts
      await ok(url, 'private/cancel_all', {}, m);
      const c = await market(url, call.inst);
      const p = await market(url, put.inst);
      await ok(url, 'private/sell', { instrument_name: call.name, amount: 3, price: nearMark(c) }, m);
      await ok(url, 'private/buy', { instrument_name: put.name, amount: 2, price: nearMark(p) }, m);
      // below maintenance margin: the background check (every second) takes steps until it is not
      const healthy = async () => {
        const s = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, l);
        return s.equity >= s.maintenance_margin && !s.in_liquidation;
      };
      if (!(await healthy())) {
        steps++;
        await until('the liquidation step', healthy, 3_000).catch(() => undefined);
      }
      lowest = Math.min(lowest, user.accounts.BTC.balance);
      assert.ok(user.accounts.BTC.balance >= 0, `step ${step}: L's balance ${user.accounts.BTC.balance} is below zero`);
      const shorts = [...user.positions.values()].filter((x) => x.size < 0).length;
      const summary = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, l);
      if (shorts === 0 && !summary.in_liquidation) break;
    }
    assert.ok(lowest >= 0);
    assert.ok(steps >= 2, `liquidated in ${steps} step(s): the index climbed through several`);
    const summary = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, l);
    assert.equal(summary.in_liquidation, false, 'the liquidation ended');
    assert.ok(summary.equity >= summary.maintenance_margin);

    // L's log holds every movement (deposit, trades, liquidation trades and fees, takeovers): its
    // entries sum to its balance to the satoshi, and each fill is one entry, premium less fee
    const trades = (await ok(url, 'private/get_user_trades_by_currency', { currency: 'BTC', count: 1000 }, l)).trades;
    if (process.env.DEBUG_FUNDS) console.log(steps, trades.map((t: any) => `${t.direction} ${t.amount} ${t.instrument_name} @${t.price} ${t.liquidation ?? ""}`));
    assert.ok(trades.some((t: any) => t.liquidation === 'T' && t.direction === 'buy'), 'calls were bought back');
    assert.ok(trades.some((t: any) => t.liquidation === 'T' && t.direction === 'sell' && t.instrument_name === put.name), 'puts were sold for the cash');
    const log = (await ok(url, 'private/get_transaction_log', { currency: 'BTC', count: 1000 }, l)).logs;
    let expected = 0;
    for (const e of log) expected += sat(e.change);
    assert.equal(user.accounts.BTC.balance, expected);
    assert.equal(sat(log[0].balance), user.accounts.BTC.balance, 'the newest entry shows the balance');
    const fills = log.filter((e: any) => e.type === 'trade' || e.type === 'liquidation');
    assert.equal(fills.length, trades.length);
    for (const t of trades) {
      const e = fills.find((f: any) => f.trade_id === t.trade_id);
      assert.ok(e, `trade ${t.trade_id} is logged`);
      assert.equal(sat(e.change), (t.direction === 'buy' ? -1 : 1) * sat(t.price * t.amount) - sat(t.fee));
      assert.deepEqual([e.side, e.amount, e.price, sat(e.commission), e.instrument_name], [t.direction, t.amount, t.price, sat(t.fee), t.instrument_name]);
      assert.equal(e.type, t.liquidation?.includes('T') ? 'liquidation' : 'trade');
    }
    const fees = (await ok(url, 'private/get_transaction_log', { currency: 'BTC', count: 1000 }, l)).logs.filter((e: any) => e.type === 'liquidation_fee');
    assert.equal(ex.insurance.accounts.BTC.balance, -fees.reduce((s: number, e: any) => s + sat(e.change), 0), 'the insurance account holds the liquidation fees');
    for (const [cur, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${cur}`);
  });
});

describe('liquidation with an empty book', () => {
  let server: TestServer;
  let url: string;

  before(async () => {
    server = await startServer({ STRIKEBOOK_ACCESS_TOKEN_TTL: '31536000' });
    url = server.url;
  });
  after(() => server.stop());

  it('waits while the account can still pay, then hands it over whole to the insurance account at mark', async () => {
    const admin = await adminToken(url);
    const k = await userToken(url, admin, 'k@example.com', { currency: 'BTC', amount: 0.3 });
    await ok(url, 'private/deposit_collateral', { currency: 'ETH', amount: 2 }, k);
    const buyer = await userToken(url, admin, 'long@example.com', { currency: 'BTC', amount: 10 });
    const call = await nearDatedAtmCall(url);
    const p = nearMark(call);
    await ok(url, 'private/buy', { instrument_name: call.name, amount: 1, price: p }, buyer);
    await ok(url, 'private/sell', { instrument_name: call.name, amount: 1, price: p }, k);
    const kCash = sat(0.3) + sat(p) - feeSat(1, p);
    const ex = server.app.services.ex;
    const user = ex.usersByEmail.get('k@example.com')!;

    // below maintenance, equity still positive, nobody to buy from: flagged, and nothing moves
    let index = 100_000;
    for (;;) {
      index = Math.round(index * 1.02);
      await setIndex(url, admin, index);
      const s = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, k);
      if (s.equity < s.maintenance_margin) {
        assert.ok(s.equity > 0, `equity ${s.equity}: the step was too large for this part of the test`);
        break;
      }
    }
    await until('the account to be flagged', async () => (await ok(url, 'private/get_account_summary', { currency: 'BTC' }, k)).in_liquidation === true);
    await new Promise((r) => setTimeout(r, 1_100));
    assert.equal(user.accounts.BTC.balance, kCash, 'no trade, no fee, no transfer without liquidity');
    assert.equal(user.positions.get(call.inst.instrument_id)?.size, -10);

    // the index runs away: equity below zero, the insurance account takes the short over at mark
    await setIndex(url, admin, index * 1.6);
    await until('the takeover', async () => user.positions.size === 0);
    await until('the flag to clear', async () => (await ok(url, 'private/get_account_summary', { currency: 'BTC' }, k)).in_liquidation === false);
    assert.equal(user.accounts.BTC.balance, 0, "K's BTC is zero, not below");
    assert.equal(user.accounts.ETH.balance, 0, "K's ETH covered part of the loss");
    // the insurance account holds the short, K's cash and K's ETH
    const fund = (await ok(url, 'private/get_insurance_fund', {}, admin)) as any[];
    const btc = fund.find((f) => f.currency === 'BTC');
    assert.deepEqual(btc.positions.map((x: any) => [x.instrument_name, x.size, x.direction]), [[call.name, -1, 'sell']]);
    assert.equal(sat(btc.balance), kCash);
    assert.equal(sat(fund.find((f) => f.currency === 'ETH').balance), sat(2));
    assert.ok(btc.history.some((e: any) => e.type === 'takeover' && e.counterparty_user_id === user.id));
    const negative = await ok(url, 'private/list_negative_balances', {}, admin);
    assert.deepEqual(negative.accounts, []);
    // K sees why: the takeover, the conversion of its ETH and the insurance cover
    const types = (await ok(url, 'private/get_transaction_log', { currency: 'any' }, k)).logs.map((e: any) => e.type);
    for (const t of ['takeover', 'conversion', 'insurance_cover']) assert.ok(types.includes(t), `${t} in ${types}`);
    // the buyer's long is untouched, and its counterparty is now the insurance account
    assert.equal(ex.usersByEmail.get('long@example.com')!.positions.get(call.inst.instrument_id)?.size, 10);
    for (const [cur, v] of Object.entries(ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${cur}`);
    assertError(await rpc(url, 'private/get_insurance_fund', {}, k), 13021);
  });
});
