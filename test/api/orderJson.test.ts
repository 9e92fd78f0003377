// The direct order/trade serializer (src/api/orderJson.ts) must write exactly the text of the
// generic rendering (JSON.stringify of renderOrder / renderUserTrade): the wire format of buy,
// sell and edit answers must not change. Compared over orders and trades from a real engine run
// and over synthetic ones that reach every optional field and odd value. Also the average price's
// shortcut for fills at one price (the same number as its decimal text).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import { PRICE_SCALE, roundToTick, type Instrument } from '../../src/domain/instrument.ts';
import type { PlaceResult } from '../../src/engine/trading.ts';
import { newOrder, type CancelReason, type Order, type OrderState, type OrderType, type TimeInForce, type Trade } from '../../src/engine/types.ts';
import { PlacedJson, orderJson, placedJson, userTradeJson } from '../../src/api/orderJson.ts';
import { averagePrice, renderOrder, renderUserTrade } from '../../src/api/render.ts';
import { EXP_MAR, Harness, spec } from '../helpers/engine.ts';

const CALL = spec('BTC', EXP_MAR, 100_000, 'call');
const PUT = spec('BTC', EXP_MAR, 90_000, 'put');
const ETH_CALL = spec('ETH', EXP_MAR, 4_000, 'call');

/** A small seeded generator (mulberry32): the same cases on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function sameOrder(o: Order): void {
  assert.equal(orderJson(o), JSON.stringify(renderOrder(o)), `order ${o.id}`);
}

function sameTrade(t: Trade): void {
  for (const u of [t.makerOrder.userId, t.takerOrder.userId]) assert.equal(userTradeJson(t, u), JSON.stringify(renderUserTrade(t, u)), `trade ${t.id} as user ${u}`);
}

const LABELS = ['', 'plain', 'with "quotes" and \\ backslash', 'ünïcödé €', '😀 emoji', 'slash / and <tags>', 'x'.repeat(64)];
const STATES: OrderState[] = ['open', 'filled', 'cancelled', 'rejected'];
const TYPES: OrderType[] = ['limit', 'market', 'liquidation'];
const TIFS: TimeInForce[] = ['good_til_cancelled', 'good_til_day', 'fill_or_kill', 'immediate_or_cancel'];
const REASONS: (CancelReason | null)[] = [null, 'user_request', 'cancel_on_disconnect', 'mmp_trigger', 'good_til_day'];

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)]!;
}

/** An order with every field drawn at random, as the engine could hold it. */
function randomOrder(r: () => number, inst: Instrument, id: number): Order {
  const amount = 1 + Math.floor(r() * 1000);
  const o = newOrder(
    id,
    1 + Math.floor(r() * 3),
    r() < 0.5 ? 0 : 1,
    1 + Math.floor(r() * 50_000),
    amount,
    amount,
    inst,
    pick(r, TYPES),
    pick(r, TIFS),
    r() < 0.3,
    r() < 0.5,
    r() < 0.2,
    pick(r, LABELS),
    r() < 0.3 ? pick(r, LABELS.filter((l) => l !== '')) : null,
    1_767_614_400_000 + Math.floor(r() * 1e9),
    r() < 0.2 ? 1_767_700_000_000 : 0,
    r() < 0.1 ? pick(r, ['usd', 'implv'] as const) : null,
    r() < 0.1,
  );
  o.filled = Math.floor(r() * amount);
  o.filledNotional = o.filled * (1 + Math.floor(r() * 50_000));
  o.commission = Math.floor(r() * 100_000);
  o.state = pick(r, STATES);
  o.cancelReason = pick(r, REASONS);
  o.lastUpdate = o.created + Math.floor(r() * 1000);
  if (r() < 0.3) {
    const quote = r() < 0.5;
    o.mmp = { group: quote ? pick(r, ['g1', null, 'grp "2"']) : null, quoteId: quote ? pick(r, ['q', 'quote-ü']) : null, quoteSetId: quote && r() < 0.5 ? pick(r, ['s1', 'set "x"']) : null };
  }
  return o;
}

function randomTrade(r: () => number, maker: Order, taker: Order, id: number): Trade {
  return {
    id,
    seq: id * 3,
    inst: maker.inst,
    ts: maker.created + 5,
    price: maker.price,
    lots: 1 + Math.floor(r() * 100),
    takerSide: taker.side,
    makerOrder: maker,
    takerOrder: taker,
    makerFee: Math.floor(r() * 50_000) - 10_000,
    takerFee: Math.floor(r() * 50_000),
    indexPrice: pick(r, [100_000, 99_876.54, 0.1 + 0.2, 1e21]),
    markPrice: pick(r, [0.0123456789, 0.05, NaN, Infinity, 1 / 3]),
    tickDirection: Math.floor(r() * 4),
    makerState: pick(r, STATES),
    takerState: pick(r, STATES),
    iv: undefined,
  };
}

