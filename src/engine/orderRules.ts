// Rules of order entry and fills that need no engine state of their own: good_til_day expiry,
// client_order_id fingerprints and their bounded memory, what a reduce-only order may still reduce
// (and what the pre-trade walk may count on from reduce-only makers), tick directions and the
// position accounting of a fill.
import { premiumOf, tradeFee, type Instrument } from '../domain/instrument.ts';
import type { Command } from './commands.ts';
import type { Exchange } from './exchange.ts';
import { BUY, type OrderBook, type Side } from './orderBook.ts';
import type { Order, OrderExposure, Position, Trade, User } from './types.ts';

type PlaceCmd = Extract<Command, { t: 'place' }>;

const DAY_MS = 24 * 3600 * 1000;

/** Next 08:00 UTC strictly after `ts` (good_til_day expiry). */
export function nextEightUtc(ts: number): number {
  const d = new Date(ts);
  let t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), 8);
  if (t <= ts) t += DAY_MS;
  return t;
}

/**
 * A 32-bit FNV-1a hash of what a place request asks for: instrument, side, type, amount and price
 * (or advanced price). Two requests with one client_order_id are the same order when it is equal.
 */
export function requestPrint(c: PlaceCmd): number {
  const text = `${c.instrument}|${c.side}|${c.type}|${c.lots}|${c.price ?? ''}|${c.advanced ?? ''}|${c.advPrice ?? ''}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * Bounds a user's client_order_id memory (issue 14: 450k orders held 216 MB of ids for 24 h): the
 * newest `kept`, none older than `cutoff`. The map is in time order, so the oldest go first.
 * Deterministic (a count and the engine's clock), so live, replayed and restored engines forget
 * the same ids.
 */
export function forgetOldestClientOrderIds(user: User, kept: number, cutoff: number): void {
  let excess = user.clientOrderIds.size - kept;
  for (const [k, v] of user.clientOrderIds) {
    if (excess <= 0 && v.ts >= cutoff) break;
    user.clientOrderIds.delete(k);
    excess--;
  }
}

/** Lots an order on `side` can take off a position of `pos` lots without flipping it. */
export function reducibleBy(side: Side, pos: number): number {
  return side === BUY ? Math.max(0, -pos) : Math.max(0, pos);
}

/**
 * What the pre-trade walk can count on from reduce-only makers. A sweep that fills an account's
 * ordinary order first shrinks the position its reduce-only orders may still reduce, and execute()
 * then cuts those orders (newest first) before they fill. The walk does not replay the cuts; it
 * counts, for each reduce-only maker, only what no cut can take from it (its size less the excess
 * the sweep has made so far), so fill-or-kill never fills partly. A market buy's cost is summed over
 * what each maker may fill at most, and the walk goes on past such a maker for what it may not:
 * every maker is then counted for at least what it will fill, so the cost never falls short.
 */
export class ReduceOnlyMakers {
  /** Per account with reduce-only orders in the instrument: lots the walk filled so far, all / reduce-only. */
  private sims: Map<User, { filled: number; reduceOnlyFilled: number }> | null = null;

  constructor(private readonly ex: Exchange, private readonly inst: Instrument) {}

  /** The part of `q` lots of `maker` the walk may count on; remembers it as filled. */
  fill(maker: Order, q: number): number {
    const u = this.ex.users.get(maker.userId)!;
    const e = u.exposures.get(this.inst.id);
    if (e === undefined || e.reduceOnlyOpen === 0) return q;
    this.sims ??= new Map();
    let sim = this.sims.get(u);
    if (sim === undefined) {
      sim = { filled: 0, reduceOnlyFilled: 0 };
      this.sims.set(u, sim);
    }
    if (maker.reduceOnly) {
      const pos = (u.positions.get(this.inst.id)?.size ?? 0) + (maker.side === BUY ? sim.filled : -sim.filled);
      const excess = reduceOnlyOpenLots(e, maker.side) - sim.reduceOnlyFilled - reducibleBy(maker.side, pos);
      q = Math.min(q, Math.max(0, maker.remaining - Math.max(0, excess)));
      sim.reduceOnlyFilled += q;
    }
    sim.filled += q;
    return q;
  }
}

export function reduceOnlyOpenLots(e: OrderExposure, side: Side): number {
  if (e.reduceOnlyOpen === 0) return 0;
  let lots = 0;
  for (const o of e.openOrders) if (o.reduceOnly && o.side === side) lots += o.remaining;
  return lots;
}

/** Appends to a user's trade history, keeping it bounded (trimmed in steps, so amortised O(1)). */
export function recordUserTrade(user: User, trade: Trade, kept: number): void {
  user.trades.push(trade);
  if (user.trades.length > kept * 2) user.trades.splice(0, user.trades.length - kept);
}

export function zeroTick(prev: number): number {
  // a trade at the same price keeps the last direction as its "zero" variant
  return prev === 0 || prev === 1 ? 1 : 3;
}

/** Applies a fill of `delta` lots at `price` to a position (exported for tests). */
export function applyFill(p: Position, inst: Instrument, delta: number, price: number): void {
  const s = p.size;
  if (s === 0 || Math.sign(s) === Math.sign(delta)) {
    p.openCost += Math.sign(delta) * premiumOf(inst, price, Math.abs(delta));
    p.size = s + delta;
    return;
  }
  const closing = Math.min(Math.abs(delta), Math.abs(s));
  // cost of the closed part, proportional to the open cost (BigInt: the product may exceed 2^53)
  const removed = Number((BigInt(p.openCost) * BigInt(closing)) / BigInt(Math.abs(s)));
  const value = premiumOf(inst, price, closing);
  // closing a long sells at `value`; closing a short buys back at `value`
  p.realizedPnl += s > 0 ? value - removed : -removed - value;
  p.openCost -= removed;
  p.size = s + delta;
  const opening = Math.abs(delta) - closing;
  if (opening > 0) p.openCost = Math.sign(delta) * premiumOf(inst, price, opening);
  if (p.size === 0) p.openCost = 0;
}

/**
 * The pre-trade walk of the liquidity an order would meet (Trading.place): the self-trade check,
 * what fill-or-kill may fill and what a market order may cost. One per Trading, reused, with its
 * visitor made once: the closure place() passed before captured its locals, so V8 kept them in a
 * heap context allocated for every order, resting or not, and every read of them in place() went
 * through it. A limit order short of the other side's best price meets nothing and is not walked.
 */
export class LiquidityWalk {
  /** Lots the walk may count on (ReduceOnlyMakers), premium and taker fee of all of them, and
   *  whether it stopped at the taker's own order. Read after `run`. */
  fillable = 0;
  cost = 0;
  selfTrade = false;
  private userId = 0;
  private lots = 0;
  private inst: Instrument | null = null;
  private reduceOnlyMakers: ReduceOnlyMakers | null = null;

  constructor(private readonly ex: Exchange) {}

  /** Walks `book` for a taker of `side` (limit NaN: a market order) of `lots` lots of user `userId`. */
  run(book: OrderBook<Order>, side: Side, limit: number, userId: number, inst: Instrument, lots: number): void {
    this.fillable = 0;
    this.cost = 0;
    this.selfTrade = false;
    // the walk's own stop (a level beyond the limit), taken before it starts; NaN compares false
    const best = side === BUY ? book.bestAsk() : book.bestBid();
    if (Number.isNaN(best) || (side === BUY ? best > limit : best < limit)) return;
    this.userId = userId;
    this.lots = lots;
    this.inst = inst;
    try {
      book.walk(side, limit, this.visit);
    } finally {
      this.inst = null;
      this.reduceOnlyMakers = null; // made only when there is liquidity, one per walk
    }
  }

  private readonly visit = (maker: Order): boolean => {
    if (maker.userId === this.userId) {
      this.selfTrade = true;
      return false;
    }
    const inst = this.inst!;
    this.reduceOnlyMakers ??= new ReduceOnlyMakers(this.ex, inst);
    const q = Math.min(maker.remaining, this.lots - this.fillable);
    this.fillable += this.reduceOnlyMakers.fill(maker, q);
    // the cost of all it may fill: a reduce-only maker can fill more than it surely will
    this.cost += premiumOf(inst, maker.price, q) + tradeFee(inst, maker.price, q, inst.takerCommission);
    return this.fillable < this.lots;
  };
}
