// State records of the exchange engine. Everything here is plain data owned by the single writer.
import type { CurrencyCode } from '../domain/currency.ts';
import type { Instrument } from '../domain/instrument.ts';
import type { InstrumentMarket as DomainInstrumentMarket } from '../domain/market.ts';
// records that auth/ and market/ share with the engine live in domain/ (no folder imports one above it)
export type { InviteCode, TokenRecord } from '../domain/credentials.ts';
export type { VolState } from '../domain/market.ts';
import type { BookNode, PriceLevel, Side } from './orderBook.ts';
import type { Ledger } from './ledger.ts';
import type { MmpTag } from './mmp.ts';
import type { TriggerOrder } from './triggers.ts';
import type { ExposureOrders } from './exposureOrders.ts';

export type OrderType = 'limit' | 'market' | 'liquidation';
export type TimeInForce = 'good_til_cancelled' | 'good_til_day' | 'fill_or_kill' | 'immediate_or_cancel';
export type OrderState = 'open' | 'filled' | 'cancelled' | 'rejected';
export type CancelReason =
  | 'user_request'
  | 'autoliquidation'
  | 'cancel_on_disconnect'
  | 'settlement'
  | 'good_til_day'
  | 'instrument_halted'
  /** a reduce-only order left with no position to reduce (Strikebook; Deribit has no name for it) */
  | 'reduce_only'
  /** market-maker protection triggered in the order's group (src/engine/mmp.ts) */
  | 'mmp_trigger'
  /** a settlement took the cash an open buy was accepted against (src/engine/settlement.ts) */
  | 'risk_mitigation'
  /** the account's own order that an order of `cancel_maker` self-trade prevention met (src/engine/selfTrade.ts) */
  | 'self_trade_prevention';

/**
 * An order's trade ids, in order: none (`NO_TRADE_IDS`, shared by every order that has not traded),
 * one as the id itself, or two and more as an array (`addTradeId`). Most orders trade once at most,
 * and a one-element array cost 56 bytes per traded order (the array and its backing store), ~9% of
 * what a crossing order keeps alive until its account forgets it (issue 36). Read them with
 * `tradeIdsOf` (a list) or `lastTradeIdOf`.
 */
export type TradeIds = number | readonly number[];

/** The trade ids of every order that has not traded (never written: see `addTradeId`). */
export const NO_TRADE_IDS: readonly number[] = Object.freeze([]);

/** Appends a trade id to an order's ids, allocating only from the second one on. */
export function addTradeId(o: { tradeIds: TradeIds }, id: number): void {
  const ids = o.tradeIds;
  if (typeof ids === 'number') o.tradeIds = [ids, id];
  else if (ids.length === 0) o.tradeIds = id;
  else (ids as number[]).push(id);
}

/** An order's trade ids as a list (a new one-element array for an order that traded once). */
export function tradeIdsOf(o: { readonly tradeIds: TradeIds }): readonly number[] {
  const ids = o.tradeIds;
  return typeof ids === 'number' ? [ids] : ids;
}

/** An order's last trade id, or undefined when it has not traded. */
export function lastTradeIdOf(o: { readonly tradeIds: TradeIds }): number | undefined {
  const ids = o.tradeIds;
  return typeof ids === 'number' ? ids : ids[ids.length - 1];
}

/** The ids of a list as an order holds them (a snapshot's list back into the form `addTradeId` keeps). */
export function compactTradeIds(ids: readonly number[]): TradeIds {
  return ids.length === 0 ? NO_TRADE_IDS : ids.length === 1 ? ids[0]! : ids;
}

