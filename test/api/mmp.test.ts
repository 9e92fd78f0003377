// Market-maker protection and mass quotes over HTTP and WebSocket (issue 17): values, not shapes,
// and the adversarial cases (another user's quote set, quoting while frozen, a mass quote past the
// account's margin, a quote crossing the user's own order). A mass quote is one journal record.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { assertError } from '../helpers/envelope.ts';
import { instruments, market, nearMark, type Market } from '../helpers/market.ts';
import { cleanReplay } from '../helpers/replay.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';
import { decodeCommand } from '../../src/journal/commandCodec.ts';
import type { Sequenced } from '../../src/engine/commands.ts';

let srv: TestServer;
let admin: string;
let mm: string;
let taker: string;
let other: string;
let poor: string;
/** BTC options of the latest expiry, nearest the money first */
let series: Market[];

/** A grid price `steps` ticks from the mark of `m`. */
function px(m: Market, steps: number): number {
  return m.prices[m.prices.indexOf(nearMark(m)) + steps];
}

before(async () => {
  srv = await startServer();
  admin = await adminToken(srv.url);
  mm = await userToken(srv.url, admin, 'mm@example.com', { currency: 'BTC', amount: 100 });
  taker = await userToken(srv.url, admin, 'taker@example.com', { currency: 'BTC', amount: 100 });
  other = await userToken(srv.url, admin, 'other@example.com', { currency: 'BTC', amount: 100 });
  poor = await userToken(srv.url, admin, 'poor@example.com', { currency: 'BTC', amount: 0.3 });
  const list = await instruments(srv.url, 'BTC');
  const index = (await ok(srv.url, 'public/get_index_price', { index_name: 'btc_usd' })).index_price;
  const last = Math.max(...list.map((i) => i.expiration_timestamp));
  const chosen = list.filter((i) => i.expiration_timestamp === last).sort((a, b) => Math.abs(a.strike - index) - Math.abs(b.strike - index));
  series = [];
  for (const i of chosen.slice(0, 6)) series.push(await market(srv.url, i));
});

after(async () => {
  await srv.stop();
});

