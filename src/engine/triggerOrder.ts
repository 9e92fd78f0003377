// A trigger order (src/engine/triggers.ts) and what it is made of: its types, the order it places
// when it fires, its history entries, and the cancel `type` filters that select it.
import type { CurrencyCode } from '../domain/currency.ts';
import type { Instrument } from '../domain/instrument.ts';
import type { Command } from './commands.ts';
import { BUY, type Side } from './orderBook.ts';
import { nextEightUtc, requestPrint } from './orderRules.ts';
import type { HeapItem } from './triggerQueue.ts';

export type TriggerOrderType = 'stop_limit' | 'stop_market' | 'take_limit' | 'take_market' | 'trailing_stop';
export type TriggerSource = 'mark_price' | 'index_price' | 'last_price';
export type TriggerState = 'untriggered' | 'triggered' | 'cancelled' | 'rejected';
export type TriggerCancelReason = 'user_request' | 'settlement' | 'instrument_halted' | 'cancel_on_disconnect' | 'good_til_day';
/** Deribit's cancel `type` filters as they apply to trigger orders. */
export type CancelTypeFilter = 'all' | 'limit' | 'trigger_all' | 'stop' | 'take' | 'trailing_stop';

/** What a place command carries for a trigger order: prices in units of 10^-PRICE_SCALE (coin for
 *  mark and last price, USD for the index). */
export interface TriggerSpec {
  type: TriggerOrderType;
  source: TriggerSource;
  price: number | null;
  offset: number | null;
}

type PlaceCmd = Extract<Command, { t: 'place' }>;
/** The order a trigger places when it fires: a place command without trigger and client id. */
export type FiredCmd = Omit<PlaceCmd, 'trig'>;

export class TriggerOrder implements HeapItem {
  heapPos = -1;
  state: TriggerState = 'untriggered';
  cancelReason: TriggerCancelReason | null = null;
  /** Why the order it became was refused when it fired (the engine's reject reason). */
  rejectReason: string | null = null;
  /** The order it became when it fired. */
  firedOrderId: number | null = null;
  /** The client's idempotency key (the order it fires carries none of its own). */
  clientOrderId: string | null = null;
  lastUpdate: number;
  constructor(
    readonly id: number,
    readonly userId: number,
    readonly inst: Instrument,
    /** What it places when it fires (amount, limit price, flags; the type is limit or market). */
    public cmd: FiredCmd,
    readonly type: TriggerOrderType,
    readonly source: TriggerSource,
    /** The trigger level, coin (mark, last) or USD (index); a trailing stop's follows its peak. */
    public level: number,
    /** Trailing stops: the offset (same unit) and the best reference price since placement. */
    public offset: number,
    public peak: number,
    readonly created: number,
  ) {
    this.lastUpdate = created;
  }

  get side(): Side {
    return this.cmd.side as Side;
  }

  /** Fires when the price rises to its level (stop buys, take sells, trailing buys), else when it falls to it. */
  get firesUp(): boolean {
    if (this.type === 'trailing_stop' || this.type === 'stop_limit' || this.type === 'stop_market') return this.side === BUY;
    return this.side !== BUY;
  }

  get trailing(): boolean {
    return this.type === 'trailing_stop';
  }

  /** good_til_day: an untriggered order expires at the next 08:00 UTC after its placement (0: never). */
  get expiresAt(): number {
    return this.cmd.tif === 'good_til_day' ? nextEightUtc(this.created) : 0;
  }
}

/** One line of private/get_trigger_order_history (plain data: part of the snapshot). */
export interface TriggerHistoryEntry {
  id: number;
  ts: number;
  triggerOrderId: number;
  orderId: number | null;
  instrument: string;
  currency: CurrencyCode;
  type: TriggerOrderType;
  source: TriggerSource;
  level: number;
  offset: number;
  side: 0 | 1;
  lots: number;
  price: number | null;
  state: TriggerState;
  /** `order` (placed), `edit`, `trigger:order` (fired), `cancel` */
  request: string;
  label: string;
  reduceOnly: boolean;
  postOnly: boolean;
  reason: string | null;
}

/** Whether a Deribit cancel/open-order `type` filter selects an untriggered order. */
export function selectsType(t: TriggerOrder, type: string): boolean {
  switch (type) {
    case 'all':
    case 'trigger_all':
      return true;
    case 'stop':
    case 'stop_all':
      return t.type === 'stop_limit' || t.type === 'stop_market';
    case 'take':
    case 'take_all':
      return t.type === 'take_limit' || t.type === 'take_market';
    case 'trailing_stop':
    case 'trailing_all':
      return t.type === 'trailing_stop';
    default:
      return t.type === type;
  }
}

/** What a trigger placement asks for (Trading's print of the order, with the trigger in it). */
export function triggerPrint(c: PlaceCmd & { trig: TriggerSpec }): number {
  return requestPrint({ ...c, instrument: `${c.instrument}|${c.trig.type}|${c.trig.source}|${c.trig.price ?? ''}|${c.trig.offset ?? ''}` });
}

export function firedCmd(c: PlaceCmd): FiredCmd {
  return {
    t: 'place',
    userId: c.userId,
    side: c.side,
    instrument: c.instrument,
    price: c.type === 'limit' ? c.price : null,
    advanced: null,
    advPrice: null,
    lots: c.lots,
    type: c.type,
    tif: c.tif,
    postOnly: c.postOnly,
    rejectPostOnly: c.rejectPostOnly,
    reduceOnly: c.reduceOnly,
    label: c.label,
    clientOrderId: null,
  };
}
