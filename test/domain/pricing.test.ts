import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  black76Greeks,
  black76Price,
  coinPrice,
  erfc,
  impliedVol,
  intrinsicCoin,
  normCdf,
  normPdf,
  yearFraction,
} from '../../src/domain/pricing.ts';
import type { OptionType } from '../../src/domain/pricing.ts';

function assertClose(actual: number, expected: number, relTol: number, what = ''): void {
  const scale = Math.max(Math.abs(expected), Number.MIN_VALUE);
  const err = Math.abs(actual - expected) / scale;
  assert.ok(err <= relTol, `${what} expected ${expected}, got ${actual} (relative error ${err} > ${relTol})`);
}

function assertNear(actual: number, expected: number, absTol: number, what = ''): void {
  assert.ok(Math.abs(actual - expected) <= absTol, `${what} expected ${expected} +- ${absTol}, got ${actual}`);
}

const TYPES: OptionType[] = ['call', 'put'];

// Reference values computed independently with mpmath at 40 significant digits (ncdf, npdf, and the
// closed-form Black/Black-Scholes formulas); the literals are the nearest doubles to those values.
describe('normCdf and normPdf', () => {
  const cdf: [number, number][] = [
    [0, 0.5],
    [0.3, 0.6179114221889527],
    [-0.3, 0.3820885778110474],
    [-0.7, 0.241963652223073],
    [1, 0.8413447460685429],
    [-1, 0.15865525393145705],
    [1.96, 0.9750021048517795],
    [-2.5, 0.006209665325776135],
    [5, 0.9999997133484281],
    [8, 0.9999999999999993],
  ];
  const tail: [number, number][] = [
    [-5, 2.866515718791939e-7],
    [-10, 7.619853024160525e-24],
    [-20, 2.7536241186062337e-89],
    [-37.5, 4.605353009581955e-308],
  ];

  it('matches high-precision values of N(x) to 1e-15 relative in the body', () => {
    for (const [x, v] of cdf) assertClose(normCdf(x), v, 1e-15, `N(${x})`);
  });

  it('keeps its relative precision deep in the lower tail', () => {
    for (const [x, v] of tail) assertClose(normCdf(x), v, 2e-13, `N(${x})`);
  });

  it('saturates to exactly 0 and 1 far out and at infinity without NaN', () => {
    assert.equal(normCdf(-40), 0);
    assert.equal(normCdf(40), 1);
    assert.equal(normCdf(-Infinity), 0);
    assert.equal(normCdf(Infinity), 1);
  });

  it('is symmetric: N(x) + N(-x) = 1', () => {
    for (let x = -8; x <= 8; x += 0.137) assertNear(normCdf(x) + normCdf(-x), 1, 2e-16, `x=${x}`);
  });

  it('is non-decreasing on a fine grid across the three Cody intervals', () => {
    let prev = 0;
    for (let x = -30; x <= 30; x += 0.001) {
      const v = normCdf(x);
      assert.ok(v >= prev, `N(${x}) = ${v} < ${prev}`);
      prev = v;
    }
  });

  it('has erfc values matching MPFR references at the interval edges and in the tail', () => {
    // MPFR values quoted with the Forth port of Cody's CALERF
    assertClose(erfc(0.5), 1 - 0.5204998778130465, 1e-15, 'erfc(0.5)');
    assertClose(erfc(4), 1.541725790028002e-8, 1e-15, 'erfc(4)');
    assertClose(erfc(10), 2.088487583762545e-45, 1e-15, 'erfc(10)');
    assertClose(erfc(26), 5.663192408856143e-296, 1e-15, 'erfc(26)');
    assert.equal(erfc(27), 0);
    assert.equal(erfc(-27), 2);
  });

  it('gives the standard normal density', () => {
    assertClose(normPdf(0), 0.3989422804014327, 1e-16, 'n(0)');
    assertClose(normPdf(1), 0.24197072451914334, 1e-15, 'n(1)');
    assertClose(normPdf(-1.96), 0.05844094433345146, 1e-15, 'n(-1.96)');
    assertClose(normPdf(8), 5.052271083536892e-15, 1e-14, 'n(8)');
    assert.equal(normPdf(Infinity), 0);
  });
});

