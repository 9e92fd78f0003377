// The open orders of one account on one instrument (`OrderExposure.openOrders`), oldest first, as a
// doubly linked list through the orders themselves (`exposurePrev`/`exposureNext` on `Order`).
//
// It was a `Set<Order>` (issue 36). A resting order's place paid the set's insertion, and a set that
// grows doubles its backing store in the old generation, copied entry by entry: with the insertion
// left out altogether, a replay of resting orders ran ~20% faster (bench/replayBench.ts, 4 rounds in
// turns). Linking is four stores into objects already in hand, with nothing to allocate, rehash or
// free: the list replays the same journal ~13% faster than the set did (10 rounds in turns), for
// 16 bytes more on every order (docs/performance.md, eighteenth stop). Iteration order is the set's: insertion order, an order placed again by an edit at the end.
import type { Order } from './types.ts';

export class ExposureOrders implements Iterable<Order> {
  size = 0;
  private head: Order | null = null;
  private tail: Order | null = null;

  /** Appends an order that is in no list (each order is only ever in its own exposure's). */
  add(o: Order): void {
    o.exposurePrev = this.tail;
    o.exposureNext = null;
    if (this.tail === null) this.head = o;
    else this.tail.exposureNext = o;
    this.tail = o;
    this.size++;
  }

  /** Whether `o` is in this list: linked behind another order, or the first. */
  has(o: Order): boolean {
    return o.exposurePrev !== null || this.head === o;
  }

  /** Unlinks `o`; false (and nothing changed) when it was not in the list, as Set.delete. */
  delete(o: Order): boolean {
    if (!this.has(o)) return false;
    const { exposurePrev: prev, exposureNext: next } = o;
    if (prev === null) this.head = next;
    else prev.exposureNext = next;
    if (next === null) this.tail = prev;
    else next.exposurePrev = prev;
    // unlinked orders hold no references into the list (a closed order is kept for its history)
    o.exposurePrev = null;
    o.exposureNext = null;
    this.size--;
    return true;
  }

  /**
   * Oldest first. The list must not change while it is iterated (unlike a Set's iteration, which
   * skips what was deleted and visits what was added): collect first, then close or cancel, as
   * every caller does.
   */
  [Symbol.iterator](): Iterator<Order> {
    let node = this.head;
    return {
      next(): IteratorResult<Order> {
        if (node === null) return { done: true, value: undefined };
        const o = node;
        node = o.exposureNext;
        return { done: false, value: o };
      },
    };
  }
}
