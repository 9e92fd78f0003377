// The strategy builder's arithmetic (web/src/lib/strategy.ts, issue 34): leg clicks, the exact net
// premium in ticks, summed greeks, which side of the exchange's combo a strategy is, combo fills
// grouped from leg trades at the net price, and the ticket's net-premium price check.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { clickLeg, comboFills, comboSide, comboTrades, inferFilled, MAX_LEGS, netTicks, setRatio, strategyName, sumGreeks, type Leg, type LegTrade } from '../../web/src/lib/strategy.ts';
import { priceProblem } from '../../web/src/lib/ticketCheck.ts';
import type { Instrument, Ticker } from '../../web/src/lib/types.ts';

const EXP = Date.UTC(2026, 11, 25, 8);
function inst(strike: number, type: 'call' | 'put' = 'call', cur = 'BTC'): Instrument {
  return { instrument_name: `${cur}-25DEC26-${strike}-${type === 'call' ? 'C' : 'P'}`, strike, option_type: type, expiration_timestamp: EXP, base_currency: cur, tick_size: 0.0001, tick_size_steps: [], min_trade_amount: 0.1, is_active: true, state: 'open' };
}
function ticker(name: string, bid: number, ask: number, mark: number, delta = 0, gamma = 0, vega = 0, theta = 0): Ticker {
  return { instrument_name: name, best_bid_price: bid, best_bid_amount: 1, best_ask_price: ask, best_ask_amount: 1, mark_price: mark, mark_iv: 50, index_price: 100000, open_interest: 0, min_price: 0.0001, max_price: 1, greeks: { delta, gamma, vega, theta, rho: 0 } };
}
const build = (...clicks: [Instrument, 'buy' | 'sell'][]): Leg[] => {
  let legs: Leg[] = [];
  for (const [i, s] of clicks) {
    const next = clickLeg(legs, i, s);
    assert.notEqual(typeof next, 'string', String(next));
    legs = next as Leg[];
  }
  return legs;
};

describe('strategy legs', () => {
  it('an ask buys, a bid sells, the same side adds, the other side takes away', () => {
    const a = inst(100000);
    const b = inst(110000);
    let legs = build([a, 'buy'], [b, 'sell']);
    assert.deepEqual(legs.map((l) => [l.instrument, l.ratio]), [[a.instrument_name, 1], [b.instrument_name, -1]]);
    assert.equal(strategyName(legs), 'Bull call spread');
    legs = build([a, 'buy'], [b, 'sell'], [a, 'buy']);
    assert.equal(legs[0].ratio, 2);
    legs = build([a, 'buy'], [b, 'sell'], [a, 'sell']);
    assert.deepEqual(legs.map((l) => l.instrument), [b.instrument_name], 'a leg at ratio 0 goes');
    assert.equal(strategyName(build([a, 'sell'], [b, 'buy'])), 'Bear call spread');
    assert.equal(strategyName(build([inst(100000, 'put'), 'buy'], [inst(100000), 'buy'])), 'Long straddle');
  });

  it('refuses a fifth leg, another currency and ratios past the bound', () => {
    const legs = build([inst(1), 'buy'], [inst(2), 'buy'], [inst(3), 'buy'], [inst(4), 'buy']);
    assert.equal(legs.length, MAX_LEGS);
    assert.match(clickLeg(legs, inst(5), 'buy') as string, /at most 4 legs/);
    assert.match(clickLeg(build([inst(1), 'buy']), inst(2, 'call', 'ETH'), 'buy') as string, /one currency/);
    assert.match(setRatio(legs, legs[0].instrument, 11) as string, /at most 10/);
    assert.match(setRatio(legs, legs[0].instrument, -11) as string, /at most 10/);
  });
});

describe('the net premium and greeks', () => {
  it('sums best prices exactly in ticks: bought legs at the ask, sold legs at the bid', () => {
    const a = inst(100000);
    const b = inst(110000);
    const legs = build([a, 'buy'], [b, 'sell'], [b, 'sell']);
    // 0.0703 - 2 x 0.0351 is 0.0001 exactly (in binary floats it is not)
    const t = new Map([[a.instrument_name, ticker(a.instrument_name, 0.07, 0.0703, 0.07, 0.6, 0.00002, 80, -40)], [b.instrument_name, ticker(b.instrument_name, 0.0351, 0.036, 0.035, 0.4, 0.00001, 60, -30)]]);
    assert.equal(netTicks(legs, t), 1);
    assert.notEqual(0.0703 - 2 * 0.0351, 0.0001);
    const g = sumGreeks(legs, t)!;
    assert.ok(Math.abs(g.delta - (0.6 - 0.8)) < 1e-12);
    assert.ok(Math.abs(g.vega - (80 - 120)) < 1e-9);
    // no bid on the sold leg: no net premium
    t.set(b.instrument_name, ticker(b.instrument_name, 0, 0.036, 0.035));
    assert.equal(netTicks(legs, t), null);
    assert.equal(sumGreeks([...legs, { ...legs[0], instrument: 'BTC-X' }], t), null, 'a leg without a ticker has no sum');
  });
});

