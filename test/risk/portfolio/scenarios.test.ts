// The scenario engine against values computed independently: each expected figure below is
// Black-76 (src/domain/pricing.ts black76Price, USD) divided by the forward it is priced at, i.e. the
// coin price of an inverse option, at the scenario's forward F(1+move) and vol iv(1 +/- 0.38) for
// a 30-day option ((30/30)^0.30 x 38% = 38%).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { black76Greeks, black76Price } from '../../../src/domain/pricing.ts';
import { shortMaintenanceMargin } from '../../../src/risk/margin.ts';
import { DEFAULT_PM_PARAMS, priceMoves, volShock } from '../../../src/risk/portfolio/params.ts';
import { portfolioMargin } from '../../../src/risk/portfolio/scenarios.ts';
import { EXP60, F, T30, btc, leg, lossMinor } from './fixtures.ts';

/** Coin price of an inverse option. */
const coin = (type: 'call' | 'put', Fs: number, K: number, T: number, iv: number): number => black76Price(type, Fs, K, T, iv) / Fs;
const UP = 0.6 * 1.38;
const DOWN = 0.6 * 0.62;

describe('the scenario table', () => {
  it('has nine evenly spaced moves over +/-16% with exactly 0 in the middle', () => {
    const moves = priceMoves(DEFAULT_PM_PARAMS);
    assert.equal(moves.length, 9);
    assert.equal(moves[0], -0.16);
    assert.equal(moves[4], 0);
    assert.equal(moves[8], 0.16);
    assert.ok(Math.abs(moves[5] - 0.04) < 1e-15);
  });

  it('shocks vol by 38% at 30 days, harder closer to expiry and never from fewer than one day', () => {
    assert.equal(volShock(DEFAULT_PM_PARAMS, 0.38, 30), 0.38);
    // (30/15)^0.3 = 1.2311444133449163
    assert.ok(Math.abs(volShock(DEFAULT_PM_PARAMS, 0.38, 15) - 0.38 * 1.2311444133449163) < 1e-12);
    assert.equal(volShock(DEFAULT_PM_PARAMS, 0.38, 0), volShock(DEFAULT_PM_PARAMS, 0.38, 1));
  });

  it('answers 27 standard scenarios, and the extended ones only for a far out-of-the-money option', () => {
    assert.equal(portfolioMargin(btc([leg('call', 100000, -1)])).scenarios.length, 27);
    const far = portfolioMargin(btc([leg('put', 60000, -1)])).scenarios;
    assert.equal(far.length, 27 + 8);
    assert.deepEqual(far.filter((s) => s.table === 'extended').map((s) => [s.move, s.vol]), DEFAULT_PM_PARAMS.extendedMoves.map((m) => [m, 'up']));
  });

  it('gives an empty portfolio no margin at all', () => {
    const r = portfolioMargin(btc([]));
    assert.equal(r.maintenanceMargin, 0);
    assert.equal(r.initialMargin, 0);
    assert.ok(r.scenarios.every((s) => s.pnl === 0));
  });
});

