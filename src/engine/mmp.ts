// Market-maker protection (Deribit MMP): per user, index and group, the fills of the user's MMP
// orders are counted over a window; when the traded quantity, the net delta, the net vega or the
// number of trades reaches its limit,
// the same command cancels every open order of the group and freezes the group (new MMP orders and
// quotes are refused) until `frozen_time` has passed, or until `private/reset_mmp` when it is 0.
//
// Everything here is engine state: the configs, the running counters and the freezes are in the
// snapshot (and so in the state hash), time is the command's, and the counters are plain numbers
// updated in fill order, so a replay reaches the same trigger at the same fill.
import type { CurrencyCode } from '../domain/currency.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Instrument } from '../domain/instrument.ts';
import { yearFraction } from '../domain/pricing.ts';
import { optionGreeksCoin } from '../market/smile.ts';
import { contractsOf } from '../risk/accountRisk.ts';
import type { Command } from './commands.ts';
import type { Exchange } from './exchange.ts';
import { BUY, type Side } from './orderBook.ts';
import type { Order, OrderExposure, TradedOrder } from './types.ts';

/** What makes an order an MMP order: its group (null: the index's config for ordinary orders) and,
 *  for a mass quote, the quote ids it was sent with. */
export interface MmpTag {
  group: string | null;
  /** `quote_id` of the mass_quote that placed it; null for an ordinary order flagged `mmp`. */
  quoteId: string | null;
  quoteSetId: string | null;
}

export const MMP_INDICES: Record<string, CurrencyCode> = { btc_usd: 'BTC', eth_usd: 'ETH' };

export function indexNameOf(currency: CurrencyCode): string {
  return `${currency.toLowerCase()}_usd`;
}

/** One configured (user, index, group) and its running state. */
export interface MmpGroup {
  /** Deribit's config id: the seq of the command that created the config (stable while it exists) */
  id: number;
  userId: number;
  indexName: string;
  currency: CurrencyCode;
  group: string | null;
  /** window length, s (1..3600) */
  interval: number;
  /** freeze after a trigger, s; 0 = until reset_mmp */
  frozenTime: number;
  /** traded amount that triggers, at 10^-8 (0 = no quantity limit) */
  quantityLimit: number;
  /** absolute net delta that triggers (0 = no delta limit); a model figure, not money */
  deltaLimit: number;
  /** absolute net vega that triggers (0 = no vega limit); a model figure, in the units of a position's `vega` */
  vegaLimit: number;
  /** fills that trigger (0 = no trade-count limit) */
  tradeCountLimit: number;
  /** Deribit's MQQ: the most the group's open orders may hold per instrument and side, at 10^-8 (0 = no bound) */
  maxQuoteQuantity: number;
  /** start of the running window (ms), 0 before the first fill */
  windowStart: number;
  /** amount traded in the window, at 10^-8 */
  quantity: number;
  delta: number;
  vega: number;
  /** fills in the window */
  tradeCount: number;
  frozen: boolean;
  /** end of the freeze (ms); 0 with `frozen` = until reset_mmp */
  frozenUntil: number;
}

/** Published on `user.mmp_trigger.{index_name}` (observer only; not state). */
export interface MmpTriggerEvent {
  userId: number;
  indexName: string;
  group: string | null;
  frozenUntil: number;
}

/** Deribit allows 16 MMP groups per account (mass-quote groups; the per-index configs come on top). */
export const MAX_MMP_GROUPS = 16;

/** A config as the `set_mmp_config` command carries it. */
export type MmpConfigInput = Omit<Extract<Command, { t: 'set_mmp_config' }>, 't'>;

function key(userId: number, indexName: string, group: string | null): string {
  return `${userId}|${indexName}|${group ?? ''}`;
}

/** Starts the group's counting window at `start` (0: at its next fill). */
function newWindow(g: MmpGroup, start: number): void {
  g.windowStart = start;
  g.quantity = 0;
  g.delta = 0;
  g.vega = 0;
  g.tradeCount = 0;
}