describe('black76Price', () => {
  it('prices the at-the-money call and put at F=K=100, T=1, sigma=20%, r=0 as 7.965567455405804', () => {
    // mpmath: 7.9655674554057967338
    assertClose(black76Price('call', 100, 100, 1, 0.2), 7.965567455405797, 1e-14, 'call');
    assertClose(black76Price('put', 100, 100, 1, 0.2), 7.965567455405797, 1e-14, 'put');
  });

  it('reproduces Black-Scholes S=30, K=34, T=0.25, sigma=20%, r=8% through F = S e^{rT}', () => {
    // black-scholes README: call 0.23834902311961947, put 3.5651039155492974;
    // mpmath: call 0.23834902311962047199, put 3.5651039155493007475
    const S = 30;
    const r = 0.08;
    const T = 0.25;
    const F = S * Math.exp(r * T);
    assertClose(black76Price('call', F, 34, T, 0.2, r), 0.23834902311962047, 1e-13, 'call');
    assertClose(black76Price('put', F, 34, T, 0.2, r), 3.565103915549301, 1e-14, 'put');
  });

  it('prices Hull\'s futures-option example (F=K=20, r=9%, T=4 months, sigma=25%) as the put 1.12', () => {
    // Hull, Options Futures and Other Derivatives: 1.12; mpmath: 1.1166414565589434782
    assertClose(black76Price('put', 20, 20, 4 / 12, 0.25, 0.09), 1.1166414565589435, 1e-14, 'put');
  });

  it('satisfies put-call parity C - P = D (F - K) across strikes, tenors and rates', () => {
    for (const K of [50, 80, 100, 125, 200]) {
      for (const T of [1 / 365, 0.1, 1, 3]) {
        for (const r of [0, 0.05]) {
          const c = black76Price('call', 100, K, T, 0.7, r);
          const p = black76Price('put', 100, K, T, 0.7, r);
          assertNear(c - p, Math.exp(-r * T) * (100 - K), 1e-12 * 200, `K=${K} T=${T} r=${r}`);
        }
      }
    }
  });

  it('returns the intrinsic value at or after expiry and at zero vol', () => {
    assert.equal(black76Price('call', 110, 100, 0, 0.5), 10);
    assert.equal(black76Price('put', 110, 100, -0.1, 0.5), 0);
    assert.equal(black76Price('put', 90, 100, 0, 0.5), 10);
    assert.equal(black76Price('call', 100, 100, 0, 0.5), 0);
    assert.equal(black76Price('call', 110, 100, 1, 0), 10);
    assertClose(black76Price('call', 110, 100, 1, 0, 0.05), 10 * Math.exp(-0.05), 1e-15, 'discounted');
  });

  it('stays within the no-arbitrage bounds and increases with vol', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<OptionType>('call', 'put'),
        fc.double({ min: 0.5, max: 2, noNaN: true }),
        fc.double({ min: 1e-4, max: 3, noNaN: true }),
        fc.double({ min: 0.01, max: 3, noNaN: true }),
        (type, m, T, sigma) => {
          const F = 100;
          const K = F * m;
          const p = black76Price(type, F, K, T, sigma);
          const intrinsic = type === 'call' ? Math.max(F - K, 0) : Math.max(K - F, 0);
          assert.ok(p >= intrinsic, `${p} < intrinsic ${intrinsic}`);
          assert.ok(p <= (type === 'call' ? F : K));
          assert.ok(black76Price(type, F, K, T, sigma * 1.1) >= p);
        },
      ),
    );
  });

  it('throws on a non-positive forward or strike and on non-finite inputs', () => {
    assert.throws(() => black76Price('call', 0, 100, 1, 0.5), RangeError);
    assert.throws(() => black76Price('call', 100, -1, 1, 0.5), RangeError);
    assert.throws(() => black76Price('call', 100, 100, NaN, 0.5), RangeError);
    assert.throws(() => black76Price('call', 100, 100, 1, Infinity), RangeError);
  });
});

