// The strategy builder's state and arithmetic (issue 34; screens/strategy.tsx draws it): the legs a
// trader clicked on the chain, the net premium from the legs' best prices, the summed greeks, the
// `private/create_combo` request, and which side of the combo the strategy is (the exchange names a
// combo by its canonical legs, the first bought: a bear call spread is the sell side of a call
// spread). Prices are worked in integer ticks of 0.0001 coin, so a net premium is exact. Pure
// functions, unit-tested in test/web/strategy.test.ts; the store is module state, like ticketStore.
import { useEffect, useState } from 'preact/hooks';
import type { Instrument, Ticker, UserTrade } from './types.ts';

/** Legs a combo holds at most (src/combos/combos.ts MAX_COMBO_LEGS). */
export const MAX_LEGS = 4;
/** The largest ratio the builder offers (create_combo accepts up to 1,000; a strategy rarely needs 10). */
export const MAX_RATIO = 10;
/** Option prices are on a 0.0001 coin grid: ticks per coin. */
const TICKS = 10_000;

export interface Leg {
  instrument: string;
  /** > 0 bought, < 0 sold: the number of units of this leg per unit of the strategy */
  ratio: number;
  strike: number;
  optionType: 'call' | 'put';
  expiry: number;
  minTrade: number;
}

/** A price in coin as integer ticks (the API sends prices already on the 0.0001 grid). */
export function toTicks(price: number): number {
  return Math.round(price * TICKS);
}

export function fromTicks(ticks: number): number {
  return ticks / TICKS;
}

/**
 * A click on a chain cell: the ask buys one unit, the bid sells one. The same side again adds a
 * unit; the other side takes one away (and the leg goes at zero). Returns the new legs, or a reason
 * the click changes nothing.
 */
export function clickLeg(legs: Leg[], inst: Instrument, side: 'buy' | 'sell'): Leg[] | string {
  const step = side === 'buy' ? 1 : -1;
  const at = legs.findIndex((l) => l.instrument === inst.instrument_name);
  if (at < 0) {
    if (legs.length >= MAX_LEGS) return `A strategy has at most ${MAX_LEGS} legs`;
    if (legs.length > 0 && inst.base_currency !== legs[0].instrument.split('-')[0]) return 'Every leg must be of one currency';
    return [...legs, { instrument: inst.instrument_name, ratio: step, strike: inst.strike, optionType: inst.option_type, expiry: inst.expiration_timestamp, minTrade: inst.min_trade_amount }];
  }
  return setRatio(legs, inst.instrument_name, legs[at].ratio + step);
}

/** The leg's ratio set to `ratio` (0 removes it; bounded by MAX_RATIO either way). */
export function setRatio(legs: Leg[], instrument: string, ratio: number): Leg[] | string {
  if (Math.abs(ratio) > MAX_RATIO) return `A ratio is at most ${MAX_RATIO}`;
  if (ratio === 0) return legs.filter((l) => l.instrument !== instrument);
  return legs.map((l) => (l.instrument === instrument ? { ...l, ratio } : l));
}

/** The price a leg trades at now: a bought leg lifts the best ask, a sold leg hits the best bid. */
export function legPrice(leg: Leg, t: Ticker | undefined): number | null {
  if (!t) return null;
  const p = leg.ratio > 0 ? t.best_ask_price : t.best_bid_price;
  return typeof p === 'number' && p > 0 ? p : null;
}

/**
 * The net premium per unit of the strategy in ticks (> 0 paid, a debit; < 0 received, a credit),
 * from each leg's best price; null when a leg has no price on its side (the strategy cannot trade
 * on the legs' books now). `price` picks the ticker's price: the best bid/ask by default, or the mark.
 */
export function netTicks(legs: Leg[], tickers: Map<string, Ticker>, price: (l: Leg, t: Ticker | undefined) => number | null = legPrice): number | null {
  if (legs.length === 0) return null;
  let net = 0;
  for (const l of legs) {
    const p = price(l, tickers.get(l.instrument));
    if (p === null) return null;
    net += l.ratio * toTicks(p);
  }
  return net;
}

export const markPrice = (_l: Leg, t: Ticker | undefined): number | null => (t && typeof t.mark_price === 'number' ? t.mark_price : null);

