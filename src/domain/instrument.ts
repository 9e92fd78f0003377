// The option instrument model: inverse European options, Deribit naming and grids.
//
// Units used everywhere inside the service:
// - price: integer "price units" of 10^-PRICE_SCALE coin (the smallest tick, 0.0001);
// - amount: integer "lots" of the instrument's min_trade_amount (0.1 BTC, 1 ETH);
// - money: integer minor units of the settlement currency (10^-8 coin).
import type { CurrencyCode } from './currency.ts';
import { CURRENCIES } from './currency.ts';
import { ceilDiv, pow10, toDecimalNumber } from './decimal.ts';
import { createHash } from 'node:crypto';

export const PRICE_SCALE = 4;
/** Scale used to parse amounts before converting them to lots. */
export const AMOUNT_SCALE = 8;

export type OptionType = 'call' | 'put';
export type SettlementPeriod = 'day' | 'week' | 'month';
export type InstrumentState = 'open' | 'settlement' | 'delivered';

export interface TickStep {
  /** Price (in price units) at and above which `tick` applies. */
  abovePrice: number;
  tick: number;
}

export interface Instrument {
  id: number;
  name: string;
  currency: CurrencyCode;
  optionType: OptionType;
  strike: number;
  expiry: number;
  created: number;
  settlementPeriod: SettlementPeriod;
  contractSize: number;
  /** Base tick in price units. */
  tick: number;
  tickSteps: TickStep[];
  /** min_trade_amount scaled by 10^AMOUNT_SCALE; one lot. */
  lotScaled: number;
  /** Commission per contract, in minor units (0.0003 coin = 30000). */
  makerCommission: number;
  takerCommission: number;
  state: InstrumentState;
  halted: boolean;
  /** Delivery price (USD) once settled. */
  deliveryPrice: number | null;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];

/** Deribit expiry code: day without leading zero, e.g. 27DEC26, 5JAN27. */
export function expiryCode(expiryMs: number): string {
  const d = new Date(expiryMs);
  return `${d.getUTCDate()}${MONTHS[d.getUTCMonth()]}${String(d.getUTCFullYear() % 100).padStart(2, '0')}`;
}

export function instrumentName(currency: string, expiryMs: number, strike: number, type: OptionType): string {
  return `${currency}-${expiryCode(expiryMs)}-${strike}-${type === 'call' ? 'C' : 'P'}`;
}

const NAME_RE = /^([A-Z]+)-(\d{1,2})([A-Z]{3})(\d{2})-(\d+)-([CP])$/;

export interface ParsedName {
  currency: string;
  expiry: number;
  strike: number;
  optionType: OptionType;
}

export function parseInstrumentName(name: string): ParsedName | null {
  const m = NAME_RE.exec(name);
  if (!m) return null;
  const month = MONTHS.indexOf(m[3]);
  if (month < 0) return null;
  const expiry = Date.UTC(2000 + Number(m[4]), month, Number(m[2]), 8);
  return { currency: m[1], expiry, strike: Number(m[5]), optionType: m[6] === 'C' ? 'call' : 'put' };
}

/** Stable token id of the option series: lower-case hex SHA-256 of the instrument name. */
export function mintOf(name: string): string {
  return createHash('sha256').update(name).digest('hex');
}

/** The tick that applies at a price (price units). */
export function tickAt(inst: Instrument, price: number): number {
  let tick = inst.tick;
  for (const step of inst.tickSteps) if (price >= step.abovePrice) tick = step.tick;
  return tick;
}

export function isOnTick(inst: Instrument, price: number): boolean {
  return price % tickAt(inst, price) === 0;
}

/** Rounds a price onto the grid: down for a buy, up for a sell (never a worse price for the client). */
export function roundToTick(inst: Instrument, price: number, dir: 'down' | 'up' | 'nearest'): number {
  const t = tickAt(inst, Math.max(price, inst.tick));
  if (dir === 'down') return Math.floor(price / t) * t;
  if (dir === 'up') return Math.ceil(price / t) * t;
  return Math.round(price / t) * t;
}

/** One tick better/worse than `price` in the direction given (+1 up, -1 down). */
export function stepTick(inst: Instrument, price: number, direction: 1 | -1): number {
  if (direction === 1) return price + tickAt(inst, price);
  const below = price - inst.tick;
  return price - tickAt(inst, below);
}

/** Minor units of the settlement currency per (price unit x lot): exact integer by construction. */
export function premiumFactor(inst: Instrument): number {
  const decimals = CURRENCIES[inst.currency].decimals;
  // price unit = 10^-PRICE_SCALE coin; lot = lotScaled * 10^-AMOUNT_SCALE coin; money = 10^-decimals coin
  return (inst.lotScaled * pow10(decimals)) / pow10(PRICE_SCALE + AMOUNT_SCALE);
}

/** Premium in minor units for `lots` at `price` units. */
export function premiumOf(inst: Instrument, price: number, lots: number): number {
  return price * lots * premiumFactor(inst);
}

/** Contracts per lot as the reduced fraction num/den (0.1 BTC -> 1/10, 1 ETH -> 1/1). */
export function lotFraction(inst: Instrument): { num: number; den: number } {
  const den0 = pow10(AMOUNT_SCALE);
  const g = gcd(inst.lotScaled, den0);
  return { num: inst.lotScaled / g, den: den0 / g };
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/**
 * Trading fee in minor units: amount x min(commission, 0.125 x price), rounded up (exchange's favour).
 * `commission` is per contract in minor units. Worked in eighths of a minor unit per contract so the
 * 12.5% cap (price x 10^(decimals-PRICE_SCALE) / 8) stays an integer.
 */
export function tradeFee(inst: Instrument, price: number, lots: number, commission: number): number {
  const decimals = CURRENCIES[inst.currency].decimals;
  const capEighths = price * pow10(decimals - PRICE_SCALE);
  const perContractEighths = Math.min(commission * 8, capEighths);
  const { num, den } = lotFraction(inst);
  return ceilDiv(perContractEighths * lots * num, 8 * den);
}

export function lotsToAmount(inst: Instrument, lots: number): number {
  return toDecimalNumber(lots * inst.lotScaled, AMOUNT_SCALE);
}

export function priceToNumber(price: number): number {
  return toDecimalNumber(price, PRICE_SCALE);
}