describe('black76Greeks', () => {
  const price = (type: OptionType, F: number, K: number, T: number, s: number, r: number) => black76Price(type, F, K, T, s, r);

  it('match central finite differences of the price function', () => {
    for (const type of TYPES) {
      for (const K of [60, 90, 100, 110, 160]) {
        for (const T of [7 / 365, 0.25, 1]) {
          for (const r of [0, 0.03]) {
            const F = 100;
            const s = 0.6;
            const g = black76Greeks(type, F, K, T, s, r);
            const hD = 1e-5 * F;
            const fdDelta = (price(type, F + hD, K, T, s, r) - price(type, F - hD, K, T, s, r)) / (2 * hD);
            const hF = 1e-4 * F;
            const fdGamma = (price(type, F + hF, K, T, s, r) - 2 * price(type, F, K, T, s, r) + price(type, F - hF, K, T, s, r)) / (hF * hF);
            const hs = 1e-5;
            const fdVega = (price(type, F, K, T, s + hs, r) - price(type, F, K, T, s - hs, r)) / (2 * hs) / 100;
            const hT = 1e-6;
            const fdTheta = -(price(type, F, K, T + hT, s, r) - price(type, F, K, T - hT, s, r)) / (2 * hT) / 365;
            const hr = 1e-6;
            const fdRho = (price(type, F, K, T, s, r + hr) - price(type, F, K, T, s, r - hr)) / (2 * hr) / 100;
            const at = `${type} K=${K} T=${T} r=${r}`;
            assertNear(g.delta, fdDelta, 1e-7, `delta ${at}`);
            assertNear(g.gamma, fdGamma, 1e-6 * Math.max(g.gamma, 1e-3), `gamma ${at}`);
            assertNear(g.vega, fdVega, 1e-7 * Math.max(Math.abs(g.vega), 1), `vega ${at}`);
            assertNear(g.theta, fdTheta, 1e-7 * Math.max(Math.abs(g.theta), 1), `theta ${at}`);
            assertNear(g.rho, fdRho, 1e-7 * Math.max(Math.abs(g.rho), 1), `rho ${at}`);
          }
        }
      }
    }
  });

  it('reproduce Hull\'s Black-Scholes greeks (S=49, K=50, r=5%, sigma=20%, T=20 weeks) after the F-to-S conversion', () => {
    // Hull example: delta 0.522, gamma 0.066, vega 12.1, theta -4.31 per year, rho 8.91.
    // mpmath: delta 0.52160466106639638876, gamma 0.06554403934784439766, vega 12.105479882628799906,
    //         theta -4.3053298229325734034 (per year), rho 8.9069619496083494447 (per unit rate).
    // With F = S e^{rT}: dV/dS = e^{rT} dV/dF; d2V/dS2 = e^{2rT} d2V/dF2; vega is the same;
    // theta at fixed S = theta at fixed F - r F dV/dF; rho at fixed S = rho at fixed F + T F dV/dF.
    const S = 49;
    const r = 0.05;
    const T = 20 / 52;
    const F = S * Math.exp(r * T);
    const g = black76Greeks('call', F, 50, T, 0.2, r);
    const growth = Math.exp(r * T);
    assertClose(g.delta * growth, 0.5216046610663964, 1e-14, 'delta');
    assertClose(g.gamma * growth * growth, 0.0655440393478444, 1e-13, 'gamma');
    assertClose(g.vega * 100, 12.1054798826288, 1e-13, 'vega');
    assertClose(g.theta * 365 - r * F * g.delta, -4.305329822932573, 1e-13, 'theta');
    assertClose(g.rho * 100 + T * F * g.delta, 8.90696194960835, 1e-13, 'rho');
  });

  it('report vega per vol point, theta per day and rho per 1% at the at-the-money reference point', () => {
    // F=K=100, T=1, sigma=0.2, r=0: d1 = 0.1; vega = 100 n(0.1) / 100; theta = -100 n(0.1) 0.2 / 2 / 365
    const g = black76Greeks('call', 100, 100, 1, 0.2);
    const n01 = 0.39695254747701175; // n(0.1), mpmath
    assertClose(g.vega, n01, 1e-15, 'vega');
    assertClose(g.theta, (-100 * n01 * 0.1) / 365, 1e-15, 'theta');
    assertClose(g.rho, -7.965567455405797 / 100, 1e-14, 'rho');
    assertClose(g.delta, 0.539827837277029, 1e-15, 'delta = N(0.1)');
    assert.ok(g.theta < 0);
  });

  it('give a put delta equal to the call delta minus the discount factor', () => {
    for (const K of [70, 100, 130]) {
      const c = black76Greeks('call', 100, K, 0.5, 0.8, 0.04);
      const p = black76Greeks('put', 100, K, 0.5, 0.8, 0.04);
      assertNear(c.delta - p.delta, Math.exp(-0.04 * 0.5), 1e-15, `K=${K}`);
      assertClose(p.gamma, c.gamma, 1e-15, 'gamma');
      assertClose(p.vega, c.vega, 1e-15, 'vega');
    }
  });

  it('step the delta and zero the other greeks at expiry or zero vol', () => {
    assert.deepEqual(black76Greeks('call', 110, 100, 0, 0.5), { delta: 1, gamma: 0, vega: 0, theta: 0, rho: 0 });
    assert.deepEqual(black76Greeks('call', 90, 100, -1, 0.5), { delta: 0, gamma: 0, vega: 0, theta: 0, rho: 0 });
    assert.deepEqual(black76Greeks('put', 90, 100, 0, 0.5), { delta: -1, gamma: 0, vega: 0, theta: 0, rho: 0 });
    assert.deepEqual(black76Greeks('put', 110, 100, 1, 0), { delta: 0, gamma: 0, vega: 0, theta: 0, rho: 0 });
    assert.deepEqual(black76Greeks('call', 100, 100, 0, 0.5), { delta: 0, gamma: 0, vega: 0, theta: 0, rho: 0 });
  });

  it('never return NaN (nor does the price) for finite positive inputs, however extreme', () => {
    const positive = fc.double({ min: Number.MIN_VALUE, max: Number.MAX_VALUE, noNaN: true, noDefaultInfinity: true });
    fc.assert(
      fc.property(fc.constantFrom<OptionType>('call', 'put'), positive, positive, positive, positive, (type, F, K, T, s) => {
        const values = [black76Price(type, F, K, T, s), ...Object.values(black76Greeks(type, F, K, T, s))];
        for (const v of values) assert.ok(!Number.isNaN(v), `NaN for ${type} F=${F} K=${K} T=${T} sigma=${s}`);
      }),
      { numRuns: 2000 },
    );
    const extremes = [Number.MIN_VALUE, 1e-300, 1e-9, 1, 1e9, 1e300, Number.MAX_VALUE];
    for (const type of TYPES) {
      for (const F of extremes) {
        for (const K of extremes) {
          for (const T of extremes) {
            for (const s of extremes) {
              const values = [black76Price(type, F, K, T, s), ...Object.values(black76Greeks(type, F, K, T, s))];
              for (const v of values) assert.ok(!Number.isNaN(v), `NaN for ${type} F=${F} K=${K} T=${T} sigma=${s}`);
            }
          }
        }
      }
    }
  });

  it('never return NaN with a moderate positive rate', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<OptionType>('call', 'put'),
        fc.double({ min: 1e-6, max: 1e9, noNaN: true }),
        fc.double({ min: 1e-6, max: 1e9, noNaN: true }),
        fc.double({ min: 1e-12, max: 50, noNaN: true }),
        fc.double({ min: 1e-9, max: 50, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (type, F, K, T, s, r) => {
          const values = [black76Price(type, F, K, T, s, r), ...Object.values(black76Greeks(type, F, K, T, s, r))];
          for (const v of values) assert.ok(Number.isFinite(v), `non-finite for ${type} F=${F} K=${K} T=${T} sigma=${s} r=${r}`);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('impliedVol', () => {
  const DAY = 1 / 365;

  it('recovers the input vol to 1e-6 across moneyness 0.5..2, 1 day..1 year and vols 5%..300%', () => {
    let checked = 0;
    for (const F of [4000, 100000]) {
      for (const m of [0.5, 0.6, 0.75, 0.9, 0.95, 1, 1.05, 1.1, 1.25, 1.5, 2]) {
        for (const T of [DAY, 2 * DAY, 7 * DAY, 30 * DAY, 91 * DAY, 182 * DAY, 1]) {
          for (const sigma of [0.05, 0.1, 0.2, 0.3, 0.5, 0.6, 0.8, 1, 1.5, 2, 2.5, 3]) {
            for (const type of TYPES) {
              const K = F * m;
              // Skip points where a 1e-6 change of vol moves the price by less than 1e-12 of F:
              // there the price is numerically indistinguishable from intrinsic.
              const vegaPerUnit = black76Greeks(type, F, K, T, sigma).vega * 100;
              if (vegaPerUnit * 1e-6 < 1e-12 * F) continue;
              const price = black76Price(type, F, K, T, sigma);
              const iv = impliedVol(type, price, F, K, T);
              assert.ok(iv !== null, `no IV for ${type} F=${F} K/F=${m} T=${T} sigma=${sigma}`);
              assertNear(iv, sigma, 1e-6, `${type} F=${F} K/F=${m} T=${T}`);
              checked++;
            }
          }
        }
      }
    }
    assert.ok(checked > 2000, `only ${checked} grid points were checked`);
  });

  it('recovers random vols anywhere vega is meaningful, with and without a rate', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<OptionType>('call', 'put'),
        fc.double({ min: 10, max: 1e6, noNaN: true }),
        fc.double({ min: 0.5, max: 2, noNaN: true }),
        fc.double({ min: DAY, max: 1, noNaN: true }),
        fc.double({ min: 0.05, max: 3, noNaN: true }),
        fc.constantFrom(0, 0.05),
        (type, F, m, T, sigma, r) => {
          const K = F * m;
          fc.pre(black76Greeks(type, F, K, T, sigma, r).vega * 100 * 1e-6 >= 1e-12 * F);
          const iv = impliedVol(type, black76Price(type, F, K, T, sigma, r), F, K, T, r);
          assert.ok(iv !== null);
          assertNear(iv, sigma, 1e-6, `${type} F=${F} K=${K} T=${T} r=${r}`);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it('widens the bracket to find vols between 500% and 1000%', () => {
    for (const sigma of [5.5, 7, 9.5]) {
      const p = black76Price('call', 100, 100, 0.05, sigma);
      assertNear(impliedVol('call', p, 100, 100, 0.05)!, sigma, 1e-6, `sigma=${sigma}`);
    }
  });

  it('returns null for a vol above 1000%', () => {
    const p = black76Price('call', 100, 100, 1, 12);
    assert.equal(impliedVol('call', p, 100, 100, 1), null);
  });

  it('returns null outside the no-arbitrage bounds', () => {
    assert.equal(impliedVol('call', 9.99, 110, 100, 0.5), null, 'call below intrinsic');
    assert.equal(impliedVol('put', 4.99, 95, 100, 0.5), null, 'put below intrinsic');
    assert.equal(impliedVol('call', 100, 100, 90, 0.5), null, 'call at F');
    assert.equal(impliedVol('call', 150, 100, 90, 0.5), null, 'call above F');
    assert.equal(impliedVol('put', 90, 100, 90, 0.5), null, 'put at K');
    assert.equal(impliedVol('call', -0.01, 100, 120, 0.5), null, 'negative price');
    assert.equal(impliedVol('call', NaN, 100, 120, 0.5), null, 'NaN price');
    assert.equal(impliedVol('call', Infinity, 100, 120, 0.5), null, 'infinite price');
  });

  it('returns null at or after expiry', () => {
    assert.equal(impliedVol('call', 5, 100, 100, 0), null);
    assert.equal(impliedVol('call', 5, 100, 100, -1), null);
  });

  it('returns 0 for a price at intrinsic value', () => {
    assert.equal(impliedVol('call', 10, 110, 100, 0.5), 0);
    assert.equal(impliedVol('put', 0, 110, 100, 0.5), 0);
  });

  it('applies the discount factor of a non-zero rate', () => {
    const p = black76Price('put', 100, 120, 0.5, 0.45, 0.1);
    assertNear(impliedVol('put', p, 100, 120, 0.5, 0.1)!, 0.45, 1e-9);
    // the undiscounted upper bound does not apply: D*K is the ceiling for a put
    assert.equal(impliedVol('put', 120 * Math.exp(-0.05), 100, 120, 0.5, 0.1), null);
  });
});

describe('yearFraction', () => {
  it('counts 365-day years in milliseconds', () => {
    assert.equal(yearFraction(0, 365 * 24 * 3600 * 1000), 1);
    assert.equal(yearFraction(Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 2)), 1 / 365);
    assert.equal(yearFraction(10, 0), -10 / (365 * 24 * 3600 * 1000));
  });
});

describe('coinPrice', () => {
  it('is the Black-76 USD price divided by F', () => {
    const F = 100000;
    for (const type of TYPES) {
      for (const K of [80000, 100000, 125000]) {
        assertClose(coinPrice(type, F, K, 30 / 365, 0.6), black76Price(type, F, K, 30 / 365, 0.6) / F, 1e-15, `${type} ${K}`);
      }
    }
  });

  it('is never below the coin intrinsic value', () => {
    assert.equal(coinPrice('call', 100000, 50000, 0, 0.6), 0.5);
    assert.equal(coinPrice('put', 100000, 150000, 0, 0.6), 0.5);
    assert.equal(intrinsicCoin('call', 100000, 50000), 0.5);
    assert.equal(intrinsicCoin('put', 100000, 150000), 0.5);
    assert.equal(intrinsicCoin('put', 100000, 50000), 0);
  });

  it('is capped at 1 coin when the intrinsic value is below 1', () => {
    // put K = 1.9 F at an absurd vol: USD price close to K, i.e. 1.9 coin before the clamp
    assert.equal(coinPrice('put', 100, 190, 1, 9), 1);
    assert.ok(coinPrice('call', 100, 1, 1, 9) <= 1);
  });

  it('keeps an intrinsic value above 1 coin rather than marking below intrinsic', () => {
    // put K = 3 F: the option is worth at least 2 coin
    assert.equal(coinPrice('put', 100, 300, 0, 0.6), 2);
    assert.ok(coinPrice('put', 100, 300, 1, 0.6) >= 2);
  });
});
