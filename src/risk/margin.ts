// Deribit standard margin for inverse options (API.md 5.3), per contract, in coin.
// Floats are fine here: these are model outputs. They become money only through `toMinorUp`,
// which rounds requirements up (the exchange's favour).
import type { OptionType } from '../domain/instrument.ts';
import { pow10 } from '../domain/decimal.ts';

/** Initial margin per short contract. U index (USD), K strike, m mark (coin). */
export function shortInitialMargin(type: OptionType, U: number, K: number, m: number): number {
  const otm = type === 'call' ? Math.max(K - U, 0) : Math.max(U - K, 0);
  const base = Math.max(0.15 - otm / U, 0.1) + m;
  return type === 'call' ? base : Math.max(base, shortMaintenanceMargin(type, m));
}

/** Maintenance margin per short contract. */
export function shortMaintenanceMargin(type: OptionType, m: number): number {
  return type === 'call' ? 0.075 + m : Math.max(0.075, 0.075 * m) + m;
}

/** Coin amount -> minor units rounded up; the tiny slack absorbs float noise of exact products. */
export function toMinorUp(coin: number, decimals: number): number {
  // pow10: a table, the same exact powers as `10 **` (a pow call per margin figure on the order path)
  const x = coin * pow10(decimals);
  return Math.ceil(x - 1e-6);
}

/** Coin amount -> minor units rounded down (values credited to the user). */
export function toMinorDown(coin: number, decimals: number): number {
  const x = coin * pow10(decimals);
  return Math.floor(x + 1e-6);
}
