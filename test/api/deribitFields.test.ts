// Deribit's documented fields on answers we already serve (issue 31, item 4): the values, not only
// the shapes the conformance test checks. Account summaries (USD totals over currencies, limits,
// settings, products), auth's session fields, API-key objects, instruments, currencies and the 24 h
// notional of book summaries.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

describe('Deribit fields', () => {
  let srv: TestServer;
  let url: string;
  let admin: string;
  let user: string;
  let other: string;
  let atm: Market;

  before(async () => {
    srv = await startServer();
    url = srv.url;
    admin = await adminToken(url);
    user = await userToken(url, admin, 'fields@example.com', { currency: 'BTC', amount: 2 });
    await ok(url, 'private/deposit_collateral', { currency: 'ETH', amount: 3 }, user);
    await ok(url, 'private/deposit_collateral', { currency: 'USDC', amount: 999.5 }, user);
    other = await userToken(url, admin, 'fields-other@example.com', { currency: 'BTC', amount: 10 });
    atm = await atmCall(url);
  });
  after(() => srv.stop());

  it('total_*_usd add every currency at its index exactly (USDC at one dollar), the same in every summary', async () => {
    const ex = srv.app.services.ex;
    const s = await ok(url, 'private/get_account_summary', { currency: 'ETH', extended: true }, user);
    // 2 BTC + 3 ETH + 999.5 USDC, no positions: equity is cash
    const want = Number((2n * BigInt(Math.round(ex.indexPrice('BTC') * 1e8)) + 3n * BigInt(Math.round(ex.indexPrice('ETH') * 1e8)) + 99_950_000_000n + 50n) / 100n) / 1e6;
    assert.equal(s.total_equity_usd, want);
    assert.equal(s.total_margin_balance_usd, want);
    assert.deepEqual([s.total_initial_margin_usd, s.total_maintenance_margin_usd, s.total_delta_total_usd], [0, 0, 0]);
    const all = await ok(url, 'private/get_account_summaries', { extended: true }, user);
    for (const x of all.summaries) assert.equal(x.total_equity_usd, want, x.currency);
    assert.deepEqual(all.summaries.find((x: any) => x.currency === 'USDC').options_gamma_map, {}, 'no index, no options: an empty map');
    // simulate_portfolio carries the account's totals
    const sim = await ok(url, 'private/simulate_portfolio', { currency: 'BTC', simulated_positions: { [atm.name]: -1 } }, user);
    assert.equal(sim.total_equity_usd, want);
    assert.deepEqual(sim.options_gamma_map, { btc_usd: 0 });
  });

  it("limits are the user's credit limits in Deribit's shape, and follow an administrator's change", async () => {
    const summary = await ok(url, 'private/get_account_summary', { currency: 'BTC', extended: true }, user);
    const id = summary.id;
    const mine = await ok(url, 'private/get_rate_limits', { user_id: id }, admin);
    const l = summary.limits;
    assert.equal(l.limits_per_currency, false);
    assert.deepEqual(l.matching_engine.trading.total, { burst: mine.matching_engine.max_credits / mine.matching_engine.cost, rate: mine.matching_engine.refill_per_sec / mine.matching_engine.cost });
    assert.deepEqual(l.non_matching_engine, { burst: mine.non_matching_engine.max_credits / mine.non_matching_engine.cost, rate: mine.non_matching_engine.refill_per_sec / mine.non_matching_engine.cost });
    assert.deepEqual(l.matching_engine.mass_quote, { burst: mine.mass_quotes.max_credits / mine.mass_quotes.cost, rate: mine.mass_quotes.refill_per_sec / mine.mass_quotes.cost });
    await ok(url, 'private/set_rate_limits', { user_id: id, matching_max_credits: 7 * 500, matching_refill_per_sec: 3 * 500 }, admin);
    try {
      const after = (await ok(url, 'private/get_account_summaries', { extended: true }, user)).summaries[0].limits;
      assert.deepEqual(after.matching_engine.trading.total, { burst: 7, rate: 3 });
      assert.deepEqual(after.matching_engine.cancel_all, { burst: 7, rate: 3 }, 'cancels share the matching pool');
    } finally {
      await ok(url, 'private/set_rate_limits', { user_id: id, reset: true }, admin);
    }
  });

  it('settings: products follow set_disabled_trading_products; features absent here say so', async () => {
    const before = await ok(url, 'private/get_account_summaries', { extended: true }, user);
    assert.deepEqual(before.trading_products_details.options, { enabled: true, overwriteable: true });
    await ok(url, 'private/set_disabled_trading_products', { user_id: before.id, trading_products: ['options'] }, user);
    const s = await ok(url, 'private/get_account_summary', { currency: 'BTC', extended: true }, user);
    assert.deepEqual(s.trading_products_details.options, { enabled: false, overwriteable: true });
    assert.deepEqual(s.trading_products_details.futures, { enabled: true, overwriteable: true });
    await ok(url, 'private/set_disabled_trading_products', { user_id: before.id, trading_products: [] }, user);
    const want = { login_enabled: true, mmp_enabled: true, security_keys_enabled: false, interuser_transfers_enabled: false, referrer_id: '', affiliate_promotion_fee: 0, receive_notifications: false, is_direct_access_allowed: false };
    for (const [k, v] of Object.entries(want)) {
      assert.deepEqual(before[k], v, `summaries ${k}`);
      assert.deepEqual(s[k], v, `summary ${k}`);
    }
    assert.equal(before.block_rfq_self_match_prevention, 'false');
    assert.deepEqual([s.fee_group, s.deposit_address, s.has_non_block_chain_equity, s.estimated_liquidation_ratio], ['default', '', false, 0]);
  });

  it('auth answers a session id per session and copies state back; fork_token and exchange_token give their own sid', async () => {
    const a = await ok(url, 'public/auth', { grant_type: 'password', username: 'fields@example.com', password: 'user-password-1', state: 'my-state' });
    const b = await ok(url, 'public/auth', { grant_type: 'password', username: 'fields@example.com', password: 'user-password-1' });
    assert.match(a.sid, /^[0-9a-f]{16}$/);
    assert.notEqual(a.sid, b.sid, 'two logins, two sessions');
    assert.deepEqual([a.state, b.state], ['my-state', '']);
    assert.deepEqual([a.enabled_features, a.mandatory_tfa_status, a.google_login], [[], 'disabled', false]);
    const f = await ok(url, 'public/fork_token', { refresh_token: a.refresh_token, session_name: 'fork' });
    assert.match(f.sid, /^[0-9a-f]{16}$/);
    assert.notEqual(f.sid, a.sid);
    const r = await ok(url, 'public/auth', { grant_type: 'refresh_token', refresh_token: b.refresh_token });
    assert.notEqual(r.sid, b.sid, 'a refresh starts a new refresh token, the key of the session');
    const x = await ok(url, 'public/exchange_token', { refresh_token: r.refresh_token, subject_id: (await ok(url, 'private/get_account_summary', { currency: 'BTC', extended: true }, user)).id });
    assert.match(x.sid, /^[0-9a-f]{16}$/);
  });

  it('instruments state their leverage and liquidation commission; currencies their chain; summaries the 24 h premium volume', async () => {
    const i = await ok(url, 'public/get_instrument', { instrument_name: atm.name });
    assert.deepEqual([i.max_leverage, i.max_liquidation_commission], [1, 0.0019]);
    const cur = await ok(url, 'public/get_currencies', {});
    const by = Object.fromEntries(cur.map((c: any) => [c.currency, c]));
    assert.deepEqual([by.BTC.coin_type, by.BTC.network_currency], ['BITCOIN', 'BTC']);
    assert.deepEqual([by.ETH.coin_type, by.ETH.network_currency], ['ETHER', 'ETH']);
    assert.deepEqual([by.USDC.coin_type, by.USDC.network_currency], ['ETHER', 'ETH'], 'USDC is an ERC-20 token');
    for (const c of cur) assert.deepEqual([c.apr, c.in_cross_collateral_pool, c.min_withdrawal_fee, c.network_fee], [0, false, 0, 0]);
    const before = (await ok(url, 'public/get_book_summary_by_instrument', { instrument_name: atm.name }))[0].volume_notional;
    const p = atm.prices[Math.floor(atm.prices.length / 2)];
    await ok(url, 'private/sell', { instrument_name: atm.name, amount: 0.3, price: p }, other);
    await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.3, price: p }, user);
    const s = (await ok(url, 'public/get_book_summary_by_instrument', { instrument_name: atm.name }))[0];
    // premiums in the coin, to the satoshi: 0.3 x price
    assert.equal(Math.round((s.volume_notional - before) * 1e8), Math.round(p * 1e4) * 3 * 1000);
    const byCur = await ok(url, 'public/get_book_summary_by_currency', { currency: 'BTC', kind: 'option' });
    assert.equal(byCur.find((x: any) => x.instrument_name === atm.name).volume_notional, s.volume_notional);
  });

  it('API-key objects carry max_scope as a list and never the secret outside create and reset', async () => {
    const k = await ok(url, 'private/create_api_key', { max_scope: 'account:read trade:read', name: 'f' }, user);
    assert.deepEqual(k.max_scope, ['account:read', 'trade:read']);
    assert.equal(typeof k.client_secret, 'string');
    assert.notEqual(k.client_secret, '********');
    const listed = await ok(url, 'private/list_api_keys', {}, user);
    assert.ok(!JSON.stringify(listed).includes(k.client_secret), 'list_api_keys never shows a secret');
    for (const m of ['private/change_scope_in_api_key', 'private/edit_api_key']) {
      const r = await rpc(url, m, { id: k.id, max_scope: 'account:read' }, user);
      assert.equal(r.body.result.client_secret, '********', m);
      assert.deepEqual(r.body.result.max_scope, ['account:read'], m);
    }
  });
});
