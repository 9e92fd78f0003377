// The open combo orders of each account (issue 34; derived state, restored from the combo books):
// the orders themselves, and their lots per combo and side, which the portfolio-margin scenario
// engine counts as if filled (src/risk/portfolio/pmRisk.ts). Every change goes through here, so the
// holds (orderMargin.ts) and the scenario sums move by the difference at once.
import type { Exchange } from '../engine/exchange.ts';
import { BUY } from '../engine/orderBook.ts';
import type { Order } from '../engine/types.ts';
import type { ComboHold, ComboHolds } from './orderMargin.ts';

/** A user's open lots in one combo: bid (buy orders) and ask (sell orders), combo lots. */
export interface SideLots {
  bid: number;
  ask: number;
}

const NO_SIDE_LOTS: ReadonlyMap<string, SideLots> = new Map();

export class OpenComboOrders {
  /** open combo orders per user */
  readonly byUser = new Map<number, Set<Order>>();
  /** open combo lots per user and combo, each side; and the lots each open order counts for there */
  private readonly sideLots = new Map<number, Map<string, SideLots>>();
  private readonly counted = new Map<Order, number>();

  constructor(
    private readonly ex: Exchange,
    private readonly holds: ComboHolds,
  ) {}

  /** A user's open combo lots per combo, bid and ask. Empty map: none. */
  sideLotsOf(userId: number): ReadonlyMap<string, SideLots> {
    return this.sideLots.get(userId) ?? NO_SIDE_LOTS;
  }

  /** Moves the user's open lots of `o`'s combo by `lots` on its side and tells the scenario engine. */
  private countLots(o: Order, lots: number): void {
    if (lots === 0) return;
    let byCombo = this.sideLots.get(o.userId);
    if (byCombo === undefined) this.sideLots.set(o.userId, (byCombo = new Map()));
    let s = byCombo.get(o.inst.name);
    if (s === undefined) byCombo.set(o.inst.name, (s = { bid: 0, ask: 0 }));
    if (o.side === BUY) s.bid += lots;
    else s.ask += lots;
    if (s.bid === 0 && s.ask === 0) byCombo.delete(o.inst.name);
    if (byCombo.size === 0) this.sideLots.delete(o.userId);
    const user = this.ex.users.get(o.userId);
    if (user !== undefined) this.ex.trading.risk.comboChanged(user, o.inst.currency, o.inst.name);
  }

  /** An order starts resting; `hold`: its hold for its remaining amount when already computed. */
  opened(o: Order, hold?: ComboHold): void {
    let set = this.byUser.get(o.userId);
    if (set === undefined) this.byUser.set(o.userId, (set = new Set()));
    set.add(o);
    this.counted.set(o, o.remaining);
    this.holds.rested(o, hold);
    this.countLots(o, o.remaining);
  }

  /** A resting order's remaining amount went down (a partial fill as maker). */
  reduced(o: Order): void {
    const before = this.counted.get(o) ?? 0;
    this.counted.set(o, o.remaining);
    this.holds.reduced(o);
    this.countLots(o, o.remaining - before);
  }

  /** An order stopped resting (filled or cancelled). */
  closed(o: Order): void {
    const set = this.byUser.get(o.userId);
    if (set === undefined || !set.delete(o)) return;
    if (set.size === 0) this.byUser.delete(o.userId);
    const before = this.counted.get(o) ?? 0;
    this.counted.delete(o);
    this.holds.gone(o);
    this.countLots(o, -before);
  }
}
