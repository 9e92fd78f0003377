// The exchange state machine: the single writer applies sequenced commands here, one at a time.
// Deterministic: time comes from the command, ids from counters in the state; no I/O.
import { CURRENCIES, CURRENCY_CODES, type CurrencyCode } from '../domain/currency.ts';
import { ERR, isReject, reject, type Reject } from '../domain/errors.ts';
import type { Instrument } from '../domain/instrument.ts';
import { AuthState } from '../auth/authState.ts';
import { ApiKeys } from '../auth/apiKeys.ts';
import { Announcements } from './announcements.ts';
import type { AccessEntry } from './accessLog.ts';
import type { TradingProduct } from './disabledProducts.ts';
import type { SelfTradingConfig } from './selfTrade.ts';
import { refreshMarket } from '../market/marks.ts';
import type { Command, Sequenced } from './commands.ts';
import { dispatchCommand } from './commandDispatch.ts';
import type { OrderBook } from './orderBook.ts';
import { Trading } from './trading.ts';
import { TriggerOrder, Triggers } from './triggers.ts';
import type { DeliveryRecord, IndexPoint } from './settlement.ts';
import { liquidationKey } from './liquidation.ts';
import type { InsuranceFund } from './defaults.ts';
import { MmpState, type MmpTriggerEvent } from './mmp.ts';
import type { Account, IndexState, InstrumentMarket, User, VolState } from './types.ts';
import { Ledger } from './ledger.ts';
import { accountsRecord, newAccount } from './users.ts';
import { Subaccounts } from '../accounts/subaccounts.ts';
import { Wallet } from '../wallet/wallet.ts';
import { BlockTrades } from '../blocktrades/state.ts';
import { BlockRfqs } from '../blockrfq/state.ts';
import { Combos } from '../combos/combos.ts';
import { ComboBooks } from '../combos/book.ts';
import { PortfolioMarginState } from '../risk/portfolio/state.ts';

export const SYSTEM_FEES = 'fees';
export const SYSTEM_INSURANCE = 'insurance';

export interface SystemAccounts {
  fees: Record<CurrencyCode, Account>;
  insurance: Record<CurrencyCode, Account>;
}

export interface ExchangeLimits {
  maxOpenOrdersPerInstrument: number;
  maxOpenOrdersPerUser: number;
  /** How many closed orders per user stay queryable. */
  closedOrdersKept: number;
  /** How many recent trades per user stay queryable (older ones leave memory and snapshots). */
  userTradesKept: number;
  /** An automatic index feed older than this makes trading refuse new orders. */
  indexStaleMs: number;
  /** An automatic index update moving more than this fraction at once is rejected (bad tick). */
  maxIndexJump: number;
  clientOrderIdTtlMs: number;
  /**
   * client_order_ids remembered per user: the newest this many (within the TTL); the oldest is
   * forgotten first. Equal to closedOrdersKept, so an id is not kept much longer than its order.
   */
  clientOrderIdsKept: number;
  /** Untriggered trigger orders per user (src/engine/triggers.ts; default 200). */
  maxUntriggeredPerUser?: number;
}

export const DEFAULT_LIMITS: ExchangeLimits = {
  maxOpenOrdersPerInstrument: 500,
  maxOpenOrdersPerUser: 5000,
  closedOrdersKept: 10000,
  userTradesKept: 10000,
  indexStaleMs: 30_000,
  maxIndexJump: 0.1,
  clientOrderIdTtlMs: 24 * 3600 * 1000,
  clientOrderIdsKept: 10_000,
};

/** Notified of order and trade changes while commands are applied; must not change the state. */
export interface EngineObserver {
  order(o: import('./types.ts').Order | TriggerOrder): void;
  trade(t: import('./types.ts').Trade): void;
  /** An MMP group triggered (its orders were cancelled in the same command). */
  mmpTrigger?(e: MmpTriggerEvent): void;
  /** A block trade request was made or changed state (src/blocktrades/approval.ts). */
  blockRequest?(r: import('../blocktrades/types.ts').BlockTradeRequest): void;
}

export { newAccount };

