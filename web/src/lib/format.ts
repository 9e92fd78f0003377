// Number and time formatting for the screens. Pure functions (unit-tested in test/web/format.test.ts):
// the API sends coin prices, amounts and balances as JSON numbers already rounded to their grid, so
// these only choose how many digits to show; nothing here does money arithmetic.

const DASH = '–';

/** Whether a value from the API is a number worth showing (the API sends null where there is none). */
function isNum(x: unknown): x is number {
  return typeof x === 'number' && Number.isFinite(x);
}

/** A fixed number of decimals with grouping of the integer part; negative zero shows as 0. */
export function fixed(x: number | null | undefined, decimals: number): string {
  if (!isNum(x)) return DASH;
  const s = x.toFixed(decimals);
  // the chain's numbers are nearly all below 1,000: no grouping, no regular expressions (hot path)
  if (x > -1000 && x < 1000 && (x >= 0 || Number(s) !== 0)) return s;
  const neg = s.startsWith('-');
  const body = neg ? s.slice(1) : s;
  const [int, frac] = body.split('.');
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const out = frac !== undefined ? `${grouped}.${frac}` : grouped;
  return neg && /[1-9]/.test(out) ? `-${out}` : out;
}

/** An option price in coin: the tick is 0.0001, so four decimals. */
export function price(x: number | null | undefined): string {
  return isNum(x) && x !== 0 ? fixed(x, 4) : DASH;
}

/** An amount in contracts: as many decimals as it has, up to 8 (0.1 BTC lots, 1 ETH lots). */
export function amount(x: number | null | undefined): string {
  if (!isNum(x)) return DASH;
  const s = x.toFixed(8).replace(/\.?0+$/, '');
  return fixed(Number(s), decimalsOf(s));
}

function decimalsOf(s: string): number {
  const dot = s.indexOf('.');
  return dot < 0 ? 0 : s.length - dot - 1;
}

/** A balance in coin (8 decimals for BTC/ETH, 6 for USDC). */
export function coin(x: number | null | undefined, decimals = 8): string {
  return fixed(x, decimals);
}

/** US dollars, two decimals. */
export function usd(x: number | null | undefined): string {
  return isNum(x) ? `$${fixed(x, 2)}` : DASH;
}

/** An implied volatility the API gives in percent (`mark_iv: 61.25`). */
export function iv(x: number | null | undefined): string {
  return isNum(x) && x > 0 ? `${fixed(x, 1)}%` : DASH;
}

/** A greek: `digits` significant decimals, a sign on nonzero values when asked. */
export function greek(x: number | null | undefined, decimals = 2, signed = false): string {
  if (!isNum(x)) return DASH;
  const s = fixed(x, decimals);
  return signed && x > 0 && /[1-9]/.test(s) ? `+${s}` : s;
}

/** A strike: whole dollars with grouping. */
export function strike(x: number): string {
  return fixed(x, 0);
}

/** Time left until `expiry` (ms) from `now` (ms): "3d 4h", "5h 12m", "12m", "expired". */
export function timeToExpiry(expiry: number, now: number): string {
  const ms = expiry - now;
  if (!(ms > 0)) return 'expired';
  const m = Math.floor(ms / 60_000);
  const d = Math.floor(m / 1440);
  const h = Math.floor((m % 1440) / 60);
  const min = m % 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${min}m`;
  return `${Math.max(min, 1)}m`;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];

/** Deribit's expiry code of a timestamp: 27DEC26 (day without a leading zero, UTC). */
export function expiryCode(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCDate()}${MONTHS[d.getUTCMonth()]}${String(d.getUTCFullYear() % 100).padStart(2, '0')}`;
}

/** A timestamp as UTC date and time, to the second: 2026-03-10 12:00:05. */
export function utc(ms: number | null | undefined): string {
  if (!isNum(ms)) return DASH;
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/** Parses what a person typed as a number: commas and spaces allowed, anything else is null. */
export function parseInput(text: string): number | null {
  const t = text.replace(/[,\s]/g, '');
  if (!/^-?(\d+\.?\d*|\.\d+)$/.test(t)) return null;
  const n = Number(t);
  return Number.isFinite(n) ? n : null;
}

/** The tick in force at `price` (tick_size, or the step's tick above its price). */
export function tickAt(inst: { tick_size: number; tick_size_steps?: { above_price: number; tick_size: number }[] }, price: number): number {
  let tick = inst.tick_size;
  for (const s of inst.tick_size_steps ?? []) if (price >= s.above_price) tick = s.tick_size;
  return tick;
}

/** `price` rounded to the instrument's grid (in whole 0.0001 units, so no float dust remains). */
export function roundToTick(inst: { tick_size: number; tick_size_steps?: { above_price: number; tick_size: number }[] }, price: number): number {
  const units = Math.round(price * 1e4);
  const tick = Math.round(tickAt(inst, price) * 1e4);
  return (Math.max(1, Math.round(units / tick)) * tick) / 1e4;
}
