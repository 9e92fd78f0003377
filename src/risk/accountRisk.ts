// Account valuation and margin (API.md 3.4 vocabulary, 5.3 formulas), computed on demand from the
// user's positions and open-order exposures in one currency. Results are integer minor units. One
// position's or one instrument's orders' standard margin, and the running totals' entries, are in
// positionMargin.ts.
import { CURRENCY_CODES, type CurrencyCode } from '../domain/currency.ts';
import type { Instrument } from '../domain/instrument.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { Order, OrderExposure, Position, User } from '../engine/types.ts';
import { exposureIM, imPerContract, mmPerContract, perCurrency, positionIM, positionMM, positionValue, type OrdersMargin, type PositionTotals, type PositionsAggregate } from './positionMargin.ts';
import { crossMaxWithdrawal, crossSums, type CrossSums } from './crossPool.ts';
import { PmRisk, type PmFigures } from './portfolio/pmRisk.ts';
import { isCrossModel, isPortfolioModel, type MarginModel } from './portfolio/state.ts';

export { contractsOf, shortOpeningLots, type PositionTotals } from './positionMargin.ts';

export interface AccountRisk {
  currency: CurrencyCode;
  balance: number;
  optionsValue: number;
  equity: number;
  positionsIM: number;
  ordersIM: number;
  initialMargin: number;
  maintenanceMargin: number;
  available: number;
  availableWithdrawal: number;
}

export class RiskEngine {
  // Order entry needs the account's margin for every order. Summing every exposure each time costs
  // O(instruments the account trades) in scattered memory (a market maker quoting hundreds of
  // series), so the orders' part is a running total: an exposure that changes moves the total by
  // the difference in what it holds (`exposureChanged`), and a move in index, vol or marks makes
  // the next use recompute it in full. test/property/conservation/invariants.ts checks it
  // against the full sum after every batch of random commands.
  private readonly ordersMargin = new WeakMap<User, Map<CurrencyCode, OrdersMargin>>();
  private readonly held = new WeakMap<OrderExposure, number>();
  // The same for positions: order entry values the account's positions, and summing them each time
  // cost a market maker with 200 positions 22 us per order (4-5x an account without). A position
  // that changes moves the totals by the difference in what it counts for (`positionChanged`).
  private readonly positionsAggregate = new WeakMap<User, Map<CurrencyCode, PositionsAggregate>>();
  private readonly counted = new WeakMap<Position, PositionTotals>();
  // And for the cash open buys promise (`freeCash`), which no mark moves: once summed, a running
  // total stays valid, kept by exposureChanged. A market maker quoting 1,000 series would otherwise
  // walk 1,000 exposures for every buy.
  private readonly reservedTotals = new WeakMap<User, Map<CurrencyCode, number>>();
  private readonly reservedCounted = new WeakMap<OrderExposure, number>();

  /** Portfolio margin of accounts on a portfolio model (issue 35): positions' IM and MM, orders' IM. */
  readonly pm: PmRisk;
  /** An account valued as if on (true) or off (false) portfolio margin: change_margin_model's what-if. */
  private override: { userId: number; model: MarginModel } | null = null;

  constructor(private readonly ex: Exchange) {
    this.pm = new PmRisk(ex);
  }

  /** Whether the account is margined by portfolio margin (its model, or the what-if in progress). */
  isPm(user: User): boolean {
    if (this.override !== null && this.override.userId === user.id) return isPortfolioModel(this.override.model);
    return this.ex.pm.isPm(user.id);
  }

  /** The account's model (or the what-if in progress). */
  private modelOf(user: User): MarginModel {
    if (this.override !== null && this.override.userId === user.id) return this.override.model;
    return this.ex.pm.models.size === 0 ? 'segregated_sm' : this.ex.pm.model(user.id);
  }

  /** Whether the account is on cross-currency portfolio margin (src/risk/portfolio/cross.ts). */
  isCrossPm(user: User): boolean {
    return this.modelOf(user) === 'cross_pm';
  }

  /** Whether the account's collateral is pooled across currencies: cross_pm or cross_sm (cross.ts). */
  isCross(user: User): boolean {
    return isCrossModel(this.modelOf(user));
  }

