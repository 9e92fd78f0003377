import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SimulatedIndex, maxJumpOk, mulberry32 } from '../../src/market/indexFeed.ts';

const SECOND = 1000;
const YEAR_MS = 365 * 24 * 3600 * 1000;

function walk(index: SimulatedIndex, steps: number, dtMs = SECOND): number[] {
  const out: number[] = [];
  for (let i = 0; i < steps; i++) out.push(index.next(dtMs));
  return out;
}

describe('mulberry32', () => {
  it('is deterministic per seed and yields uniforms in [0, 1)', () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    let sum = 0;
    const n = 100000;
    for (let i = 0; i < n; i++) {
      const x = a();
      assert.equal(x, b());
      assert.ok(x >= 0 && x < 1);
      sum += x;
    }
    assert.ok(Math.abs(sum / n - 0.5) < 0.005, `mean ${sum / n}`);
  });

  it('gives different streams for different seeds', () => {
    const a = mulberry32(1);
    const b = mulberry32(2);
    assert.notDeepEqual([a(), a(), a()], [b(), b(), b()]);
  });
});

describe('SimulatedIndex', () => {
  it('replays the same prices for the same seed and steps', () => {
    const a = walk(new SimulatedIndex(7, 100000, 0.6), 1000);
    const b = walk(new SimulatedIndex(7, 100000, 0.6), 1000);
    assert.deepEqual(a, b);
    assert.notDeepEqual(a, walk(new SimulatedIndex(8, 100000, 0.6), 1000));
  });

  it('reports prices rounded to cents', () => {
    const index = new SimulatedIndex(3, 4000, 0.8);
    for (const p of walk(index, 5000)) assert.equal(Math.round(p * 100) / 100, p);
    assert.equal(new SimulatedIndex(3, 4000.123, 0.8).price, 4000.12);
  });

  it('starts at the configured level and moves it', () => {
    const index = new SimulatedIndex(11, 100000, 0.6);
    assert.equal(index.price, 100000);
    const p = index.next(SECOND);
    assert.equal(index.price, p);
    assert.notEqual(p, 100000);
    // one second at 60% annual vol moves about 0.01%; ten sigma is 0.1%
    assert.ok(Math.abs(p / 100000 - 1) < 1e-3);
  });

  it('does not move, nor consume randomness, on a zero step', () => {
    const a = new SimulatedIndex(5, 100000, 0.6);
    const b = new SimulatedIndex(5, 100000, 0.6);
    a.next(SECOND);
    b.next(SECOND);
    const p = a.next(0);
    assert.equal(p, a.price);
    assert.equal(a.next(SECOND), b.next(SECOND));
  });

  it('stays flat at zero vol', () => {
    const index = new SimulatedIndex(1, 4000, 0);
    for (const p of walk(index, 100, 60 * SECOND)) assert.equal(p, 4000);
  });

  it('has log returns with the configured annual vol', () => {
    const vol = 0.6;
    const n = 50000;
    const index = new SimulatedIndex(2024, 100000, vol);
    // Returns are measured on one-hour steps so that cent rounding is negligible.
    const dtMs = 3600 * SECOND;
    let prev = index.price;
    let sum = 0;
    let sumSq = 0;
    for (let i = 0; i < n; i++) {
      const p = index.next(dtMs);
      const r = Math.log(p / prev);
      sum += r;
      sumSq += r * r;
      prev = p;
    }
    const mean = sum / n;
    const variance = sumSq / n - mean * mean;
    const annualised = Math.sqrt(variance / (dtMs / YEAR_MS));
    // the standard error of a sample standard deviation is sigma / sqrt(2n) = 0.3% relative here
    assert.ok(Math.abs(annualised / vol - 1) < 0.015, `annualised vol ${annualised}`);
    // drift -sigma^2/2 per unit time; the mean's standard error is sigma sqrt(dt/n)
    const expectedMean = -0.5 * vol * vol * (dtMs / YEAR_MS);
    const se = vol * Math.sqrt(dtMs / YEAR_MS / n);
    assert.ok(Math.abs(mean - expectedMean) < 4 * se, `mean log return ${mean}, expected ${expectedMean} +- ${se}`);
  });

  it('rejects invalid parameters and negative steps', () => {
    assert.throws(() => new SimulatedIndex(1, 0, 0.6), RangeError);
    assert.throws(() => new SimulatedIndex(1, 100, -0.1), RangeError);
    assert.throws(() => new SimulatedIndex(NaN, 100, 0.6), RangeError);
    assert.throws(() => new SimulatedIndex(1, 100, 0.6).next(-1), RangeError);
    assert.throws(() => new SimulatedIndex(1, 100, 0.6).next(NaN), RangeError);
  });

  it('stays within a 1% jump bound for one-second steps at 60% vol', () => {
    const index = new SimulatedIndex(99, 100000, 0.6);
    let prev = index.price;
    for (let i = 0; i < 20000; i++) {
      const p = index.next(SECOND);
      assert.ok(maxJumpOk(prev, p, 0.01));
      prev = p;
    }
  });
});

describe('maxJumpOk', () => {
  it('accepts moves up to the bound in either direction, inclusive', () => {
    assert.equal(maxJumpOk(100, 105, 0.05), true);
    assert.equal(maxJumpOk(100, 95, 0.05), true);
    assert.equal(maxJumpOk(100, 100, 0), true);
  });

  it('rejects moves beyond the bound', () => {
    assert.equal(maxJumpOk(100, 105.01, 0.05), false);
    assert.equal(maxJumpOk(100, 94.99, 0.05), false);
    assert.equal(maxJumpOk(100, 100.01, 0), false);
  });

  it('rejects prices and bounds that are not finite positive numbers', () => {
    assert.equal(maxJumpOk(100, 0, 1), false);
    assert.equal(maxJumpOk(100, -5, 1), false);
    assert.equal(maxJumpOk(100, NaN, 1), false);
    assert.equal(maxJumpOk(100, Infinity, 1), false);
    assert.equal(maxJumpOk(0, 100, 1), false);
    assert.equal(maxJumpOk(NaN, 100, 1), false);
    assert.equal(maxJumpOk(100, 100, NaN), false);
    assert.equal(maxJumpOk(100, 100, -0.1), false);
  });
});