describe('hand-computed portfolios', () => {
  it('a single long call loses at most its premium: worst at -16% with vol down', () => {
    const r = portfolioMargin(btc([leg('call', 100000, 1)]));
    const premium = coin('call', F, 100000, T30, 0.6); // 0.0684 coin
    // the call loses most where it is worth least: F = 84,000, vol 0.6 x 0.62 = 0.372
    const expected = lossMinor(premium - coin('call', 84000, 100000, T30, DOWN));
    assert.deepEqual([r.worst.move, r.worst.vol], [-0.16, 'down']);
    assert.equal(r.worstLoss, expected);
    assert.ok(r.worstLoss <= lossMinor(premium), 'never more than the premium');
    assert.equal(r.contingencies.shortOption, 0, 'a long option is no short');
    // delta contingency: 1% of the coin delta N(d1) - premium
    const delta = black76Greeks('call', F, 100000, T30, 0.6).delta - premium;
    assert.equal(r.contingencies.delta, lossMinor(0.01 * delta));
    assert.equal(r.maintenanceMargin, expected + r.contingencies.delta);
    assert.equal(r.initialMargin, Math.ceil((r.maintenanceMargin * 130) / 100));
  });

  it('a single short call: worst at +16% with vol up, plus 0.01 BTC per net short contract', () => {
    const r = portfolioMargin(btc([leg('call', 100000, -2)]));
    // per contract: C(116,000, 0.828)/116,000 - C(100,000, 0.6)/100,000
    const perContract = coin('call', 116000, 100000, T30, UP) - coin('call', F, 100000, T30, 0.6);
    assert.deepEqual([r.worst.move, r.worst.vol], [0.16, 'up']);
    assert.equal(r.worstLoss, lossMinor(2 * perContract));
    assert.equal(r.contingencies.shortOption, 2 * 1000000);
    assert.equal(r.maintenanceMargin, r.worstLoss + r.contingencies.shortOption + r.contingencies.delta);
  });

  it('a short straddle: its worst scenario is the worst of the 27, stated leg by leg', () => {
    const r = portfolioMargin(btc([leg('call', 100000, -1), leg('put', 100000, -1)]));
    const base = coin('call', F, 100000, T30, 0.6) + coin('put', F, 100000, T30, 0.6);
    let worst = 0;
    for (const move of priceMoves(DEFAULT_PM_PARAMS)) {
      for (const iv of [UP, 0.6, DOWN]) {
        const Fs = F * (1 + move);
        worst = Math.max(worst, lossMinor(coin('call', Fs, 100000, T30, iv) + coin('put', Fs, 100000, T30, iv) - base));
      }
    }
    assert.equal(r.worstLoss, worst);
    // the put side of an inverse straddle hurts more in coin: the crash, with vol up
    assert.deepEqual([r.worst.move, r.worst.vol], [-0.16, 'up']);
    // net short 2 contracts at one strike (a call and a put): 2 x 0.01 BTC
    assert.equal(r.contingencies.shortOption, 2000000);
  });

  it('a call spread needs far less than standard margin and never more than its width can lose', () => {
    const r = portfolioMargin(btc([leg('call', 100000, -10), leg('call', 110000, 10)]));
    // standard maintenance margin (src/risk/margin.ts): the short leg alone, 0.075 + mark per contract
    const standard = lossMinor(10 * shortMaintenanceMargin('call', coin('call', F, 100000, T30, 0.6)));
    assert.ok(r.maintenanceMargin * 3 <= standard, `PM ${r.maintenanceMargin} vs standard ${standard}`);
    // the spread is worth at most its width 10,000 USD / F in coin: at +16% at most 10 x 10,000 / 116,000
    assert.ok(r.worstLoss <= lossMinor((10 * 10000) / 116000));
    assert.deepEqual([r.worst.move, r.worst.table], [0.16, 'standard']);
  });

  it('a calendar (short 30-day, long 60-day at the money) needs less than the short leg alone', () => {
    const cal = portfolioMargin(btc([leg('call', 100000, -10), leg('call', 100000, 10, { expiry: EXP60 })]));
    const naked = portfolioMargin(btc([leg('call', 100000, -10)]));
    const standard = lossMinor(10 * shortMaintenanceMargin('call', coin('call', F, 100000, T30, 0.6)));
    assert.ok(cal.maintenanceMargin * 3 <= standard, `PM ${cal.maintenanceMargin} vs standard ${standard}`);
    assert.ok(cal.maintenanceMargin < naked.maintenanceMargin / 3);
    // different expiries do not net for the short-option contingency
    assert.equal(cal.contingencies.shortOption, 10 * 1000000);
  });

  it('a far out-of-the-money short put is caught only by the extended table (-66%, vol up, a quarter of the loss)', () => {
    const r = portfolioMargin(btc([leg('put', 60000, -1)]));
    const standardWorst = Math.max(...r.scenarios.filter((s) => s.table === 'standard').map((s) => s.counted));
    // at F = 34,000 and vol 0.828 the 60,000 put is worth P/34,000 = 0.77 coin, against 0.0000... now
    const loss = lossMinor(coin('put', 34000, 60000, T30, UP) - coin('put', F, 60000, T30, 0.6));
    assert.deepEqual([r.worst.table, r.worst.move, r.worst.vol], ['extended', -0.66, 'up']);
    assert.equal(r.worst.pnl, -loss);
    assert.equal(r.worstLoss, Math.ceil(loss * 0.25 - 1e-6));
    assert.ok(r.worstLoss > 10 * standardWorst, `extended ${r.worstLoss} vs standard ${standardWorst}`);
  });

  it('values inverse options in coin: a long far put gains more coin in a crash than its USD gain at the old forward', () => {
    const r = portfolioMargin(btc([leg('put', 90000, 1)]));
    const down = r.scenarios.find((s) => s.move === -0.16 && s.vol === 'same')!;
    const usdGain = black76Price('put', 84000, 90000, T30, 0.6) - black76Price('put', F, 90000, T30, 0.6);
    const coinGain = coin('put', 84000, 90000, T30, 0.6) - coin('put', F, 90000, T30, 0.6);
    assert.equal(down.pnl, Math.floor(coinGain * 1e8 + 1e-6));
    assert.ok(down.pnl > (usdGain / F) * 1e8, 'the USD gain is worth more coin at the lower forward');
  });
});

describe('open orders', () => {
  it('count as if filled: an open sell margins like the short it would open', () => {
    const short = portfolioMargin(btc([leg('call', 100000, -1)]));
    const quoting = portfolioMargin(btc([leg('call', 100000, 0, { sellOpen: 1 })]));
    assert.equal(quoting.maintenanceMargin, short.maintenanceMargin);
  });

  it('take the worse side of a two-sided quote in every scenario', () => {
    const both = portfolioMargin(btc([leg('call', 100000, 0, { buyOpen: 1, sellOpen: 1 })]));
    const sell = portfolioMargin(btc([leg('call', 100000, 0, { sellOpen: 1 })]));
    const buy = portfolioMargin(btc([leg('call', 100000, 0, { buyOpen: 1 })]));
    assert.ok(both.worstLoss >= Math.max(sell.worstLoss, buy.worstLoss));
    for (let i = 0; i < both.scenarios.length; i++) {
      assert.equal(both.scenarios[i].pnl, Math.min(sell.scenarios[i].pnl, buy.scenarios[i].pnl));
    }
  });
});
