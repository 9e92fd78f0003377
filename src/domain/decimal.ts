// Exact decimal text <-> scaled integers. Money never passes through binary floating point:
// a JSON number is turned back into its shortest round-trip text (what the client wrote) and that
// text is parsed digit by digit.

const DECIMAL_RE = /^([+-]?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

// 10^0 .. 10^22 are exact doubles; Number('1e' + i) is the correctly rounded value by the
// language's own definition, the same on every runtime (`10 ** i` is not: docs/architecture.md,
// "Recovery and the state hash")
const POW10: number[] = [];
for (let i = 0; i <= 22; i++) POW10.push(Number(`1e${i}`));
const FAST_LIMIT = 2 ** 51;

/**
 * The common case of parseScaled for a JSON number, without going through text; null when it
 * cannot decide (the text path then does). r = round(value * 10^scale) is the answer exactly when
 * r / 10^scale gives back the same double: division is correctly rounded, so the decimal r*10^-scale
 * rounds to `value`; and below FAST_LIMIT doubles are closer together than 10^-scale, so no other
 * decimal of at most `scale` places does, and the shortest round-trip text of `value` (what the
 * text path parses) is that same decimal.
 */
function parseScaledNumberFast(value: number, scale: number): number | null {
  const p = POW10[scale];
  if (p === undefined) return null;
  const r = Math.round(value * p);
  if (!(Math.abs(r) < FAST_LIMIT) || r / p !== value) return null;
  return r === 0 ? 0 : r;
}

/**
 * Parses a decimal (number or string) into an integer scaled by 10^scale.
 * Returns null when the value is not a finite decimal or has more than `scale` fractional digits
 * (after trailing zeros are dropped) or does not fit a safe integer.
 */
export function parseScaled(value: number | string, scale: number): number | null {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return null;
    const fast = parseScaledNumberFast(value, scale);
    if (fast !== null) return fast;
    text = String(value);
  } else {
    text = value.trim();
  }
  const m = DECIMAL_RE.exec(text);
  if (!m) return null;
  const sign = m[1] === '-' ? -1 : 1;
  let intPart = m[2];
  let frac = m[3] ?? '';
  const exp = m[4] ? Number(m[4]) : 0;
  if (!Number.isSafeInteger(exp) || Math.abs(exp) > 400) return null;
  // shift the decimal point by the exponent
  if (exp > 0) {
    const take = frac.slice(0, exp).padEnd(exp, '0');
    intPart += take;
    frac = frac.slice(exp);
  } else if (exp < 0) {
    const k = -exp;
    const padded = intPart.padStart(k + 1, '0');
    frac = padded.slice(padded.length - k) + frac;
    intPart = padded.slice(0, padded.length - k);
  }
  frac = frac.replace(/0+$/, '');
  if (frac.length > scale) return null;
  const digits = (intPart + frac.padEnd(scale, '0')).replace(/^0+(?=\d)/, '');
  if (digits.length > 16) {
    const big = BigInt(digits);
    if (big > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  }
  const n = Number(digits);
  if (!Number.isSafeInteger(n)) return null;
  return sign * n === 0 ? 0 : sign * n;
}


/** Converts a scaled integer to the JSON number closest to its exact decimal value. */
export function toDecimalNumber(scaled: number, scale: number): number {
  if (scale === 0) return scaled;
  const p = POW10[scale];
  // Both a safe integer and 10^scale (scale <= 15) are exact doubles, and IEEE division is correctly
  // rounded: the quotient is the double nearest the exact decimal, the same double Number() gives
  // for its text. (+ 0 turns -0 into 0.)
  if (p !== undefined && Number.isSafeInteger(scaled)) return scaled / p + 0;
  return Number(formatScaled(scaled, scale));
}

/** Exact decimal text of a scaled integer, without trailing zeros. */
export function formatScaled(scaled: number, scale: number): string {
  // whole numbers (most amounts) without building the padded digit string
  const p = POW10[scale];
  if (p !== undefined && Number.isSafeInteger(scaled) && scaled % p === 0) return String(scaled / p + 0);
  const neg = scaled < 0;
  const digits = String(Math.abs(scaled)).padStart(scale + 1, '0');
  const int = digits.slice(0, digits.length - scale);
  const frac = digits.slice(digits.length - scale).replace(/0+$/, '');
  return (neg ? '-' : '') + int + (frac ? '.' + frac : '');
}

/** 10^n for an integer n, the same bits on every runtime: exact for 0..22, and beyond them the
 * correctly rounded value (1 / 10^k is correctly rounded too, 10^k being exact). `10 ** n` on a
 * computed n is not: Node 20 gives 10 ** -4 one bit away from 1e-4, Node 24 does not. */
export function pow10(n: number): number {
  const p = POW10[n];
  if (p !== undefined) return p;
  if (!Number.isInteger(n)) throw new RangeError(`pow10 takes an integer exponent, got ${n}`);
  if (n < 0 && n >= -22) return 1 / POW10[-n];
  return Number(`1e${n}`);
}

/** Integer division rounding toward +infinity, for requirements and fees (the exchange's favour). */
export function ceilDiv(a: number, b: number): number {
  const q = Math.floor(a / b);
  return q * b === a ? q : q + 1;
}

/** Asserts a value is a safe integer; money that is not one is a bug, never a user error. */
export function assertMoney(n: number, what: string): number {
  if (!Number.isSafeInteger(n)) throw new Error(`money overflow or non-integer in ${what}: ${n}`);
  return n;
}
