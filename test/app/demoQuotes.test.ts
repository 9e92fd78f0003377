// The demo market's ladders (src/app/demoQuotes.ts): every level on the tick grid and inside the
// band, bids strictly falling and asks strictly rising with the best bid below the best ask, wider
// in vol away from the money and further out in time, and a cheap wing laddered up from the band's
// floor. And the Poisson stream's gaps average 1/rate.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isOnTick, type Instrument } from '../../src/domain/instrument.ts';
import { priceBandCoin, markIv, markPriceCoin } from '../../src/market/smile.ts';
import { poissonGapMs, quoteLadder, volStep } from '../../src/app/demoQuotes.ts';
import { mulberry32 } from '../../src/market/indexFeed.ts';
import { EXP_MAR, spec } from '../helpers/engine.ts';

const F = 100_000;
const SMILE = { atmVol: 0.6, skew: -0.1, curvature: 0.5 };

function ladderOf(strike: number, T: number, type: 'call' | 'put' = 'call') {
  const inst = { ...spec('BTC', EXP_MAR, strike, type), id: 1, created: 0, state: 'open', halted: false, deliveryPrice: null } as Instrument;
  const iv = markIv(SMILE, F, strike);
  const mark = markPriceCoin(type, F, strike, T, iv);
  const band = priceBandCoin(mark);
  const input = { inst, F, T, iv, minPrice: Math.round(band.min * 1e4), maxPrice: Math.round(band.max * 1e4), levels: 3, jitter: mulberry32(7) };
  return { inst, input, ladder: quoteLadder(input) };
}

describe('the demo market ladders', () => {
  it('quotes 3 levels a side on the grid, inside the band, bids falling and asks rising above them', () => {
    for (const strike of [50_000, 80_000, 100_000, 120_000, 200_000]) {
      for (const T of [1 / 365, 0.1, 0.5]) {
        for (const type of ['call', 'put'] as const) {
          const { inst, input, ladder } = ladderOf(strike, T, type);
          const where = `${type} ${strike} T=${T}: ${JSON.stringify(ladder)}`;
          assert.equal(ladder.bids.length, 3, where);
          assert.equal(ladder.asks.length, 3, where);
          for (const l of [...ladder.bids, ...ladder.asks]) {
            assert.ok(isOnTick(inst, l.price), `off the grid: ${where}`);
            assert.ok(l.price >= input.minPrice && l.price <= input.maxPrice, `outside the band: ${where}`);
            assert.ok(l.lots > 0 && l.lots % inst.lotScaled === 0, `size not whole lots: ${where}`);
          }
          for (let k = 1; k < 3; k++) {
            assert.ok(ladder.bids[k].price < ladder.bids[k - 1].price, where);
            assert.ok(ladder.asks[k].price > ladder.asks[k - 1].price, where);
          }
          assert.ok(ladder.bids[0].price < ladder.asks[0].price, where);
        }
      }
    }
  });

  it('widens in vol away from the money and with time to expiry', () => {
    assert.ok(volStep(F, 140_000, 0.25) > volStep(F, 100_000, 0.25));
    assert.ok(volStep(F, 60_000, 0.25) > volStep(F, 100_000, 0.25));
    assert.ok(volStep(F, 100_000, 0.5) > volStep(F, 100_000, 0.05));
    // and in price: the money's bid-ask at half a year is wider than at a week
    const near = ladderOf(100_000, 7 / 365).ladder;
    const far = ladderOf(100_000, 0.5).ladder;
    assert.ok(far.asks[0].price - far.bids[0].price > near.asks[0].price - near.bids[0].price);
  });

  it('ladders a cheap wing up from the band floor', () => {
    const { input, ladder } = ladderOf(200_000, 1 / 365);
    assert.equal(ladder.bids[2].price, Math.max(input.minPrice, 1));
    assert.deepEqual(ladder.bids.map((l) => l.price), [3, 2, 1].map((k) => ladder.bids[2].price + k - 1));
  });

  it('spaces a Poisson stream of takers by 1/rate on average', () => {
    const rnd = mulberry32(42);
    let sum = 0;
    const n = 20_000;
    for (let k = 0; k < n; k++) sum += poissonGapMs(rnd, 2);
    assert.ok(Math.abs(sum / n - 500) < 15, `mean gap ${sum / n} ms`);
  });
});
