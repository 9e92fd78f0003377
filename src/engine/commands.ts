// Commands: the only way exchange state changes. Each is journaled as compact JSON and replayed
// verbatim, so everything non-deterministic (time, random codes, password hashes) is decided
// before a command is created and travels inside it.
import type { ApiKeyChange } from '../auth/apiKeys.ts';
import type { SelfTradingMode } from './selfTrade.ts';
import type { TradingProduct } from './disabledProducts.ts';
import type { CurrencyCode } from '../domain/currency.ts';
import type { OptionType, SettlementPeriod } from '../domain/instrument.ts';
import type { TimeInForce } from './types.ts';
import type { MarginModel } from '../risk/portfolio/state.ts';
import type { PortfolioMarginParams } from '../risk/portfolio/params.ts';
import type { CancelTypeFilter, TriggerSpec } from './triggers.ts';
import type { MoveLeg } from '../accounts/types.ts';
import type { BlockLeg, BlockRole, BlockRules } from '../blocktrades/types.ts';
import type { WalletCommand } from '../wallet/types.ts';
import type { RfqCommand } from '../blockrfq/types.ts';

export interface InstrumentSpec {
  currency: CurrencyCode;
  name: string;
  optionType: OptionType;
  strike: number;
  expiry: number;
  settlementPeriod: SettlementPeriod;
  tick: number;
  tickSteps: { abovePrice: number; tick: number }[];
  lotScaled: number;
  makerCommission: number;
  takerCommission: number;
  contractSize: number;
}

