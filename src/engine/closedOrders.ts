// Which closed orders an account's order map forgets first (Trading.pruneClosed): the oldest, i.e.
// the smallest ids (an account's orders enter its map as they are made, in id order).
//
// The map used to be walked from its start to find them on every prune. A Map that is added to at
// one end and deleted from at the other keeps the deleted entries as holes until V8 rehashes it, so
// that walk crossed thousands of holes each time: 99 ms of a restart's 500,000-record replay
// (restart bench profile) and the same share of live order handling. A min-heap of the closed ids
// finds them directly. Derived state only: built from the map on first use (after a restore, for
// an account never pruned), never snapshotted, so replay and the state hash are unaffected.
import type { User } from './types.ts';

export class ClosedOrders {
  private readonly heaps = new WeakMap<User, number[]>();

  /** Call when one of the account's orders closed (after its state changed), or entered its map closed. */
  closed(user: User, orderId: number): void {
    const heap = this.heaps.get(user);
    if (heap !== undefined) push(heap, orderId);
  }

  /** Forgets the account's `excess` oldest closed orders from its map. */
  forget(user: User, excess: number): void {
    let heap = this.heaps.get(user);
    if (heap === undefined) {
      heap = [];
      for (const [id, o] of user.orders) if (o.state !== 'open') heap.push(id);
      // map order is ascending already; sorted all the same, an ascending array being a heap
      heap.sort((a, b) => a - b);
      this.heaps.set(user, heap);
    }
    while (excess > 0 && heap.length > 0) {
      const id = pop(heap);
      const o = user.orders.get(id);
      // an id pushed twice, or one its map no longer holds: nothing to forget
      if (o === undefined || o.state === 'open') continue;
      user.orders.delete(id);
      excess--;
    }
  }
}

function push(heap: number[], x: number): void {
  let i = heap.length;
  heap.push(x);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (heap[parent]! <= x) break;
    heap[i] = heap[parent]!;
    i = parent;
  }
  heap[i] = x;
}

function pop(heap: number[]): number {
  const top = heap[0]!;
  const last = heap.pop()!;
  const n = heap.length;
  if (n > 0) {
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && heap[r]! < heap[l]! ? r : l;
      if (heap[c]! >= last) break;
      heap[i] = heap[c]!;
      i = c;
    }
    heap[i] = last;
  }
  return top;
}