export class Exchange {
  now = 0;
  /** Bumped whenever an index, a vol or a mark may have changed; derived state, not serialized. */
  marginVersion = 0;
  seq = 0;
  nextUserId = 1;
  nextOrderId = 1;
  nextTradeId = 1;
  nextInstrumentId = 1;
  users = new Map<number, User>();
  usersByEmail = new Map<string, User>();
  instruments = new Map<string, Instrument>();
  instrumentsById = new Map<number, Instrument>();
  markets = new Map<number, InstrumentMarket>();
  books = new Map<number, OrderBook<import('./types.ts').Order>>();
  index = {} as Record<CurrencyCode, IndexState>;
  vol = {} as Record<CurrencyCode, VolState>;
  auth = new AuthState();
  /** API keys (src/auth/apiKeys.ts): only encrypted secrets. */
  apiKeys = new ApiKeys();
  /** Announcements and who read them (src/engine/announcements.ts). */
  announcements = new Announcements();
  /** Self-trade prevention settings other than the default (src/engine/selfTrade.ts). */
  selfTrading = new Map<number, SelfTradingConfig>();
  /** Products an account may not trade, when any (src/engine/disabledProducts.ts). */
  disabledProducts = new Map<number, TradingProduct[]>();
  /** Each account's newest logins (src/engine/accessLog.ts). */
  accessLog = new Map<number, AccessEntry[]>();
  nextAccessId = 1;
  system: SystemAccounts = { fees: accountsRecord(), insurance: accountsRecord() };
  /** The insurance account: its balances (`system.insurance`), the positions it took over from
   *  defaulting accounts, and its log (src/engine/defaults.ts). */
  insurance: InsuranceFund = { accounts: this.system.insurance, positions: new Map(), log: new Ledger() };
  /** Next id of an account log entry (src/engine/ledger.ts). */
  nextLogId = 1;
  /** Totals per currency of external money in and out: conservation is checked against these. */
  deposits = {} as Record<CurrencyCode, number>;
  /** Index points per currency, for the delivery-price TWAP (src/engine/settlement.ts). */
  indexHistory = {} as Record<CurrencyCode, IndexPoint[]>;
  /** Delivery prices of settled expiries, in settlement order. */
  deliveries: DeliveryRecord[] = [];
  /**
   * The latest trades of every instrument in id order (at most 2 x RECENT_TRADES_KEPT; derived, not
   * part of the state): read models take a command's new trades from its end instead of scanning
   * every instrument's list (1,400 of them on a busy venue) after each command that traded.
   */
  readonly recentTrades: import('./types.ts').Trade[] = [];
  /** Read models (src/views) see every applied command, live and in replay; they must not mutate. */
  viewObserver: ((cmd: Sequenced, result: unknown) => void) | null = null;
  withdrawals = {} as Record<CurrencyCode, number>;
  /** Users with account-scope cancel-on-disconnect (src/engine/cod.ts): their new connections start with it on. */
  codAccounts = new Set<number>();
  /** Users an administrator disabled (src/engine/userSecurity.ts): no credential of theirs authenticates. */
  disabledUsers = new Set<number>();
  /** Accounts in liquidation, `userId:currency` (src/engine/liquidation.ts), in the order flagged. */
  liquidating = new Set<string>();
  /** Margin models of the accounts and the operator's portfolio-margin parameters (src/risk/portfolio/state.ts). */
  readonly pm = new PortfolioMarginState();
  readonly trading: Trading;
  /** Market-maker protection: configs, counters, freezes (src/engine/mmp.ts). */
  readonly mmp: MmpState;
  /** Untriggered stop/take/trailing orders and their history (src/engine/triggers.ts). */
  readonly triggers: Triggers;
  /** Subaccounts and transfers between the accounts of one main account (src/accounts/). */
  readonly subaccounts: Subaccounts;
  /** Executed block trades and the signatures that may not execute (src/blocktrades/). */
  readonly blockTrades = new BlockTrades();
  /** Block RFQs, their quotes and makers (src/blockrfq/). */
  readonly blockRfqs = new BlockRfqs();
  /** Combos as instruments (src/combos/). */
  readonly combos: Combos;
  /** Combo order books (src/combos/book.ts). */
  readonly comboBooks: ComboBooks;
  /** Withdrawals, deposits, deposit addresses and the address book (src/wallet/). */
  readonly wallet = new Wallet();
  /** Sees every order and trade change as it is applied (live event fan-out; not part of the state). */
  observer: EngineObserver | null = null;

  constructor(readonly limits: ExchangeLimits = DEFAULT_LIMITS) {
    for (const c of CURRENCY_CODES) {
      this.deposits[c] = 0;
      this.withdrawals[c] = 0;
    }
    this.trading = new Trading(this);
    this.mmp = new MmpState(this);
    this.triggers = new Triggers(this);
    this.subaccounts = new Subaccounts(this);
    this.combos = new Combos(this);
    this.comboBooks = new ComboBooks(this);
  }