/** An order; while open it is also the intrusive queue node of its book. Made by `newOrder`. */
export interface Order extends BookNode {
  readonly id: number;
  readonly userId: number;
  readonly side: Side;
  price: number;
  remaining: number;
  amount: number;
  readonly inst: Instrument;
  readonly type: OrderType;
  readonly tif: TimeInForce;
  readonly postOnly: boolean;
  readonly rejectPostOnly: boolean;
  readonly reduceOnly: boolean;
  readonly label: string;
  readonly clientOrderId: string | null;
  readonly created: number;
  /** GTD expiry (ms) or 0. */
  readonly expiresAt: number;
  readonly advanced: 'usd' | 'implv' | null;
  readonly isLiquidation: boolean;
  prev: BookNode | null;
  next: BookNode | null;
  level: PriceLevel | null;
  filled: number;
  /** Sum of price x lots over fills, for the average price. */
  filledNotional: number;
  /** Fees paid on this order so far, in minor units. */
  commission: number;
  state: OrderState;
  cancelReason: CancelReason | null;
  /** Funds held for the open remainder of a buy (premium + fee), minor units. */
  reserved: number;
  lastUpdate: number;
  /** Trade ids of this order, in order, in the compact form of `TradeIds`. */
  tradeIds: TradeIds;
  /** Set for MMP orders and mass quotes (src/engine/mmp.ts); kept in the snapshot's `mmp` part. */
  mmp: MmpTag | null;
  /** The trigger order this order was placed by when it fired (src/engine/triggers.ts). */
  origin: TriggerOrder | null;
  /**
   * Cancel-on-disconnect covers it (src/engine/cod.ts): placed or edited over a WebSocket
   * connection with it on. A field, not a set of ids, so the order path pays one store at most.
   */
  cod: boolean;
  /** The neighbours in its exposure's list of open orders (exposureOrders.ts); null when out of it. */
  exposurePrev: Order | null;
  exposureNext: Order | null;
}

/**
 * A new open order. One object literal for every order, not a class (it was one, `new Order`):
 * V8 tracks the survival of what a literal allocates and, once nearly all of it survives (resting
 * orders do, and a replay is nothing else), allocates it in the old generation directly; a
 * constructor's objects always start young and each scavenge copies the survivors, twice. The
 * keys are in the order the class had (its parameters, then its fields).
 */
export function newOrder(
  id: number,
  userId: number,
  side: Side,
  price: number,
  remaining: number,
  amount: number,
  inst: Instrument,
  type: OrderType,
  tif: TimeInForce,
  postOnly: boolean,
  rejectPostOnly: boolean,
  reduceOnly: boolean,
  label: string,
  clientOrderId: string | null,
  created: number,
  expiresAt: number,
  advanced: 'usd' | 'implv' | null,
  isLiquidation: boolean,
): Order {
  return {
    id, userId, side, price, remaining, amount, inst, type, tif, postOnly, rejectPostOnly, reduceOnly, label, clientOrderId, created, expiresAt, advanced, isLiquidation,
    prev: null, next: null, level: null, filled: 0, filledNotional: 0, commission: 0, state: 'open', cancelReason: null, reserved: 0, lastUpdate: created,
    tradeIds: NO_TRADE_IDS, mmp: null, origin: null, cod: false, exposurePrev: null, exposureNext: null,
  };
}

/**
 * What a trade reads of each of its two orders (src/api/render.ts renderUserTrade, src/api/
 * orderJson.ts userTradeJson, the snapshot's order stubs): the live `Order` while an account's order
 * map holds it, and a `TradedOrder` of these fields alone once the map has forgotten it (past
 * `closedOrdersKept`, orderMemory.ts pruneClosed), so that a trade no longer keeps the whole
 * order alive (issue 36: every trade held its two 330-byte orders for as long as the trade was kept,
 * tens of MB the old generation's collections marked over and over).
 */
export interface TradedOrder {
  readonly id: number;
  readonly userId: number;
  readonly side: Side;
  readonly inst: Instrument;
  readonly type: OrderType;
  readonly postOnly: boolean;
  readonly reduceOnly: boolean;
  readonly label: string;
  readonly isLiquidation: boolean;
  state: OrderState;
  mmp: MmpTag | null;
  /** Always null on a stub: neither the snapshot's stub nor its trades' renderings read it. */
  readonly origin: TriggerOrder | null;
}

/** A stub of an order for its trades (one object literal, so one shape for every stub). */
export function newTradedOrder(
  id: number,
  userId: number,
  side: Side,
  inst: Instrument,
  type: OrderType,
  postOnly: boolean,
  reduceOnly: boolean,
  label: string,
  isLiquidation: boolean,
  state: OrderState,
  mmp: MmpTag | null,
): TradedOrder {
  return { id, userId, side, inst, type, postOnly, reduceOnly, label, isLiquidation, state, mmp, origin: null };
}