export type Command =
  | { t: 'create_user'; email: string; passwordHash: string; role: 'admin' | 'user'; inviteCode: string | null; by: number | null }
  | {
      t: 'issue_token';
      userId: number;
      access: string;
      refresh: string;
      scope: string;
      accessTtl: number;
      refreshTtl: number;
      replaces: string | null;
      /** public/auth's login: the client address and grant, for the access log (src/engine/accessLog.ts) */
      login?: { ip: string; grant: string };
    }
  | { t: 'revoke_token'; access: string }
  /** A user's new password hash (made at the edge), applied only over `was`, the hash the old password matched. */
  | { t: 'change_password'; userId: number; was: string; passwordHash: string }
  /** An administrator (`by`) disables a user or enables it again (src/engine/userSecurity.ts). */
  | { t: 'set_user_disabled'; userId: number; disabled: boolean; by: number }
  | { t: 'create_invite'; code: string; maxUses: number; expiresIn: number; note: string | null; by: number }
  | { t: 'revoke_invite'; code: string; by: number }
  | { t: 'deposit'; userId: number; currency: CurrencyCode; amount: number; depositId: string | null; by: number }
  | { t: 'withdraw'; userId: number; currency: CurrencyCode; amount: number }
  | {
      t: 'place';
      userId: number;
      side: 0 | 1;
      instrument: string;
      /** price units; NaN-free: null for market orders or when `advPrice` is used */
      price: number | null;
      advanced: 'usd' | 'implv' | null;
      advPrice: number | null;
      lots: number;
      type: 'limit' | 'market';
      tif: TimeInForce;
      postOnly: boolean;
      rejectPostOnly: boolean;
      reduceOnly: boolean;
      label: string;
      clientOrderId: string | null;
      /** market-maker protection (src/engine/mmp.ts); absent in records from before it */
      mmp?: boolean;
      /** A trigger order (src/engine/triggers.ts): held until its price is reached, then placed. */
      trig?: TriggerSpec;
      /** Set by the WebSocket edge only (never from params): cancel-on-disconnect covers the order
       *  (src/engine/cod.ts); absent in every other command and in records from before it. */
      cod?: true;
    }
  | { t: 'cancel'; userId: number; orderId: number }
  | {
      t: 'cancel_all';
      userId: number;
      currency: CurrencyCode | null;
      instrument: string | null;
      side: 0 | 1 | null;
      label: string | null;
      /** Deribit's cancel `type` (absent: all, regular and trigger orders). */
      types?: CancelTypeFilter;
      /** Deribit's `kind`: `option` spares combo orders, `option_combo` cancels only them (absent: both). */
      kind?: 'option' | 'option_combo';
    }
  | { t: 'index'; currency: CurrencyCode; price: number; manual: boolean; by: number | null }
  | { t: 'set_vol'; currency: CurrencyCode; atmVol: number; skew: number; curvature: number; by: number }
  | { t: 'halt'; instrument: string; halted: boolean; by: number }
  | { t: 'list'; instruments: InstrumentSpec[] }
  | { t: 'expire_orders' }
  /** Cancels those of the listed orders of one user that are still open (cancel-on-disconnect). */
  | { t: 'cancel_orders'; userId: number; orderIds: number[]; reason: 'cancel_on_disconnect' }
  /** API keys: the secret travels only encrypted (generated and encrypted at the edge). */
  | { t: 'create_api_key'; userId: number; clientId: string; encSecret: string; scope: string; name: string }
  | { t: 'remove_api_key'; userId: number; id: number }
  /** API-key management (enable/disable/edit/reset/rename/scope): only what changes is present. */
  | { t: 'update_api_key'; userId: number; id: number; change: ApiKeyChange }
  /** Announcements (src/engine/announcements.ts): an administrator publishes; a user marks one read. */
  | { t: 'publish_announcement'; title: string; body: string; important: boolean; confirmation: boolean }
  | { t: 'read_announcement'; userId: number; id: number }
  /** Self-trade prevention mode (src/engine/selfTrade.ts). */
  | { t: 'set_self_trading_config'; userId: number; mode: SelfTradingMode; extendedToSubaccounts: boolean }
  /** Products an account may not trade (src/engine/disabledProducts.ts). */
  | { t: 'set_disabled_trading_products'; userId: number; products: TradingProduct[] }
  /** private/edit: `lots` is the new total amount scaled by 10^AMOUNT_SCALE; `price` null keeps the price. */
  | { t: 'edit'; userId: number; orderId: number; lots: number; price: number | null; postOnly: boolean | null; rejectPostOnly: boolean | null; triggerPrice?: number | null; triggerOffset?: number | null; mmp?: boolean; cod?: true }
  /** One liquidation step for an account below maintenance margin (API.md 5.3; src/engine/liquidation.ts). */
  | { t: 'liquidate'; userId: number; currency: CurrencyCode }
  /** Settles one expiry of one currency (src/engine/settlement.ts). */
  | { t: 'settle'; currency: CurrencyCode; expiry: number }
  /** Market-maker protection config of one index (and mass-quote group); interval 0 removes it. */
  | {
      t: 'set_mmp_config';
      userId: number;
      indexName: string;
      group: string | null;
      interval: number;
      frozenTime: number;
      /** at 10^-8 */
      quantityLimit: number;
      deltaLimit: number;
      /** at 10^-8; 0 = none */
      maxQuoteQuantity: number;
      /** absolute net vega; 0 or absent (records before it) = none */
      vegaLimit?: number;
      /** fills in the interval; 0 or absent = none */
      tradeCountLimit?: number;
    }
  | { t: 'reset_mmp'; userId: number; indexName: string; group: string | null }
  /** private/mass_quote: every quote of the message in one command (src/engine/massQuote.ts). */
  | { t: 'mass_quote'; userId: number; quoteId: string; group: string; quotes: QuoteItem[]; cod?: true }
  /** Account-scope cancel-on-disconnect on or off (private/enable_cancel_on_disconnect, scope account). */
  | { t: 'cod_account'; userId: number; on: boolean }
  /**
   * Cancel-on-disconnect on or off for orders placed before (a connection that turns it on or off,
   * or logs out): the user's listed open or untriggered orders are marked or unmarked.
   */
  | { t: 'cod_mark'; userId: number; orderIds: number[]; on: boolean }
  /** private/cancel_quotes: the user's mass quotes selected by one criterion. */
  /** Subaccounts (src/accounts/subaccounts.ts); `max` is the limit in force when asked (a setting). */
  | { t: 'create_subaccount'; mainId: number; max: number }
  | { t: 'rename_subaccount'; mainId: number; subId: number; name: string }
  | { t: 'subaccount_login'; mainId: number; subId: number; on: boolean }
  | { t: 'remove_subaccount'; mainId: number; subId: number }
  /** Money between two accounts of one main account, asked by `by` (src/accounts/transfers.ts). */
  /** Portfolio margin (src/risk/portfolio/switch.ts, state.ts): an account's model; the operator's parameters (only those changed). */
  | { t: 'change_margin_model'; userId: number; model: MarginModel }
  | { t: 'set_pm_params'; params: Partial<PortfolioMarginParams>; by: number }
  | { t: 'transfer'; by: number; from: number; to: number; currency: CurrencyCode; amount: number; nonce: string | null }
  /** A subaccount's contact email and notifications (private/set_email_for_subaccount, toggle_notifications_from_subaccount). */
  | { t: 'subaccount_email'; mainId: number; subId: number; email: string }
  | { t: 'subaccount_notifications'; mainId: number; subId: number; on: boolean }
  /** Money to another user by its username, held `holdMs` before it is confirmed (src/accounts/userTransfers.ts). */
  /**
   * `book`: `destination` is an address of the sender's address book of type `transfer` (its waiting
   * period over), naming the receiver by its deposit address or its email; journals written before
   * it (no `book`) named the receiver's email directly and replay as they ran.
   */
  | { t: 'user_transfer'; by: number; destination: string; currency: CurrencyCode; amount: number; nonce: string | null; holdMs: number; book?: boolean }
  /** The sender cancels its prepared transfer `id`. */
  | { t: 'cancel_transfer'; by: number; id: number; currency: CurrencyCode }
  /** Confirms the prepared transfers whose hold has passed (the market tick sends it when one is due). */
  | { t: 'confirm_transfers' }
  /** Positions between two accounts of the main account `by`, every leg or none (src/accounts/movePositions.ts). */
  | { t: 'move_positions'; by: number; from: number; to: number; legs: MoveLeg[] }
  /**
   * A block trade (src/blocktrades/): `executor` executes with the signature `signer` made over the
   * same fields (verified at the edge: `sig` is its MAC, which names it); every leg and both
   * accounts in this one command. `role` is the executor's.
   */
  | { t: 'block_trade'; executor: number; signer: number; role: BlockRole; timestamp: number; nonce: string; expiry: number; sig: string; legs: BlockLeg[]; rules: BlockRules }
  /** private/invalidate_block_trade_signature: the signer's signature `sig` (its MAC) executes nothing. */
  | { t: 'block_invalidate'; userId: number; sig: string; expiry: number }
  /** Whether block trades of `userId` wait for its approval (src/blocktrades/approval.ts). */
  | { t: 'block_approval'; userId: number; required: boolean }
  /** private/approve_block_trade: `userId`, in `role`, approves the waiting request of (timestamp, nonce). */
  | { t: 'block_approve'; userId: number; timestamp: number; nonce: string; role: BlockRole }
  /** private/reject_block_trade: `userId`, in `role`, rejects the waiting request: it never executes. */
  | { t: 'block_reject'; userId: number; timestamp: number; nonce: string; role: BlockRole }
  /** private/create_combo (src/combos/): the combo of these legs (ratios signed: + bought), made once. */
  /** `max` (hard limit on combos) and `maxActive` (soft limit on active books) are the settings in force
   *  when asked (absent in records from before them: 1000 combos, no soft limit). */
  | { t: 'create_combo'; userId: number; legs: { instrument: string; ratio: number }[]; max?: number; maxActive?: number }
  | {
      t: 'cancel_quotes';
      userId: number;
      cancelType: CancelQuotesType;
      instrument: string | null;
      currency: CurrencyCode | null;
      quoteSetId: string | null;
      minDelta: number | null;
      maxDelta: number | null;
    }
  /** The wallet: withdrawals, deposits, deposit addresses, address book (src/wallet/). */
  | WalletCommand
  /** Block RFQs (src/blockrfq/). */
  | RfqCommand;

/** One side of a quote: price units, amount at 10^-8 (0 removes the side's quote). */
export interface QuoteSide {
  price: number;
  lots: number;
  postOnly: boolean;
  rejectPostOnly: boolean;
}

export interface QuoteItem {
  instrument: string;
  quoteSetId: string | null;
  bid: QuoteSide | null;
  ask: QuoteSide | null;
}

export type CancelQuotesType = 'all' | 'instrument' | 'currency' | 'quote_set_id' | 'delta' | 'kind';

export type CommandType = Command['t'];
/** A command with the time the sequencer assigned to it. */
export type Sequenced = Command & { ts: number; seq: number };