describe('the combo side of a strategy', () => {
  const a = inst(100000);
  const b = inst(110000);
  it('is buy for the same legs, sell for the reverse, with the units of a multiple', () => {
    const combo = { legs: [{ instrument_name: a.instrument_name, amount: 1 }, { instrument_name: b.instrument_name, amount: -1 }] };
    assert.deepEqual(comboSide(build([a, 'buy'], [b, 'sell']), combo), { side: 'buy', units: 1 });
    assert.deepEqual(comboSide(build([a, 'sell'], [b, 'buy']), combo), { side: 'sell', units: 1 });
    assert.deepEqual(comboSide(build([a, 'sell'], [a, 'sell'], [b, 'buy'], [b, 'buy']), combo), { side: 'sell', units: 2 });
    assert.equal(comboSide(build([a, 'buy'], [a, 'buy'], [b, 'sell']), combo), null, 'another ratio is another combo');
    assert.equal(comboSide(build([a, 'buy']), combo), null);
    assert.deepEqual(comboTrades(build([a, 'sell'], [b, 'buy'])), [
      { instrument_name: a.instrument_name, direction: 'sell', amount: 1 },
      { instrument_name: b.instrument_name, direction: 'buy', amount: 1 },
    ]);
  });

  it('groups leg trades into combo fills at the net price of the combo', () => {
    const combo = { id: 'BTC-CS-25DEC26-100000_110000', state: 'active', legs: [{ instrument_name: a.instrument_name, amount: 1 }, { instrument_name: b.instrument_name, amount: -1 }] };
    const leg = (name: string, direction: 'buy' | 'sell', price: number, ct: number, amount = 0.2): LegTrade => ({ trade_id: `${name}${ct}`, instrument_name: name, price, amount, direction, timestamp: 1000 + ct, order_id: '7', fee: 0, liquidity: 'T', combo_id: combo.id, combo_trade_id: ct });
    const trades = [leg(a.instrument_name, 'sell', 0.0703, 1), leg(b.instrument_name, 'buy', 0.0351, 1), leg(a.instrument_name, 'buy', 0.07, 2, 0.1), leg(b.instrument_name, 'sell', 0.0343, 2, 0.1), { ...leg(a.instrument_name, 'buy', 0.07, 3), combo_id: 'other' }];
    const fills = comboFills(combo, trades);
    assert.deepEqual(fills.map((f) => [f.id, f.direction, f.amount, f.price]), [
      ['2', 'buy', 0.1, 0.0357],
      ['1', 'sell', 0.2, 0.0352],
    ]);
  });
});

describe("the ticket's price check for a net premium", () => {
  it('lets a combo price be zero or negative, never a leg price', () => {
    assert.equal(priceProblem('-0.0125', true), null);
    assert.equal(priceProblem('0', true), null);
    assert.equal(priceProblem('-0.0125'), 'Price must be positive');
    assert.match(priceProblem('-0.00001', true)!, /4 decimals/);
  });
});

describe('combo orders the server does not tell of', () => {
  it('are filled by the fills after them, oldest first, never beyond their amount', () => {
    const fill = (id: string, direction: 'buy' | 'sell', amount: number, timestamp: number) => ({ id, direction, amount, timestamp, price: 0.01, legs: [] });
    const orders = [
      { order_id: 'a', direction: 'buy' as const, amount: 0.3, creation_timestamp: 10 },
      { order_id: 'b', direction: 'buy' as const, amount: 0.1, creation_timestamp: 20 },
      { order_id: 'c', direction: 'sell' as const, amount: 0.1, creation_timestamp: 5 },
    ];
    const got = inferFilled(orders, [fill('1', 'buy', 0.1, 30), fill('2', 'buy', 0.2, 31), fill('3', 'buy', 0.1, 32), fill('4', 'buy', 0.1, 9), fill('5', 'sell', 0.1, 4)]);
    // 0.1 + 0.2 fills a's 0.3 exactly; the third goes to b; a buy before both and a sell before c count for none
    assert.deepEqual([...got], [['c', 0], ['a', 0.3], ['b', 0.1]]);
  });
});
