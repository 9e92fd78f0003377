// The pricing functions' exact bits, pinned. Marks, IVs and greeks are floats until they are rounded
// onto the price grid, and a replay must reach the state the live engine had. A standby or a
// restarted server may run another Node.js release than the one that wrote the journal (an upgrade
// of the runtime, standby first: docs/operations.md). This test fails if a runtime, or a change to
// the code, moves any of these results by one bit.
//
// The pinned digest was computed on Node 20.20.2 and is the same on Node 24.22.3 (V8 11.3 and 13.6:
// both take Math.exp and Math.log from V8's own port of fdlibm, not from the platform's libm).
// `Math.pow` is not among them: it differs in the last bit between those two releases for ~10% of
// these inputs, so the engine does not use it (the lint rule in eslint.config.js; `volShock`). If a
// deliberate change to the pricing code moves the digest, pin the new one, and say in the release
// notes that a journal written before it replays to other marks.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { black76Greeks, black76Price, coinPrice, erfc, impliedVol, normCdf } from '../../src/domain/pricing.ts';
import type { OptionType } from '../../src/domain/pricing.ts';
import { mulberry32 } from '../../src/market/indexFeed.ts';
import { DEFAULT_SMILE, ivFromCoinPrice, markIv, optionGreeksCoin } from '../../src/market/smile.ts';
import { DEFAULT_PM_PARAMS, volShock } from '../../src/risk/portfolio/params.ts';

const CASES = 20_000;
const PINNED = '264203ecdbba01a84c2d18f9fec26794f03e7e29476e1952041cfc1ca0507224';

function digestOfPricing(): { digest: string; values: number } {
  const next = mulberry32(0x5eed_1234); // the same inputs on every runtime and every run
  const out: number[] = [];
  for (let i = 0; i < CASES; i++) {
    const type: OptionType = i % 2 === 0 ? 'call' : 'put';
    const F = 1_000 + next() * 150_000;
    const K = F * (0.3 + next() * 2.4);
    const T = (1 + next() * 400 * 24 * 60) / (365 * 24 * 60); // a minute to 400 days
    const sigma = 0.05 + next() * 2.5;
    const x = (next() - 0.5) * 20;
    out.push(Math.exp(x), Math.log(F), Math.sqrt(T), erfc(x), normCdf(x), volShock(DEFAULT_PM_PARAMS, sigma, T * 365));
    const usd = black76Price(type, F, K, T, sigma);
    out.push(usd, coinPrice(type, F, K, T, sigma));
    const g = black76Greeks(type, F, K, T, sigma);
    out.push(g.delta, g.gamma, g.vega, g.theta);
    out.push(impliedVol(type, usd, F, K, T) ?? -1);
    const iv = markIv(DEFAULT_SMILE, F, K);
    const coin = coinPrice(type, F, K, T, iv);
    out.push(iv, coin, ivFromCoinPrice(type, coin, F, K, T) ?? -1);
    const gc = optionGreeksCoin(type, F, K, T, iv);
    out.push(gc.delta, gc.gamma, gc.vega, gc.theta);
  }
  const bits = new Float64Array(out);
  return { digest: createHash('sha256').update(new Uint8Array(bits.buffer)).digest('hex'), values: out.length };
}

describe('the pricing functions, bit for bit', () => {
  it(`give the pinned results for ${CASES} seeded cases on this runtime (${process.version})`, () => {
    const { digest, values } = digestOfPricing();
    assert.equal(values, CASES * 20);
    assert.equal(digest, PINNED, 'marks, IVs or greeks differ in some bit from the pinned results: a journal written elsewhere would replay to other marks');
  });

  it('are deterministic within a process', () => {
    assert.equal(digestOfPricing().digest, digestOfPricing().digest);
  });
});
