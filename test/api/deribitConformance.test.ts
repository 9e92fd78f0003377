// Deribit conformance (issue 31): every method of Deribit's published API (../shared/reference/
// deribit-methods.md) is served by the registry (or the WebSocket session), or stands in an explicit
// not-applicable or pending list; and each served method's answer, called on a started server,
// carries every documented result field with the documented JSON type.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { allMethods } from '../../src/api/methods/index.ts';
import { NOT_APPLICABLE } from '../../src/api/methods/deribitCoverage.ts';
import { diffKey, DERIBIT_METHODS_PATH, readDeribitMethods, shapeDiffs, type DocumentedMethod, type Shape } from '../helpers/deribitMethods.ts';
import { atmCall, cheapCall, type Market } from '../helpers/market.ts';
import { adminToken, login, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';
import { SUBACCOUNT_SAMPLES } from '../helpers/subaccountSamples.ts';
import { BLOCK_TRADE_SAMPLES } from '../helpers/blockTradeSamples.ts';
import { WALLET_SAMPLES } from '../helpers/walletSamples.ts';
import { BLOCK_RFQ_SAMPLES } from '../helpers/blockRfqSamples.ts';

/** Methods other issues bring, named so that the summary prints them rather than skipping them. */
const PENDING: Record<string, string> = {};
const pend = (issue: string, names: string[]) => names.forEach((n) => (PENDING[n] = issue));
pend('issue 32 (subaccounts, transfers, wallet)', [
]);
pend('issue 34 (combos, block trades, block RFQ)', [
]);

/** Answered by the WebSocket connection itself (src/api/ws/server.ts SESSION_METHODS), not the registry. */
const WS_SESSION = new Set([
  'public/subscribe',
  'private/subscribe',
  'public/unsubscribe',
  'private/unsubscribe',
  'public/unsubscribe_all',
  'private/unsubscribe_all',
  'public/set_heartbeat',
  'public/disable_heartbeat',
]);

/**
 * Fields Deribit itself sends only on some objects (deribit-v2.md marks them optional, or they belong
 * to a product this venue does not list: perpetual funding, combos, block trades, spot). Their absence
 * is conformance; their presence is checked for type like any other field.
 */
const CONDITIONAL = new Set<string>([
  // orders: advanced (usd/implv) orders, icebergs, trigger orders, OCO/OTO links, quotes, MMP, a
  // cancelled order's reason, `reject_post_only` only with post_only, block trades and app names
  ...['advanced', 'implv', 'usd', 'display_amount', 'refresh_amount', 'trigger', 'trigger_price', 'trigger_offset', 'trigger_order_id', 'trigger_reference_price', 'triggered'],
  ...['oco_ref', 'oto_order_ids', 'primary_order_id', 'is_primary_otoco', 'is_secondary_oto', 'trigger_fill_condition', 'quote', 'quote_id', 'quote_set_id', 'mmp_group', 'mmp_cancelled'],
  ...['cancel_reason', 'reject_post_only', 'block_trade', 'app_name', 'auto_replaced', 'is_rebalance'],
  // market orders only (market | market_limit)
  'original_order_type',
  // trades: block trades, block RFQs, combos and allocations; `liquidation` only when a side was liquidated
  ...['block_trade_id', 'block_trade_leg_count', 'block_rfq_id', 'block_rfq_quote_id', 'combo_id', 'combo_trade_id', 'legs', 'trade_allocations', 'liquidation'],
  // block trades: only those arranged by a broker carry its code and name
  ...['broker_code', 'broker_name'],
  // perpetuals and futures only (this venue lists options)
  ...['current_funding', 'funding_8h', 'interest_value', 'realized_funding', 'future_type'],
  // API keys: only keys made with an Ed25519 public key (none here)
  'public_key',
  // mass_quote: only when some quotes failed or wait
  ...['errors', 'pending_requests', 'pending_requests_count'],
  // MMP: block RFQ configs only
  'block_rfq',
  // block RFQs: a hedge leg (futures; none listed here), a waiting acceptance's trigger, and an
  // acceptance answers with its trigger or its block trades
  ...['hedge', 'trade_trigger', 'block_trades'],
]);

/**
 * The reference's known slips (its header names them): Deribit sends `underlying_index` as text,
 * trade `post_only`/`reduce_only` as booleans, `get_expirations` as a map; and option instruments
 * quote in their coin (`quote_currency` BTC) and settle daily too (`settlement_period` day).
 */
function withSlips(d: DocumentedMethod): DocumentedMethod {
  if (d.name === 'public/get_expirations') return { ...d, result: { kind: 'type', type: 'object' } };
  // the page nests the request's own fields under `trades` (a scrape slip): each of Deribit's request
  // legs is {instrument_name, direction, price, amount}, as execute_block_trade's `trades` param
  if (d.name === 'private/get_block_trade_requests' && d.result.kind === 'array' && d.result.of.kind === 'object') {
    const leg: Shape = { kind: 'object', fields: [{ name: 'instrument_name', shape: { kind: 'type', type: 'string' } }, { name: 'direction', shape: { kind: 'type', type: 'buy|sell' } }, { name: 'price', shape: { kind: 'type', type: 'number' } }, { name: 'amount', shape: { kind: 'type', type: 'number' } }] };
    const fields = d.result.of.fields.map((x) => (x.name === 'trades' ? { name: 'trades', shape: { kind: 'array', of: leg } as Shape } : x));
    return { ...d, result: { kind: 'array', of: { kind: 'object', fields } } };
  }
  const TYPES: Record<string, string> = { underlying_index: 'string', post_only: 'boolean', reduce_only: 'boolean', quote_currency: 'string', settlement_period: 'month|week|day|perpetual' };
  const fix = (sh: Shape): Shape =>
    sh.kind === 'array' ? { kind: 'array', of: fix(sh.of) } : sh.kind === 'object' ? { kind: 'object', fields: sh.fields.map((x) => (x.name in TYPES && x.shape.kind === 'type' ? { name: x.name, shape: { kind: 'type', type: TYPES[x.name]! } } : { name: x.name, shape: fix(x.shape) })) } : sh;
  return { ...d, result: fix(d.result) };
}

/**
 * Findings on served methods that issue 31's field-fidelity item (4) has not fixed yet, exactly as the
 * test finds them: a fix must remove its line here, and a new finding fails the test.
 */
const KNOWN_GAPS: Record<string, string[]> = {
};

interface Fixture {
  url: string;
  admin: string;
  user: string;
  other: string;
  /** a user whose orders the cancel-all samples may cancel */
  canceller: string;
  atm: Market;
  cheap: Market;
  tradedOrder: string;
  openOrder: string;
  apiKeyId: number;
  now: number;
}

interface Call {
  params?: Record<string, unknown>;
  token?: string;
}

const tok = (f: Fixture) => f.user;
/** Sample params for each served method: valid, and chosen so that the answer is not empty. */
const SAMPLES: Record<string, (f: Fixture) => Promise<Call> | Call> = {
  'private/get_account_summary': (f) => ({ params: { currency: 'BTC', extended: true }, token: tok(f) }),
  'private/get_account_summaries': (f) => ({ params: { extended: true }, token: tok(f) }),
  'private/get_position': (f) => ({ params: { instrument_name: f.cheap.name }, token: tok(f) }),
  'private/get_positions': (f) => ({ params: { currency: 'BTC' }, token: tok(f) }),
  'public/auth': () => ({ params: { grant_type: 'password', username: 'trader@example.com', password: 'user-password-1' } }),
  'private/logout': async (f) => ({ token: await login(f.url, 'trader@example.com', 'user-password-1') }),
  'private/buy': (f) => ({ params: { instrument_name: f.atm.name, amount: 0.1, price: f.atm.prices[0] }, token: f.canceller }),
  'private/sell': (f) => ({ params: { instrument_name: f.atm.name, amount: 0.1, price: f.atm.prices.at(-1) }, token: f.canceller }),
  'private/cancel': async (f) => {
    const o = await ok(f.url, 'private/buy', { instrument_name: f.atm.name, amount: 0.1, price: f.atm.prices[0] }, f.canceller);
    return { params: { order_id: o.order.order_id }, token: f.canceller };
  },
  'private/cancel_all': (f) => ({ token: f.canceller }),
  'private/cancel_all_by_currency': (f) => ({ params: { currency: 'BTC' }, token: f.canceller }),
  'private/cancel_all_by_instrument': (f) => ({ params: { instrument_name: f.atm.name }, token: f.canceller }),
  'private/cancel_by_label': (f) => ({ params: { label: 'nothing-here' }, token: f.canceller }),
  'private/get_open_orders': (f) => ({ token: tok(f) }),
  'private/get_open_orders_by_currency': (f) => ({ params: { currency: 'BTC' }, token: tok(f) }),
  'private/get_open_orders_by_instrument': (f) => ({ params: { instrument_name: f.atm.name }, token: tok(f) }),
  'private/get_user_trades_by_currency': (f) => ({ params: { currency: 'BTC' }, token: tok(f) }),
  'private/get_user_trades_by_currency_and_time': (f) => ({ params: { currency: 'BTC', start_timestamp: 0, end_timestamp: f.now + 60_000 }, token: tok(f) }),
  'private/get_user_trades_by_instrument': (f) => ({ params: { instrument_name: f.cheap.name }, token: tok(f) }),
  'private/get_user_trades_by_instrument_and_time': (f) => ({ params: { instrument_name: f.cheap.name, start_timestamp: 0, end_timestamp: f.now + 60_000 }, token: tok(f) }),
  'private/get_user_trades_by_order': (f) => ({ params: { order_id: f.tradedOrder }, token: tok(f) }),
  'private/edit': async (f) => {
    const o = await ok(f.url, 'private/buy', { instrument_name: f.atm.name, amount: 0.1, price: f.atm.prices[0] }, f.canceller);
    return { params: { order_id: o.order.order_id, amount: 0.2, price: f.atm.prices[1] }, token: f.canceller };
  },
  'private/get_order_state': (f) => ({ params: { order_id: f.openOrder }, token: tok(f) }),
  'private/get_order_history_by_currency': (f) => ({ params: { currency: 'BTC' }, token: tok(f) }),
  'private/get_order_history_by_instrument': (f) => ({ params: { instrument_name: f.cheap.name }, token: tok(f) }),
  'private/get_order_margin_by_ids': (f) => ({ params: { ids: [f.openOrder] }, token: tok(f) }),
  'private/get_margins': (f) => ({ params: { instrument_name: f.atm.name, amount: 1, price: f.atm.prices[0] }, token: tok(f) }),
  'private/simulate_portfolio': (f) => ({ params: { currency: 'BTC', simulated_positions: { [f.atm.name]: -1 } }, token: tok(f) }),
  'private/pme/simulate': (f) => ({ params: { currency: 'BTC', simulated_positions: { [f.atm.name]: -1 } }, token: tok(f) }),
  'private/change_margin_model': (f) => ({ params: { margin_model: 'segregated_pm', dry_run: true }, token: tok(f) }),
  'private/get_transaction_log': (f) => ({ params: { currency: 'BTC', start_timestamp: 0, end_timestamp: f.now + 60_000 }, token: tok(f) }),
  'private/get_settlement_history_by_instrument': (f) => ({ params: { instrument_name: f.cheap.name }, token: tok(f) }),
  'private/get_settlement_history_by_currency': (f) => ({ params: { currency: 'BTC' }, token: tok(f) }),
  'private/get_trigger_order_history': (f) => ({ params: { currency: 'BTC' }, token: tok(f) }),
  'private/create_api_key': (f) => ({ params: { max_scope: 'trade:read', name: 'conformance' }, token: tok(f) }),
  'private/list_api_keys': (f) => ({ token: tok(f) }),
  'private/remove_api_key': async (f) => {
    const k = await ok(f.url, 'private/create_api_key', { max_scope: 'trade:read' }, f.user);
    return { params: { id: k.id }, token: tok(f) };
  },
  'private/change_api_key_name': (f) => ({ params: { id: f.apiKeyId, name: 'renamed' }, token: tok(f) }),
  'private/change_scope_in_api_key': (f) => ({ params: { id: f.apiKeyId, max_scope: 'trade:read account:read' }, token: tok(f) }),
  'private/edit_api_key': (f) => ({ params: { id: f.apiKeyId, max_scope: 'trade:read', ip_whitelist: ['127.0.0.1'] }, token: tok(f) }),
  'private/disable_api_key': (f) => ({ params: { id: f.apiKeyId }, token: tok(f) }),
  'private/enable_api_key': (f) => ({ params: { id: f.apiKeyId }, token: tok(f) }),
  'private/reset_api_key': (f) => ({ params: { id: f.apiKeyId }, token: tok(f) }),
  'public/get_announcements': () => ({}),
  'private/get_new_announcements': (f) => ({ token: tok(f) }),
  'private/set_announcement_as_read': async (f) => ({ params: { announcement_id: (await ok(f.url, 'public/get_announcements', { count: 1 }))[0].id }, token: tok(f) }),
  'private/set_self_trading_config': (f) => ({ params: { mode: 'reject_taker', extended_to_subaccounts: false }, token: f.other }),
  'private/set_disabled_trading_products': async (f) => ({ params: { user_id: (await ok(f.url, 'private/get_account_summary', { currency: 'BTC', extended: true }, f.other)).id, trading_products: [] }, token: f.other }),
  'private/get_access_log': (f) => ({ token: tok(f) }),
  'public/fork_token': async (f) => ({ params: { refresh_token: (await ok(f.url, 'public/auth', { grant_type: 'password', username: 'trader@example.com', password: 'user-password-1' })).refresh_token, session_name: 'fork' } }),
  'private/enable_cancel_on_disconnect': (f) => ({ params: { scope: 'account' }, token: f.other }),
  'private/disable_cancel_on_disconnect': (f) => ({ params: { scope: 'account' }, token: f.other }),
  'private/get_cancel_on_disconnect': (f) => ({ params: { scope: 'account' }, token: f.other }),
  'private/set_mmp_config': (f) => ({ params: { index_name: 'btc_usd', mmp_group: 'conf', interval: 60, frozen_time: 0, quantity_limit: 5, max_quote_quantity: 5 }, token: f.other }),
  'private/get_mmp_config': (f) => ({ params: { index_name: 'btc_usd', mmp_group: 'conf' }, token: f.other }),
  'private/get_mmp_status': (f) => ({ params: { index_name: 'btc_usd', mmp_group: 'conf' }, token: f.other }),
  'private/reset_mmp': (f) => ({ params: { index_name: 'btc_usd', mmp_group: 'conf' }, token: f.other }),
  'private/mass_quote': (f) => ({
    params: { quote_id: 'q1', mmp_group: 'conf', quotes: [{ instrument_name: f.atm.name, bid: { amount: 0.1, price: f.atm.prices[0] } }] },
    token: f.other,
  }),
  'private/cancel_quotes': (f) => ({ params: { cancel_type: 'all' }, token: f.other }),
  'public/get_instruments': () => ({ params: { currency: 'BTC' } }),
  'public/get_instrument': (f) => ({ params: { instrument_name: f.atm.name } }),
  'public/get_order_book': (f) => ({ params: { instrument_name: f.cheap.name } }),
  'public/get_order_book_by_instrument_id': (f) => ({ params: { instrument_id: f.cheap.inst.instrument_id } }),
  'public/get_index_price': () => ({ params: { index_name: 'btc_usd' } }),
  'public/get_index_price_names': () => ({ params: { extended: true } }),
  'public/get_supported_index_names': () => ({ params: { type: 'all' } }),
  'public/get_currencies': () => ({}),
  'public/get_time': () => ({}),
  'public/test': () => ({}),
  'public/hello': () => ({ params: { client_name: 'conformance', client_version: '1.0' } }),
  'public/status': () => ({}),
  'public/ticker': (f) => ({ params: { instrument_name: f.cheap.name } }),
  'public/get_book_summary_by_currency': () => ({ params: { currency: 'BTC', kind: 'option' } }),
  'public/get_book_summary_by_instrument': (f) => ({ params: { instrument_name: f.cheap.name } }),
  'public/get_contract_size': (f) => ({ params: { instrument_name: f.cheap.name } }),
  'public/get_last_trades_by_instrument': (f) => ({ params: { instrument_name: f.cheap.name } }),
  'public/get_last_trades_by_instrument_and_time': (f) => ({ params: { instrument_name: f.cheap.name, start_timestamp: 0, end_timestamp: f.now + 60_000 } }),
  'public/get_last_trades_by_currency': () => ({ params: { currency: 'BTC' } }),
  'public/get_last_trades_by_currency_and_time': (f) => ({ params: { currency: 'BTC', start_timestamp: 0, end_timestamp: f.now + 60_000 } }),
  'public/get_mark_price_history': (f) => ({ params: { instrument_name: f.cheap.name, start_timestamp: f.now - 3_600_000, end_timestamp: f.now + 60_000 } }),
  'public/get_trade_volumes': () => ({ params: { extended: true } }),
  'public/get_tradingview_chart_data': (f) => ({ params: { instrument_name: f.cheap.name, start_timestamp: f.now - 3_600_000, end_timestamp: f.now + 60_000, resolution: '1' } }),
  'public/get_delivery_prices': () => ({ params: { index_name: 'btc_usd' } }),
  'public/get_expirations': () => ({ params: { currency: 'BTC', kind: 'option' } }),
  'public/get_historical_volatility': () => ({ params: { currency: 'BTC' } }),
  'private/get_open_orders_by_label': (f) => ({ params: { currency: 'BTC', label: 'conf-open' }, token: tok(f) }),
  'private/get_order_state_by_label': (f) => ({ params: { currency: 'BTC', label: 'conf-trade' }, token: tok(f) }),
  'private/edit_by_label': async (f) => {
    await ok(f.url, 'private/buy', { instrument_name: f.atm.name, amount: 0.1, price: f.atm.prices[0], label: 'conf-edit' }, f.canceller);
    return { params: { label: 'conf-edit', instrument_name: f.atm.name, amount: 0.2, price: f.atm.prices[1] }, token: f.canceller };
  },
  'private/cancel_all_by_kind_or_type': (f) => ({ params: { currency: ['BTC'], kind: 'option' }, token: f.canceller }),
  'private/cancel_all_by_currency_pair': (f) => ({ params: { currency_pair: 'btc_usd' }, token: f.canceller }),
  'private/get_user_locks': (f) => ({ token: tok(f) }),
  'public/get_last_settlements_by_currency': () => ({ params: { currency: 'BTC' } }),
  'public/get_last_settlements_by_instrument': (f) => ({ params: { instrument_name: f.cheap.name } }),
  'public/get_index_chart_data': () => ({ params: { index_name: 'btc_usd', range: '1d' } }),
  // last: it leaves a reduce-only order that closes the fixture's short
  'private/close_position': (f) => ({ params: { instrument_name: f.cheap.name, type: 'limit', price: f.cheap.prices[0] }, token: tok(f) }),
  'public/get_volatility_index_data': (f) => ({ params: { currency: 'BTC', start_timestamp: f.now - 3_600_000, end_timestamp: f.now + 60_000, resolution: '60' } }),
  ...SUBACCOUNT_SAMPLES,
  ...BLOCK_TRADE_SAMPLES,
  'private/get_leg_prices': (f) => ({ params: { legs: [{ instrument_name: f.atm.name, amount: 1, direction: 'buy' }, { instrument_name: f.cheap.name, amount: 1, direction: 'sell' }], price: Number((f.atm.book.mark_price - f.cheap.book.mark_price).toFixed(4)) }, token: tok(f) }),
  'private/create_combo': (f) => ({ params: { trades: [{ instrument_name: f.atm.name, direction: 'buy', amount: 1 }, { instrument_name: f.cheap.name, direction: 'sell', amount: 1 }] }, token: tok(f) }),
  'public/get_combos': () => ({ params: { currency: 'BTC' } }),
  'public/get_combo_ids': () => ({ params: { currency: 'BTC' } }),
  'public/get_combo_details': async (f) => ({ params: { combo_id: (await ok(f.url, 'public/get_combo_ids', { currency: 'BTC' }))[0] } }),
  ...WALLET_SAMPLES,
  ...BLOCK_RFQ_SAMPLES,
};

/** Samples for the WebSocket session methods, called on one authenticated connection in this order. */
const WS_SAMPLES: Record<string, (f: Fixture) => Record<string, unknown>> = {
  'public/subscribe': (f) => ({ channels: [`ticker.${f.cheap.name}.100ms`] }),
  'private/subscribe': (f) => ({ channels: [`user.orders.${f.cheap.name}.raw`] }),
  'public/unsubscribe': (f) => ({ channels: [`ticker.${f.cheap.name}.100ms`] }),
  'private/unsubscribe': (f) => ({ channels: [`user.orders.${f.cheap.name}.raw`] }),
  'public/unsubscribe_all': () => ({}),
  'private/unsubscribe_all': () => ({}),
  'public/set_heartbeat': () => ({ interval: 30 }),
  'public/disable_heartbeat': () => ({}),
};

const documented = readDeribitMethods();
const served = new Set<string>();
for (const m of allMethods) for (const n of [m.name, ...(m.aliases ?? [])]) served.add(n);

describe('Deribit conformance', { skip: documented === null ? `no Deribit reference at ${DERIBIT_METHODS_PATH}` : false }, () => {
  const docs = documented ?? [];
  const isServed = (name: string) => served.has(name) || WS_SESSION.has(name);
  let server: TestServer;
  let f: Fixture;
  const findings = new Map<string, string[]>();

  before(async () => {
    if (documented === null) return;
    // a new address-book entry receives withdrawals at once (the wallet samples withdraw to one)
    server = await startServer({ STRIKEBOOK_ADDRESS_BOOK_WAIT_MS: '0' });
    const url = server.url;
    const admin = await adminToken(url);
    const user = await userToken(url, admin, 'trader@example.com', { currency: 'BTC', amount: 100 });
    const other = await userToken(url, admin, 'other@example.com', { currency: 'BTC', amount: 100 });
    const canceller = await userToken(url, admin, 'canceller@example.com', { currency: 'BTC', amount: 100 });
    const atm = await atmCall(url);
    const cheap = await cheapCall(url);
    const sell = await ok(url, 'private/sell', { instrument_name: cheap.name, amount: 0.2, price: cheap.prices[5], label: 'conf-trade' }, user);
    await ok(url, 'private/buy', { instrument_name: cheap.name, amount: 0.2, price: cheap.prices[5] }, other);
    const open = await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0], label: 'conf-open' }, user);
    const key = await ok(url, 'private/create_api_key', { max_scope: 'trade:read', name: 'fixture' }, user);
    await ok(url, 'private/publish_announcement', { title: 'Conformance', body: 'An announcement to list' }, admin);
    f = { url, admin, user, other, canceller, atm, cheap, tradedOrder: sell.order.order_id, openOrder: open.order.order_id, apiKeyId: key.id, now: await ok(url, 'public/get_time') };
  });

  after(async () => {
    await server?.stop();
  });

  it('lists every documented method as served, not applicable or pending, and each in one list only', () => {
    const unplaced: string[] = [];
    for (const d of docs) {
      const lists = [isServed(d.name), d.name in NOT_APPLICABLE, d.name in PENDING].filter(Boolean).length;
      if (lists !== 1) unplaced.push(`${d.name} (${lists === 0 ? 'in no list' : 'in more than one list'})`);
    }
    assert.deepEqual(unplaced, [], 'each documented method is served, not applicable or pending, exactly one of them');
    const names = new Set(docs.map((d) => d.name));
    const stale = [...Object.keys(NOT_APPLICABLE), ...Object.keys(PENDING), ...Object.keys(SAMPLES), ...Object.keys(WS_SAMPLES)].filter((n) => !names.has(n));
    assert.deepEqual(stale, [], 'the lists name only documented methods');
  });

  it('has sample params for every served method', () => {
    const noSample = docs.filter((d) => isServed(d.name) && !(d.name in SAMPLES) && !(d.name in WS_SAMPLES)).map((d) => d.name);
    assert.deepEqual(noSample, []);
  });

  it("answers each served method with every documented result field, of the documented JSON type", async () => {
    const byName = new Map<string, DocumentedMethod>(docs.map((d) => [d.name, withSlips(d)]));
    const failures: string[] = [];
    for (const [name, sample] of Object.entries(SAMPLES)) {
      const d = byName.get(name);
      if (!d || !served.has(name)) continue;
      const c = await sample(f);
      const r = await rpc(f.url, name, c.params ?? {}, c.token);
      if (r.body.error) {
        failures.push(`${name}: ${JSON.stringify(r.body.error)}`);
        continue;
      }
      findings.set(name, [...new Set(shapeDiffs(r.body.result, d.result).map(diffKey))].filter((k) => !CONDITIONAL.has(k.split('.').at(-1)!)));
    }
    const ws = await WsClient.open(f.url);
    try {
      await ws.auth('trader@example.com');
      for (const [name, sample] of Object.entries(WS_SAMPLES)) {
        const d = byName.get(name)!;
        const r = await ws.call(name, sample(f));
        if (r.error) failures.push(`${name}: ${JSON.stringify(r.error)}`);
        else findings.set(name, [...new Set(shapeDiffs(r.result, d.result).map(diffKey))].filter((k) => !CONDITIONAL.has(k.split('.').at(-1)!)));
      }
    } finally {
      await ws.close();
    }
    assert.deepEqual(failures, [], 'every sample call succeeds');
    const found: Record<string, string[]> = {};
    for (const [name, diffs] of findings) {
      // an empty list has no element to check: printed, so a thin sample shows
      for (const e of diffs.filter((x) => x.startsWith('empty '))) console.log(`unchecked (empty in the sample answer): ${name} ${e.slice(6)}`);
      const gaps = diffs.filter((x) => !x.startsWith('empty ')).sort();
      if (gaps.length > 0) found[name] = gaps;
    }
    if (process.env.CONFORMANCE_PRINT_GAPS === '1') console.log(JSON.stringify(found, null, 1));
    assert.deepEqual(found, KNOWN_GAPS, 'the documented fields a served answer lacks are exactly the known gaps listed here');
  });

  it('prints the summary line and the pending methods', () => {
    const servedN = docs.filter((d) => isServed(d.name)).length;
    const na = docs.filter((d) => d.name in NOT_APPLICABLE).length;
    const pending = docs.filter((d) => d.name in PENDING);
    for (const p of pending) console.log(`pending: ${p.name} (${PENDING[p.name]})`);
    console.log(`deribit conformance: served ${servedN} / documented ${docs.length} / not applicable ${na} / pending ${pending.length}`);
    assert.equal(servedN + na + pending.length, docs.length);
  });
});
