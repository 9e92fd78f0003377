// The exchange state machine: the single writer applies sequenced commands here, one at a time.
// Deterministic: time comes from the command, ids from counters in the state; no I/O.
import { CURRENCIES, CURRENCY_CODES, type CurrencyCode } from '../domain/currency.ts';
import { ERR, isReject, reject, type Reject } from '../domain/errors.ts';
import type { Instrument } from '../domain/instrument.ts';
import { AuthState } from '../auth/authState.ts';
import { ApiKeys } from '../auth/apiKeys.ts';
import { Announcements } from './announcements.ts';
import { recordAccess, type AccessEntry } from './accessLog.ts';
import { optionsRefusal, setDisabledProducts, type TradingProduct } from './disabledProducts.ts';
import { cancelOwnMakers, cancelOwnMakersForEdit, setSelfTradingConfig, type SelfTradingConfig } from './selfTrade.ts';
import { computeMarket, refreshMarket } from '../market/marks.ts';
import type { Command, InstrumentSpec, Sequenced } from './commands.ts';
import { OrderBook } from './orderBook.ts';
import { Trading } from './trading.ts';
import { TriggerOrder, Triggers } from './triggers.ts';
import { recordIndex, settleExpiry, type DeliveryRecord, type IndexPoint } from './settlement.ts';
import { liquidate, liquidationKey } from './liquidation.ts';
import { post, type InsuranceFund } from './defaults.ts';
import { MmpState, type MmpTriggerEvent } from './mmp.ts';
import { cancelQuotes, massQuote } from './massQuote.ts';
import { applyCodAccount, applyCodMark, markPlaced } from './cod.ts';
import type { Account, DepositRecord, IndexState, InstrumentMarket, User, VolState } from './types.ts';
import { Ledger } from './ledger.ts';
import { accountsRecord, blankUser, newAccount } from './users.ts';
import { Subaccounts } from '../accounts/subaccounts.ts';
import { applyTransfer } from '../accounts/transfers.ts';
import { applyMovePositions } from '../accounts/movePositions.ts';
import { Wallet } from '../wallet/wallet.ts';
import { applyWallet, recordSandboxDeposit } from '../wallet/apply.ts';
import { WALLET_COMMANDS, type WalletCommand } from '../wallet/types.ts';
import { changePassword, setUserDisabled } from './userSecurity.ts';
import { BlockTrades } from '../blocktrades/state.ts';
import { BlockRfqs } from '../blockrfq/state.ts';
import { applyRfq } from '../blockrfq/engine.ts';
import { RFQ_COMMANDS, type RfqCommand } from '../blockrfq/types.ts';
import { Combos } from '../combos/combos.ts';
import { invalidateSignature } from '../blocktrades/execute.ts';
import { approveRequest, blockTradeOrRequest, rejectRequest, setApproval } from '../blocktrades/approval.ts';
import { ComboBooks } from '../combos/book.ts';
import { PortfolioMarginState } from '../risk/portfolio/state.ts';
import { changeMarginModel } from '../risk/portfolio/switch.ts';

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
    const result = this.dispatch(cmd);
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

  private dispatch(c: Command): unknown {
    if (WALLET_COMMANDS.has(c.t)) return applyWallet(this, c as WalletCommand);
    if (RFQ_COMMANDS.has(c.t)) return applyRfq(this, c as RfqCommand);
    switch (c.t) {
      case 'create_user':
        return this.createUser(c);
      case 'issue_token': {
        if (!this.users.has(c.userId)) return reject(ERR.UNAUTHORIZED);
        if (this.disabledUsers.has(c.userId)) return reject(ERR.UNAUTHORIZED, 'user_disabled');
        if (!this.subaccounts.loginAllowed(c.userId)) return reject(ERR.FORBIDDEN, 'subaccount_login_disabled');
        if (c.replaces !== null) {
          // a refresh token is single-use: of two concurrent refreshes only the first wins
          const old = this.auth.refresh.get(c.replaces);
          if (!old || old.expiresAt <= this.now) return reject(ERR.UNAUTHORIZED, 'invalid_refresh_token');
          this.auth.consumeRefresh(c.replaces);
        }
        this.auth.issue(c.userId, c.access, c.refresh, c.scope, this.now, c.accessTtl, c.refreshTtl);
        if (c.login !== undefined) recordAccess(this, c.userId, c.login.ip, c.login.grant);
        return true;
      }
      case 'revoke_token':
        return this.auth.revokeAccess(c.access);
      case 'change_password':
        return changePassword(this, c);
      case 'set_user_disabled':
        return setUserDisabled(this, c);
      case 'create_invite': {
        if (this.auth.invites.has(c.code)) return reject(ERR.INVALID_ARGUMENTS, 'duplicate_code');
        const inv = {
          code: c.code,
          maxUses: c.maxUses,
          uses: 0,
          expiresAt: this.now + c.expiresIn * 1000,
          note: c.note,
          createdBy: c.by,
          created: this.now,
          revoked: false,
        };
        this.auth.invites.set(c.code, inv);
        return inv;
      }
      case 'revoke_invite': {
        const inv = this.auth.invites.get(c.code);
        if (!inv) return reject(ERR.NOT_FOUND, 'invite_code_unknown', 'code');
        inv.revoked = true;
        return inv;
      }
      case 'deposit':
        return this.deposit(c);
      case 'withdraw':
        return this.withdraw(c);
      case 'place': {
        const disabled = optionsRefusal(this, c.userId, c.reduceOnly);
        if (disabled !== null) return disabled;
        const combo = this.combos.byId.get(c.instrument);
        if (combo !== undefined) {
          const cr = this.comboBooks.place(c, combo);
          if (c.cod === true) markPlaced(cr);
          return cr;
        }
        // cancel_maker self-trade prevention: the own orders this one would meet go first
        if (c.trig === undefined && !c.postOnly && (c.type === 'market' || c.price !== null)) cancelOwnMakers(this, c.userId, c.instrument, c.side, c.type === 'market' ? NaN : c.price!, c.lots);
        const r = c.trig !== undefined ? this.triggers.place({ ...c, trig: c.trig }) : this.trading.place(c);
        if (c.cod === true) markPlaced(r);
        return r;
      }
      case 'cancel': {
        if (this.comboBooks.orderOf(c.userId, c.orderId) !== undefined) return this.comboBooks.cancel(c.userId, c.orderId);
        const t = this.triggers.get(c.userId, c.orderId);
        if (t === undefined) return this.trading.cancelByUser(c.userId, c.orderId);
        return this.triggers.cancelRefusal(t) ?? this.triggers.cancel(t, 'user_request');
      }
      case 'cancel_all': {
        const types = c.types ?? 'all';
        const options = c.kind !== 'option_combo';
        const regular = options && (types === 'all' || types === 'limit') ? this.trading.cancelAll(c) : [];
        // combo orders are limit orders (no trigger orders on combos); comboBooks.cancelAll reads c.kind
        if ((types === 'all' || types === 'limit') && this.comboBooks.hasOpen()) regular.push(...this.comboBooks.cancelAll(c));
        const triggers = options ? this.triggers.cancelAll(c, types) : [];
        return triggers.length === 0 ? regular : [...regular, ...triggers];
      }
      case 'index':
        return this.setIndex(c.currency, c.price, c.manual);
      case 'set_vol': {
        // refused before anything changes: a NaN smile would make refreshMarks throw half-way, and the
        // journal (JSON) would replay it as null, i.e. as a different command
        if (![c.atmVol, c.skew, c.curvature].every(Number.isFinite) || !(c.atmVol > 0)) return reject(ERR.INVALID_ARGUMENTS, 'volatility_invalid', 'atm_vol');
        this.vol[c.currency] = { atmVol: c.atmVol, skew: c.skew, curvature: c.curvature };
        this.refreshMarks(c.currency);
        return this.vol[c.currency];
      }
      case 'halt': {
        const inst = this.instruments.get(c.instrument);
        if (!inst) return reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
        inst.halted = c.halted;
        if (c.halted) {
          this.trading.cancelInstrument(inst, 'instrument_halted');
          this.triggers.cancelInstrument(inst, 'instrument_halted');
        }
        return inst;
      }
      case 'list':
        return this.list(c.instruments);
      case 'expire_orders':
        return this.trading.expireOrders() + this.triggers.expire().length + this.comboBooks.expire();
      case 'settle': {
        const r = settleExpiry(this, c.currency, c.expiry);
        // trigger orders of the delivered series can never fire: cancelled with the expiry
        this.triggers.cancelClosedInstruments('settlement');
        return r;
      }
      case 'cancel_orders': {
        const orders = this.trading.cancelOrders(c.userId, c.orderIds, c.reason);
        if (this.comboBooks.hasOpen()) orders.push(...this.comboBooks.cancelOrders(c.userId, c.orderIds, c.reason));
        this.triggers.cancelIds(c.userId, c.orderIds, c.reason);
        return orders;
      }
      case 'create_api_key':
        if (!this.users.has(c.userId)) return reject(ERR.UNAUTHORIZED);
        return this.apiKeys.create(c.userId, c.clientId, c.encSecret, c.scope, c.name, this.now);
      case 'remove_api_key':
        return this.apiKeys.remove(c.userId, c.id);
      case 'update_api_key':
        return this.apiKeys.update(c.userId, c.id, c.change);
      case 'publish_announcement':
        return this.announcements.publish(c, this.now);
      case 'read_announcement':
        return this.announcements.markRead(c.userId, c.id);
      case 'set_self_trading_config':
        return setSelfTradingConfig(this, c);
      case 'set_disabled_trading_products':
        return setDisabledProducts(this, c);
      case 'edit': {
        const co = this.comboBooks.orderOf(c.userId, c.orderId);
        if (co !== undefined) {
          const cr = this.comboBooks.edit(c, this.combos.byId.get(co.inst.name)!);
          if (c.cod === true) markPlaced(cr);
          return cr;
        }
        const t = this.triggers.get(c.userId, c.orderId);
        if (t === undefined) cancelOwnMakersForEdit(this, c);
        const r = t !== undefined ? this.triggers.edit(c, t) : this.trading.edit(c);
        if (c.cod === true) markPlaced(r);
        return r;
      }
      case 'liquidate':
        return liquidate(this, c.userId, c.currency);
      case 'set_mmp_config':
        return this.mmp.setConfig(c);
      case 'reset_mmp':
        return this.mmp.reset(c.userId, c.indexName, c.group);
      case 'mass_quote': {
        const disabled = optionsRefusal(this, c.userId, false);
        if (disabled !== null) return disabled;
        const r = massQuote(this, c);
        if (c.cod === true) markPlaced(r);
        return r;
      }
      case 'cod_account':
        return applyCodAccount(this, c);
      case 'cod_mark':
        return applyCodMark(this, c);
      case 'cancel_quotes':
        return cancelQuotes(this, c);
      case 'create_subaccount':
        return this.subaccounts.create(c);
      case 'rename_subaccount':
        return this.subaccounts.rename(c);
      case 'subaccount_login':
        return this.subaccounts.setLogin(c);
      case 'remove_subaccount':
        return this.subaccounts.remove(c);
      case 'transfer':
        return applyTransfer(this, c);
      case 'subaccount_email':
        return this.subaccounts.setEmail(c);
      case 'subaccount_notifications':
        return this.subaccounts.setNotifications(c);
      case 'user_transfer':
        return this.subaccounts.users.submit(c);
      case 'cancel_transfer':
        return this.subaccounts.users.cancel(c);
      case 'confirm_transfers':
        return this.subaccounts.users.confirmDue();
      case 'move_positions':
        return applyMovePositions(this, c);
      case 'block_trade':
        return blockTradeOrRequest(this, c);
      case 'block_approval':
        return setApproval(this, c);
      case 'block_approve':
        return approveRequest(this, c);
      case 'block_reject':
        return rejectRequest(this, c);
      case 'block_invalidate':
        return invalidateSignature(this, c);
      case 'create_combo':
        return this.combos.create(c);
      case 'change_margin_model':
        return changeMarginModel(this, c.userId, c.model);
      case 'set_pm_params': {
        if (this.users.get(c.by)?.role !== 'admin') return reject(ERR.FORBIDDEN, 'admin_required');
        const bad = this.pm.setParams(c.params);
        return bad === null ? this.pm.params : reject(ERR.INVALID_ARGUMENTS, 'invalid_parameter', bad);
      }
    }
  }

  // ---- users and money -------------------------------------------------------------------------

  private createUser(c: Extract<Command, { t: 'create_user' }>): User | Reject {
    const key = c.email.toLowerCase();
    if (this.usersByEmail.has(key)) return reject(ERR.INVALID_ARGUMENTS, 'email_taken', 'email');
    // the bootstrap path (no acting admin) works only while no administrator exists
    if (c.role === 'admin' && c.by === null && this.hasAdmin()) return reject(ERR.FORBIDDEN, 'bootstrap_closed');
    if (c.by !== null && this.users.get(c.by)?.role !== 'admin') return reject(ERR.FORBIDDEN, 'admin_required');
    if (c.inviteCode !== null) {
      const status = this.auth.inviteStatus(c.inviteCode, this.now);
      if (status !== 'ok') return reject(ERR.INVALID_ARGUMENTS, status === 'unknown' ? 'invite_code_invalid' : `invite_code_${status}`, 'invite_code');
      this.auth.invites.get(c.inviteCode)!.uses++;
    }
    const user = blankUser(this.nextUserId++, c.email, c.role, c.passwordHash, this.now);
    this.users.set(user.id, user);
    this.usersByEmail.set(key, user);
    return user;
  }

  hasAdmin(): boolean {
    for (const u of this.users.values()) if (u.role === 'admin') return true;
    return false;
  }

  private deposit(c: Extract<Command, { t: 'deposit' }>): DepositRecord | Reject {
    const user = this.users.get(c.userId);
    if (!user) return reject(ERR.NOT_FOUND, 'user_not_found', 'user_id');
    if (c.depositId !== null) {
      const prev = user.depositIds.get(c.depositId);
      if (prev) return prev;
    }
    const acct = user.accounts[c.currency];
    // money is a positive safe integer of minor units; anything else is refused, never applied
    if (!(Number.isSafeInteger(c.amount) && c.amount > 0 && Number.isSafeInteger(acct.balance + c.amount) && Number.isSafeInteger(this.deposits[c.currency] + c.amount))) {
      return reject(ERR.INVALID_PARAMS, 'invalid_amount', 'amount');
    }
    post(this, user, c.currency, c.amount, 'deposit', null, null);
    acct.deposited += c.amount;
    this.deposits[c.currency] += c.amount;
    const rec: DepositRecord = {
      depositId: c.depositId ?? `d${this.seq}`,
      userId: user.id,
      currency: c.currency,
      amount: c.amount,
      balance: acct.balance,
      timestamp: this.now,
    };
    // only client keys go into the idempotency map: a generated id ("d<seq>") stored there would
    // swallow a later client deposit that happens to use the same text as its deposit_id
    if (c.depositId !== null) user.depositIds.set(rec.depositId, rec);
    recordSandboxDeposit(this, rec);
    return rec;
  }

  private withdraw(c: Extract<Command, { t: 'withdraw' }>): { balance: number; amount: number } | Reject {
    const user = this.users.get(c.userId);
    if (!user) return reject(ERR.NOT_FOUND, 'user_not_found');
    if (!(Number.isSafeInteger(c.amount) && c.amount > 0)) return reject(ERR.INVALID_PARAMS, 'invalid_amount', 'amount');
    // a subaccount's money leaves the venue through its main account (src/accounts/transfers.ts)
    if (this.subaccounts.isSubaccount(user.id)) return reject(ERR.FORBIDDEN, 'main_account_only');
    // the cash rules (docs/api-notes.md): what is left covers the cash promised to open buys and the
    // initial margin, and no account of the user is below zero or below maintenance margin
    // (risk.account applies them all; the reasons name the last two)
    if (this.trading.risk.hasNegativeBalance(user)) return reject(ERR.NOT_ENOUGH_FUNDS, 'negative_balance', 'currency');
    if (this.trading.risk.inDistress(user)) return reject(ERR.NOT_ENOUGH_FUNDS, 'account_below_maintenance', 'currency');
    const risk = this.trading.risk.account(user, c.currency);
    if (c.amount > risk.availableWithdrawal) return reject(ERR.NOT_ENOUGH_FUNDS, 'withdrawal_exceeds_available', 'amount');
    const acct = user.accounts[c.currency];
    post(this, user, c.currency, -c.amount, 'withdrawal', null, null);
    acct.withdrawn += c.amount;
    this.withdrawals[c.currency] += c.amount;
    return { balance: acct.balance, amount: c.amount };
  }

  // ---- market ----------------------------------------------------------------------------------

  private setIndex(currency: CurrencyCode, price: number, manual: boolean): IndexState | Reject {
    if (!(price > 0) || !Number.isFinite(price)) return reject(ERR.INVALID_ARGUMENTS, 'index_price_invalid', 'price');
    const prev = this.index[currency];
    // a feed's jump beyond the bound is a bad print, not a market move; admins may set anything
    if (!manual && prev && !prev.manual && Math.abs(price - prev.price) > this.limits.maxIndexJump * prev.price) {
      return reject(ERR.INVALID_ARGUMENTS, 'index_jump_too_large', 'price');
    }
    this.index[currency] = { price, ts: this.now, manual };
    recordIndex(this, currency, this.now, price);
    this.triggers.indexMoved(currency);
    if (!this.vol[currency]) this.vol[currency] = { atmVol: 0.6, skew: -0.1, curvature: 0.5 };
    this.refreshMarks(currency);
    return this.index[currency];
  }

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

  private list(specs: InstrumentSpec[]): Instrument[] {
    const out: Instrument[] = [];
    for (const s of specs) {
      if (this.instruments.has(s.name)) continue;
      const inst: Instrument = {
        id: this.nextInstrumentId++,
        name: s.name,
        currency: s.currency,
        optionType: s.optionType,
        strike: s.strike,
        expiry: s.expiry,
        created: this.now,
        settlementPeriod: s.settlementPeriod,
        contractSize: s.contractSize,
        tick: s.tick,
        tickSteps: s.tickSteps,
        lotScaled: s.lotScaled,
        makerCommission: s.makerCommission,
        takerCommission: s.takerCommission,
        state: 'open',
        halted: false,
        deliveryPrice: null,
      };
      this.instruments.set(inst.name, inst);
      this.instrumentsById.set(inst.id, inst);
      this.books.set(inst.id, new OrderBook());
      const idx = this.index[inst.currency];
      const vol = this.vol[inst.currency] ?? { atmVol: 0.6, skew: -0.1, curvature: 0.5 };
      this.markets.set(inst.id, computeMarket(inst, idx ? idx.price : NaN, vol, this.now));
      out.push(inst);
    }
    return out;
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
