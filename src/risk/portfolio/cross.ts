// Cross-currency collateral (issue 35): an account on `cross_pm` is stress-tested per settlement
// currency exactly as on `segregated_pm` (the scenario engine, src/risk/portfolio/), and the results
// are pooled across currencies, converted to one currency at the index. An account on `cross_sm`
// pools the same way, each currency's requirement being standard margin's (the positions' IM and MM
// of segregated_sm, the open orders' IM on top): RiskEngine.requirements picks which, and everything
// below is the same for both models.
//
// The correlation assumed between currencies is none: BTC and ETH each move through their own
// price buckets, any bucket of one with any bucket of the other. The worst joint scenario of a sum
// of per-currency losses is then the sum of each currency's worst loss, so a position in one
// currency never offsets the risk of a position in another (a BTC short call "hedged" by an ETH long
// call gets no credit: the two indexes do not move together in every scenario the table holds).
// What the cross model does give is pooled collateral: a currency's surplus (equity above its
// requirement) covers another currency's shortfall. Because the currencies move independently, the
// collateral's own value moves too: in the worst joint scenario a surplus currency has fallen by the
// table's range and a shortfall currency has risen by it, so a surplus counts at (1 - priceRange)
// and a shortfall at (1 + priceRange) of its value at index (USDC, with no index of its own, at 1
// and no haircut). In formula, with E_k a currency's equity, R_k its requirement (maintenance or
// initial margin of the segregated model), F_k its index (USD) and h_k the haircut:
//
//     surplus in c = sum_k floor( (E_k - R_k) x F_k / F_c x (1 - h_k if E_k >= R_k else 1 + h_k) )
//
// in minor units of c (each term floored: a surplus rounded down, a shortfall up in size). The
// account meets the requirement while the surplus is >= 0. For an account holding one currency
// this is exactly the segregated model (E >= R); with several it is never looser than the segregated model
// wherever every currency covers itself, and a shortfall is covered only by haircut collateral. The
// haircut is the portfolio-margin table's price range for both models (an operator's parameter).
// A currency without an index (not yet published) counts for nothing when in surplus and makes
// the figure NaN (not covered) when short.
import { CURRENCIES, type CurrencyCode } from '../../domain/currency.ts';
import { pow10 } from '../../domain/decimal.ts';

export interface CrossPart {
  currency: CurrencyCode;
  /** The currency's equity (balance + options at mark), minor units. */
  equity: number;
  /** Its requirement under segregated portfolio margin (MM or IM), minor units. */
  requirement: number;
  /** Its index in USD (1 for USDC); NaN when unknown. */
  index: number;
}

/** The haircut a currency's collateral takes in the cross pool: the table's range, 0 for USDC. */
export function crossHaircut(currency: CurrencyCode, priceRange: number): number {
  return CURRENCIES[currency].indexName === null ? 0 : priceRange;
}

/** One currency's contribution to the pool, in minor units of `to` (floored). */
export function crossTerm(part: CrossPart, to: CurrencyCode, toIndex: number, priceRange: number): number {
  const diff = part.equity - part.requirement;
  if (diff === 0) return 0;
  if (!Number.isFinite(diff)) return NaN;
  if (!(part.index > 0)) return diff > 0 ? 0 : NaN;
  if (!(toIndex > 0)) return NaN;
  const h = crossHaircut(part.currency, priceRange);
  const scale = pow10(CURRENCIES[to].decimals - CURRENCIES[part.currency].decimals);
  const x = ((diff * scale * part.index) / toIndex) * (diff > 0 ? 1 - h : 1 + h);
  // floor, with a hair of float noise forgiven only when the value is a whole number already
  const r = Math.round(x);
  return (Math.abs(x - r) < 1e-7 ? r : Math.floor(x)) + 0;
}

/** The pooled surplus in minor units of `to` (>= 0: the requirement is met). */
export function crossSurplus(parts: readonly CrossPart[], to: CurrencyCode, toIndex: number, priceRange: number): number {
  let s = 0;
  for (const p of parts) s += crossTerm(p, to, toIndex, priceRange);
  return s;
}

/** The pooled equity in minor units of `to` (no haircut; floored per currency; NaN parts without an index count 0). */
export function crossEquity(parts: readonly CrossPart[], to: CurrencyCode, toIndex: number): number {
  if (!(toIndex > 0)) return NaN;
  let s = 0;
  for (const p of parts) {
    if (p.equity === 0 || !(p.index > 0)) continue;
    s += Math.floor((p.equity * pow10(CURRENCIES[to].decimals - CURRENCIES[p.currency].decimals) * p.index) / toIndex);
  }
  return s;
}

/**
 * The most that may leave currency `c` (its equity lowered by it) with the pooled surplus still
 * >= 0, in minor units of c: a withdrawal's or transfer's limit. 0 when the pool is not covered
 * now. The pool falls by W x (1 - h) while c's own surplus lasts and by W x (1 + h) beyond it, so
 * the limit is c's own surplus plus what the others' surplus covers at (1 + h) (or c's surplus less
 * what the others' shortfall takes at (1 - h)); found from that guess and checked on the pool
 * itself (each term is floored), so a minor unit more is never covered.
 */
export function crossMaxOutflow(parts: readonly CrossPart[], c: CurrencyCode, cIndex: number, priceRange: number): number {
  const own = parts.find((p) => p.currency === c);
  if (own === undefined) return 0;
  const surplusWith = (w: number) => crossSurplus(parts.map((p) => (p.currency === c ? { ...p, equity: p.equity - w } : p)), c, cIndex, priceRange);
  const now = surplusWith(0);
  if (!(now >= 0)) return 0;
  const others = now - crossTerm(own, c, cIndex, priceRange);
  const h = crossHaircut(c, priceRange);
  // the lowest difference E_c - R_c the others still carry
  const lowest = others >= 0 ? -Math.floor(others / (1 + h)) : Math.ceil(-others / (1 - h));
  const guess = Math.max(0, own.equity - own.requirement - lowest);
  const covered = (w: number) => surplusWith(w) >= 0;
  // the guess is off by rounding only: the last covered amount near it, else a search from 0
  let lo = Math.max(0, guess - 4);
  let hi = guess + 4;
  if (!covered(lo)) {
    lo = 0;
    hi = guess;
  } else if (covered(hi)) {
    lo = hi;
    hi = Math.max(hi * 2, hi + 1);
    // past 2^53 minor units (a balance of billions at index in a 6-decimal currency) floats skip
    // integers: the search stops at the last exactly representable amount instead of looping
    while (covered(hi)) {
      if (hi >= Number.MAX_SAFE_INTEGER) return Number.MAX_SAFE_INTEGER;
      hi = Math.min(hi * 2, Number.MAX_SAFE_INTEGER);
    }
  }
  // covered(lo), and hi not covered unless hi = lo = 0
  while (lo < hi) {
    const mid = lo + Math.ceil((hi - lo) / 2);
    // beyond exact integers mid can round back onto lo or past hi: lo, covered, stands
    if (!(mid > lo && mid <= hi)) break;
    if (covered(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
