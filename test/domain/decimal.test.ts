// The numeric fast paths of src/domain/decimal.ts against the digit-by-digit text paths they stand
// in for: a JSON number parses exactly as its shortest round-trip text does, and a scaled integer
// renders as the number its exact decimal text denotes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { formatScaled, parseScaled, pow10, toDecimalNumber } from '../../src/domain/decimal.ts';

/** formatScaled as it was written before its fast path: pad, split, trim. */
function formatReference(scaled: number, scale: number): string {
  const neg = scaled < 0;
  const digits = String(Math.abs(scaled)).padStart(scale + 1, '0');
  const int = digits.slice(0, digits.length - scale);
  const frac = digits.slice(digits.length - scale).replace(/0+$/, '');
  return (neg ? '-' : '') + int + (frac ? '.' + frac : '');
}

const scale = fc.integer({ min: 0, max: 15 });
const safeInt = fc.oneof(fc.integer({ min: -1_000_000_000, max: 1_000_000_000 }), fc.maxSafeInteger().map((n) => Math.floor(n / 7)), fc.constant(0));

test('a JSON number parses exactly as its shortest text does', () => {
  const doubles = fc.oneof(
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    // decimals with few places, as clients send them (0.1, 0.0005, 123.45678)
    fc.tuple(safeInt, scale).map(([n, s]) => n / 10 ** s),
    fc.tuple(fc.integer({ min: -99_999, max: 99_999 }), fc.integer({ min: 0, max: 9 })).map(([n, s]) => n / 10 ** s),
  );
  fc.assert(
    fc.property(doubles, scale, (v, s) => {
      assert.equal(parseScaled(v, s), parseScaled(String(v), s), `${v} at scale ${s}`);
    }),
    { numRuns: 20_000 },
  );
  // values where doubles are further apart than 10^-scale fall back to the text path
  assert.equal(parseScaled(2 ** 60, 8), null);
  assert.equal(parseScaled(123456789.12345679, 8), parseScaled('123456789.12345679', 8));
  assert.equal(parseScaled(0.1, 8), 10_000_000);
  assert.equal(parseScaled(-0, 4), 0);
  assert.equal(parseScaled(0.00005, 4), null);
});

test('a scaled integer renders as the number and the text of its exact decimal', () => {
  fc.assert(
    fc.property(safeInt, scale, (n, s) => {
      assert.equal(formatScaled(n, s), formatReference(n, s));
      assert.equal(Object.is(toDecimalNumber(n, s), Number(formatReference(n, s))), true, `${n} at scale ${s}`);
    }),
    { numRuns: 20_000 },
  );
  assert.equal(formatScaled(-500_000_000, 8), '-5');
  assert.equal(formatScaled(0, 8), '0');
  assert.equal(Object.is(toDecimalNumber(-0, 8), 0), true);
});

test('pow10 is the correctly rounded power of ten for every exponent, the same bits on every runtime', () => {
  // `10 ** -4` is one bit off 1e-4 on Node 20 (not on 24): a figure scaled by it would replay
  // differently on an upgraded standby (docs/architecture.md, "Recovery and the state hash")
  for (let n = -40; n <= 40; n++) assert.equal(pow10(n), Number(`1e${n}`), `10^${n}`);
  assert.throws(() => pow10(1.5), RangeError, 'not a power of ten by any decimal rule');
});