export type GreekName = 'delta' | 'gamma' | 'vega' | 'theta';
export const GREEKS: GreekName[] = ['delta', 'gamma', 'vega', 'theta'];

/** Each greek summed over the legs, weighted by the signed ratio (per unit of the strategy); null until every leg has a ticker. */
export function sumGreeks(legs: Leg[], tickers: Map<string, Ticker>): Record<GreekName, number> | null {
  if (legs.length === 0) return null;
  const out = { delta: 0, gamma: 0, vega: 0, theta: 0 };
  for (const l of legs) {
    const g = tickers.get(l.instrument)?.greeks;
    if (!g) return null;
    for (const k of GREEKS) out[k] += l.ratio * (g[k] ?? 0);
  }
  return out;
}

/** The `trades` of `private/create_combo`: one per leg, its ratio as the amount. */
export function comboTrades(legs: Leg[]): { instrument_name: string; direction: 'buy' | 'sell'; amount: number }[] {
  return legs.map((l) => ({ instrument_name: l.instrument, direction: l.ratio > 0 ? 'buy' : 'sell', amount: Math.abs(l.ratio) }));
}

export interface ComboLegs {
  legs: { instrument_name: string; amount: number }[];
}

/**
 * Which side of the combo the strategy is and how many combo units one unit of it makes: the
 * combo's legs are the strategy's divided by a common factor, possibly with every sign turned
 * (`{ side: 'sell', units: 2 }` for twice the reverse). Null when the legs are not the same set.
 */
export function comboSide(legs: Leg[], combo: ComboLegs): { side: 'buy' | 'sell'; units: number } | null {
  if (combo.legs.length !== legs.length || legs.length === 0) return null;
  let k: number | null = null;
  for (const c of combo.legs) {
    const l = legs.find((x) => x.instrument === c.instrument_name);
    if (!l || c.amount === 0 || l.ratio % c.amount !== 0) return null;
    const q = l.ratio / c.amount;
    if (k !== null && q !== k) return null;
    k = q;
  }
  return k === null ? null : { side: k > 0 ? 'buy' : 'sell', units: Math.abs(k) };
}

/** A name for the strategy as traders say it (the exchange's combo name comes with create_combo). */
export function strategyName(legs: Leg[]): string {
  if (legs.length === 0) return '';
  if (legs.length === 1) return `${legs[0].ratio > 0 ? 'Long' : 'Short'} ${legs[0].optionType}`;
  if (legs.length === 2) {
    const [a, b] = [...legs].sort((x, y) => x.strike - y.strike);
    const sameExpiry = a.expiry === b.expiry;
    const unit = Math.abs(a.ratio) === 1 && Math.abs(b.ratio) === 1;
    if (sameExpiry && unit && a.optionType === b.optionType && a.strike !== b.strike && a.ratio === -b.ratio) {
      // a call spread long the lower strike pays (bull); a put spread long the higher strike pays (bear)
      if (a.optionType === 'call') return a.ratio > 0 ? 'Bull call spread' : 'Bear call spread';
      return b.ratio > 0 ? 'Bear put spread' : 'Bull put spread';
    }
    if (sameExpiry && unit && a.optionType !== b.optionType && a.ratio === b.ratio) return `${a.ratio > 0 ? 'Long' : 'Short'} ${a.strike === b.strike ? 'straddle' : 'strangle'}`;
    if (sameExpiry && unit && a.optionType !== b.optionType && a.ratio === -b.ratio) return 'Risk reversal';
  }
  return `${legs.length}-leg strategy`;
}

// ---- combo fills ------------------------------------------------------------------------------

export interface ComboRecord {
  id: string;
  state: string;
  legs: { instrument_name: string; amount: number }[];
}

export interface LegTrade extends UserTrade {
  combo_id?: string;
  combo_trade_id?: string | number;
}

/** One combo fill of the user: its leg trades, and the net price and combo amount they make. */
export interface ComboFill {
  id: string;
  timestamp: number;
  direction: 'buy' | 'sell';
  amount: number;
  price: number;
  legs: LegTrade[];
}

/**
 * The user's leg trades of `combo` grouped by combo trade: the direction is the combo's (the first
 * leg's direction against its sign in the combo), the amount the first leg's over its ratio, the
 * price the sum of signed ratio x leg price. Pure (exported for the unit test).
 */
