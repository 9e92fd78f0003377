// Combo market data (issue 34, third slice): a combo is listed as an `option_combo` instrument and has
// its own order book, ticker, book summary and public trades (a combo trade at its net price, its leg
// trades marked with combo_id / combo_trade_id), over HTTP and the WebSocket, each answer carrying
// every field the Deribit reference documents with its JSON type; the book, ticker and trades channels
// of a combo follow a resting order and a fill; unknown names answer 10020 (channels: left out).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ComboRecord } from '../../src/combos/combos.ts';
import { comboBand, legQuotes } from '../../src/combos/legPrices.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { EXP_MAR, Harness, amt, spec } from '../helpers/engine.ts';
import { diffKey, readDeribitMethods, shapeDiffs, type DocumentedMethod, type Shape } from '../helpers/deribitMethods.ts';
import { atmCall, twinPut, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

const documented = readDeribitMethods();

/** Fields Deribit sends only for other kinds or events (as the conformance test's CONDITIONAL). */
const CONDITIONAL = new Set(['future_type', 'current_funding', 'funding_8h', 'interest_value', 'block_trade_id', 'block_trade_leg_count', 'block_rfq_id', 'liquidation']);
/** The reference's known slips (its header names them), as in test/api/deribitConformance.test.ts. */
const SLIPS: Record<string, string> = { underlying_index: 'string', quote_currency: 'string', settlement_period: 'month|week|day|perpetual' };

function fixSlips(sh: Shape): Shape {
  if (sh.kind === 'array') return { kind: 'array', of: fixSlips(sh.of) };
  if (sh.kind !== 'object') return sh;
  return { kind: 'object', fields: sh.fields.map((f) => (f.name in SLIPS && f.shape.kind === 'type' ? { name: f.name, shape: { kind: 'type', type: SLIPS[f.name]! } as Shape } : { name: f.name, shape: fixSlips(f.shape) })) };
}

/** What in a combo answer differs from the documented result of `method` (nothing: []). */
function gaps(method: string, result: unknown): string[] {
  const d: DocumentedMethod | undefined = documented?.find((m) => m.name === method);
  assert.ok(d, `${method} is in the reference`);
  const diffs = shapeDiffs(result, fixSlips(d.result)).map(diffKey);
  // an empty array (a combo's tick_size_steps) has nothing inside to check
  return [...new Set(diffs)].filter((k) => !k.startsWith('empty ') && !CONDITIONAL.has(k.split('.').at(-1)!));
}

const C100 = spec('BTC', EXP_MAR, 100000, 'call');
const C110 = spec('BTC', EXP_MAR, 110000, 'call');

describe('combo book change ids in the engine', () => {
  it('bump with every change of the combo book and survive a snapshot with the same hash', () => {
    const h = Harness.market([C100, C110]);
    const u = h.user('10');
    const r = h.apply({ t: 'create_combo', userId: u, legs: [{ instrument: C100.name, ratio: 1 }, { instrument: C110.name, ratio: -1 }] }) as ComboRecord;
    assert.equal(h.ex.comboBooks.changeId(r.id), 0);
    const place = (price: number) =>
      h.apply({ t: 'place', userId: u, side: 0, instrument: r.id, price, advanced: null, advPrice: null, lots: amt('0.1'), type: 'limit', tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null }) as { order: { id: number } };
    const o = place(comboBand(legQuotes(h.ex, r.legs)!).min);
    assert.equal(h.ex.comboBooks.changeId(r.id), 1, 'a resting order changes the book');
    h.apply({ t: 'cancel', userId: u, orderId: o.order.id });
    assert.equal(h.ex.comboBooks.changeId(r.id), 2, 'a cancel changes it again');
    const again = restore(serialize(h.ex));
    assert.equal(again.comboBooks.changeId(r.id), 2);
    assert.equal(stateHash(again), stateHash(h.ex));
  });
});

describe('combo market data', { skip: documented === null ? 'no Deribit reference beside the clone' : false }, () => {
  let server: TestServer;
  let maker: string;
  let taker: string;
  let call: Market;
  let put: Market;
  let combo: string;
  /** the price the first fill trades at, and a lower one inside the band for a resting bid */
  let price: number;
  let bidPrice: number;

  before(async () => {
    server = await startServer();
    const admin = await adminToken(server.url);
    maker = await userToken(server.url, admin, 'combo-maker@example.com', { currency: 'BTC', amount: 100 });
    taker = await userToken(server.url, admin, 'combo-taker@example.com', { currency: 'BTC', amount: 100 });
    call = await atmCall(server.url);
    put = await twinPut(server.url, call);
    const c = await ok(server.url, 'private/create_combo', { trades: [{ instrument_name: call.name, direction: 'buy', amount: 1 }, { instrument_name: put.name, direction: 'buy', amount: 1 }] }, maker);
    combo = c.id;
    const t = await ok(server.url, 'public/ticker', { instrument_name: combo });
    price = Math.min(t.max_price, Math.max(t.min_price, Math.round(t.mark_price * 1e4) / 1e4));
    bidPrice = Math.max(t.min_price, Number((price - 0.001).toFixed(4)));
    assert.ok(bidPrice < price, 'a lower price inside the band');
  });

  after(async () => {
    await server?.stop();
  });

  it('lists the combo as an option_combo instrument with every documented field', async () => {
    const list = await ok(server.url, 'public/get_instruments', { currency: 'BTC', kind: 'option_combo' });
    assert.deepEqual(list.map((i: any) => i.instrument_name), [combo]);
    const inst = list[0];
    assert.deepEqual(gaps('public/get_instruments', list), []);
    assert.equal(inst.kind, 'option_combo');
    assert.equal(inst.tick_size, 0.0001);
    assert.equal(inst.min_trade_amount, 0.1);
    assert.equal(inst.expiration_timestamp, Math.min(call.inst.expiration_timestamp, put.inst.expiration_timestamp));
    assert.equal(inst.is_active, true);
    assert.equal(inst.state, 'open');
    assert.equal(inst.settlement_currency, 'BTC');
    assert.equal(inst.instrument_id, (await ok(server.url, 'public/get_combo_details', { combo_id: combo })).instrument_id);
    assert.deepEqual(await ok(server.url, 'public/get_instrument', { instrument_name: combo }), inst);
    assert.deepEqual(gaps('public/get_instrument', inst), []);
    assert.deepEqual(await ok(server.url, 'public/get_contract_size', { instrument_name: combo }), { contract_size: 1 });
    // kind left out: every kind (Deribit); kind option: the options only; no future combos here
    const all = await ok(server.url, 'public/get_instruments', { currency: 'BTC' });
    assert.ok(all.some((i: any) => i.instrument_name === combo && i.kind === 'option_combo'));
    const options = await ok(server.url, 'public/get_instruments', { currency: 'BTC', kind: 'option' });
    assert.ok(options.length > 0 && options.every((i: any) => i.kind === 'option'));
    assert.deepEqual(await ok(server.url, 'public/get_instruments', { currency: 'BTC', kind: 'future_combo' }), []);
    assert.deepEqual(await ok(server.url, 'public/get_instruments', { currency: 'ETH', kind: 'option_combo' }), []);
    assert.deepEqual(await ok(server.url, 'public/get_instruments', { currency: 'BTC', kind: 'option_combo', expired: true }), []);
  });

  it('answers the book, ticker and summary of a combo: its own levels, the net mark of its legs', async () => {
    const rest = await ok(server.url, 'private/sell', { instrument_name: combo, amount: 0.3, price }, maker);
    assert.equal(rest.order.order_state, 'open');
    const book = await ok(server.url, 'public/get_order_book', { instrument_name: combo, depth: 5 });
    assert.deepEqual(gaps('public/get_order_book', book), []);
    assert.deepEqual(book.asks, [[price, 0.3]]);
    assert.deepEqual(book.bids, []);
    assert.equal(book.best_ask_price, price);
    assert.equal(book.best_ask_amount, 0.3);
    assert.equal(book.state, 'open');
    assert.ok(book.change_id > 0);
    // the mark is the net of the legs' marks (a straddle: both bought)
    const legs = await Promise.all([call.name, put.name].map((n) => ok(server.url, 'public/ticker', { instrument_name: n })));
    assert.ok(Math.abs(book.mark_price - (legs[0].mark_price + legs[1].mark_price)) < 1e-7, `mark ${book.mark_price} is the legs' net`);
    assert.ok(Math.abs(book.greeks.delta - (legs[0].greeks.delta + legs[1].greeks.delta)) < 1e-4, 'delta is the legs\' net');
    assert.equal(book.mark_iv, null);
    assert.ok(book.min_price < book.mark_price && book.mark_price < book.max_price, 'the band holds the mark');
    const byId = await ok(server.url, 'public/get_order_book_by_instrument_id', { instrument_id: (await ok(server.url, 'public/get_instrument', { instrument_name: combo })).instrument_id });
    assert.deepEqual(byId.asks, book.asks);
    const ticker = await ok(server.url, 'public/ticker', { instrument_name: combo });
    assert.deepEqual(gaps('public/ticker', ticker), []);
    assert.equal(ticker.best_ask_price, price);
    assert.equal(ticker.last_price, null);
    const summaries = await ok(server.url, 'public/get_book_summary_by_currency', { currency: 'BTC', kind: 'option_combo' });
    assert.deepEqual(summaries.map((x: any) => x.instrument_name), [combo]);
    assert.deepEqual(gaps('public/get_book_summary_by_currency', summaries), []);
    assert.equal(summaries[0].ask_price, price);
    assert.equal(summaries[0].bid_price, null);
    const everyKind = await ok(server.url, 'public/get_book_summary_by_currency', { currency: 'BTC' });
    assert.ok(everyKind.some((x: any) => x.instrument_name === combo), 'kind left out: the combos too');
    assert.ok(!(await ok(server.url, 'public/get_book_summary_by_currency', { currency: 'BTC', kind: 'option' })).some((x: any) => x.instrument_name === combo));
    assert.deepEqual(await ok(server.url, 'public/get_book_summary_by_currency', { currency: 'BTC', kind: 'future_combo' }), []);
    const one = await ok(server.url, 'public/get_book_summary_by_instrument', { instrument_name: combo });
    assert.deepEqual(gaps('public/get_book_summary_by_instrument', one), []);
    assert.equal(one[0].ask_price, price);
  });

  it('shows a combo fill as a combo trade and its leg trades with combo_id and combo_trade_id', async () => {
    const fill = await ok(server.url, 'private/buy', { instrument_name: combo, amount: 0.1, price }, taker);
    assert.equal(fill.order.order_state, 'filled');
    const byCombo = await ok(server.url, 'public/get_last_trades_by_instrument', { instrument_name: combo });
    assert.deepEqual(gaps('public/get_last_trades_by_instrument', byCombo), []);
    assert.equal(byCombo.trades.length, 1);
    const t = byCombo.trades[0];
    assert.equal(t.instrument_name, combo);
    assert.equal(t.price, price);
    assert.equal(t.amount, 0.1);
    assert.equal(t.direction, 'buy');
    assert.equal(t.combo_id, combo);
    assert.equal(typeof t.combo_trade_id, 'number');
    assert.equal(t.trade_seq, 1);
    const timed = await ok(server.url, 'public/get_last_trades_by_instrument_and_time', { instrument_name: combo, start_timestamp: 0, end_timestamp: t.timestamp });
    assert.deepEqual(timed.trades, [t]);
    for (const kind of ['option_combo', 'combo']) {
      const cur = await ok(server.url, 'public/get_last_trades_by_currency', { currency: 'BTC', kind });
      assert.deepEqual(gaps('public/get_last_trades_by_currency', cur), []);
      assert.deepEqual(cur.trades, [t], `kind ${kind}: the combo trade`);
    }
    assert.deepEqual((await ok(server.url, 'public/get_last_trades_by_currency_and_time', { currency: 'BTC', kind: 'option_combo', start_timestamp: 0, end_timestamp: t.timestamp })).trades, [t]);
    assert.deepEqual((await ok(server.url, 'public/get_last_trades_by_currency', { currency: 'BTC', kind: 'future_combo' })).trades, []);
    // the legs: each leg trade carries the combo and its combo trade
    const legTrades = (await ok(server.url, 'public/get_last_trades_by_currency', { currency: 'BTC' })).trades.filter((x: any) => x.combo_id === combo);
    assert.deepEqual(legTrades.map((x: any) => x.instrument_name).sort(), [call.name, put.name].sort());
    assert.ok(legTrades.every((x: any) => x.combo_trade_id === t.combo_trade_id && x.amount === 0.1));
    const sum = legTrades.reduce((s: number, x: any) => s + Math.round(x.price * 1e4), 0);
    assert.equal(sum, Math.round(price * 1e4), 'the legs sum to the combo price');
    const ticker = await ok(server.url, 'public/ticker', { instrument_name: combo });
    assert.equal(ticker.last_price, price);
    assert.equal(ticker.stats.volume, 0.1);
    assert.equal(ticker.best_ask_amount, 0.2);
  });

  it('answers an unknown combo name with 10020', async () => {
    for (const [method, params] of [
      ['public/get_order_book', {}],
      ['public/ticker', {}],
      ['public/get_instrument', {}],
      ['public/get_last_trades_by_instrument', {}],
      ['public/get_book_summary_by_instrument', {}],
      ['public/get_contract_size', {}],
      ['public/get_last_trades_by_instrument_and_time', { start_timestamp: 0 }],
    ] as const) {
      const r = await rpc(server.url, method, { instrument_name: 'BTC-CS-1JAN27-1_2', ...params });
      assert.equal(r.body.error?.code, 10020, `${method} of an unknown combo`);
    }
  });

  it('streams the combo book, ticker and trades over the WebSocket, and answers its reads there', async () => {
    const ws = await WsClient.open(server.url);
    try {
      await ws.auth('combo-maker@example.com');
      const channels = [`book.${combo}.raw`, `book.${combo}.100ms`, `book.${combo}.none.10.100ms`, `ticker.${combo}.100ms`, `trades.${combo}.raw`, 'trades.option_combo.BTC.raw', `trades.${call.name}.raw`];
      const subscribed = await ws.ok('public/subscribe', { channels: [...channels, 'book.BTC-CS-1JAN27-1_2.raw', 'trades.option_combo.XYZ.raw'] });
      assert.deepEqual(subscribed, channels, 'the unknown combo and currency are left out');
      await ws.until(() => ws.on(`book.${combo}.raw`).length > 0 && ws.on(`ticker.${combo}.100ms`).length > 0, 5000, 'snapshot and first ticker');
      const snap = ws.on(`book.${combo}.raw`)[0]!.data;
      assert.equal(snap.type, 'snapshot');
      assert.deepEqual(snap.asks, [['new', price, 0.2]]);
      assert.deepEqual(gaps('public/ticker', ws.on(`ticker.${combo}.100ms`)[0]!.data), []);

      // a resting bid: a change chained to the snapshot
      await ok(server.url, 'private/buy', { instrument_name: combo, amount: 0.2, price: bidPrice }, maker);
      await ws.until(() => ws.on(`book.${combo}.raw`).length > 1, 5000, 'book change after a resting order');
      const change = ws.on(`book.${combo}.raw`)[1]!.data;
      assert.equal(change.type, 'change');
      assert.equal(change.prev_change_id, snap.change_id);
      assert.deepEqual(change.bids, [['new', bidPrice, 0.2]]);
      await ws.until(() => ws.on(`book.${combo}.none.10.100ms`).some((n) => n.data.bids.length === 1), 5000, 'grouped book with the bid');

      // a fill against it: the level goes, a combo trade is published on both trades channels
      await ok(server.url, 'private/sell', { instrument_name: combo, amount: 0.2, price: bidPrice }, taker);
      await ws.until(() => ws.on(`book.${combo}.raw`).some((n) => n.data.bids?.some((b: any[]) => b[0] === 'delete')), 5000, 'book change after a fill');
      const last = ws.on(`book.${combo}.raw`).at(-1)!.data;
      assert.deepEqual(last.bids, [['delete', bidPrice, 0]]);
      await ws.until(() => ws.on(`trades.${combo}.raw`).length > 0 && ws.on('trades.option_combo.BTC.raw').length > 0, 5000, 'combo trades');
      const [trade] = ws.on(`trades.${combo}.raw`)[0]!.data;
      assert.equal(trade.instrument_name, combo);
      assert.equal(trade.price, bidPrice);
      assert.equal(trade.amount, 0.2);
      assert.equal(trade.direction, 'sell');
      assert.equal(trade.trade_seq, 2);
      assert.deepEqual(ws.on('trades.option_combo.BTC.raw')[0]!.data, [trade]);
      assert.deepEqual(gaps('public/get_last_trades_by_instrument', { trades: [trade], has_more: false }), []);
      // the leg's own trades channel: its leg trade, marked with the combo trade
      await ws.until(() => ws.on(`trades.${call.name}.raw`).length > 0, 5000, 'leg trade');
      assert.equal(ws.on(`trades.${call.name}.raw`)[0]!.data[0].combo_trade_id, trade.combo_trade_id);
      await ws.until(() => ws.on(`ticker.${combo}.100ms`).some((n) => n.data.last_price === bidPrice), 5000, 'ticker after the fill');

      // the reads over the WebSocket: the same objects as over HTTP
      const book = await ws.ok('public/get_order_book', { instrument_name: combo });
      assert.deepEqual(gaps('public/get_order_book', book), []);
      assert.deepEqual(book.asks, [[price, 0.2]]);
      assert.deepEqual(book.bids, []);
      assert.equal(book.change_id, last.change_id, 'the book and its channel agree on the change id');
      assert.deepEqual(gaps('public/ticker', await ws.ok('public/ticker', { instrument_name: combo })), []);
      const instruments = await ws.ok('public/get_instruments', { currency: 'BTC', kind: 'option_combo' });
      assert.deepEqual(gaps('public/get_instruments', instruments), []);
      const trades = await ws.ok('public/get_last_trades_by_currency', { currency: 'BTC', kind: 'option_combo' });
      assert.deepEqual(trades.trades.map((x: any) => x.price), [bidPrice, price]);
      assert.deepEqual(gaps('public/get_book_summary_by_currency', await ws.ok('public/get_book_summary_by_currency', { currency: 'BTC', kind: 'option_combo' })), []);
      assert.equal((await ws.call('public/ticker', { instrument_name: 'BTC-CS-1JAN27-1_2' })).error?.code, 10020);
    } finally {
      await ws.close();
    }
  });
});
