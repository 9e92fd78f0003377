// Records and commands of block RFQs (issue 34; docs/api-notes.md "Block RFQ"): plain data owned by
// the single writer, snapshotted with the engine and covered by the state hash.
import type { CurrencyCode } from '../domain/currency.ts';
import type { BlockRules } from '../blocktrades/types.ts';

/** One leg of an RFQ's structure: the taker's direction when it buys the structure, and its ratio. */
export interface RfqLeg {
  instrument: string;
  /** 0 buy, 1 sell (the structure's direction of this leg) */
  side: 0 | 1;
  /** a positive integer: the leg's size is ratio x the traded amount */
  ratio: number;
}

/**
 * The optional hedge leg of an RFQ (Deribit: one per RFQ, a future or perpetual there): its own
 * instrument, direction (the taker's, when it buys the structure), amount and reference price, not
 * scaled by the ratios. A quote may name its own hedge price; the hedge trades with the option legs
 * in the same command, at the quote's hedge price, inside the block band, pro rata to the amount.
 */
export interface RfqHedge {
  instrument: string;
  side: 0 | 1;
  /** scaled by 10^AMOUNT_SCALE, for the RFQ's whole amount */
  lots: number;
  /** price units: the taker's reference price (quotes without a hedge price trade at it) */
  price: number;
}

export type RfqState = 'open' | 'filled' | 'cancelled' | 'expired';
export type QuoteState = 'open' | 'filled' | 'cancelled' | 'expired';

/** A good-til-cancelled acceptance: fills when a quote reaches its price. */
export interface RfqTrigger {
  /** the taker's side of the structure */
  side: 0 | 1;
  price: number;
  lots: number;
  state: 'untriggered' | 'triggered' | 'cancelled';
  cancelReason: string | null;
}

/** One trade of an RFQ (its structure price and amount; each leg is a trade of the engine). */
export interface RfqFill {
  /** the taker's side of the structure */
  side: 0 | 1;
  price: number;
  lots: number;
  maker: number;
  quoteId: number;
  blockTradeId: number;
  /** leg prices in leg order, and the index price when it traded */
  legPrices: number[];
  indexPrice: number;
  ts: number;
  /** the hedge leg's amount and price in this trade (absent: no hedge leg traded) */
  hedgeLots?: number;
  hedgePrice?: number;
}

export interface Rfq {
  id: number;
  taker: number;
  currency: CurrencyCode;
  legs: RfqLeg[];
  /** scaled by 10^AMOUNT_SCALE: leg size = ratio x amount */
  lots: number;
  created: number;
  expires: number;
  /** the makers it was sent to (null: every maker) */
  makers: number[] | null;
  disclosed: boolean;
  label: string;
  state: RfqState;
  /** whether some quote ever answered it (Deribit's `included_in_taker_rating`) */
  quoted: boolean;
  trigger: RfqTrigger | null;
  fills: RfqFill[];
  /** the taker's rating (percent) when it was created, null while it had none */
  rating: number | null;
  updated: number;
  /** the hedge leg (absent without one, so states without hedges hash as before) */
  hedge?: RfqHedge;
}

export interface RfqQuote {
  id: number;
  rfqId: number;
  maker: number;
  /** the maker's side of the structure: 0 bid (it buys the structure), 1 ask */
  side: 0 | 1;
  lots: number;
  filled: number;
  /** the price of each leg, in leg order (price units) */
  legPrices: number[];
  /** the structure price: sum of ratio x leg price, bought legs +, sold legs - */
  price: number;
  aon: boolean;
  expiresAt: number | null;
  label: string;
  state: QuoteState;
  reason: string | null;
  created: number;
  updated: number;
  replaced: boolean;
  /** the quote's price of the RFQ's hedge leg (absent: the RFQ's hedge price, or no hedge) */
  hedgePrice?: number;
}

/** A traded RFQ as the public sees it (public/get_block_rfq_trades, block_rfq.trades.*). */
export interface RfqPublicTrade {
  id: number;
  ts: number;
  currency: CurrencyCode;
  side: 0 | 1;
  price: number;
  lots: number;
  legs: RfqLeg[];
  legPrices: number[];
  indexPrice: number;
  /** every quote the acceptance traded, best first (absent: the one of `price`, `lots`) */
  parts?: { price: number; lots: number; hedgeLots: number; hedgePrice: number }[];
  hedge?: RfqHedge;
}

export type RfqCommand =
  /** An operator marks an account as a block RFQ maker, or unmarks it. */
  | { t: 'rfq_set_maker'; by: number; userId: number; maker: boolean }
  /**
   * `minAnonymousMakers`: an anonymous RFQ (`disclosed` false) must reach at least this many makers
   * (Deribit's rule: 5); absent in commands journaled before the rule, which replay as they ran
   */
  | { t: 'rfq_create'; userId: number; legs: RfqLeg[]; lots: number; makers: number[] | null; disclosed: boolean; label: string; ttlMs: number; hedge?: RfqHedge | null; rules?: BlockRules; minAnonymousMakers?: number }
  | { t: 'rfq_cancel'; userId: number; rfqId: number }
  /** add (quoteId null) or edit a quote; `rules` are the block band and minimums in force */
  | { t: 'rfq_quote'; userId: number; rfqId: number; quoteId: number | null; side: 0 | 1; lots: number; legPrices: number[]; aon: boolean; expiresAt: number | null; label: string; rules: BlockRules; hedgePrice?: number | null }
  /** cancel one quote (by id or label), or all of the maker's (on one RFQ or everywhere) */
  | { t: 'rfq_quote_cancel'; userId: number; quoteId: number | null; rfqId: number | null; label: string | null; all: boolean }
  | { t: 'rfq_accept'; userId: number; rfqId: number; side: 0 | 1; lots: number; price: number; gtc: boolean; rules: BlockRules }
  | { t: 'rfq_trigger_cancel'; userId: number; rfqId: number }
  /** the clock tick: RFQs and quotes whose time has passed expire */
  | { t: 'rfq_expire' };

export const RFQ_COMMANDS = new Set<string>(['rfq_set_maker', 'rfq_create', 'rfq_cancel', 'rfq_quote', 'rfq_quote_cancel', 'rfq_accept', 'rfq_trigger_cancel', 'rfq_expire']);