/** A closed order reduced to what its trades read. */
export function tradedOrderStub(o: TradedOrder): TradedOrder {
  return newTradedOrder(o.id, o.userId, o.side, o.inst, o.type, o.postOnly, o.reduceOnly, o.label, o.isLiquidation, o.state, o.mmp);
}

export interface Trade {
  id: number;
  /** Sequence number within the instrument. */
  seq: number;
  inst: Instrument;
  ts: number;
  price: number;
  lots: number;
  /** Side of the taker (Deribit `direction` of a public trade). */
  takerSide: Side;
  /** The maker's order: the `Order` itself, or its stub once its account forgot it (`TradedOrder`). */
  makerOrder: TradedOrder;
  takerOrder: TradedOrder;
  makerFee: number;
  takerFee: number;
  indexPrice: number;
  markPrice: number;
  /** Price tick direction vs the previous trade in the instrument (0 plus,1 zero-plus,2 minus,3 zero-minus). */
  tickDirection: number;
  /** Order state of maker/taker right after this trade. */
  makerState: OrderState;
  takerState: OrderState;
  /**
   * The trade's implied volatility as its renderings print it (`iv`, src/api/render.ts tradeIv),
   * worked out on the first rendering and kept here; undefined until then. A cache of a pure
   * function of the fields above, not state: neither the snapshot nor the state hash holds it. (It
   * was a WeakMap by trade: an ephemeron entry per trade that every major GC had to walk.)
   */
  iv: number | null | undefined;
  /** A leg of a block trade (src/blocktrades/): its id and how many legs it has; absent otherwise. */
  block?: { id: number; legs: number };
  /** A leg of a combo fill (src/combos/): the combo and its combo trade id; absent otherwise. */
  combo?: { id: string; tradeId: number };
}

export interface Position {
  inst: Instrument;
  /** Signed size in lots (positive long). */
  size: number;
  /** Net premium paid for the open size, minor units (positive for longs, negative for shorts). */
  openCost: number;
  realizedPnl: number;
}

/** Per user and instrument: open order totals for risk (kept incrementally). */
export interface OrderExposure {
  inst: Instrument;
  buyOpenLots: number;
  sellOpenLots: number;
  buyReserved: number;
  /** Number of open reduce-only orders (derived from openOrders; lets the hot path skip them). */
  reduceOnlyOpen: number;
  /** Oldest first; a list through the orders, not to be changed while iterated (exposureOrders.ts). */
  openOrders: ExposureOrders;
}

export interface Account {
  currency: CurrencyCode;
  balance: number;
  deposited: number;
  withdrawn: number;
  fees: number;
}

export interface User {
  id: number;
  email: string;
  role: 'admin' | 'user';
  passwordHash: string;
  created: number;
  accounts: Record<CurrencyCode, Account>;
  positions: Map<number, Position>;
  exposures: Map<number, OrderExposure>;
  openOrderCount: number;
  trades: Trade[];
  /** All orders of this user still retrievable (open and recent closed), by id. */
  orders: Map<number, Order>;
  /**
   * client_order_id -> order id and time, for 24 h idempotency, and a 32-bit hash of what the
   * first request asked for (`requestPrint`), so that a retry is told from a reuse of the id for
   * another order (absent in snapshots taken before it existed: such ids are not compared).
   */
  clientOrderIds: Map<string, { orderId: number; ts: number; fp?: number }>;
  depositIds: Map<string, DepositRecord>;
  /** Balance movements outside trading, most recent last (bounded; src/engine/ledger.ts). */
  log: Ledger;
}

export interface DepositRecord {
  depositId: string;
  userId: number;
  currency: CurrencyCode;
  amount: number;
  balance: number;
  timestamp: number;
}

export interface IndexState {
  price: number;
  ts: number;
  manual: boolean;
}

/** The engine's market record: trades are the engine's `Trade` (src/domain/market.ts). */
export type InstrumentMarket = DomainInstrumentMarket<Trade>;