  /** Runs `f` with the account valued as if on `model` (true: segregated PM, false: standard); reads only. */
  asIf<T>(user: User, model: MarginModel | boolean, f: () => T): T {
    const was = this.override;
    this.override = { userId: user.id, model: model === true ? 'segregated_pm' : model === false ? 'segregated_sm' : model };
    try {
      return f();
    } finally {
      this.override = was;
    }
  }

  /**
   * For an account on portfolio margin, the initial margin an order of `buyLots`/`sellLots` in `inst`
   * adds (negative when it lowers the requirement: a hedge), as if it all rested; null otherwise.
   */
  pmOrderIM(user: User, inst: Instrument, buyLots: number, sellLots: number): number | null {
    if (!this.isPm(user)) return null;
    if (this.isCrossPm(user)) {
      // `requirements` adds the resting combo orders' hold to the figures now: the same on the after side
      const f = this.pm.withOrders(user, inst, buyLots, sellLots);
      const after = { ...f, initialMarginWithOrders: f.initialMarginWithOrders + this.comboHeld(user, inst.currency, false) };
      return this.crossSums(user, inst.currency).initialWithOrders - this.crossSums(user, inst.currency, after).initialWithOrders;
    }
    return this.pm.withOrders(user, inst, buyLots, sellLots).initialMarginWithOrders - this.pm.figures(user, inst.currency).initialMarginWithOrders;
  }

  /**
   * Whether a portfolio-margin account carries an order: `cash` (a buy's premium and fee) out of the
   * free cash, and `pmIM` (pmOrderIM) out of the funds available. A resting buy's premium is cash
   * set aside, not margin: once filled it is the long's value in equity, whose scenario loss pmIM counts.
   */
  pmCovers(user: User, currency: CurrencyCode, cash: number, pmIM: number): boolean {
    if (!Number.isFinite(cash + pmIM)) return false;
    if (cash > 0 && this.freeCash(user, currency) - cash < 0) return false;
    return this.available(user, currency) - pmIM >= 0 || pmIM <= 0;
  }

  /**
   * Cross standard margin: whether the pool carries `extraIM` more initial margin in `currency` (an
   * order's standard requirement: a buy's premium and fee, a sell's short margin), `cash` of it out of
   * the free cash. The pooled surplus is recomputed with the currency's requirement raised (a
   * shortfall counts at 1 + haircut, so `available - extraIM` would not do), and must stay >= 0.
   */
  crossSmCovers(user: User, currency: CurrencyCode, extraIM: number, cash: number): boolean {
    if (!Number.isFinite(extraIM + cash)) return false;
    if (cash > 0 && this.freeCash(user, currency) - cash < 0) return false;
    return this.crossInitialAfter(user, currency, 0, extraIM) >= 0;
  }

  /**
   * Cross models: the pooled initial surplus (open orders included) in `currency` were the currency's
   * equity and its own requirement moved by these amounts (minor units): a multi-leg trade's check
   * (block trades, combos), where a linear `available + change` would miss the haircut.
   */
  crossInitialAfter(user: User, currency: CurrencyCode, equityChange: number, requirementChange: number): number {
    if (!Number.isFinite(equityChange + requirementChange)) return NaN;
    const now = this.requirements(user, currency, false);
    const after = { ...now, initialMarginWithOrders: now.initialMarginWithOrders + requirementChange };
    return this.crossSums(user, currency, after, false, equityChange).initialWithOrders;
  }

  /**
   * What the account's resting combo orders hold in its initial margin outside the scenario engine
   * (src/combos/orderMargin.ts): standard margin's hold, or on portfolio margin the fills' loss at
   * mark and fees (the legs' risk is in the scenario figures, pmRisk.ts).
   */
  comboHeld(user: User, currency: CurrencyCode, fresh: boolean): number {
    const h = this.ex.comboBooks.heldBy(user.id, currency, fresh);
    return this.isPm(user) ? h.pmIm : h.im;
  }

