// The stream hub's records (src/api/ws/hub.ts): topics and the subscriber groups that share their
// frames, writes waiting for their turn or their batch, the L2 books each cadence last published,
// and what changed since the last round.
import type { CurrencyCode } from '../../domain/currency.ts';
import type { Instrument } from '../../domain/instrument.ts';
import type { MmpTriggerEvent } from '../../engine/mmp.ts';
import type { BlockTradeRequest } from '../../blocktrades/types.ts';
import type { Order, Trade } from '../../engine/types.ts';
import type { TriggerOrder } from '../../engine/triggers.ts';
import type { Cadence, ChannelSpec } from './channels.ts';
import type { Subscriber } from './frames.ts';

/** A regular or an untriggered/closed trigger order: user.orders.* shows both. */
export type AnyOrder = Order | TriggerOrder;

export interface Topic {
  key: string;
  /** creation order: a group's frames of a round go out in this order */
  ord: number;
  channel: string;
  spec: ChannelSpec;
  userId: number | null;
  subs: Set<Subscriber>;
  /** groups whose channel set holds this topic */
  groups: Set<Group>;
  /** the frames of the current publish round */
  frames: Buffer[];
  /** ticker: fingerprint of what was last published */
  last?: string;
  /** user.portfolio: a summary skipped while the account's PM sums were stale, sent in a later round */
  owed?: boolean;
}

/** Subscribers with exactly the same topics: every round sends each of them the same bytes. */
export interface Group {
  key: string;
  topics: Topic[];
  subs: Set<Subscriber>;
  /** the frames of the current publish round, in topic order */
  round: Buffer[];
}

/** A round's bytes for one group, written to its members `WRITES_PER_TURN` sockets a turn. */
export interface Pending {
  bytes: Buffer;
  /** the members as of the round; those before `next` are written (`flushOwed` may reorder the rest) */
  subs: Subscriber[];
  next: number;
}

/**
 * Socket writes per piece of fan-out work: a released round is written this many connections at a
 * time, oldest round first, each further slice in a turn of its own (setImmediate), so orders,
 * commits and reads run between the slices. Bounded by work (writes), not by the clock: a write
 * (the connection's buffer check and `socket.write` of a raw round's 0.3-1 KB) is a few us of
 * engine thread; under bench/fanoutRawBench.ts on a 2-core machine at load 15-20 a slice of 200
 * took 1.5 ms of process CPU (p50; the journal's and GC threads included) and a whole round to
 * 1,000 connections 5.6-6.8 ms, so 200 keeps a slice under issue 36's 2 ms line with room. A
 * connection owed a round writes it before its own answers (`Subscriber.owed`), so slicing
 * changes no connection's order. The cost: each slice after the first waits for a turn of the
 * loop, which on a heavily loaded machine can let a backlog of rounds build (docs/architecture.md).
 */
export const WRITES_PER_TURN = 200;

/** A round rendered at a batch's seal, held until the batch is durable. */
export interface HeldRound {
  /** the last seq of the batch it was rendered with (released when that is durable) */
  seq: number;
  /** the raw round's writes, and the conflated rounds' after them: `WRITES_PER_TURN` a turn */
  raw: Pending[];
  agg: Pending[];
  /** what `onBatch` asked to run once the batch is durable (the NATS publish) */
  post: (() => void) | null;
  /** the rounds held here, reported to `onRound` when written */
  rounds: Array<{ cadence: Cadence; due: number; deliveries: number; cpu: number; rendered: unknown }>;
}

/** Times of one publish round (wall clock ms, performance.timeOrigin + performance.now()). */
export interface RoundTimes {
  /** when its content was due: the 100 ms tick that closed the window (agg), or the commit (raw) */
  due: number;
  /** when the round's writes started (after the batch it was rendered with became durable, if one
   *  was in flight or open) */
  start: number;
  /** when the round's first turn ended (its first `WRITES_PER_TURN` writes made; the rest follow in
   *  the next turns) */
  end: number;
  deliveries: number;
  /** CPU time of the process during the round, µs (user + system) */
  cpu: number;
  /** what `onRender` returned when the round was rendered */
  rendered: unknown;
}

export interface BookState {
  inst: Instrument;
  changeId: number;
  bids: Map<number, number>;
  asks: Map<number, number>;
  topics: number;
}

/** What changed since the last publish of a cadence. */
export interface Changes {
  trades: Trade[];
  orders: Set<AnyOrder>;
  users: Set<number>;
  /** currencies whose index or vol smile moved */
  currencies: Set<CurrencyCode>;
  /** a command of a kind that may move any account (settlement, ...): every portfolio is refreshed */
  everyone: boolean;
  /** instrument life-cycle events (`instrument.state.*`), in order */
  states: Array<{ inst: Instrument; state: 'created' | 'started' | 'settled'; ts: number }>;
  /** MMP triggers (`user.mmp_trigger.*`), in order */
  mmp: MmpTriggerEvent[];
  /** block trade requests as each change left them (`block_trade_confirmations`), in order */
  blocks: BlockTradeRequest[];
}

/** Commands whose effect on accounts the observer and the cases in onCommitted fully cover. */
export const TARGETED = new Set<string>([
  'place', 'cancel', 'cancel_all', 'cancel_orders', 'edit', 'liquidate', 'deposit', 'withdraw', 'index', 'set_vol', 'create_user',
  'issue_token', 'revoke_token', 'create_invite', 'revoke_invite', 'create_api_key', 'remove_api_key', 'update_api_key', 'publish_announcement', 'read_announcement', 'set_self_trading_config', 'set_disabled_trading_products', 'halt', 'list', 'expire_orders',
  'set_mmp_config', 'reset_mmp', 'mass_quote', 'cancel_quotes',
  // block trade approvals: the setting and a rejection move no account (an approval may execute: untargeted)
  'block_approval', 'block_reject',
  // cancel-on-disconnect marks and flags (src/engine/cod.ts) move no account, order or trade
  'cod_account', 'cod_mark',
  // subaccounts move no money (a removed one's subscriptions find no user); a transfer moves its two accounts'
  'create_subaccount', 'rename_subaccount', 'subaccount_login', 'remove_subaccount', 'transfer',
  // the wallet (src/wallet/): a withdrawal or its cancel moves its owner's balance; addresses move no money
  // (an operator's completion, rejection or credit is untargeted: every portfolio is refreshed)
  'wallet_withdraw', 'wallet_cancel_withdrawal', 'wallet_new_address', 'wallet_add_addresses', 'address_book_add', 'address_book_update', 'address_book_remove',
  // credentials only (src/engine/userSecurity.ts)
  'change_password', 'set_user_disabled',
]);

export function emptyChanges(): Changes {
  return { trades: [], orders: new Set(), users: new Set(), currencies: new Set(), everyone: false, states: [], mmp: [], blocks: [] };
}

export interface HubOptions {
  /** Conflation period of `100ms`/`agg2` channels. */
  tickMs: number;
}
