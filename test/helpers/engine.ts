// Engine-level test harness: a fresh Exchange driven with sequenced commands, no HTTP, no journal.
// Prices and amounts are written as decimal strings and parsed exactly, the way the API does.
import type { CurrencyCode } from '../../src/domain/currency.ts';
import { parseScaled } from '../../src/domain/decimal.ts';
import { AMOUNT_SCALE, PRICE_SCALE, instrumentName, type Instrument, type OptionType } from '../../src/domain/instrument.ts';
import { isReject, type Reject } from '../../src/domain/errors.ts';
import type { Command, InstrumentSpec, Sequenced } from '../../src/engine/commands.ts';
import { DEFAULT_LIMITS, Exchange, type ExchangeLimits } from '../../src/engine/exchange.ts';
import type { PlaceResult } from '../../src/engine/trading.ts';
import type { Order, TimeInForce, User } from '../../src/engine/types.ts';

/** Monday 5 Jan 2026 12:00 UTC: the harness clock starts here. */
export const T0 = Date.UTC(2026, 0, 5, 12);
/** Friday 30 Jan 2026 08:00 UTC (a monthly expiry). */
export const EXP_JAN = Date.UTC(2026, 0, 30, 8);
/** Friday 27 Mar 2026 08:00 UTC (a quarterly expiry). */
export const EXP_MAR = Date.UTC(2026, 2, 27, 8);

export const BTC_INDEX = 100_000;
export const ETH_INDEX = 4_000;

/** Deribit's option grid, by hand: tick 0.0001 below 0.005 and 0.0005 from it, commission 0.0003. */
export function spec(currency: CurrencyCode, expiry: number, strike: number, optionType: OptionType): InstrumentSpec {
  return {
    currency,
    name: instrumentName(currency, expiry, strike, optionType),
    optionType,
    strike,
    expiry,
    settlementPeriod: 'month',
    tick: 1,
    tickSteps: [{ abovePrice: 50, tick: 5 }],
    lotScaled: currency === 'BTC' ? 10_000_000 : 100_000_000,
    makerCommission: 30_000,
    takerCommission: 30_000,
    contractSize: 1,
  };
}

/** price text -> price units (0.0001 coin) */
export function px(text: string): number {
  const v = parseScaled(text, PRICE_SCALE);
  if (v === null) throw new Error(`bad price ${text}`);
  return v;
}

/** amount text -> the scaled amount a place command carries (10^-8) */
export function amt(text: string): number {
  const v = parseScaled(text, AMOUNT_SCALE);
  if (v === null) throw new Error(`bad amount ${text}`);
  return v;
}

/** coin text -> minor units (satoshi) */
export function sat(text: string): number {
  const v = parseScaled(text, 8);
  if (v === null) throw new Error(`bad coin amount ${text}`);
  return v;
}

export interface PlaceOpts {
  type?: 'limit' | 'market';
  tif?: TimeInForce;
  postOnly?: boolean;
  rejectPostOnly?: boolean;
  reduceOnly?: boolean;
  label?: string;
  clientOrderId?: string | null;
}

export class Harness {
  readonly ex: Exchange;
  ts = T0;
  seq = 0;
  private emails = 0;

  constructor(limits: ExchangeLimits = DEFAULT_LIMITS) {
    this.ex = new Exchange(limits);
  }

  /** Applies a command at the harness clock (or `ts`, which also moves the clock forward). */
  apply(cmd: Command, ts?: number): unknown {
    if (ts !== undefined && ts > this.ts) this.ts = ts;
    return this.ex.apply({ ...cmd, ts: this.ts, seq: ++this.seq } as Sequenced);
  }

  /** Standard setup: manual indices (never stale) and the given instruments listed. */
  static market(specs: InstrumentSpec[], limits?: ExchangeLimits, manual = true): Harness {
    const h = new Harness(limits);
    h.apply({ t: 'index', currency: 'BTC', price: BTC_INDEX, manual, by: null });
    h.apply({ t: 'index', currency: 'ETH', price: ETH_INDEX, manual, by: null });
    h.apply({ t: 'list', instruments: specs });
    return h;
  }

