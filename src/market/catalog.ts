// The option catalog as configuration (API.md 7.1): which currencies are listed, their grids, the
// strike grid around the index and the expiry schedule. Pure apart from `loadCatalogConfig`, which
// reads the file; every time is a parameter.
//
// Config file (default config/catalog.json; keys starting with "$" are comments and ignored; any
// other unknown key is an error, so a typo cannot silently fall back to a default):
//
// {
//   "currencies": [                       // at least one; each currency at most once
//     {
//       "currency": "BTC",                // an option currency of src/domain/currency.ts (BTC, ETH)
//       "minTradeAmount": "0.1",          // decimal string, > 0, at most 8 decimals: one lot, in coin
//       "tickSize": "0.0001",             // decimal string, > 0, at most 4 decimals (PRICE_SCALE), coin
//       "tickSizeSteps": [                // ascending abovePrice; may be empty
//         { "abovePrice": "0.005", "tickSize": "0.0005" }
//                                         // at and above abovePrice the tick is tickSize; tickSize is
//                                         // a multiple of the base tick, abovePrice of tickSize
//       ],
//       "commission": "0.0003",           // decimal string, >= 0, coin per contract, maker = taker
//       "strikes": {
//         "nearPct": 0.2,                 // 0 < nearPct < 1: the dense band is index*(1 +- nearPct)
//         "nearStep": 1000,               // integer USD step inside the band
//         "farStep": 5000,                // integer USD step outside it, a multiple of nearStep
//         "minPct": 0.5, "maxPct": 2.0    // 0 < minPct <= 1 <= maxPct: the grid spans index*[min, max]
//       },
//       "initialIndex": 100000            // > 0, USD: starting value of the index feed
//     }
//   ],
//   "schedule": {                         // integers 0..100, at least one > 0
//     "dailies": 2, "weeklies": 2, "monthlies": 2, "quarterlies": 2
//   }
// }
//
// Decimal quantities are strings so that they are parsed exactly (src/domain/decimal.ts); the strike
// grid and index are plain numbers because they are USD levels, not money. Contract size is not
// configurable: the premium maths of src/domain/instrument.ts assumes 1-coin contracts.

import { readFileSync } from 'node:fs';
import type { CurrencyCode } from '../domain/currency.ts';
import { projectPath } from '../app/projectRoot.ts';
import { CURRENCIES, OPTION_CURRENCIES } from '../domain/currency.ts';
import { parseScaled, pow10 } from '../domain/decimal.ts';
import type { Instrument, OptionType, SettlementPeriod, TickStep } from '../domain/instrument.ts';
import { AMOUNT_SCALE, PRICE_SCALE, instrumentName } from '../domain/instrument.ts';

export interface TickStepConfig {
  abovePrice: string;
  tickSize: string;
}

export interface StrikeGridConfig {
  nearPct: number;
  nearStep: number;
  farStep: number;
  minPct: number;
  maxPct: number;
}

export interface CurrencyCatalogConfig {
  currency: CurrencyCode;
  minTradeAmount: string;
  tickSize: string;
  tickSizeSteps: TickStepConfig[];
  commission: string;
  strikes: StrikeGridConfig;
  initialIndex: number;
}

export interface ScheduleConfig {
  dailies: number;
  weeklies: number;
  monthlies: number;
  quarterlies: number;
}

export interface CatalogConfig {
  currencies: CurrencyCatalogConfig[];
  schedule: ScheduleConfig;
}

export const DEFAULT_CATALOG_PATH = projectPath('config', 'catalog.json');

// ---------------------------------------------------------------------------------------------
// Loading and validation