  /**
   * The refusal a command would get without changing anything, decided by reading the state only,
   * or null when it must be applied (and journaled). The sequencer answers such a command without
   * sequencing it: it gets no seq, no time, no journal record, and replay never sees it
   * (docs/architecture.md, "Refusals that change nothing"). Only commands whose refusal is proven
   * to touch nothing are listed: a refused `place` may create an empty exposure entry, which is
   * state, so it is still journaled.
   */
  refusalOf(cmd: Command): Reject | null {
    if (cmd.t === 'cancel') {
      const co = this.comboBooks.orderOf(cmd.userId, cmd.orderId);
      if (co !== undefined) return co.state === 'open' ? null : reject(ERR.ALREADY_CLOSED, undefined, 'order_id');
      const t = this.triggers.get(cmd.userId, cmd.orderId);
      return t !== undefined ? this.triggers.cancelRefusal(t) : this.trading.cancelRefusal(cmd.userId, cmd.orderId);
    }
    // a refused trigger placement touches nothing (no exposure is made for it); one with a
    // client_order_id is left to apply, which may answer a retry with the first order instead
    if (cmd.t === 'place' && cmd.trig !== undefined && cmd.clientOrderId === null) {
      const r = this.triggers.check({ ...cmd, trig: cmd.trig });
      return isReject(r) ? r : null;
    }
    return null;
  }

  /** Applies one command. Returns the domain result or a Reject; never throws for client input. */
  apply(cmd: Sequenced): unknown {
    if (cmd.ts > this.now) this.now = cmd.ts;
    this.seq = cmd.seq;
    const result = dispatchCommand(this, cmd);
    // the expiry of a leg (or the soft limit) ends a combo: its open orders are cancelled
    if (this.comboBooks.hasOpen()) this.comboBooks.closeInactive('settlement');
    // an MMP trigger during the command cancels its group's orders within the same command, before
    // trigger orders the command's price moves reached are placed (they must not meet those quotes),
    // and again after them (their fills count too)
    this.mmp.fire();
    this.triggers.run();
    this.mmp.fire();
    this.viewObserver?.(cmd, result);
    return result;
  }

  // ---- users and money -------------------------------------------------------------------------
  // (create_user is applied in src/engine/users.ts, deposit and withdraw in src/engine/depositWithdraw.ts)

  hasAdmin(): boolean {
    for (const u of this.users.values()) if (u.role === 'admin') return true;
    return false;
  }

  // ---- market ----------------------------------------------------------------------------------
  // (the index and list commands are applied in src/engine/marketState.ts)

  /** Marks depend on index, vol and time to expiry; they are recomputed when index or vol move. */
  refreshMarks(currency: CurrencyCode): void {
    // index, vol or marks moved: every margin figure derived from them is stale (RiskEngine caches)
    this.marginVersion++;
    this.triggers.marksMoved(currency);
    const idx = this.index[currency];
    if (!idx) return;
    const vol = this.vol[currency];
    for (const m of this.markets.values()) {
      if (m.inst.currency === currency && m.inst.state === 'open') refreshMarket(m, idx.price, vol, this.now);
    }
  }

  /** Whether an account is flagged for liquidation (src/engine/liquidation.ts). */
  inLiquidation(userId: number, currency: CurrencyCode): boolean {
    return this.liquidating.size > 0 && this.liquidating.has(liquidationKey(userId, currency));
  }

  indexPrice(currency: CurrencyCode): number {
    return this.index[currency]?.price ?? NaN;
  }

  /** Per currency: sum of all balances (users + system) and what it must equal. */
  conservation(): Record<CurrencyCode, { balances: number; expected: number }> {
    const out = {} as Record<CurrencyCode, { balances: number; expected: number }>;
    for (const c of CURRENCY_CODES) {
      // transfers to other users held while prepared (src/accounts/userTransfers.ts) and pending
      // withdrawals (out of their owner's balance, not yet out of the venue) are still money
      let sum = this.system.fees[c].balance + this.system.insurance[c].balance + this.subaccounts.users.held[c] + this.wallet.pending[c];
      for (const u of this.users.values()) sum += u.accounts[c].balance;
      out[c] = { balances: sum, expected: this.deposits[c] - this.withdrawals[c] };
    }
    return out;
  }

  decimals(c: CurrencyCode): number {
    return CURRENCIES[c].decimals;
  }
}