  inst(name: string): Instrument {
    const i = this.ex.instruments.get(name);
    if (!i) throw new Error(`no instrument ${name}`);
    return i;
  }

  /** A new user, optionally credited with `btc`/`eth` coin (decimal text). */
  user(btc = '0', eth = '0'): number {
    const u = this.apply({ t: 'create_user', email: `u${++this.emails}@test.io`, passwordHash: 'x', role: 'user', inviteCode: null, by: null }) as User;
    if (btc !== '0') this.deposit(u.id, 'BTC', sat(btc));
    if (eth !== '0') this.deposit(u.id, 'ETH', sat(eth));
    return u.id;
  }

  deposit(userId: number, currency: CurrencyCode, minor: number, depositId: string | null = null): unknown {
    return this.apply({ t: 'deposit', userId, currency, amount: minor, depositId, by: userId });
  }

  place(userId: number, side: 'buy' | 'sell', instrument: string, price: string | null, amount: string, o: PlaceOpts = {}): PlaceResult | Reject {
    return this.apply({
      t: 'place',
      userId,
      side: side === 'buy' ? 0 : 1,
      instrument,
      price: price === null ? null : px(price),
      advanced: null,
      advPrice: null,
      lots: amt(amount),
      type: o.type ?? 'limit',
      tif: o.tif ?? 'good_til_cancelled',
      postOnly: o.postOnly ?? false,
      rejectPostOnly: o.rejectPostOnly ?? false,
      reduceOnly: o.reduceOnly ?? false,
      label: o.label ?? '',
      clientOrderId: o.clientOrderId ?? null,
    }) as PlaceResult | Reject;
  }

  /** Places and asserts acceptance (throws with the reject otherwise). */
  ok(userId: number, side: 'buy' | 'sell', instrument: string, price: string | null, amount: string, o: PlaceOpts = {}): PlaceResult {
    const r = this.place(userId, side, instrument, price, amount, o);
    if (isReject(r)) throw new Error(`order refused: ${r.code} ${r.reason ?? ''}`);
    return r;
  }

  u(userId: number): User {
    return this.ex.users.get(userId)!;
  }

  balance(userId: number, currency: CurrencyCode = 'BTC'): number {
    return this.u(userId).accounts[currency].balance;
  }

  feeBalance(currency: CurrencyCode = 'BTC'): number {
    return this.ex.system.fees[currency].balance;
  }

  position(userId: number, instrument: string) {
    return this.u(userId).positions.get(this.inst(instrument).id) ?? { size: 0, openCost: 0, realizedPnl: 0 };
  }

  openOrders(userId: number): Order[] {
    const out: Order[] = [];
    for (const e of this.u(userId).exposures.values()) for (const o of e.openOrders) out.push(o);
    return out.sort((a, b) => a.id - b.id);
  }

  /** [price units, lots] per level, best first. */
  depth(instrument: string, side: 'buy' | 'sell', n = 50): Array<[number, number]> {
    return this.ex.books.get(this.inst(instrument).id)!.depth(side === 'buy' ? 0 : 1, n);
  }
}

export function code(r: unknown): number | null {
  return isReject(r) ? r.code : null;
}

/** An engine with an index and one listed call, keeping every command it applies (the journal to write). */
export function recordedEngine(): { h: Harness; story: Sequenced[] } {
  const h = new Harness();
  const story: Sequenced[] = [];
  const apply = h.ex.apply.bind(h.ex);
  h.ex.apply = (cmd: Sequenced) => {
    story.push(cmd);
    return apply(cmd);
  };
  h.apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null });
  h.apply({ t: 'list', instruments: [spec('BTC', EXP_JAN, 130000, 'call')] });
  return { h, story };
}
