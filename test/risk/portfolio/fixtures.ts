// Shared inputs of the portfolio-margin tests: a fixed valuation instant and legs built by name.
import type { OptionType } from '../../../src/domain/instrument.ts';
import type { PmLeg, PmPortfolio } from '../../../src/risk/portfolio/types.ts';

export const NOW = Date.UTC(2026, 2, 10, 8);
export const DAY = 24 * 3600 * 1000;
/** 30 days out: the vol shock there is exactly the base 38% ((30/30)^0.3 = 1). */
export const EXP30 = NOW + 30 * DAY;
export const EXP60 = NOW + 60 * DAY;
export const T30 = 30 / 365;
export const F = 100000;

export function leg(optionType: OptionType, strike: number, position: number, opts: Partial<PmLeg> = {}): PmLeg {
  const expiry = opts.expiry ?? EXP30;
  return {
    instrument: `BTC-${expiry}-${strike}-${optionType === 'call' ? 'C' : 'P'}`,
    optionType,
    strike,
    expiry,
    iv: 0.6,
    position,
    buyOpen: 0,
    sellOpen: 0,
    ...opts,
  };
}

export function btc(legs: PmLeg[], forward = F): PmPortfolio {
  return { currency: 'BTC', forward, now: NOW, legs };
}

/** Coin -> BTC minor units, a loss rounded up as the engine does (the 1e-6 absorbs float noise). */
export function lossMinor(coin: number): number {
  return Math.ceil(coin * 1e8 - 1e-6);
}