export class MmpState {
  /** Every configured group, in the order configured (snapshot order). */
  groups = new Map<string, MmpGroup>();
  /** Groups that triggered during the current command, waiting for `fire`. Empty between commands. */
  private pending: MmpGroup[] = [];

  constructor(private readonly ex: Exchange) {}

  get(userId: number, currency: CurrencyCode, group: string | null): MmpGroup | undefined {
    return this.groups.size === 0 ? undefined : this.groups.get(key(userId, indexNameOf(currency), group));
  }

  isFrozen(g: MmpGroup): boolean {
    return g.frozen && (g.frozenUntil === 0 || this.ex.now < g.frozenUntil);
  }

  /** Why an MMP order or quote of this group may not be placed now, or null. */
  refusal(userId: number, currency: CurrencyCode, group: string | null): Reject | null {
    const g = this.get(userId, currency, group);
    if (g === undefined) return reject(ERR.INVALID_ARGUMENTS, group === null ? 'mmp_not_configured' : 'mmp_group_not_configured', group === null ? 'mmp' : 'mmp_group');
    if (this.isFrozen(g)) return reject(ERR.OTHER_REJECT, 'mmp_frozen', group === null ? 'mmp' : 'mmp_group');
    return null;
  }

  setConfig(c: MmpConfigInput): MmpGroup | 'removed' | Reject {
    if (!this.ex.users.has(c.userId)) return reject(ERR.UNAUTHORIZED);
    const currency = MMP_INDICES[c.indexName];
    if (currency === undefined) return reject(ERR.INVALID_PARAMS, 'unknown index', 'index_name');
    const k = key(c.userId, c.indexName, c.group);
    // interval 0 removes the config (Deribit); a freeze goes with it
    if (c.interval === 0) {
      this.groups.delete(k);
      return 'removed';
    }
    if (!(Number.isSafeInteger(c.interval) && c.interval > 0 && c.interval <= 3600)) return reject(ERR.INVALID_PARAMS, 'interval out of range', 'interval');
    if (!(Number.isSafeInteger(c.frozenTime) && c.frozenTime >= 0 && c.frozenTime <= 3600)) return reject(ERR.INVALID_PARAMS, 'frozen_time out of range', 'frozen_time');
    if (!(Number.isSafeInteger(c.quantityLimit) && c.quantityLimit >= 0)) return reject(ERR.INVALID_PARAMS, 'invalid quantity_limit', 'quantity_limit');
    if (!(Number.isFinite(c.deltaLimit) && c.deltaLimit >= 0)) return reject(ERR.INVALID_PARAMS, 'invalid delta_limit', 'delta_limit');
    if (!(Number.isSafeInteger(c.maxQuoteQuantity) && c.maxQuoteQuantity >= 0)) return reject(ERR.INVALID_PARAMS, 'invalid max_quote_quantity', 'max_quote_quantity');
    // records from before the vega and trade-count limits carry neither
    const vegaLimit = c.vegaLimit ?? 0;
    const tradeCountLimit = c.tradeCountLimit ?? 0;
    if (!(Number.isFinite(vegaLimit) && vegaLimit >= 0)) return reject(ERR.INVALID_PARAMS, 'invalid vega_limit', 'vega_limit');
    if (!(Number.isSafeInteger(tradeCountLimit) && tradeCountLimit >= 0)) return reject(ERR.INVALID_PARAMS, 'invalid trade_count_limit', 'trade_count_limit');
    if (c.quantityLimit === 0 && c.deltaLimit === 0 && vegaLimit === 0 && tradeCountLimit === 0) return reject(ERR.INVALID_ARGUMENTS, 'mmp_limit_required', 'quantity_limit');
    let g = this.groups.get(k);
    if (g === undefined) {
      if (c.group !== null) {
        let n = 0;
        for (const x of this.groups.values()) if (x.userId === c.userId && x.group !== null) n++;
        if (n >= MAX_MMP_GROUPS) return reject(ERR.INVALID_ARGUMENTS, 'too_many_mmp_groups', 'mmp_group');
      }
      g = { id: this.ex.seq, userId: c.userId, indexName: c.indexName, currency, group: c.group, interval: 0, frozenTime: 0, quantityLimit: 0, deltaLimit: 0, vegaLimit: 0, tradeCountLimit: 0, maxQuoteQuantity: 0, windowStart: 0, quantity: 0, delta: 0, vega: 0, tradeCount: 0, frozen: false, frozenUntil: 0 };
      this.groups.set(k, g);
    }
    g.interval = c.interval;
    g.frozenTime = c.frozenTime;
    g.quantityLimit = c.quantityLimit;
    g.deltaLimit = c.deltaLimit;
    g.vegaLimit = vegaLimit;
    g.tradeCountLimit = tradeCountLimit;
    g.maxQuoteQuantity = c.maxQuoteQuantity;
    // new limits count from a new window; a freeze in force stays (reset_mmp lifts it)
    newWindow(g, 0);
    return g;
  }

