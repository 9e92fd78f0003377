// The market the engine's order tests trade on (matching, orderOptions, orderChecksAndMargin): six
// January series with their marks and bands, and a check that a command was refused with a code.
import assert from 'node:assert/strict';
import { isReject, type Reject } from '../../src/domain/errors.ts';
import { DEFAULT_LIMITS } from '../../src/engine/exchange.ts';
import { EXP_JAN, Harness, spec } from '../helpers/engine.ts';

// Mark ~0.0037 coin: price band [0.0001, 0.0146], so prices on both sides of the 0.005 tick step work.
export const C = 'BTC-30JAN26-130000-C';
// Same grid with a 0.001 BTC lot, so that fees have fractions of a satoshi to round.
export const CH = 'BTC-30JAN26-140000-C';
// ETH: lot 1 ETH.
export const E = 'ETH-30JAN26-5000-C';
// Margin instruments (index 100000): mark ~0.053, band [0.0300, 0.0766] / ~0.0525 / ~0.0268.
export const SC = 'BTC-30JAN26-102000-C';
export const SP = 'BTC-30JAN26-98000-P';
export const SF = 'BTC-30JAN26-110000-C';

export function setup(limits = DEFAULT_LIMITS, manualIndex = true): Harness {
  const fine = { ...spec('BTC', EXP_JAN, 140000, 'call'), lotScaled: 100_000 };
  return Harness.market(
    [spec('BTC', EXP_JAN, 130000, 'call'), fine, spec('ETH', EXP_JAN, 5000, 'call'), spec('BTC', EXP_JAN, 102000, 'call'), spec('BTC', EXP_JAN, 98000, 'put'), spec('BTC', EXP_JAN, 110000, 'call')],
    limits,
    manualIndex,
  );
}

export function rejected(r: unknown, expected: number, reason?: string): Reject {
  assert.ok(isReject(r), `expected a reject ${expected}, got ${JSON.stringify((r as { order?: { state: string } })?.order?.state)}`);
  assert.equal(r.code, expected);
  if (reason !== undefined) assert.equal(r.reason, reason);
  return r;
}
