// Records of the block-trades subsystem (issue 34): plain data owned by the single writer,
// snapshotted with the engine (src/engine/snapshot.ts) and covered by the state hash.
import type { CurrencyCode } from '../domain/currency.ts';

export type BlockRole = 'maker' | 'taker';

/** One leg as both parties agreed it: the direction is always the maker's (Deribit's rule). */
export interface BlockLeg {
  instrument: string;
  /** the maker's side: 0 buy, 1 sell */
  side: 0 | 1;
  /** price units (10^-4 coin) */
  price: number;
  /** amount scaled by 10^AMOUNT_SCALE */
  lots: number;
}

/** The venue's block rules in force when the command was made (settings, carried in the command). */
export interface BlockRules {
  /** the block price band: mark +- this percent of the mark (+ 0.01 coin, as the order band) */
  bandPct: number;
  /** the smallest amount of one leg per currency, scaled by 10^AMOUNT_SCALE */
  minAmount: Partial<Record<CurrencyCode, number>>;
}

/** An executed block trade: every leg applied by one command to both accounts. */
export interface BlockTradeRecord {
  id: number;
  ts: number;
  currency: CurrencyCode;
  maker: number;
  taker: number;
  /** the engine's trade ids of its legs, in leg order */
  tradeIds: number[];
  /** the shared timestamp and nonce both parties signed */
  timestamp: number;
  nonce: string;
}

/** One party's state in a block trade request (Deribit's `state.value` / `counterparty_state.value`). */
export type BlockRequestState = 'initial' | 'accepted' | 'rejected' | 'executed';

export interface BlockRequestSide {
  value: BlockRequestState;
  /** engine time of the last change */
  timestamp: number;
}

/**
 * A block trade waiting for approval (src/blocktrades/approval.ts): an execute_block_trade between
 * accounts of which at least one requires approval. It holds the command as it was executed and
 * executes it (every check made again, at the approval's time) once both sides are `accepted`.
 */
export interface BlockTradeRequest {
  /** the agreement's key (src/blocktrades/state.ts agreementKey) */
  key: string;
  executor: number;
  signer: number;
  /** the executor's role */
  role: BlockRole;
  timestamp: number;
  nonce: string;
  expiry: number;
  sig: string;
  legs: BlockLeg[];
  rules: BlockRules;
  currency: CurrencyCode;
  created: number;
  maker: BlockRequestSide;
  taker: BlockRequestSide;
  /** the block trade it became, once executed */
  blockTradeId: number | null;
}

/** A change of a block trade request, for `block_trade_confirmations` (both parties are told). */
export interface BlockRequestEvent {
  request: BlockTradeRequest;
}
