// The admin console reads the smile back from three marks (web/src/lib/smileFit.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fitSmile } from '../../web/src/lib/smileFit.ts';

describe('reading the smile back from marks', () => {
  it('recovers atm_vol, skew and curvature from three marks of one expiry', () => {
    const F = 100_000;
    const iv = (K: number) => {
      const k = Math.log(K / F);
      return 100 * (0.6 - 0.1 * k + 0.5 * k * k);
    };
    assert.deepEqual(fitSmile(F, [90_000, 100_000, 110_000].map((strike) => ({ strike, iv: iv(strike) }))), { atm_vol: 0.6, skew: -0.1, curvature: 0.5 });
  });

  it('gives up on fewer than three distinct strikes', () => {
    assert.equal(fitSmile(100_000, [{ strike: 100_000, iv: 60 }]), null);
    assert.equal(fitSmile(100_000, [100_000, 100_000, 100_000].map((strike) => ({ strike, iv: 60 }))), null);
  });
});