describe('MMP over HTTP', () => {
  it('set/get_mmp_config echo the values; an mmp order shows mmp; a fill past quantity_limit cancels it and freezes the index until reset_mmp', async () => {
    const m = series[0];
    const [set] = await ok(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', interval: 60, frozen_time: 0, quantity_limit: 0.5, delta_limit: 2 }, mm);
    assert.ok(Number.isInteger(set.id) && set.id > 0, 'a config has an id');
    assert.deepEqual(set, { id: set.id, index_name: 'btc_usd', interval: 60, frozen_time: 0, quantity_limit: 0.5, delta_limit: 2, vega_limit: 0, trade_count_limit: 0 });
    assert.deepEqual(await ok(srv.url, 'private/get_mmp_config', { index_name: 'btc_usd' }, mm), [set]);
    assert.deepEqual(await ok(srv.url, 'private/get_mmp_config', {}, other), [], "another user's config is not visible");
    const a = await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 1, price: px(m, 3), mmp: true }, mm);
    assert.equal(a.order.mmp, true);
    const plain = await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.1, price: px(m, 6) }, mm);
    assert.equal(plain.order.mmp, false);
    const fill = await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.5, price: px(m, 3) }, taker);
    assert.equal(fill.trades.length, 1);
    const st = await ok(srv.url, 'private/get_order_state', { order_id: a.order.order_id }, mm);
    assert.equal(st.order_state, 'cancelled');
    assert.equal(st.cancel_reason, 'mmp_trigger');
    assert.equal(st.mmp_cancelled, true);
    assert.equal(st.filled_amount, 0.5);
    assert.equal((await ok(srv.url, 'private/get_order_state', { order_id: plain.order.order_id }, mm)).order_state, 'open');
    const trades = await ok(srv.url, 'private/get_user_trades_by_order', { order_id: a.order.order_id }, mm);
    assert.equal(trades[0].mmp, true);
    assert.deepEqual(await ok(srv.url, 'private/get_mmp_status', { index_name: 'btc_usd' }, mm), [{ index_name: 'btc_usd', frozen_until: 0 }]);
    // frozen: an mmp order is refused with a section-4 code and a reason saying why
    const refused = await rpc(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.5, price: px(m, 3), mmp: true }, mm);
    assertError(refused, 11030);
    assert.equal(refused.body.error.data.reason, 'mmp_frozen');
    // another user's reset finds nothing of theirs and lifts nothing
    assertError(await rpc(srv.url, 'private/reset_mmp', { index_name: 'btc_usd' }, other), 13020);
    assertError(await rpc(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.5, price: px(m, 3), mmp: true }, mm), 11030);
    assert.equal(await ok(srv.url, 'private/reset_mmp', { index_name: 'btc_usd' }, mm), 'ok');
    assert.deepEqual(await ok(srv.url, 'private/get_mmp_status', {}, mm), []);
    const again = await ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 0.5, price: px(m, 3), mmp: true }, mm);
    assert.equal(again.order.order_state, 'open');
    // edit can unflag an order
    const e = await ok(srv.url, 'private/edit', { order_id: again.order.order_id, amount: 0.5, price: px(m, 4), mmp: false }, mm);
    assert.equal(e.order.mmp, false);
    await ok(srv.url, 'private/cancel_all', {}, mm);
    // interval 0 removes the config; an mmp order then needs one
    await ok(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', interval: 0, frozen_time: 0 }, mm);
    const none = await rpc(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: px(m, -3), mmp: true }, mm);
    assertError(none, 11029);
    assert.equal(none.body.error.data.reason, 'mmp_not_configured');
  });

  it('refuses bad configs with section-4 codes', async () => {
    assertError(await rpc(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', interval: 10, frozen_time: 0 }, mm), 11029);
    assertError(await rpc(srv.url, 'private/set_mmp_config', { index_name: 'sol_usd', interval: 10, frozen_time: 0, quantity_limit: 1 }, mm), -32602);
    assertError(await rpc(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', interval: 3601, frozen_time: 0, quantity_limit: 1 }, mm), -32602);
    assertError(await rpc(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', interval: 10, frozen_time: 0, vega_limit: -1 }, mm), -32602);
    assertError(await rpc(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', interval: 10, frozen_time: 0, trade_count_limit: 1.5 }, mm), -32602);
    assertError(await rpc(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', interval: 10, frozen_time: 0, vega_limit: 0, trade_count_limit: 0 }, mm), 11029, { reason: 'mmp_limit_required' });
    assertError(await rpc(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', mmp_group: 'a|b', interval: 10, frozen_time: 0, quantity_limit: 1 }, mm), -32602);
    assertError(await rpc(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', interval: 10, frozen_time: 0, quantity_limit: 1e-9 }, mm), -32602);
    assertError(await rpc(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', interval: 10, frozen_time: 0, quantity_limit: 1 }), 10000);
  });
});

describe('MMP vega and trade-count limits over HTTP', () => {
  it('set_mmp_config takes vega_limit and trade_count_limit; fills reaching the count freeze the group; a clean replay agrees', async () => {
    const m = series[1];
    const g = 'limits';
    const [set] = await ok(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', mmp_group: g, interval: 60, frozen_time: 0, vega_limit: 1000, trade_count_limit: 2, max_quote_quantity: 5 }, mm);
    assert.deepEqual(set, { id: set.id, index_name: 'btc_usd', mmp_group: g, interval: 60, frozen_time: 0, quantity_limit: 0, delta_limit: 0, vega_limit: 1000, trade_count_limit: 2, max_quote_quantity: 5 });
    assert.deepEqual(await ok(srv.url, 'private/get_mmp_config', { index_name: 'btc_usd', mmp_group: g }, mm), [set]);
    const q = await ok(srv.url, 'private/mass_quote', { quote_id: 'lim', mmp_group: g, quotes: [{ instrument_name: m.name, ask: { price: px(m, 3), amount: 1 } }] }, mm);
    assert.equal(q.orders.length, 1);
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: px(m, 3) }, taker);
    assert.equal((await ok(srv.url, 'private/get_order_state', { order_id: q.orders[0].order_id }, mm)).order_state, 'open', 'one fill of two');
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: px(m, 3) }, taker);
    const st = await ok(srv.url, 'private/get_order_state', { order_id: q.orders[0].order_id }, mm);
    assert.deepEqual([st.order_state, st.cancel_reason], ['cancelled', 'mmp_trigger']);
    assert.deepEqual(await ok(srv.url, 'private/get_mmp_status', { index_name: 'btc_usd', mmp_group: g }, mm), [{ index_name: 'btc_usd', mmp_group: g, frozen_until: 0 }]);
    // the journaled config carries the limits: a replay from the journal reaches the same state
    const replayed = cleanReplay(srv.dataDir);
    assert.deepEqual(replayed.errors, []);
    assert.equal(replayed.hash, (await ok(srv.url, 'private/get_state_hash', {}, admin)).state_hash);
    const live = [...srv.app.services.ex.mmp.groups.values()].find((x) => x.group === g)!;
    assert.deepEqual([live.id, live.vegaLimit, live.tradeCountLimit, live.frozen], [set.id, 1000, 2, true]);
    const again = replayed.ex.mmp.list(live.userId, 'btc_usd', g)[0];
    assert.deepEqual([again.id, again.vegaLimit, again.tradeCountLimit, again.frozen], [set.id, 1000, 2, true]);
    await ok(srv.url, 'private/reset_mmp', { index_name: 'btc_usd', mmp_group: g }, mm);
  });
});

describe('mass quotes over HTTP', () => {
  const group = 'mq';

  before(async () => {
    for (const t of [mm, other, poor]) await ok(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', mmp_group: group, interval: 1, frozen_time: 0, quantity_limit: 50 }, t);
  });

  it('places two-sided quotes with their ids, replaces them per instrument and side, and is one journal record', async () => {
    const seq0 = (await ok(srv.url, 'private/get_state_hash', {}, admin)).seq;
    const quotes = series.slice(0, 3).map((m, i) => ({ instrument_name: m.name, quote_set_id: i === 0 ? 'A' : 'B', bid: { price: px(m, -4), amount: 0.5 }, ask: { price: px(m, 4), amount: 0.3 } }));
    const r = await ok(srv.url, 'private/mass_quote', { quote_id: 'q1', mmp_group: group, quotes, detailed: true }, mm);
    assert.deepEqual(r.errors, []);
    assert.equal(r.orders.length, 6);
    for (const [i, q] of quotes.entries()) {
      const [bid, ask] = [r.orders[2 * i], r.orders[2 * i + 1]];
      assert.deepEqual([bid.instrument_name, bid.direction, bid.price, bid.amount, bid.order_state], [q.instrument_name, 'buy', q.bid.price, 0.5, 'open']);
      assert.deepEqual([ask.direction, ask.price, ask.amount], ['sell', q.ask.price, 0.3]);
      for (const o of [bid, ask]) assert.deepEqual([o.mmp, o.quote, o.quote_id, o.mmp_group, o.quote_set_id], [true, true, 'q1', group, q.quote_set_id]);
    }
    const live = await ok(srv.url, 'private/get_state_hash', {}, admin);
    assert.equal(live.seq, seq0 + 1, 'one command');
    const journal = openSqliteJournal(srv.dataDir);
    try {
      const recs = [...journal.readAfter(seq0)];
      assert.equal(recs.length, 1, 'one journal record');
      const cmd = decodeCommand(recs[0].cmd, recs[0].seq, recs[0].ts) as Extract<Sequenced, { t: 'mass_quote' }>;
      assert.equal(cmd.t, 'mass_quote');
      assert.equal(cmd.quotes.length, 3);
    } finally {
      journal.close();
    }
    // new prices replace the old quotes of the same instrument and side; the book holds only the new
    const m = series[0];
    const r2 = await ok(srv.url, 'private/mass_quote', { quote_id: 'q2', mmp_group: group, quotes: [{ instrument_name: m.name, bid: { price: px(m, -5), amount: 0.5 } }] }, mm);
    assert.equal(r2.errors_count, 0);
    assert.equal((await ok(srv.url, 'private/get_order_state', { order_id: r.orders[0].order_id }, mm)).order_state, 'cancelled');
    const open = await ok(srv.url, 'private/get_open_orders_by_instrument', { instrument_name: m.name }, mm);
    assert.deepEqual(open.map((o: any) => [o.direction, o.price, o.quote_id]).sort(), [['buy', px(m, -5), 'q2'], ['sell', px(m, 4), 'q1']].sort());
    // the replay of the journal reaches the live state
    assert.equal(cleanReplay(srv.dataDir).hash, (await ok(srv.url, 'private/get_state_hash', {}, admin)).state_hash);
  });

  it("cancel_quotes by another user's quote_set_id cancels nothing of theirs", async () => {
    const m = series[3];
    await ok(srv.url, 'private/mass_quote', { quote_id: 'o1', mmp_group: group, quotes: [{ instrument_name: m.name, quote_set_id: 'A', bid: { price: px(m, -8), amount: 0.2 } }] }, other);
    assert.equal(await ok(srv.url, 'private/cancel_quotes', { cancel_type: 'quote_set_id', quote_set_id: 'A' }, other), 1, 'only its own set A');
    const mine = await ok(srv.url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, mm);
    assert.equal(mine.filter((o: any) => o.quote_set_id === 'A').length, 1, "mm's set A still open");
    const detailed = await ok(srv.url, 'private/cancel_quotes', { cancel_type: 'quote_set_id', quote_set_id: 'A', detailed: true }, mm);
    assert.deepEqual(detailed[0].result.map((o: any) => [o.instrument_name, o.quote_set_id, o.order_state]), [[series[0].name, 'A', 'cancelled']]);
    assert.equal(await ok(srv.url, 'private/cancel_quotes', { cancel_type: 'instrument', instrument_name: series[1].name }, mm), 2);
    assertError(await rpc(srv.url, 'private/cancel_quotes', { cancel_type: 'quote_set_id' }, mm), -32602);
    // left: the call's new bid (q2, no set) and both sides of the third instrument
    assert.equal(await ok(srv.url, 'private/cancel_quotes', { cancel_type: 'all' }, mm), 3);
  });

  it('a mass quote past the account margin is refused quote by quote, never over-committing', async () => {
    const quotes = series.slice(0, 6).map((m) => ({ instrument_name: m.name, ask: { price: px(m, 2), amount: 1 } }));
    const r = await ok(srv.url, 'private/mass_quote', { quote_id: 'p', mmp_group: group, quotes, detailed: true }, poor);
    assert.ok(r.errors.length > 0, 'some asks refused');
    for (const e of r.errors) {
      assert.equal(e.side, 'ask');
      assert.deepEqual([e.error.code, e.error.message, e.error.data.reason], [10009, 'not_enough_funds', 'not_enough_funds']);
    }
    assert.equal(r.orders.length + r.errors.length, 6);
    const summary = await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, poor);
    assert.ok(summary.available_funds >= 0, `available_funds ${summary.available_funds}`);
    assert.ok(summary.initial_margin <= summary.equity, `IM ${summary.initial_margin} <= equity ${summary.equity}`);
    await ok(srv.url, 'private/cancel_quotes', { cancel_type: 'all' }, poor);
  });

  it('a quote that would trade with the user\'s own order is refused as a self-trade', async () => {
    const m = series[4];
    await ok(srv.url, 'private/buy', { instrument_name: m.name, amount: 0.1, price: px(m, -2) }, mm);
    const r = await ok(srv.url, 'private/mass_quote', { quote_id: 's', mmp_group: group, detailed: true, quotes: [{ instrument_name: m.name, ask: { price: px(m, -2), amount: 0.1 } }] }, mm);
    assert.equal(r.orders.length, 0);
    assert.deepEqual(r.errors.map((e: any) => [e.instrument_name, e.side, e.error.code, e.error.data.reason]), [[m.name, 'ask', 11030, 'self_trade']]);
    assert.equal(r.trades.length, 0);
    await ok(srv.url, 'private/cancel_all', {}, mm);
  });

  it('refuses malformed messages whole: too many quotes, duplicates, off-tick prices, no group', async () => {
    const m = series[0];
    const many = Array.from({ length: 101 }, () => ({ instrument_name: m.name, bid: { price: px(m, -4), amount: 0.1 } }));
    assertError(await rpc(srv.url, 'private/mass_quote', { quote_id: 'x', mmp_group: group, quotes: many }, mm), -32602);
    const dup = await rpc(srv.url, 'private/mass_quote', { quote_id: 'x', mmp_group: group, quotes: [{ instrument_name: m.name, bid: { price: px(m, -4), amount: 0.1 } }, { instrument_name: m.name, ask: { price: px(m, 4), amount: 0.1 } }] }, mm);
    assertError(dup, 11029);
    assert.equal(dup.body.error.data.reason, 'duplicate_instrument');
    assertError(await rpc(srv.url, 'private/mass_quote', { quote_id: 'x', mmp_group: group, quotes: [{ instrument_name: m.name, bid: { price: px(m, -4) + 0.00001, amount: 0.1 } }] }, mm), 10043);
    assertError(await rpc(srv.url, 'private/mass_quote', { quote_id: 'x', mmp_group: 'nogroup', quotes: [{ instrument_name: m.name, bid: { price: px(m, -4), amount: 0.1 } }] }, mm), 11029);
    assertError(await rpc(srv.url, 'private/mass_quote', { quote_id: 'x', mmp_group: group, quotes: [{ instrument_name: m.name }] }, mm), -32602);
  });
});

describe('MMP over WebSocket', () => {
  it('a mass quote filled past its limit cancels the group, notifies user.mmp_trigger to its owner only, and quoting is refused until reset', async () => {
    const g = 'wsg';
    const ws = await WsClient.open(srv.url);
    await ws.auth('mm@example.com');
    const [set] = await ws.ok('private/set_mmp_config', { index_name: 'btc_usd', mmp_group: g, interval: 60, frozen_time: 0, quantity_limit: 0.4 });
    assert.deepEqual(set, { id: set.id, index_name: 'btc_usd', mmp_group: g, interval: 60, frozen_time: 0, quantity_limit: 0.4, delta_limit: 0, vega_limit: 0, trade_count_limit: 0 });
    assert.deepEqual(await ws.ok('private/get_mmp_status', { index_name: 'btc_usd', mmp_group: g }), [], 'not frozen yet');
    const spy = await WsClient.open(srv.url);
    await spy.auth('other@example.com');
    const ch = 'user.mmp_trigger.btc_usd';
    assert.deepEqual(await ws.ok('private/subscribe', { channels: [ch, 'user.orders.any.any.raw'] }), [ch, 'user.orders.any.any.raw']);
    assert.deepEqual(await spy.ok('private/subscribe', { channels: [ch] }), [ch]);
    const [m0, m1] = series;
    const q = await ws.ok('private/mass_quote', {
      quote_id: 'w1', mmp_group: g, detailed: true,
      quotes: [{ instrument_name: m0.name, bid: { price: px(m0, -3), amount: 0.5 }, ask: { price: px(m0, 3), amount: 0.5 } }, { instrument_name: m1.name, ask: { price: px(m1, 3), amount: 0.5 } }],
    });
    assert.equal(q.orders.length, 3);
    await ok(srv.url, 'private/buy', { instrument_name: m0.name, amount: 0.4, price: px(m0, 3) }, taker);
    await ws.until(() => ws.on(ch).length > 0, 5000, 'mmp trigger');
    assert.deepEqual(ws.on(ch)[0].data, { index_name: 'btc_usd', mmp_group: g, frozen_until: 0 });
    await ws.until(() => ws.on('user.orders.any.any.raw').filter((n) => n.data.cancel_reason === 'mmp_trigger').length === 3, 5000, 'cancelled quotes');
    for (const o of q.orders) assert.equal((await ws.ok('private/get_order_state', { order_id: o.order_id })).order_state, 'cancelled');
    // quoting while frozen is refused, over the socket as over HTTP
    const frozen = await ws.call('private/mass_quote', { quote_id: 'w2', mmp_group: g, quotes: [{ instrument_name: m1.name, ask: { price: px(m1, 3), amount: 0.1 } }] });
    assert.equal(frozen.error.code, 11030);
    assert.equal(frozen.error.data.reason, 'mmp_frozen');
    assert.deepEqual(await ws.ok('private/get_mmp_status', { index_name: 'btc_usd', mmp_group: g }), [{ index_name: 'btc_usd', mmp_group: g, frozen_until: 0 }]);
    assert.equal(await ws.ok('private/reset_mmp', { index_name: 'btc_usd', mmp_group: g }), 'ok');
    const after = await ws.ok('private/mass_quote', { quote_id: 'w3', mmp_group: g, quotes: [{ instrument_name: m1.name, ask: { price: px(m1, 3), amount: 0.1 } }] });
    assert.equal(after.orders[0].order_state, 'open');
    assert.deepEqual(await ws.ok('private/get_mmp_config', { index_name: 'btc_usd', mmp_group: g }), [set]);
    assert.equal(await ws.ok('private/cancel_quotes', { cancel_type: 'currency', currency: 'BTC' }), 1);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(spy.on(ch).length, 0, "another user sees nothing of the first's triggers");
    await ws.close();
    await spy.close();
  });

  it('mass quotes placed over a socket with cancel-on-disconnect are cancelled when it closes', async () => {
    const g = 'codg';
    await ok(srv.url, 'private/set_mmp_config', { index_name: 'btc_usd', mmp_group: g, interval: 60, frozen_time: 0, quantity_limit: 10 }, other);
    const ws = await WsClient.open(srv.url);
    await ws.auth('other@example.com');
    await ws.ok('private/enable_cancel_on_disconnect');
    const m = series[5];
    const q = await ws.ok('private/mass_quote', { quote_id: 'c', mmp_group: g, quotes: [{ instrument_name: m.name, bid: { price: px(m, -6), amount: 0.2 }, ask: { price: px(m, 6), amount: 0.2 } }] });
    assert.deepEqual(q.orders.map((o: any) => o.order_state), ['open', 'open']);
    await ws.close();
    const deadline = Date.now() + 5000;
    let states: any[] = [];
    while (Date.now() < deadline) {
      states = await Promise.all(q.orders.map((o: any) => ok(srv.url, 'private/get_order_state', { order_id: o.order_id }, other)));
      if (states.every((s) => s.order_state === 'cancelled')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(states.map((s) => [s.order_state, s.cancel_reason]), [['cancelled', 'cancel_on_disconnect'], ['cancelled', 'cancel_on_disconnect']]);
  });
});
