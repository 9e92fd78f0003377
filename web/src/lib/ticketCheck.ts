// What the order ticket says about its inputs before anything is sent: each field's problem in
// words (not the API's nearest code, which called -1 and 1e8 "not a multiple of the minimum"), the
// premium worked exactly in decimal, and warnings for orders that are valid but likely a slip.
// Pure functions, unit-tested in test/web/ticketCheck.test.ts.

/** The largest amount the ticket accepts: far above any sandbox account, far below the API's bound. */
export const MAX_TICKET_AMOUNT = 100_000;

/** A decimal typed by a person as an exact integer at `scale` decimals; null when it is not one. */
export function toScaled(text: string, scale: number): bigint | null {
  const t = text.replace(/[,\s]/g, '');
  const m = /^(-?)(\d*)(?:\.(\d*))?$/.exec(t);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return null;
  const frac = m[3] ?? '';
  if (frac.length > scale && /[1-9]/.test(frac.slice(scale))) return null; // finer than the grid
  const v = BigInt((m[2] || '0') + frac.slice(0, scale).padEnd(scale, '0'));
  return m[1] === '-' ? -v : v;
}

/** Whether the text is a number at all (any precision). */
function isNumber(text: string): boolean {
  return /^-?(\d+\.?\d*|\.\d+)$/.test(text.replace(/[,\s]/g, ''));
}

const AMOUNT_SCALE = 8;
const PRICE_SCALE = 4;

/** The amount's problem, or null when it is fine or still empty (Place stays disabled then). */
export function amountProblem(text: string, minTrade: number | null): string | null {
  if (text.trim() === '') return null;
  if (!isNumber(text)) return 'Amount is not a number';
  const v = toScaled(text, AMOUNT_SCALE);
  if (v === null) return 'Amount has more than 8 decimals';
  if (v <= 0n) return 'Amount must be positive';
  if (v > BigInt(MAX_TICKET_AMOUNT) * 10n ** BigInt(AMOUNT_SCALE)) return `Amount is at most ${MAX_TICKET_AMOUNT.toLocaleString('en-US')}`;
  if (minTrade !== null) {
    const step = toScaled(String(minTrade), AMOUNT_SCALE);
    if (step !== null && step > 0n && v % step !== 0n) return `Amount must be a multiple of ${minTrade}`;
  }
  return null;
}

/**
 * The limit price's problem (coin), or null when fine or empty. A combo's price is a net premium:
 * `netPremium` lets it be zero or negative (a credit).
 */
export function priceProblem(text: string, netPremium = false): string | null {
  if (text.trim() === '') return null;
  if (!isNumber(text)) return 'Price is not a number';
  const v = toScaled(text, PRICE_SCALE);
  if (v === null) return 'Price has more than 4 decimals (tick 0.0001)';
  if (v <= 0n && !netPremium) return 'Price must be positive';
  return null;
}

/** price x amount, exactly, as coin with 8 decimals (half up); null unless both are valid. */
export function premiumText(priceText: string, amountText: string): string | null {
  const p = toScaled(priceText, PRICE_SCALE);
  const a = toScaled(amountText, AMOUNT_SCALE);
  if (p === null || a === null || p <= 0n || a <= 0n) return null;
  const raw = p * a; // 12 decimals
  const q = (raw + 5000n) / 10_000n; // to 8
  const int = q / 100_000_000n;
  const frac = (q % 100_000_000n).toString().padStart(8, '0');
  return `${int.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',')}.${frac}`;
}

/** A warning for a valid order that is probably a slip: a premium beyond the funds, or a price above 1 coin. */
export function premiumWarning(side: 'buy' | 'sell', priceText: string, amountText: string, available: number | null): string | null {
  const premium = premiumText(priceText, amountText);
  if (premium === null) return null;
  const value = Number(premium.replace(/,/g, ''));
  if (Number(priceText.replace(/[,\s]/g, '')) > 1) return 'An option never costs more than 1 coin per contract';
  if (side === 'buy' && available !== null && value > available) return `The premium ${premium} is more than the ${available} available`;
  return null;
}
