// The RFQ screens' exact sums (web/src/lib/rfq.ts): a leg's amount (ratio x amount) and a quote's
// structure price (bought legs added, sold legs subtracted) in integer units, never binary floats,
// and the fields' refusals (finer than the grid, not a number, too large).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isPrivate } from '../../web/src/lib/ws.ts';
import { bestOf, fromUnits, legAmounts, structurePrice, toUnits, upsert } from '../../web/src/lib/rfq.ts';

describe('the RFQ screens: exact amounts and structure prices', () => {
  it('multiplies amounts by ratios exactly (3 x 0.1 is 0.3, not 0.30000000000000004)', () => {
    assert.deepEqual(legAmounts('0.1', [1, 3, 7]), ['0.1', '0.3', '0.7']);
    assert.deepEqual(legAmounts('1.00000001', [1000]), ['1000.00001']);
    assert.notEqual(String(3 * 0.1), '0.3', 'the float product this guards against');
  });

  it('refuses amounts that are not positive decimals on the 10^-8 grid, and ratios out of 1..1000', () => {
    for (const bad of ['', '0', '-1', 'abc', '0.000000001', '1e3', '1.2.3', '99999999999']) assert.equal(legAmounts(bad, [1]), null, bad);
    assert.equal(legAmounts('1', [0]), null);
    assert.equal(legAmounts('1', [1.5]), null);
    assert.equal(legAmounts('1', [1001]), null);
  });

  it('sums a structure price exactly, bought legs added and sold legs subtracted, zero and negatives kept', () => {
    const spread = [
      { direction: 'buy' as const, ratio: 1 },
      { direction: 'sell' as const, ratio: 1 },
    ];
    assert.equal(structurePrice(spread, ['0.0465', '0.0315']), '0.015');
    assert.equal(structurePrice(spread, ['0.0315', '0.0465']), '-0.015');
    assert.equal(structurePrice(spread, ['0.1', '0.1']), '0');
    // 0.1 + 0.2 in floats is 0.30000000000000004
    assert.equal(structurePrice([{ direction: 'buy', ratio: 1 }, { direction: 'buy', ratio: 2 }], ['0.1', '0.1']), '0.3');
    assert.equal(structurePrice([{ direction: 'buy', ratio: 3 }, { direction: 'sell', ratio: 2 }], ['0.0007', '0.0011']), '-0.0001');
  });

  it('has no structure price while a leg price is missing or finer than 0.0001', () => {
    const legs = [{ direction: 'buy' as const, ratio: 1 }];
    assert.equal(structurePrice(legs, ['']), null);
    assert.equal(structurePrice(legs, ['0.00005']), null);
    assert.equal(structurePrice(legs, ['x']), null);
  });

  it('converts units both ways', () => {
    assert.equal(toUnits('0.0465', 4), 465);
    assert.equal(toUnits('-.5', 4), -5000);
    assert.equal(toUnits('.', 4), null);
    assert.equal(fromUnits(-1, 4), '-0.0001');
    assert.equal(fromUnits(120000, 4), '12');
  });

  it("takes the first levels as the best and counts the taker's price levels; merges by id, newest first", () => {
    const lvl = (price: number) => ({ price, amount: 1, makers: [], execution_instruction: 'any_part_of', expires_at: 0 });
    const b = bestOf({ bids: [lvl(0.02), lvl(0.01)], asks: [lvl(0.03)] });
    assert.equal(b.bid?.price, 0.02);
    assert.equal(b.ask?.price, 0.03);
    assert.equal(b.levels, 3);
    assert.deepEqual(bestOf({ bids: [], asks: [] }), { bid: null, ask: null, levels: 0 });
    const list = upsert(upsert([{ id: 1, v: 'a' }], { id: 2, v: 'b' }, (x) => x.id), { id: 1, v: 'c' }, (x) => x.id);
    assert.deepEqual(list, [
      { id: 2, v: 'b' },
      { id: 1, v: 'c' },
    ]);
  });
});

describe('the socket: which channels are private', () => {
  it('subscribes the block RFQ and block-trade channels of one user privately, the public RFQ trades publicly', () => {
    for (const c of ['user.trades.any.any.100ms', 'block_trade_confirmations', 'block_trade_confirmations.BTC', 'block_rfq.taker.BTC', 'block_rfq.maker.ETH', 'block_rfq.maker.quotes.BTC']) assert.equal(isPrivate(c), true, c);
    for (const c of ['block_rfq.trades.BTC', 'ticker.BTC-PERPETUAL.100ms', 'book.BTC-1.100ms']) assert.equal(isPrivate(c), false, c);
  });
});