/** Reads and validates the catalog config; throws an Error naming the file and the bad field. */
export function loadCatalogConfig(path: string = DEFAULT_CATALOG_PATH): CatalogConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`catalog config ${path}: cannot read: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`catalog config ${path}: invalid JSON: ${(err as Error).message}`);
  }
  return parseCatalogConfig(raw, path);
}

/** Validates an already parsed config object and returns it typed (a fresh copy without "$" keys). */
export function parseCatalogConfig(raw: unknown, source = 'catalog config'): CatalogConfig {
  const fail = (where: string, msg: string): never => {
    throw new Error(`catalog config ${source}: ${where}: ${msg}`);
  };
  const root = objectWithKeys(raw, ['currencies', 'schedule'], 'root', fail);
  if (!Array.isArray(root.currencies) || root.currencies.length === 0) fail('currencies', 'must be a non-empty array');
  const seen = new Set<string>();
  const currencies = (root.currencies as unknown[]).map((c, i) => {
    const cc = parseCurrency(c, `currencies[${i}]`, fail);
    if (seen.has(cc.currency)) fail(`currencies[${i}].currency`, `${cc.currency} is listed twice`);
    seen.add(cc.currency);
    return cc;
  });
  const s = objectWithKeys(root.schedule, ['dailies', 'weeklies', 'monthlies', 'quarterlies'], 'schedule', fail);
  const schedule: ScheduleConfig = {
    dailies: count(s.dailies, 'schedule.dailies', fail),
    weeklies: count(s.weeklies, 'schedule.weeklies', fail),
    monthlies: count(s.monthlies, 'schedule.monthlies', fail),
    quarterlies: count(s.quarterlies, 'schedule.quarterlies', fail),
  };
  if (schedule.dailies + schedule.weeklies + schedule.monthlies + schedule.quarterlies === 0) {
    fail('schedule', 'lists no expiry at all');
  }
  return { currencies, schedule };
}

type Fail = (where: string, msg: string) => never;

const MAX_SCHEDULE_COUNT = 100;

function objectWithKeys(v: unknown, keys: string[], where: string, fail: Fail): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return fail(where, 'must be an object');
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!k.startsWith('$') && !keys.includes(k)) fail(where, `unknown key "${k}" (expected ${keys.join(', ')})`);
  }
  for (const k of keys) if (!(k in o)) fail(where, `missing key "${k}"`);
  return o;
}

function count(v: unknown, where: string, fail: Fail): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_SCHEDULE_COUNT) {
    fail(where, `must be an integer from 0 to ${MAX_SCHEDULE_COUNT}`);
  }
  return v as number;
}

function decimalString(v: unknown, scale: number, where: string, fail: Fail, allowZero = false): string {
  if (typeof v !== 'string') return fail(where, 'must be a decimal string such as "0.0001"');
  const n = parseScaled(v, scale);
  if (n === null) return fail(where, `"${v}" is not a decimal with at most ${scale} decimals`);
  if (n < 0 || (n === 0 && !allowZero)) fail(where, `must be ${allowZero ? '>= 0' : '> 0'}`);
  return v;
}

function finiteNumber(v: unknown, where: string, fail: Fail, ok: (n: number) => boolean, rule: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || !ok(v)) fail(where, `must be a number ${rule}`);
  return v as number;
}

function parseCurrency(v: unknown, where: string, fail: Fail): CurrencyCatalogConfig {
  const keys = ['currency', 'minTradeAmount', 'tickSize', 'tickSizeSteps', 'commission', 'strikes', 'initialIndex'];
  const o = objectWithKeys(v, keys, where, fail);
  const code = o.currency;
  if (typeof code !== 'string' || !(OPTION_CURRENCIES as string[]).includes(code)) {
    fail(`${where}.currency`, `must be one of ${OPTION_CURRENCIES.join(', ')}`);
  }
  const currency = code as CurrencyCode;
  const minTradeAmount = decimalString(o.minTradeAmount, AMOUNT_SCALE, `${where}.minTradeAmount`, fail);
  // premium = price units x lots x factor must be whole minor units: a lot of at least 10^-PRICE_SCALE coin
  const lotScaled = parseScaled(minTradeAmount, AMOUNT_SCALE)!;
  if (lotScaled % pow10(Math.max(0, PRICE_SCALE + AMOUNT_SCALE - CURRENCIES[currency].decimals)) !== 0) {
    fail(`${where}.minTradeAmount`, `must be a whole multiple of ${pow10(-PRICE_SCALE)} coin so premiums are whole minor units`);
  }
  const tickSize = decimalString(o.tickSize, PRICE_SCALE, `${where}.tickSize`, fail);
  const baseTick = parseScaled(tickSize, PRICE_SCALE) as number;
  if (!Array.isArray(o.tickSizeSteps)) fail(`${where}.tickSizeSteps`, 'must be an array (possibly empty)');
  let prevAbove = 0;
  const tickSizeSteps = (o.tickSizeSteps as unknown[]).map((st, i) => {
    const w = `${where}.tickSizeSteps[${i}]`;
    const so = objectWithKeys(st, ['abovePrice', 'tickSize'], w, fail);
    const abovePrice = decimalString(so.abovePrice, PRICE_SCALE, `${w}.abovePrice`, fail);
    const stepTick = decimalString(so.tickSize, PRICE_SCALE, `${w}.tickSize`, fail);
    const above = parseScaled(abovePrice, PRICE_SCALE) as number;
    const tick = parseScaled(stepTick, PRICE_SCALE) as number;
    if (above <= prevAbove) fail(`${w}.abovePrice`, 'must be above the previous step (ascending, > 0)');
    prevAbove = above;
    if (tick % baseTick !== 0) fail(`${w}.tickSize`, `must be a multiple of the base tick ${tickSize}`);
    if (above % tick !== 0) fail(`${w}.abovePrice`, `must be a multiple of its tick ${stepTick}`);
    return { abovePrice, tickSize: stepTick };
  });
  const commission = decimalString(o.commission, CURRENCIES[currency].decimals, `${where}.commission`, fail, true);
  const g = objectWithKeys(o.strikes, ['nearPct', 'nearStep', 'farStep', 'minPct', 'maxPct'], `${where}.strikes`, fail);
  const step = (n: number) => Number.isSafeInteger(n) && n > 0;
  const strikes: StrikeGridConfig = {
    nearPct: finiteNumber(g.nearPct, `${where}.strikes.nearPct`, fail, (n) => n > 0 && n < 1, 'strictly between 0 and 1'),
    nearStep: finiteNumber(g.nearStep, `${where}.strikes.nearStep`, fail, step, 'that is a positive integer'),
    farStep: finiteNumber(g.farStep, `${where}.strikes.farStep`, fail, step, 'that is a positive integer'),
    minPct: finiteNumber(g.minPct, `${where}.strikes.minPct`, fail, (n) => n > 0 && n <= 1, 'in (0, 1]'),
    maxPct: finiteNumber(g.maxPct, `${where}.strikes.maxPct`, fail, (n) => n >= 1, '>= 1'),
  };
  if (strikes.farStep % strikes.nearStep !== 0) fail(`${where}.strikes.farStep`, 'must be a multiple of nearStep');
  const initialIndex = finiteNumber(o.initialIndex, `${where}.initialIndex`, fail, (n) => n > 0, '> 0');
  return { currency, minTradeAmount, tickSize, tickSizeSteps, commission, strikes, initialIndex };
}

// ---------------------------------------------------------------------------------------------
// Instrument grid fields

export type InstrumentGridFields = Pick<
  Instrument,
  'tick' | 'tickSteps' | 'lotScaled' | 'makerCommission' | 'takerCommission' | 'contractSize'
>;

/** The grid fields of an `Instrument` for a currency: prices in units of 10^-PRICE_SCALE coin, lot
 * scaled by 10^AMOUNT_SCALE, commission in minor units of the currency. */
export function instrumentFields(cc: CurrencyCatalogConfig): InstrumentGridFields {
  const decimals = CURRENCIES[cc.currency].decimals;
  const scaled = (text: string, scale: number, what: string): number => {
    const n = parseScaled(text, scale);
    // unreachable for a config that went through parseCatalogConfig
    if (n === null) throw new Error(`catalog config: ${cc.currency} ${what} "${text}" is not a decimal with <= ${scale} decimals`);
    return n;
  };
  const tickSteps: TickStep[] = cc.tickSizeSteps.map((s) => ({
    abovePrice: scaled(s.abovePrice, PRICE_SCALE, 'tickSizeSteps.abovePrice'),
    tick: scaled(s.tickSize, PRICE_SCALE, 'tickSizeSteps.tickSize'),
  }));
  const commission = scaled(cc.commission, decimals, 'commission');
  return {
    tick: scaled(cc.tickSize, PRICE_SCALE, 'tickSize'),
    tickSteps,
    lotScaled: scaled(cc.minTradeAmount, AMOUNT_SCALE, 'minTradeAmount'),
    makerCommission: commission,
    takerCommission: commission,
    contractSize: 1,
  };
}

// ---------------------------------------------------------------------------------------------
// Expiry schedule

export interface ScheduledExpiry {
  /** ms epoch, always 08:00:00 UTC */
  expiry: number;
  period: SettlementPeriod;
}

const DAY_MS = 24 * 3600 * 1000;
const FRIDAY = 5;
const QUARTER_MONTHS = [2, 5, 8, 11]; // Mar, Jun, Sep, Dec
const PERIOD_RANK: Record<SettlementPeriod, number> = { day: 0, week: 1, month: 2 };

function at8(year: number, month: number, day: number): number {
  return Date.UTC(year, month, day, 8);
}

/** Last Friday of a month (month may run past 11; Date.UTC normalises it), 08:00 UTC. */
function lastFriday(year: number, month: number): number {
  const last = at8(year, month + 1, 0);
  const back = (new Date(last).getUTCDay() - FRIDAY + 7) % 7;
  return last - back * DAY_MS;
}

/**
 * The expiries that should be active at `nowMs`: 08:00 UTC instants strictly after it. The next
 * `dailies` days, `weeklies` Fridays, `monthlies` last Fridays of a month and `quarterlies` last
 * Fridays of Mar/Jun/Sep/Dec; a date in several series appears once with its longest period (a
 * quarterly is labelled "month": the instrument model has no "quarter"). Ascending.
 */
export function expirySchedule(config: { schedule: ScheduleConfig }, nowMs: number): ScheduledExpiry[] {
  if (!Number.isFinite(nowMs)) throw new RangeError(`now must be a finite ms timestamp: ${nowMs}`);
  const { dailies, weeklies, monthlies, quarterlies } = config.schedule;
  const now = new Date(nowMs);
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const best = new Map<number, SettlementPeriod>();
  const add = (expiry: number, period: SettlementPeriod) => {
    const prev = best.get(expiry);
    if (prev === undefined || PERIOD_RANK[period] > PERIOD_RANK[prev]) best.set(expiry, period);
  };

  // first 08:00 strictly after now; DST-free because everything is UTC
  let first = at8(y, m, now.getUTCDate());
  if (first <= nowMs) first += DAY_MS;
  for (let i = 0; i < dailies; i++) add(first + i * DAY_MS, 'day');

  const firstFriday = first + ((FRIDAY - new Date(first).getUTCDay() + 7) % 7) * DAY_MS;
  for (let i = 0; i < weeklies; i++) add(firstFriday + i * 7 * DAY_MS, 'week');

  for (let k = 0, found = 0; found < monthlies; k++) {
    const e = lastFriday(y, m + k);
    if (e > nowMs) {
      add(e, 'month');
      found++;
    }
  }
  for (let k = 0, found = 0; found < quarterlies; k++) {
    if (!QUARTER_MONTHS.includes((m + k) % 12)) continue;
    const e = lastFriday(y, m + k);
    if (e > nowMs) {
      add(e, 'month');
      found++;
    }
  }
  return [...best.entries()].sort((a, b) => a[0] - b[0]).map(([expiry, period]) => ({ expiry, period }));
}

// ---------------------------------------------------------------------------------------------
// Strike grid

/** Relative slack on the band edges so that 100000 * 0.8 computed as 79999.99999999999 still lists 80000. */
const EDGE_EPS = 1e-9;

function multiplesIn(step: number, from: number, to: number, out: Set<number>): void {
  const first = Math.ceil(from / step - EDGE_EPS);
  const last = Math.floor(to / step + EDGE_EPS);
  for (let i = Math.max(first, 1); i <= last; i++) out.add(i * step);
}

/**
 * Ascending integer strikes for an index level: multiples of `nearStep` within index*(1 +- nearPct),
 * multiples of `farStep` beyond it, all within index*[minPct, maxPct] (edges included), plus the
 * multiple of `nearStep` nearest the index (so a grid is never without an at-the-money strike, even
 * for an index so low that the bands hold no multiple).
 */
export function strikeGrid(cc: CurrencyCatalogConfig, indexPrice: number): number[] {
  if (!(Number.isFinite(indexPrice) && indexPrice > 0)) throw new RangeError(`index price must be finite and > 0: ${indexPrice}`);
  const { nearPct, nearStep, farStep, minPct, maxPct } = cc.strikes;
  const lowest = indexPrice * minPct;
  const highest = indexPrice * maxPct;
  const nearLo = indexPrice * (1 - nearPct);
  const nearHi = indexPrice * (1 + nearPct);
  const strikes = new Set<number>();
  multiplesIn(nearStep, Math.max(nearLo, lowest), Math.min(nearHi, highest), strikes);
  multiplesIn(farStep, lowest, Math.min(nearLo, highest), strikes);
  multiplesIn(farStep, Math.max(nearHi, lowest), highest, strikes);
  strikes.add(Math.max(nearStep, Math.round(indexPrice / nearStep) * nearStep));
  return [...strikes].sort((a, b) => a - b);
}

// ---------------------------------------------------------------------------------------------
// Listings

export interface ListingSpec {
  currency: CurrencyCode;
  name: string;
  optionType: OptionType;
  strike: number;
  expiry: number;
  settlementPeriod: SettlementPeriod;
}

/**
 * The instruments to list now: for every configured currency and every scheduled expiry not yet in
 * `listedExpiries[currency]`, a call and a put per strike of the grid around `indexPrices[currency]`.
 * Sorted by (currency, expiry, strike, call before put). Throws when a currency has no index price:
 * listing around a missing index would be a bug upstream, not a market condition.
 */
export function listingsFor(
  config: CatalogConfig,
  nowMs: number,
  indexPrices: Record<string, number>,
  listedExpiries: Record<string, number[]>,
): ListingSpec[] {
  const schedule = expirySchedule(config, nowMs);
  const out: ListingSpec[] = [];
  const currencies = [...config.currencies].sort((a, b) => (a.currency < b.currency ? -1 : a.currency > b.currency ? 1 : 0));
  for (const cc of currencies) {
    const listed = new Set(listedExpiries[cc.currency] ?? []);
    const fresh = schedule.filter((s) => !listed.has(s.expiry));
    if (fresh.length === 0) continue;
    const index = indexPrices[cc.currency];
    if (index === undefined) throw new Error(`no index price for ${cc.currency}; cannot list strikes`);
    const strikes = strikeGrid(cc, index);
    for (const { expiry, period } of fresh) {
      for (const strike of strikes) {
        for (const optionType of ['call', 'put'] as const) {
          out.push({
            currency: cc.currency,
            name: instrumentName(cc.currency, expiry, strike, optionType),
            optionType,
            strike,
            expiry,
            settlementPeriod: period,
          });
        }
      }
    }
  }
  return out;
}
