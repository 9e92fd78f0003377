// The running totals RiskEngine (accountRisk.ts) reads at order entry instead of full sums, per
// account and currency: the positions' value at mark and standard margins, the open orders' standard
// initial margin, and the cash open buys promise. Moved by the difference as exposures and positions
// change; the full sums (for checks) are here too.
import type { CurrencyCode } from '../domain/currency.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { OrderExposure, Position, User } from '../engine/types.ts';
import { exposureIM, perCurrency, positionIM, positionMM, positionValue, type OrdersMargin, type PositionTotals, type PositionsAggregate } from './positionMargin.ts';

export class RunningTotals {
  // Order entry needs the account's margin for every order. Summing every exposure each time costs
  // O(instruments the account trades) in scattered memory (a market maker quoting hundreds of
  // series), so the orders' part is a running total: an exposure that changes moves the total by
  // the difference in what it holds (`exposureChanged`), and a move in index, vol or marks makes
  // the next use recompute it in full. test/property/conservation/invariants.ts checks it against the
  // full sum after every batch of random commands.
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

  constructor(private readonly ex: Exchange) {}

  /** RiskEngine.exposureChanged's part: the cash reserved and the orders' margin move by the difference. */
  exposureChanged(user: User, e: OrderExposure): void {
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

  /** RiskEngine.positionChanged's part: the positions' totals move by the difference. */
  positionChanged(user: User, p: Position): void {
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

  /** RiskEngine.accountChanged's part: the next use recomputes the margins in full. */
  accountChanged(user: User): void {
    this.ordersMargin.delete(user);
    this.positionsAggregate.delete(user);
  }

  /** The account's positions in one currency under standard margin, from the running totals when valid. */
  standardPositions(user: User, currency: CurrencyCode): PositionTotals {
    const byCurrency = perCurrency(this.positionsAggregate, user);
    const agg = byCurrency.get(currency);
    if (agg !== undefined && agg.version === this.ex.marginVersion) return agg;
    const fresh: PositionsAggregate = { version: this.ex.marginVersion, ...this.addUpPositions(user, currency, true) };
    byCurrency.set(currency, fresh);
    return fresh;
  }

  /** Sums the positions in one currency; `remember` notes what each counts for (positionChanged). */
  addUpPositions(user: User, currency: CurrencyCode, remember: boolean): PositionTotals {
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
    return { value: positionValue(this.ex, p), initialMargin: positionIM(this.ex, p), maintenanceMargin: positionMM(this.ex, p) };
  }

  /** Margin the open orders of one exposure hold (0 with no open orders). */
  private heldBy(user: User, e: OrderExposure): number {
    if (e.openOrders.size === 0) return 0;
    // the position only matters to open sells (shortOpeningLots): skip its lookup otherwise
    return exposureIM(this.ex, e, e.sellOpenLots > 0 ? (user.positions.get(e.inst.id)?.size ?? 0) : 0);
  }

  /** Standard margin's initial margin of the open orders in one currency, from the running total when valid. */
  standardOrdersIM(user: User, currency: CurrencyCode): number {
    const byCurrency = perCurrency(this.ordersMargin, user);
    const agg = byCurrency.get(currency);
    if (agg !== undefined && agg.version === this.ex.marginVersion) return agg.total;
    return this.resetOrdersIM(user, currency, byCurrency);
  }

  /** The full sum of standard margin's open orders' initial margin, without touching the running total (for checks). */
  sumStandardOrdersIM(user: User, currency: CurrencyCode): number {
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

  /** The cash the account's open buys in one currency reserve (freeCash), from the running total once summed. */
  reservedByBuys(user: User, currency: CurrencyCode): number {
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
    return reserved;
  }
}