  /**
   * What `lots` more of `side` resting in combo `comboId` would add to the account's own requirement
   * in `currency` (its initial margin with orders): standard margin, the order's hold; portfolio
   * margin, the scenario figure with the combo's open lots raised, less the figure now, plus the
   * hold's loss at mark and fees. `hold`: the order's (orderMargin.ts comboHold).
   */
  comboRestIM(user: User, currency: CurrencyCode, comboId: string, side: 0 | 1, lots: number, hold: { im: number; pmIm: number }): number {
    if (!this.isPm(user)) return hold.im;
    const after = this.pm.withChanges(user, currency, [], { id: comboId, side, lots });
    return after.initialMarginWithOrders - this.pm.figures(user, currency).initialMarginWithOrders + hold.pmIm;
  }

  /**
   * The initial margin one open combo order holds (get_order_margin_by_ids): standard margin, its
   * hold; portfolio margin, what its lots add to the scenario figure (the figure less the figure
   * without them) plus its loss at mark and fees.
   */
  comboOrderIM(user: User, o: Order): number {
    const h = this.ex.comboBooks.holds.of(o);
    if (!this.isPm(user)) return h.im;
    const c = o.inst.currency;
    const without = this.pm.withChanges(user, c, [], { id: o.inst.name, side: o.side as 0 | 1, lots: -o.remaining });
    return this.pm.figures(user, c).initialMarginWithOrders - without.initialMarginWithOrders + h.pmIm;
  }

  /** Call after an account's open lots in a combo changed (src/combos/book.ts): the scenario sums follow. */
  comboChanged(user: User, currency: CurrencyCode, comboId: string): void {
    this.pm.comboChanged(user, currency, comboId);
  }

  /** Call after an exposure's open lots or reservation, or the position in its instrument, changed. */
  exposureChanged(user: User, e: OrderExposure): void {
    this.pm.legChanged(user, e.inst);
    const reservedByCurrency = this.reservedTotals.get(user);
    const reserved = reservedByCurrency?.get(e.inst.currency);
    if (reserved !== undefined) {
      // an exposure made after the total was summed counted 0 then: it starts with nothing reserved
      reservedByCurrency!.set(e.inst.currency, reserved + e.buyReserved - (this.reservedCounted.get(e) ?? 0));
      this.reservedCounted.set(e, e.buyReserved);
    }
    const agg = this.ordersMargin.get(user)?.get(e.inst.currency);
    if (agg === undefined || agg.version !== this.ex.marginVersion) return; // recomputed when next used
    const now = this.heldBy(user, e);
    agg.total += now - (this.held.get(e) ?? 0);
    this.held.set(e, now);
  }

  /** Call after a fill changed a position's size. */
  positionChanged(user: User, p: Position): void {
    this.pm.legChanged(user, p.inst);
    const agg = this.positionsAggregate.get(user)?.get(p.inst.currency);
    if (agg === undefined || agg.version !== this.ex.marginVersion) return; // recomputed when next used
    const now = this.positionTotals(p);
    const before = this.counted.get(p);
    agg.value += now.value - (before?.value ?? 0);
    agg.initialMargin += now.initialMargin - (before?.initialMargin ?? 0);
    agg.maintenanceMargin += now.maintenanceMargin - (before?.maintenanceMargin ?? 0);
    this.counted.set(p, now);
    // a NaN (a mark without an index) would stay in a running sum for good: start again instead
    if (!Number.isFinite(agg.value + agg.initialMargin + agg.maintenanceMargin)) this.positionsAggregate.get(user)!.delete(p.inst.currency);
  }

  /** Call when positions change outside order flow (settlement): the next use recomputes in full.
   *  (Settled series hold no open orders, so for the orders' total this is only a safeguard.) */
  accountChanged(user: User): void {
    this.ordersMargin.delete(user);
    this.positionsAggregate.delete(user);
    this.pm.accountChanged(user);
  }

  /** The account's positions in one currency, from the running totals when valid. */
  positions(user: User, currency: CurrencyCode): PositionTotals {
    const standard = this.standardPositions(user, currency);
    // cross models: the currency's equity less the pooled surplus in it (below zero when the other
    // currencies carry this one's requirement and more)
    if (this.isCross(user)) {
      const x = this.crossSums(user, currency);
      const equity = user.accounts[currency].balance + standard.value;
      return { value: standard.value, initialMargin: equity - x.initial, maintenanceMargin: equity - x.maintenance };
    }
    if (!this.isPm(user)) return standard;
    // portfolio margin: the value at mark as ever, the margins from the scenario sums
    const f = this.pm.figures(user, currency);
    return { value: standard.value, initialMargin: f.initialMargin, maintenanceMargin: f.maintenanceMargin };
  }

