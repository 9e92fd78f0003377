// The point of portfolio margin: a market maker's hedged book needs a fraction of what standard
// margin (src/risk/margin.ts, each short leg on its own) holds, while a naked short is charged at
// least what its worst scenario loses.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { coinPrice } from '../../../src/domain/pricing.ts';
import { shortMaintenanceMargin } from '../../../src/risk/margin.ts';
import { portfolioMargin } from '../../../src/risk/portfolio/scenarios.ts';
import type { PmLeg } from '../../../src/risk/portfolio/types.ts';
import { DAY, F, NOW, btc, leg } from './fixtures.ts';

/** Standard maintenance margin of a book in minor units: every short leg at 0.075 + mark (and the put floor). */
function standardMM(legs: PmLeg[], forward = F): number {
  let coin = 0;
  for (const l of legs) {
    if (l.position >= 0) continue;
    const mark = coinPrice(l.optionType, forward, l.strike, (l.expiry - NOW) / (365 * DAY), l.iv);
    coin += -l.position * shortMaintenanceMargin(l.optionType, mark);
  }
  return Math.ceil(coin * 1e8 - 1e-6);
}

describe('a hedged book against standard margin', () => {
  it('a 50-strike two-sided book of call and put spreads needs at most 1/3 of standard margin', () => {
    // 25 strikes of calls from 100,000 up and 25 of puts from 100,000 down, 2,000 apart; at each a
    // market maker is short 10 and long 10 of the next strike out: verticals both ways, near flat delta
    const legs: PmLeg[] = [];
    for (let i = 0; i < 25; i++) {
      const kc = 100000 + 2000 * i;
      const kp = 100000 - 2000 * i;
      legs.push(leg('call', kc, -10), leg('call', kc + 2000, 10));
      legs.push(leg('put', kp, -10), leg('put', kp - 2000, 10));
    }
    const pm = portfolioMargin(btc(legs));
    const standard = standardMM(legs);
    assert.ok(pm.maintenanceMargin * 3 <= standard, `PM ${pm.maintenanceMargin} vs standard ${standard}`);
    assert.ok(pm.maintenanceMargin > 0);
  });

  it('charges a naked short at least what its worst scenario loses', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('call' as const, 'put' as const),
        fc.integer({ min: 40, max: 200 }),
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: 1, max: 100 }),
        (type, strikeK, days, tenths) => {
          const short = leg(type, strikeK * 1000, -tenths / 10, { expiry: NOW + days * DAY });
          const r = portfolioMargin(btc([short]));
          const worstStandard = Math.max(...r.scenarios.filter((s) => s.table === 'standard').map((s) => -s.pnl));
          assert.ok(r.maintenanceMargin >= worstStandard);
          assert.ok(r.maintenanceMargin >= r.worstLoss + r.contingencies.shortOption);
        },
      ),
      { numRuns: 200 },
    );
  });
});