  /** The user's configs, optionally of one index and (with `group` not undefined) one group. */
  list(userId: number, indexName: string | null, group: string | null | undefined): MmpGroup[] {
    const out: MmpGroup[] = [];
    for (const g of this.groups.values()) {
      if (g.userId !== userId) continue;
      if (indexName !== null && g.indexName !== indexName) continue;
      if (group !== undefined && g.group !== group) continue;
      out.push(g);
    }
    return out;
  }

  /** reset_mmp: lifts the freeze and starts a new window. Unknown groups are refused. */
  reset(userId: number, indexName: string, group: string | null): MmpGroup | Reject {
    const g = this.groups.get(key(userId, indexName, group));
    if (g === undefined) return reject(ERR.NOT_FOUND, group === null ? 'mmp_not_configured' : 'mmp_group_not_configured', group === null ? 'index_name' : 'mmp_group');
    g.frozen = false;
    g.frozenUntil = 0;
    newWindow(g, 0);
    return g;
  }

  /**
   * Why `lots` more on `side` would pass the group's max_quote_quantity in this instrument (its open
   * orders there on that side count), or null.
   */
  sizeRefusal(userId: number, e: OrderExposure, side: Side, lots: number, group: string | null): Reject | null {
    const g = this.get(userId, e.inst.currency, group);
    if (g === undefined || g.maxQuoteQuantity === 0) return null;
    let open = lots;
    for (const o of e.openOrders) if (o.side === side && o.mmp !== null && o.mmp.group === group) open += o.remaining;
    if (open * e.inst.lotScaled > g.maxQuoteQuantity) return reject(ERR.INVALID_ARGUMENTS, 'max_quote_quantity_exceeded', 'amount');
    return null;
  }

  /**
   * Called by the matching for each fill of an MMP order (maker or taker), before anything is
   * cancelled: a trigger is only noted here, and `fire` cancels after the match is over (the book
   * must not change under a running match).
   */
  onFill(order: Order, lots: number): void {
    const tag = order.mmp!;
    const inst = order.inst;
    const g = this.get(order.userId, inst.currency, tag.group);
    if (g === undefined || this.isFrozen(g)) return;
    const now = this.ex.now;
    // Deribit: the window starts with the first fill; a fill after it ends starts a new one
    if (g.windowStart === 0 || now >= g.windowStart + g.interval * 1000) newWindow(g, now);
    g.quantity += lots * inst.lotScaled;
    g.tradeCount += 1;
    // a buy adds the option's delta and vega, a sell takes them away: net figures, as the position's
    const greeks = this.greeksPerContract(inst);
    const sign = order.side === BUY ? 1 : -1;
    const contracts = contractsOf(inst, lots);
    g.delta += sign * greeks.delta * contracts;
    g.vega += sign * greeks.vega * contracts;
    const hit =
      (g.quantityLimit > 0 && g.quantity >= g.quantityLimit) ||
      (g.deltaLimit > 0 && Math.abs(g.delta) >= g.deltaLimit) ||
      (g.vegaLimit > 0 && Math.abs(g.vega) >= g.vegaLimit) ||
      (g.tradeCountLimit > 0 && g.tradeCount >= g.tradeCountLimit);
    if (!hit) return;
    g.frozen = true;
    g.frozenUntil = g.frozenTime > 0 ? now + g.frozenTime * 1000 : 0;
    newWindow(g, 0);
    this.pending.push(g);
  }

