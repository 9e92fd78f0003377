// Where untriggered trigger orders wait (triggers.ts fires them): queues per price source (index
// per currency, mark and last price per instrument), each a min-heap of those that fire when the
// price rises to their level and a max-heap of those that fire when it falls to it, ties broken by
// order id; trailing stops in a set per source. Also the other views of the untriggered orders
// (per instrument, per user count, good_til_day) and the queues whose price moved in the current
// command. All of it is derived: rebuilt from the orders on restore, never serialized.
//
// Determinism: the dirty queues are looked at in the order they moved, and every list of orders
// taken out of here is sorted by id by its caller before anything is done with it.
import type { CurrencyCode } from '../domain/currency.ts';
import { PRICE_SCALE, type Instrument } from '../domain/instrument.ts';
import type { Exchange } from './exchange.ts';
import { IndexedHeap } from './triggerQueue.ts';
import type { TriggerOrder, TriggerSource } from './triggerOrder.ts';

export const UNIT = 10 ** PRICE_SCALE;

export interface Queues {
  source: TriggerSource;
  currency: CurrencyCode;
  instId: number;
  up: IndexedHeap<TriggerOrder>;
  down: IndexedHeap<TriggerOrder>;
  trailing: Set<TriggerOrder>;
}

const upFirst = (a: TriggerOrder, b: TriggerOrder) => a.level < b.level || (a.level === b.level && a.id < b.id);
const downFirst = (a: TriggerOrder, b: TriggerOrder) => a.level > b.level || (a.level === b.level && a.id < b.id);

export function queueKey(source: TriggerSource, inst: Instrument): string {
  return source === 'index_price' ? `i:${inst.currency}` : `${source === 'mark_price' ? 'm' : 'l'}:${inst.id}`;
}

/** The price a queue's orders compare their level with; NaN while there is none (no last trade yet). */
export function refPrice(ex: Exchange, q: Pick<Queues, 'source' | 'currency' | 'instId'>): number {
  if (q.source === 'index_price') return ex.index[q.currency]?.price ?? NaN;
  const m = ex.markets.get(q.instId);
  if (m === undefined) return NaN;
  if (q.source === 'mark_price') return m.markCoin;
  return m.lastPrice === null ? NaN : m.lastPrice / UNIT;
}

export class TriggerIndex {
  private readonly queues = new Map<string, Queues>();
  /** Mark-price queues per currency: a mark refresh looks at these only. */
  private readonly markKeys = new Map<CurrencyCode, Set<string>>();
  /** Untriggered orders per instrument (settlement and halts cancel them). */
  readonly byInst = new Map<number, Set<TriggerOrder>>();
  private readonly untriggered = new Map<number, number>();
  /** Untriggered good_til_day orders (expired by the `expire_orders` command). */
  readonly gtd = new Set<TriggerOrder>();
  /** Queues whose price moved in the current command, in the order they moved. */
  private readonly dirty: string[] = [];
  private readonly dirtySet = new Set<string>();

  constructor(private readonly ex: Exchange) {}

  // ---- price moves -----------------------------------------------------------------------------

  indexMoved(currency: CurrencyCode): void {
    this.markDirty(`i:${currency}`);
  }

  marksMoved(currency: CurrencyCode): void {
    const keys = this.markKeys.get(currency);
    if (keys !== undefined) for (const k of keys) this.markDirty(k);
  }

  lastMoved(instId: number): void {
    if (this.queues.size !== 0) this.markDirty(`l:${instId}`);
  }

  markDirty(key: string): void {
    if (!this.queues.has(key) || this.dirtySet.has(key)) return;
    this.dirtySet.add(key);
    this.dirty.push(key);
  }

