// A DVOL-like implied-volatility index from Strikebook's own option marks: the CBOE VIX method
// (model-free variance from a strip of out-of-the-money options) applied to the two expiries that
// bracket 30 days and interpolated to a constant 30-day maturity. Marks are model outputs (floats);
// nothing here touches money. Deribit publishes DVOL the same way from its order books' mid prices;
// Strikebook uses its marks, which exist for every listed strike.
import type { CurrencyCode } from '../domain/currency.ts';
import { yearFraction } from '../domain/pricing.ts';
import type { InstrumentMarket } from '../domain/market.ts';

const TARGET_YEARS = 30 / 365;
/** Expiries closer than this are left out: their variance is dominated by the last hours. */
const MIN_YEARS = 1 / 365;

interface StrikeMarks {
  K: number;
  call: number;
  put: number;
}

/**
 * Model-free variance of one expiry (VIX white paper, r = 0, F = the index):
 * sigma^2 = 2/T * sum(dK / K^2 * Q(K)) - 1/T * (F / K0 - 1)^2, with Q the USD price of the
 * out-of-the-money option at K (puts below K0, calls above, their average at K0, K0 the highest
 * strike at or below F). NaN when no strike lies at or below F.
 */
export function expiryVariance(F: number, T: number, strikes: StrikeMarks[]): number {
  const s = strikes.filter((x) => Number.isFinite(x.call) && Number.isFinite(x.put)).sort((a, b) => a.K - b.K);
  if (s.length < 2 || !(T > 0) || !(F > 0)) return NaN;
  let k0 = -1;
  for (let i = 0; i < s.length; i++) if (s[i].K <= F) k0 = i;
  if (k0 < 0) return NaN;
  let sum = 0;
  for (let i = 0; i < s.length; i++) {
    const dK = i === 0 ? s[1].K - s[0].K : i === s.length - 1 ? s[i].K - s[i - 1].K : (s[i + 1].K - s[i - 1].K) / 2;
    const coin = i < k0 ? s[i].put : i > k0 ? s[i].call : (s[i].put + s[i].call) / 2;
    sum += (dK / (s[i].K * s[i].K)) * coin * F;
  }
  const K0 = s[k0].K;
  const excess = F / K0 - 1;
  return (2 / T) * sum - (1 / T) * excess * excess;
}

/** What the index reads of the exchange (the engine's `Exchange` is one): its time, index and marks. */
export interface VolIndexSource {
  readonly now: number;
  indexPrice(currency: CurrencyCode): number;
  readonly markets: ReadonlyMap<number, InstrumentMarket>;
}

/** The 30-day index in percent for a currency at the engine's time; NaN without usable expiries. */
export function volatilityIndex(ex: VolIndexSource, currency: CurrencyCode): number {
  const F = ex.indexPrice(currency);
  if (!(F > 0)) return NaN;
  const byExpiry = new Map<number, Map<number, StrikeMarks>>();
  for (const m of ex.markets.values()) {
    const inst = m.inst;
    if (inst.currency !== currency || inst.state !== 'open' || yearFraction(ex.now, inst.expiry) < MIN_YEARS) continue;
    let strikes = byExpiry.get(inst.expiry);
    if (!strikes) byExpiry.set(inst.expiry, (strikes = new Map()));
    let k = strikes.get(inst.strike);
    if (!k) strikes.set(inst.strike, (k = { K: inst.strike, call: NaN, put: NaN }));
    if (inst.optionType === 'call') k.call = m.markCoin;
    else k.put = m.markCoin;
  }
  const terms: Array<{ T: number; v: number }> = [];
  for (const [expiry, strikes] of byExpiry) {
    const T = yearFraction(ex.now, expiry);
    const v = expiryVariance(F, T, [...strikes.values()]);
    if (Number.isFinite(v) && v > 0) terms.push({ T, v });
  }
  if (terms.length === 0) return NaN;
  terms.sort((a, b) => a.T - b.T);
  const near = [...terms].reverse().find((t) => t.T <= TARGET_YEARS);
  const next = terms.find((t) => t.T > TARGET_YEARS);
  let variance: number;
  if (near && next) {
    // total variance interpolated linearly in time to 30 days (VIX), then annualised again
    const w = (next.T - TARGET_YEARS) / (next.T - near.T);
    variance = (near.T * near.v * w + next.T * next.v * (1 - w)) / TARGET_YEARS;
  } else variance = (near ?? next)!.v;
  return 100 * Math.sqrt(variance);
}