describe('order answers written straight to JSON', () => {
  it('writes the generic rendering of every order and trade of a real engine run, fills and fees included', () => {
    const h = Harness.market([CALL, PUT, ETH_CALL]);
    const users = [h.user('50', '500'), h.user('50', '500'), h.user('50', '500')];
    const r = rng(7);
    const results: PlaceResult[] = [];
    for (let i = 0; i < 400; i++) {
      const inst = pick(r, [CALL, PUT, ETH_CALL]);
      // on the grid, a few steps around the mark, so that about half of them trade
      const units = roundToTick(h.inst(inst.name), h.ex.markets.get(h.inst(inst.name).id)!.markCoin * 1e4, 'down') + (Math.floor(r() * 7) - 3) * 5;
      const price = (units / 1e4).toFixed(4);
      const res = h.place(pick(r, users), r() < 0.5 ? 'buy' : 'sell', inst.name, r() < 0.1 ? null : price, pick(r, ['0.1', '0.5', '1', '2.3']), {
        type: r() < 0.1 ? 'market' : 'limit',
        label: pick(r, LABELS),
        clientOrderId: r() < 0.2 ? `cid-${i}` : null,
        postOnly: r() < 0.1,
        rejectPostOnly: r() < 0.5,
      });
      if (!isReject(res)) results.push(res);
    }
    const trades = results.flatMap((x) => x.trades);
    assert.ok(trades.length > 50, `only ${trades.length} trades`);
    assert.ok(results.some((x) => x.order.state === 'filled') && results.some((x) => x.order.state === 'open'));
    for (const x of results) {
      sameOrder(x.order as Order);
      for (const t of x.trades) sameTrade(t);
      // the answer as a whole, `{order, trades}` as the taker sees it
      const user = x.order.userId;
      const json = placedJson(x.order, x.trades, user);
      assert.equal(json.text, JSON.stringify({ order: renderOrder(x.order), trades: x.trades.map((t) => renderUserTrade(t, user)) }));
      assert.equal(json.orderId, x.order.id);
      assert.equal(json.orderState, x.order.state);
    }
  });

  it('writes the generic rendering of orders and trades of every shape: labels, ids, MMP, quotes, liquidations, odd numbers', () => {
    const h = Harness.market([CALL, PUT, ETH_CALL]);
    const insts = [h.inst(CALL.name), h.inst(PUT.name), h.inst(ETH_CALL.name)];
    const r = rng(42);
    let id = 1;
    const seen = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const maker = randomOrder(r, pick(r, insts), id++);
      const taker = randomOrder(r, maker.inst, id++);
      sameOrder(maker);
      sameTrade(randomTrade(r, maker, taker, i + 1));
      // which optional parts the cases reached (asserted below, so the generator keeps covering them)
      const keys = Object.keys(renderOrder(maker));
      for (const k of keys) seen.add(k);
      if (maker.isLiquidation) seen.add('liquidation');
    }
    for (const k of ['reject_post_only', 'cancel_reason', 'advanced', 'client_order_id', 'expiration_timestamp', 'mmp_cancelled', 'quote', 'quote_id', 'mmp_group', 'quote_set_id', 'liquidation']) {
      assert.ok(seen.has(k), `no case reached ${k}`);
    }
  });

  it('answers a trigger order and an order a trigger placed with the generic rendering', () => {
    const h = Harness.market([CALL]);
    const seller = h.user('50');
    const placed = h.apply({
      t: 'place', userId: seller, side: 1, instrument: CALL.name, price: 800, advanced: null, advPrice: null, lots: 100_000_000, type: 'limit',
      tif: 'good_til_cancelled', postOnly: false, rejectPostOnly: false, reduceOnly: false, label: 'stop "q"', clientOrderId: null,
      trig: { type: 'stop_limit', source: 'index_price', price: 950_000_000, offset: null },
    });
    assert.ok(!isReject(placed), JSON.stringify(placed));
    const t = (placed as { order: Order }).order;
    assert.equal(orderJson(t), JSON.stringify(renderOrder(t)));
    const answer = placedJson(t, [], seller);
    assert.ok(answer instanceof PlacedJson);
    assert.equal(answer.orderState, 'untriggered');
    // fire it: the order it becomes carries the trigger's fields
    h.apply({ t: 'index', currency: 'BTC', price: 94_000, manual: true, by: null });
    const fired = h.openOrders(seller);
    assert.equal(fired.length, 1);
    assert.notEqual(fired[0]!.origin, null);
    assert.equal(orderJson(fired[0]!), JSON.stringify(renderOrder(fired[0]!)));
  });
});

describe('average price', () => {
  const CALL_INSTRUMENT = Harness.market([CALL]).inst(CALL.name);

  it("is the one fill price exactly when every fill was at it, as the decimal text of the average gives it", () => {
    const r = rng(36);
    for (let i = 0; i < 20_000; i++) {
      const price = 1 + Math.floor(r() * (i % 2 === 0 ? 10_000 : 50_000_000));
      const filled = 1 + Math.floor(r() * 100_000);
      const o = newOrder(i + 1, 1, 0, price, filled, filled, CALL_INSTRUMENT, 'limit', 'good_til_cancelled', false, false, false, '', null, 0, 0, null, false);
      o.filled = filled;
      o.filledNotional = price * filled;
      const byText = Number((o.filledNotional / o.filled / 10 ** PRICE_SCALE).toFixed(PRICE_SCALE + 4));
      assert.ok(Object.is(averagePrice(o), byText), `price ${price} x ${filled}`);
      assert.equal(averagePrice(o), price / 10 ** PRICE_SCALE);
    }
  });

  it('averages fills at several prices to the price scale plus 4 digits', () => {
    const o = newOrder(1, 1, 0, 300, 3, 3, CALL_INSTRUMENT, 'limit', 'good_til_cancelled', false, false, false, '', null, 0, 0, null, false);
    o.filled = 3;
    o.filledNotional = 100 + 100 + 101; // 0.0100, 0.0100, 0.0101
    assert.equal(averagePrice(o), 0.01003333);
    o.filled = 0;
    assert.equal(averagePrice(o), 0);
  });
});
