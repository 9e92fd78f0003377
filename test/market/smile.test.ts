import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { DEFAULT_SMILE, bandTicks, ivFromCoinPrice, markIv, markPriceCoin, optionGreeksCoin, priceBandCoin } from '../../src/market/smile.ts';
import { black76Greeks, black76Price } from '../../src/domain/pricing.ts';

function assertClose(actual: number, expected: number, relTol: number, what = ''): void {
  const err = Math.abs(actual - expected) / Math.abs(expected);
  assert.ok(err <= relTol, `${what} expected ${expected}, got ${actual} (relative error ${err})`);
}

// Reference values from mpmath at 30 digits, written as the nearest doubles.
describe('markIv', () => {
  it('has the API defaults: 60% at the money, skew -0.1, curvature 0.5', () => {
    assert.deepEqual({ ...DEFAULT_SMILE }, { atmVol: 0.6, skew: -0.1, curvature: 0.5 });
    assert.equal(markIv(DEFAULT_SMILE, 100000, 100000), 0.6);
  });

  it('follows atm + skew*k + curvature*k^2 in k = ln(K/F)', () => {
    assertClose(markIv(DEFAULT_SMILE, 100000, 50000), 0.9095412250150953, 1e-15, 'K = F/2');
    assertClose(markIv(DEFAULT_SMILE, 4000, 8000), 0.7709117889031062, 1e-15, 'K = 2F');
  });

  it('puts more vol on low strikes than on equally distant high strikes with a negative skew', () => {
    assert.ok(markIv(DEFAULT_SMILE, 100, 80) > markIv(DEFAULT_SMILE, 100, 125));
  });

  it('is floored at 5%', () => {
    const steep = { atmVol: 0.1, skew: 1, curvature: 0 };
    assert.equal(markIv(steep, 100, 50), 0.05);
    assert.equal(markIv({ atmVol: 0.01, skew: 0, curvature: 0 }, 100, 100), 0.05);
    fc.assert(
      fc.property(
        fc.double({ min: -1, max: 2, noNaN: true }),
        fc.double({ min: -2, max: 2, noNaN: true }),
        fc.double({ min: -2, max: 2, noNaN: true }),
        fc.double({ min: 0.5, max: 2, noNaN: true }),
        (atmVol, skew, curvature, m) => {
          assert.ok(markIv({ atmVol, skew, curvature }, 100, 100 * m) >= 0.05);
        },
      ),
    );
  });

  it('throws instead of returning NaN for a NaN parameter', () => {
    assert.throws(() => markIv({ atmVol: NaN, skew: 0, curvature: 0 }, 100, 100), RangeError);
  });
});

describe('markPriceCoin', () => {
  it('is the Black-76 price at the smile vol divided by the index', () => {
    // ATM BTC call, 30 days, 60%: 6853.9407182535472528 USD = 0.0685394071825354725 coin
    assertClose(markPriceCoin('call', 100000, 100000, 30 / 365, 0.6), 0.06853940718253547, 1e-14, 'ATM call');
    // 110000 put at its smile vol 0.595010997206733881: 0.132191845038756586 coin
    const iv = markIv(DEFAULT_SMILE, 100000, 110000);
    assertClose(iv, 0.5950109972067339, 1e-15, 'smile vol');
    assertClose(markPriceCoin('put', 100000, 110000, 30 / 365, iv), 0.13219184503875658, 1e-14, 'ITM put');
  });

  it('is the coin intrinsic value at expiry', () => {
    assert.equal(markPriceCoin('call', 100000, 80000, 0, 0.6), 0.2);
    assert.equal(markPriceCoin('put', 100000, 80000, 0, 0.6), 0);
  });

  it('lies in [intrinsic, 1] for calls and for puts struck below twice the index', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<'call' | 'put'>('call', 'put'),
        fc.double({ min: 0.5, max: 2, noNaN: true }),
        fc.double({ min: 0, max: 2, noNaN: true }),
        fc.double({ min: 0.05, max: 5, noNaN: true }),
        (type, m, T, iv) => {
          const F = 100000;
          const K = F * m;
          const p = markPriceCoin(type, F, K, T, iv);
          const intrinsic = type === 'call' ? Math.max(0, 1 - K / F) : Math.max(0, K / F - 1);
          assert.ok(p >= intrinsic && p <= 1, `${type} K=${K} T=${T} iv=${iv}: ${p}`);
        },
      ),
    );
  });
});

describe('ivFromCoinPrice', () => {
  it('inverts the mark price back to the smile vol', () => {
    for (const K of [70000, 95000, 100000, 130000]) {
      for (const type of ['call', 'put'] as const) {
        const iv = markIv(DEFAULT_SMILE, 100000, K);
        const mark = markPriceCoin(type, 100000, K, 14 / 365, iv);
        assert.ok(Math.abs(ivFromCoinPrice(type, mark, 100000, K, 14 / 365)! - iv) < 1e-9, `${type} ${K}`);
      }
    }
  });

  it('returns null for a quote below intrinsic or of a whole coin for a call', () => {
    assert.equal(ivFromCoinPrice('call', 0.1, 100000, 80000, 14 / 365), null);
    assert.equal(ivFromCoinPrice('call', 1, 100000, 80000, 14 / 365), null);
  });

  it('gives a higher vol for a higher quote', () => {
    const lo = ivFromCoinPrice('call', 0.01, 100000, 110000, 14 / 365)!;
    const hi = ivFromCoinPrice('call', 0.0105, 100000, 110000, 14 / 365)!;
    assert.ok(hi > lo && lo > 0);
  });
});