  /**
   * A currency's own requirement under the account's model, before any pooling: segregated portfolio
   * margin's figures (cross_pm), or standard margin's (cross_sm: the positions' IM and MM, and the
   * positions' IM plus the open orders' IM). What the cross pool (src/risk/portfolio/cross.ts)
   * weighs against each currency's equity. `fresh`: from full sums, touching no running total.
   */
  requirements(user: User, currency: CurrencyCode, fresh: boolean): PmFigures {
    // resting combo orders hold their own figure (src/combos/orderMargin.ts) on every model (on
    // portfolio margin their legs are in the scenario figures too)
    const combos = this.comboHeld(user, currency, fresh);
    if (this.isPm(user)) {
      const f = fresh ? this.pm.freshFigures(user, currency) : this.pm.figures(user, currency);
      return combos === 0 ? f : { ...f, initialMarginWithOrders: f.initialMarginWithOrders + combos };
    }
    const p = fresh ? this.addUpPositions(user, currency, false) : this.standardPositions(user, currency);
    const orders = fresh ? this.sumStandardOrdersIM(user, currency) : this.standardOrdersIM(user, currency);
    return { maintenanceMargin: p.maintenanceMargin, initialMargin: p.initialMargin, initialMarginWithOrders: p.initialMargin + orders + combos };
  }

  /** Cross models: the pooled surpluses in `currency` (src/risk/crossPool.ts). */
  crossSums(user: User, currency: CurrencyCode, replace?: PmFigures, fresh = false, equityChange = 0): CrossSums {
    return crossSums(this.ex, this, user, currency, replace, fresh, equityChange);
  }

  /** The value at mark of the account's positions in one currency (`fresh`: the full sum, touching no running total). */
  positionsValue(user: User, currency: CurrencyCode, fresh: boolean): number {
    return fresh ? this.addUpPositions(user, currency, false).value : this.standardPositions(user, currency).value;
  }

  /** The maintenance margin in the instrument's currency were the position changed by `lots` (PM liquidation's choice). */
  pmMaintenanceWithPosition(user: User, inst: Instrument, lots: number): number {
    const after = this.pm.withPosition(user, inst, lots);
    if (!this.isCrossPm(user)) return after.maintenanceMargin;
    const equity = user.accounts[inst.currency].balance + this.standardPositions(user, inst.currency).value;
    return equity - this.crossSums(user, inst.currency, after).maintenance;
  }

  private standardPositions(user: User, currency: CurrencyCode): PositionTotals {
    const byCurrency = perCurrency(this.positionsAggregate, user);
    const agg = byCurrency.get(currency);
    if (agg !== undefined && agg.version === this.ex.marginVersion) return agg;
    const fresh: PositionsAggregate = { version: this.ex.marginVersion, ...this.addUpPositions(user, currency, true) };
    byCurrency.set(currency, fresh);
    return fresh;
  }

  /** The full sum over the account's positions, without touching the running totals (for checks). */
  sumPositions(user: User, currency: CurrencyCode): PositionTotals {
    const sum = this.addUpPositions(user, currency, false);
    if (this.isCross(user)) {
      const x = this.crossSums(user, currency, undefined, true);
      const equity = user.accounts[currency].balance + sum.value;
      return { value: sum.value, initialMargin: equity - x.initial, maintenanceMargin: equity - x.maintenance };
    }
    if (!this.isPm(user)) return sum;
    const f = this.pm.freshFigures(user, currency);
    return { value: sum.value, initialMargin: f.initialMargin, maintenanceMargin: f.maintenanceMargin };
  }

  /** Sums the positions in one currency; `remember` notes what each counts for (positionChanged). */
  private addUpPositions(user: User, currency: CurrencyCode, remember: boolean): PositionTotals {
    const sum: PositionTotals = { value: 0, initialMargin: 0, maintenanceMargin: 0 };
    for (const p of user.positions.values()) {
      if (p.inst.currency !== currency) continue;
      const t = this.positionTotals(p);
      if (remember) this.counted.set(p, t);
      sum.value += t.value;
      sum.initialMargin += t.initialMargin;
      sum.maintenanceMargin += t.maintenanceMargin;
    }
    return sum;
  }