export function comboFills(combo: ComboRecord, trades: LegTrade[]): ComboFill[] {
  const groups = new Map<string, LegTrade[]>();
  for (const t of trades) {
    if (t.combo_id !== combo.id || t.combo_trade_id === undefined) continue;
    const k = String(t.combo_trade_id);
    groups.set(k, [...(groups.get(k) ?? []), t]);
  }
  const out: ComboFill[] = [];
  for (const [id, legs] of groups) {
    const first = combo.legs.find((l) => l.instrument_name === legs[0].instrument_name);
    if (!first) continue;
    const bought = legs[0].direction === 'buy';
    const direction = bought === first.amount > 0 ? 'buy' : 'sell';
    let net = 0;
    for (const t of legs) {
      const ratio = combo.legs.find((l) => l.instrument_name === t.instrument_name)?.amount ?? 0;
      net += ratio * toTicks(t.price);
    }
    out.push({ id, timestamp: Math.max(...legs.map((t) => t.timestamp)), direction, amount: legs[0].amount / Math.abs(first.amount), price: fromTicks(net), legs });
  }
  return out.sort((a, b) => b.timestamp - a.timestamp);
}

/**
 * Filled amounts of combo orders whose state the server would not tell, from the combo fills: each
 * fill of a direction goes to the oldest order of that direction placed before it that it does not
 * overfill. Amounts in integer units of 1e-8, so 0.1 + 0.2 fills 0.3. Pure.
 */
export function inferFilled(orders: { order_id: string; direction: 'buy' | 'sell'; amount: number; creation_timestamp: number }[], fills: ComboFill[]): Map<string, number> {
  const u = (x: number) => Math.round(x * 1e8);
  const byAge = [...orders].sort((a, b) => a.creation_timestamp - b.creation_timestamp);
  const filled = new Map<string, number>(byAge.map((o) => [o.order_id, 0]));
  for (const f of [...fills].sort((a, b) => a.timestamp - b.timestamp)) {
    const o = byAge.find((x) => x.direction === f.direction && x.creation_timestamp <= f.timestamp && filled.get(x.order_id)! + u(f.amount) <= u(x.amount));
    if (o) filled.set(o.order_id, filled.get(o.order_id)! + u(f.amount));
  }
  return new Map([...filled].map(([k, v]) => [k, v / 1e8]));
}

// ---- the store ---------------------------------------------------------------------------------

export interface StrategyState {
  /** the builder is open: clicks on the chain's bid and ask add legs instead of opening the ticket */
  active: boolean;
  legs: Leg[];
  /** the leg tickers as clicked (the builder's own subscriptions update them) */
  clicked: Map<string, Ticker>;
  /** why the last click changed nothing */
  notice: string | null;
  version: number;
}

let state: StrategyState = { active: false, legs: [], clicked: new Map(), notice: null, version: 0 };
const listeners = new Set<(s: StrategyState) => void>();

function set(s: Partial<StrategyState>): void {
  state = { ...state, ...s, version: state.version + 1 };
  for (const l of listeners) l(state);
}

export function strategyActive(): boolean {
  return state.active;
}

export function setStrategyActive(active: boolean): void {
  set({ active, notice: null });
}

/** A chain click while the builder is open. */
export function addLeg(inst: Instrument, side: 'buy' | 'sell', t: Ticker | undefined): void {
  const next = clickLeg(state.legs, inst, side);
  if (typeof next === 'string') return set({ notice: next });
  const clicked = new Map(state.clicked);
  if (t) clicked.set(inst.instrument_name, t);
  set({ legs: next, clicked, notice: null });
}

export function changeRatio(instrument: string, ratio: number): void {
  const next = setRatio(state.legs, instrument, ratio);
  if (typeof next === 'string') return set({ notice: next });
  set({ legs: next, notice: null });
}

export function clearLegs(): void {
  set({ legs: [], clicked: new Map(), notice: null });
}

export function useStrategy(): StrategyState {
  const [s, setS] = useState(state);
  useEffect(() => {
    setS(state);
    listeners.add(setS);
    return () => void listeners.delete(setS);
  }, []);
  return s;
}