describe('priceBandCoin', () => {
  it('agrees with the whole-tick band the engine keeps (bandTicks): the same prices, without the text round trip', () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 3, noNaN: true }), fc.constantFrom(1, 5, 10), (m, tickUnits) => {
        const tickCoin = tickUnits / 10000;
        const band = priceBandCoin(m, tickCoin);
        const ticks = bandTicks(m, tickCoin);
        // what refreshMarket computed from the decimal band before it used bandTicks
        assert.equal(Math.max(tickUnits, Math.ceil(band.min * 10000 - 1e-9)), Math.max(tickUnits, ticks.minTicks * tickUnits));
        assert.equal(Math.floor(band.max * 10000 + 1e-9), ticks.maxTicks * tickUnits);
      }),
      { numRuns: 20000 },
    );
  });

  it('is m -+ (0.25 m + 0.01) on the tick grid', () => {
    assert.deepEqual(priceBandCoin(0.05), { min: 0.0275, max: 0.0725 });
    assert.deepEqual(priceBandCoin(0.0532), { min: 0.0299, max: 0.0765 });
    assert.deepEqual(priceBandCoin(1), { min: 0.74, max: 1.26 });
  });

  it('never goes below one tick', () => {
    assert.deepEqual(priceBandCoin(0.001), { min: 0.0001, max: 0.0112 });
    assert.deepEqual(priceBandCoin(0), { min: 0.0001, max: 0.01 });
    assert.deepEqual(priceBandCoin(0.01, 0.0005), { min: 0.0005, max: 0.0225 });
  });

  it('admits exactly the tick multiples the raw formula admits', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 30000 }), (markTicks) => {
        const m = markTicks / 10000;
        const band = priceBandCoin(m);
        const rawMin = Math.max(0.0001, m - 0.25 * m - 0.01);
        const rawMax = m + 0.25 * m + 0.01;
        // the band edges are tick multiples written with at most 4 decimals
        for (const edge of [band.min, band.max]) assert.equal(Number(edge.toFixed(4)), edge);
        // the band is no wider than the formula (beyond float noise) ...
        assert.ok(band.min >= rawMin - 1e-12 && band.max <= rawMax + 1e-12, `${m}: ${JSON.stringify(band)}`);
        // ... and loses no tick the formula admits
        assert.ok(band.min - 0.0001 < rawMin - 1e-12 && band.max + 0.0001 > rawMax + 1e-12, `${m}: ${JSON.stringify(band)}`);
      }),
    );
  });

  it('rejects a negative or non-finite mark and a non-positive tick', () => {
    assert.throws(() => priceBandCoin(-0.1), RangeError);
    assert.throws(() => priceBandCoin(NaN), RangeError);
    assert.throws(() => priceBandCoin(0.1, 0), RangeError);
  });
});

describe('optionGreeksCoin', () => {
  it('gives Black-76 ticker greeks rounded to 5 decimals for an at-the-money BTC call', () => {
    // mpmath: delta 0.534269703591, gamma 0.0000231067, vega 113.950954219998, theta -113.950954219998;
    // rho as Deribit shows it (Black-Scholes, K T N(d2) / 100, positive for a call): 38.279202444553
    assert.deepEqual(optionGreeksCoin('call', 100000, 100000, 30 / 365, 0.6), {
      delta: 0.53427,
      gamma: 0.00002,
      vega: 113.95095,
      theta: -113.95095,
      rho: 38.2792,
    });
  });

  it('gives a negative delta for a put and matches the unrounded greeks to 5 decimals', () => {
    const iv = markIv(DEFAULT_SMILE, 100000, 110000);
    const g = optionGreeksCoin('put', 100000, 110000, 30 / 365, iv);
    // mpmath: delta -0.682048708174, vega 102.247487641598, theta -101.397299305851; rho (Deribit's,
    // -K T N(-d2) / 100) -66.923881085993
    assert.deepEqual(g, { delta: -0.68205, gamma: 0.00002, vega: 102.24749, theta: -101.3973, rho: -66.92388 });
    const raw = black76Greeks('put', 100000, 110000, 30 / 365, iv);
    for (const k of ['delta', 'gamma', 'vega', 'theta'] as const) assert.ok(Math.abs(g[k] - raw[k]) <= 5e-6);
  });

  it('reports zeros and a step delta once expired, without negative zeros', () => {
    const g = optionGreeksCoin('put', 100000, 90000, 0, 0.6);
    assert.deepEqual(g, { delta: 0, gamma: 0, vega: 0, theta: 0, rho: 0 });
    assert.ok(!Object.is(g.delta, -0));
    assert.equal(optionGreeksCoin('put', 100000, 110000, 0, 0.6).delta, -1);
    assert.ok(!Object.is(optionGreeksCoin('call', 100000, 300000, 1 / 365, 0.6).rho, -0));
  });

  it('is consistent with the USD price it is derived from', () => {
    const F = 4000;
    const T = 7 / 365;
    const h = 1e-4;
    const dV = (black76Price('call', F, 4200, T, 0.8 + h) - black76Price('call', F, 4200, T, 0.8 - h)) / (2 * h) / 100;
    assert.ok(Math.abs(optionGreeksCoin('call', F, 4200, T, 0.8).vega - dV) < 1e-5);
  });
});