  private positionTotals(p: Position): PositionTotals {
    if (p.size === 0) return { value: 0, initialMargin: 0, maintenanceMargin: 0 };
    return { value: this.positionValue(p), initialMargin: this.positionIM(p), maintenanceMargin: this.positionMM(p) };
  }

  /** Margin the open orders of one exposure hold (0 with no open orders). */
  private heldBy(user: User, e: OrderExposure): number {
    if (e.openOrders.size === 0) return 0;
    // the position only matters to open sells (shortOpeningLots): skip its lookup otherwise
    return this.exposureIM(e, e.sellOpenLots > 0 ? (user.positions.get(e.inst.id)?.size ?? 0) : 0);
  }

  /** The initial margin of all open orders in one currency, from the running total when valid. */
  ordersIM(user: User, currency: CurrencyCode): number {
    // cross models: what the orders take off the pooled surplus (resting combo orders come in
    // through `requirements`)
    if (this.isCross(user)) {
      const x = this.crossSums(user, currency);
      return x.initial - x.initialWithOrders;
    }
    return this.regularOrdersIM(user, currency) + this.comboHeld(user, currency, false);
  }

  /**
   * The orders' part without the combo orders' own holds: those rest in their combo's book, not in
   * the legs' exposures, and hold what src/combos/orderMargin.ts says (added by ordersIM); on
   * portfolio margin their legs are in the scenario figures, so in this part.
   */
  private regularOrdersIM(user: User, currency: CurrencyCode): number {
    if (this.isPm(user)) {
      // portfolio margin: what the orders as if filled add to the positions' requirement (never less
      // than nothing: orders are not collateral); the cash open buys promise is held by freeCash
      const f = this.pm.figures(user, currency);
      return f.initialMarginWithOrders - f.initialMargin;
    }
    return this.standardOrdersIM(user, currency);
  }

  /** Standard margin's initial margin of the open orders in one currency, from the running total when valid. */
  private standardOrdersIM(user: User, currency: CurrencyCode): number {
    const byCurrency = perCurrency(this.ordersMargin, user);
    const agg = byCurrency.get(currency);
    if (agg !== undefined && agg.version === this.ex.marginVersion) return agg.total;
    return this.resetOrdersIM(user, currency, byCurrency);
  }

  /** The full sum over the account's exposures, without touching the running total (for checks). */
  sumOrdersIM(user: User, currency: CurrencyCode): number {
    if (this.isCross(user)) {
      const x = this.crossSums(user, currency, undefined, true);
      return x.initial - x.initialWithOrders;
    }
    return this.sumRegularOrdersIM(user, currency) + this.comboHeld(user, currency, true);
  }

  private sumRegularOrdersIM(user: User, currency: CurrencyCode): number {
    if (this.isPm(user)) {
      const f = this.pm.freshFigures(user, currency);
      return f.initialMarginWithOrders - f.initialMargin;
    }
    return this.sumStandardOrdersIM(user, currency);
  }

  private sumStandardOrdersIM(user: User, currency: CurrencyCode): number {
    let total = 0;
    for (const e of user.exposures.values()) if (e.inst.currency === currency) total += this.heldBy(user, e);
    return total;
  }

  /** Starts the running total again from the full sum, noting what each exposure holds. */
  private resetOrdersIM(user: User, currency: CurrencyCode, byCurrency: Map<CurrencyCode, OrdersMargin>): number {
    let total = 0;
    for (const e of user.exposures.values()) {
      if (e.inst.currency !== currency) continue;
      const h = this.heldBy(user, e);
      this.held.set(e, h);
      total += h;
    }
    byCurrency.set(currency, { version: this.ex.marginVersion, total });
    return total;
  }

  /** Initial margin per short contract at the current mark (coin); NaN without an index. */
  imPerContract(inst: Instrument): number {
    return imPerContract(this.ex, inst);
  }

  mmPerContract(inst: Instrument): number {
    return mmPerContract(this.ex, inst);
  }