  /**
   * Takes out the orders the price of the queue that moved first has reached (in no set order: the
   * caller sorts them); undefined when no queue is left to look at. A queue left empty is dropped.
   */
  nextReached(): TriggerOrder[] | undefined {
    if (this.dirty.length === 0) return undefined;
    const key = this.dirty.shift()!;
    this.dirtySet.delete(key);
    const q = this.queues.get(key);
    if (q === undefined) return [];
    const fired = this.reached(q);
    if (fired.length === 0) return fired;
    this.dropIfEmpty(key, q);
    return fired;
  }

  /** Takes out of `q` every order its reference price has reached (trailing levels follow it first). */
  private reached(q: Queues): TriggerOrder[] {
    const x = refPrice(this.ex, q);
    const out: TriggerOrder[] = [];
    if (!Number.isFinite(x)) return out;
    for (let t = q.up.peek(); t !== undefined && x >= t.level; t = q.up.peek()) out.push(q.up.pop()!);
    for (let t = q.down.peek(); t !== undefined && x <= t.level; t = q.down.peek()) out.push(q.down.pop()!);
    for (const t of q.trailing) {
      if (t.firesUp) {
        if (x < t.peak) {
          t.peak = x;
          t.level = x + t.offset;
        }
        if (x >= t.level) out.push(t);
      } else {
        if (x > t.peak) {
          t.peak = x;
          t.level = x - t.offset;
        }
        if (x <= t.level) out.push(t);
      }
    }
    for (const t of out) if (t.trailing) q.trailing.delete(t);
    return out;
  }

  // ---- untriggered orders ----------------------------------------------------------------------

  untriggeredCount(userId: number): number {
    return this.untriggered.get(userId) ?? 0;
  }

  /** Into the queues and counts (placed, or restored untriggered). */
  add(t: TriggerOrder): void {
    this.enqueue(t);
    this.untriggered.set(t.userId, this.untriggeredCount(t.userId) + 1);
    let set = this.byInst.get(t.inst.id);
    if (set === undefined) this.byInst.set(t.inst.id, (set = new Set()));
    set.add(t);
    if (t.cmd.tif === 'good_til_day') this.gtd.add(t);
  }

  /** Out of the queues and counts (fired or cancelled). */
  forget(t: TriggerOrder): void {
    this.unqueue(t);
    this.untriggered.set(t.userId, this.untriggeredCount(t.userId) - 1);
    this.gtd.delete(t);
    const set = this.byInst.get(t.inst.id);
    if (set !== undefined) {
      set.delete(t);
      if (set.size === 0) this.byInst.delete(t.inst.id);
    }
  }

  enqueue(t: TriggerOrder): void {
    const key = queueKey(t.source, t.inst);
    let q = this.queues.get(key);
    if (q === undefined) {
      q = { source: t.source, currency: t.inst.currency, instId: t.inst.id, up: new IndexedHeap(upFirst), down: new IndexedHeap(downFirst), trailing: new Set() };
      this.queues.set(key, q);
      if (t.source === 'mark_price') {
        let keys = this.markKeys.get(t.inst.currency);
        if (keys === undefined) this.markKeys.set(t.inst.currency, (keys = new Set()));
        keys.add(key);
      }
    }
    if (t.trailing) q.trailing.add(t);
    else if (t.firesUp) q.up.push(t);
    else q.down.push(t);
  }

  unqueue(t: TriggerOrder): void {
    const key = queueKey(t.source, t.inst);
    const q = this.queues.get(key);
    if (q === undefined) return;
    if (t.trailing) q.trailing.delete(t);
    else if (t.firesUp) q.up.remove(t);
    else q.down.remove(t);
    this.dropIfEmpty(key, q);
  }

  private dropIfEmpty(key: string, q: Queues): void {
    if (q.up.size !== 0 || q.down.size !== 0 || q.trailing.size !== 0) return;
    this.queues.delete(key);
    if (q.source === 'mark_price') {
      const keys = this.markKeys.get(q.currency)!;
      keys.delete(key);
      if (keys.size === 0) this.markKeys.delete(q.currency);
    }
  }
}
