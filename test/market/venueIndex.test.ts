// The venues index's pure parts: each adapter reads its venue's documented ticker shape (and refuses
// others), and the index is the median of the fresh readings, none with too few.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADAPTERS, medianIndex, observedAt, tickerUrl, type SourceReading } from '../../src/market/venueIndex.ts';

describe('venue ticker adapters', () => {
  it('read the last price of each venue from its documented ticker JSON', () => {
    assert.deepEqual(ADAPTERS.coinbase.parse({ ask: '6050.00', bid: '6049.99', volume: '5957.1', trade_id: 4729088, price: '6050.00', size: '0.2', time: '2026-03-10T12:00:00.000000Z' }), {
      price: 6050,
      at: Date.UTC(2026, 2, 10, 12),
    });
    assert.deepEqual(ADAPTERS.kraken.parse({ error: [], result: { XXBTZUSD: { a: ['52609.6', '1', '1.000'], b: ['52609.5', '1', '1.000'], c: ['52641.1', '0.0005'] } } }), { price: 52641.1, at: null });
    assert.deepEqual(ADAPTERS.bitstamp.parse({ high: '101000', last: '100123.45', timestamp: '1773144000', bid: '1', ask: '2' }), { price: 100123.45, at: 1773144000000 });
    assert.deepEqual(ADAPTERS.binance.parse({ symbol: 'BTCUSDT', price: '100001.12000000' }), { price: 100001.12, at: null });
  });

  it('refuse bodies that are not the documented shape or not a positive price', () => {
    for (const v of ['coinbase', 'kraken', 'bitstamp', 'binance'] as const) {
      for (const bad of [null, [], 'x', {}, { price: '-1' }, { price: 'NaN' }, { price: '1e400' }, { last: '0' }]) assert.equal(ADAPTERS[v].parse(bad), null, `${v} ${JSON.stringify(bad)}`);
    }
    assert.equal(ADAPTERS.kraken.parse({ error: ['EQuery:Unknown asset pair'], result: {} }), null);
    assert.equal(ADAPTERS.kraken.parse({ error: [], result: { A: { c: ['1'] }, B: { c: ['2'] } } }), null, 'one pair asked, one pair expected');
  });

  it('name each currency the way its venue does', () => {
    assert.equal(tickerUrl({ venue: 'coinbase', baseUrl: null }, 'BTC'), 'https://api.exchange.coinbase.com/products/BTC-USD/ticker');
    assert.equal(tickerUrl({ venue: 'kraken', baseUrl: null }, 'BTC'), 'https://api.kraken.com/0/public/Ticker?pair=XBTUSD');
    assert.equal(tickerUrl({ venue: 'kraken', baseUrl: null }, 'ETH'), 'https://api.kraken.com/0/public/Ticker?pair=ETHUSD');
    assert.equal(tickerUrl({ venue: 'bitstamp', baseUrl: 'http://127.0.0.1:9' }, 'ETH'), 'http://127.0.0.1:9/api/v2/ticker/ethusd/');
    assert.equal(tickerUrl({ venue: 'binance', baseUrl: null }, 'BTC'), 'https://api.binance.com/api/v3/ticker/price?symbol=BTCUSDT');
  });
});

describe('medianIndex', () => {
  const r = (venue: SourceReading['venue'], price: number, observedAt: number): SourceReading => ({ venue, price, observedAt });
  const rules = { maxAgeMs: 10_000, minSources: 2 };
  const NOW = 1_000_000;

  it('is the median of the fresh readings, the mean of the middle two for an even count, in cents', () => {
    assert.equal(medianIndex([r('coinbase', 100, NOW), r('kraken', 300, NOW), r('bitstamp', 200, NOW)], NOW, rules).price, 200);
    assert.equal(medianIndex([r('coinbase', 100, NOW), r('kraken', 300, NOW), r('bitstamp', 200, NOW), r('binance', 250.015, NOW)], NOW, rules).price, 225.01);
  });

  it('is not carried by one venue far off', () => {
    assert.equal(medianIndex([r('coinbase', 100_000, NOW), r('kraken', 100_010, NOW), r('bitstamp', 1, NOW)], NOW, rules).price, 100_000);
  });

  it('leaves out a reading older than the maximum age, and a source that never answered', () => {
    const res = medianIndex([r('coinbase', 100, NOW - 10_001), r('kraken', 300, NOW - 10_000), r('bitstamp', 200, NOW), null], NOW, rules);
    assert.deepEqual(res, { price: 250, fresh: ['kraken', 'bitstamp'], stale: ['coinbase'] });
  });

  it('is null with fewer fresh readings than the minimum', () => {
    assert.equal(medianIndex([r('coinbase', 100, NOW), r('kraken', 300, NOW - 60_000), null], NOW, rules).price, null);
    assert.equal(medianIndex([], NOW, { maxAgeMs: 1000, minSources: 1 }).price, null);
  });

  it('dates a price by the venue when the venue says it is older than its answer', () => {
    assert.equal(observedAt(NOW, NOW - 30_000), NOW - 30_000);
    assert.equal(observedAt(NOW, NOW + 5_000), NOW, 'a venue clock ahead of ours is not trusted');
    assert.equal(observedAt(NOW, null), NOW);
  });
});