  /** Value of a position at mark in minor units: longs rounded down, shorts' liability up. */
  positionValue(p: Position): number {
    return positionValue(this.ex, p);
  }

  positionIM(p: Position): number {
    return positionIM(this.ex, p);
  }

  positionMM(p: Position): number {
    return positionMM(this.ex, p);
  }

  /** Margin held by the open orders of one instrument. */
  exposureIM(e: OrderExposure, position: number): number {
    return exposureIM(this.ex, e, position);
  }

  /**
   * Cash not yet promised to open buys. Premium is paid in cash: the mark value of long options is
   * equity, but letting it fund more purchases would let buys below the mark run the balance
   * negative without limit (and longs carry no maintenance margin to trigger liquidation).
   */
  freeCash(user: User, currency: CurrencyCode): number {
    const byCurrency = perCurrency(this.reservedTotals, user);
    let reserved = byCurrency.get(currency);
    if (reserved === undefined) {
      reserved = 0;
      for (const e of user.exposures.values()) {
        if (e.inst.currency !== currency) continue;
        reserved += e.buyReserved;
        this.reservedCounted.set(e, e.buyReserved);
      }
      byCurrency.set(currency, reserved);
    }
    // and the net premium resting combo orders would pay (src/combos/orderMargin.ts)
    return user.accounts[currency].balance - reserved - this.ex.comboBooks.heldBy(user.id, currency).cash;
  }

  /** Whether any balance of the user is below zero: it may then neither withdraw nor add risk. */
  hasNegativeBalance(user: User): boolean {
    for (const c of CURRENCY_CODES) if (user.accounts[c].balance < 0) return true;
    return false;
  }

  /**
   * Whether the user must keep all its money for its own losses: a balance below zero, or an account
   * below maintenance margin or in liquidation, in any currency. Its other currencies are the first
   * to cover a default (src/engine/defaults.ts), so nothing may be withdrawn meanwhile.
   */
  inDistress(user: User): boolean {
    for (const c of CURRENCY_CODES) {
      const balance = user.accounts[c].balance;
      if (balance < 0) return true;
      const p = this.positions(user, c);
      if (balance + p.value < p.maintenanceMargin) return true;
      if (this.ex.inLiquidation(user.id, c)) return true;
    }
    return false;
  }

  /**
   * `account(user, currency).available` alone: order entry and edits need only that, and the rest
   * of the summary (whether the user is in distress in any currency, the free cash) cost about as
   * much again for every order, live and in replay (issue 16).
   */
  available(user: User, currency: CurrencyCode): number {
    const positions = this.positions(user, currency);
    return user.accounts[currency].balance + positions.value - (positions.initialMargin + this.ordersIM(user, currency));
  }

  /**
   * Of the funds available, what may leave the currency. Cross models: the most whose departure
   * leaves the pooled initial surplus (open orders included) >= 0 (crossMaxOutflow: the pool falls
   * by W x (1 - haircut) while the currency's own surplus lasts, by W x (1 + haircut) beyond it).
   */
  private withdrawable(user: User, currency: CurrencyCode, available: number): number {
    if (!this.isCross(user)) return available;
    return crossMaxWithdrawal(this.ex, this, user, currency);
  }

  account(user: User, currency: CurrencyCode): AccountRisk {
    const balance = user.accounts[currency].balance;
    const positions = this.positions(user, currency);
    const optionsValue = positions.value;
    const positionsIM = positions.initialMargin;
    const mm = positions.maintenanceMargin;
    const ordersIM = this.ordersIM(user, currency);
    const equity = balance + optionsValue;
    const initialMargin = positionsIM + ordersIM;
    const available = equity - initialMargin;
    return {
      currency,
      balance,
      optionsValue,
      equity,
      positionsIM,
      ordersIM,
      initialMargin,
      maintenanceMargin: mm,
      available,
      // the cash rules: what is left covers the cash promised to open buys (freeCash) and the initial
      // margin (available), and no account of the user is below zero, below maintenance margin or
      // in liquidation (docs/api-notes.md "Cash rules")
      availableWithdrawal: this.inDistress(user) ? 0 : Math.max(0, Math.min(this.freeCash(user, currency), this.withdrawable(user, currency, available))),
    };
  }
}