  /** Cancels the open orders of every group that triggered since the last call (same command). */
  fire(): void {
    if (this.pending.length === 0) return;
    const groups = this.pending;
    this.pending = [];
    for (const g of groups) {
      const user = this.ex.users.get(g.userId);
      if (user === undefined) continue;
      const ids: number[] = [];
      for (const e of user.exposures.values()) {
        if (e.inst.currency !== g.currency || e.openOrders.size === 0) continue;
        for (const o of e.openOrders) if (o.mmp !== null && o.mmp.group === g.group) ids.push(o.id);
      }
      this.ex.trading.cancelOrders(g.userId, ids, 'mmp_trigger');
      this.ex.observer?.mmpTrigger?.({ userId: g.userId, indexName: g.indexName, group: g.group, frozenUntil: g.frozenUntil });
    }
  }

  /** Delta and vega of one contract at the mark (Black-76 on the mark IV), 0 when the model has none. */
  private greeksPerContract(inst: Instrument): { delta: number; vega: number } {
    const m = this.ex.markets.get(inst.id);
    const F = this.ex.indexPrice(inst.currency);
    const T = yearFraction(this.ex.now, inst.expiry);
    if (m === undefined || !(F > 0) || !(T > 0) || !Number.isFinite(m.markIv)) return { delta: 0, vega: 0 };
    const g = optionGreeksCoin(inst.optionType, F, inst.strike, T, m.markIv);
    return { delta: Number.isFinite(g.delta) ? g.delta : 0, vega: Number.isFinite(g.vega) ? g.vega : 0 };
  }

  // ---- snapshot ----------------------------------------------------------------------------------

  toJson(orders: Iterable<TradedOrder>): unknown {
    const tagged: TradedOrder[] = [];
    for (const o of orders) if (o.mmp !== null) tagged.push(o);
    const tags = tagged.sort((a, b) => a.id - b.id).map((o) => [o.id, o.mmp!.group, o.mmp!.quoteId, o.mmp!.quoteSetId]);
    const groups = [...this.groups.values()].map((g) => [
      g.userId, g.indexName, g.group, g.interval, g.frozenTime, g.quantityLimit, g.deltaLimit, g.windowStart, g.quantity, g.delta, g.frozen, g.frozenUntil, g.maxQuoteQuantity,
      g.id, g.vegaLimit, g.tradeCountLimit, g.vega, g.tradeCount,
    ]);
    return { groups, tags };
  }

  /** Restores from `toJson` output; snapshots taken before MMP existed have none (`j` undefined). */
  restore(j: unknown, orders: Map<number, TradedOrder>): void {
    if (j === undefined || j === null) return;
    const s = j as { groups: unknown[][]; tags: unknown[][] };
    for (const [i, a] of s.groups.entries()) {
      const [userId, indexName, group, interval, frozenTime, quantityLimit, deltaLimit, windowStart, quantity, delta, frozen, frozenUntil, maxQuoteQuantity] = a as never[];
      // snapshots from before config ids and the vega and trade-count limits: ids by position (below any
      // later command's seq), no such limits
      const [id = i + 1, vegaLimit = 0, tradeCountLimit = 0, vega = 0, tradeCount = 0] = a.slice(13) as number[];
      const g: MmpGroup = { id, userId, indexName, currency: MMP_INDICES[indexName], group, interval, frozenTime, quantityLimit, deltaLimit, vegaLimit, tradeCountLimit, maxQuoteQuantity, windowStart, quantity, delta, vega, tradeCount, frozen, frozenUntil };
      this.groups.set(key(userId, indexName, group), g);
    }
    for (const [id, group, quoteId, quoteSetId] of s.tags as [number, string | null, string | null, string | null][]) {
      const o = orders.get(id);
      if (o !== undefined) o.mmp = { group, quoteId, quoteSetId };
    }
  }
}
