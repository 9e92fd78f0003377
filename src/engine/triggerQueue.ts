// A binary heap whose items remember their position, so that a cancelled or edited trigger order
// leaves its queue in O(log n) instead of a scan. The comparator must be a total order (triggers
// break ties by order id): then the order in which items come out does not depend on how the heap
// was built, and a restored engine fires triggers in the same order as the live one.

export interface HeapItem {
  /** Position in the heap holding the item, -1 when in none (derived, never serialized). */
  heapPos: number;
}

export class IndexedHeap<T extends HeapItem> {
  private readonly items: T[] = [];

  /** `before(a, b)`: whether a comes out before b. */
  constructor(private readonly before: (a: T, b: T) => boolean) {}

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(x: T): void {
    x.heapPos = this.items.length;
    this.items.push(x);
    this.up(x.heapPos);
  }

  pop(): T | undefined {
    const top = this.items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  remove(x: T): void {
    const i = x.heapPos;
    if (i < 0 || this.items[i] !== x) return;
    const last = this.items.pop()!;
    x.heapPos = -1;
    if (last === x) return;
    this.items[i] = last;
    last.heapPos = i;
    this.down(i);
    this.up(last.heapPos);
  }

  private up(i: number): void {
    const a = this.items;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.before(a[i], a[p])) break;
      this.swap(i, p);
      i = p;
    }
  }

  private down(i: number): void {
    const a = this.items;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < a.length && this.before(a[l], a[m])) m = l;
      if (r < a.length && this.before(a[r], a[m])) m = r;
      if (m === i) return;
      this.swap(i, m);
      i = m;
    }
  }

  private swap(i: number, j: number): void {
    const a = this.items;
    const t = a[i];
    a[i] = a[j];
    a[j] = t;
    a[i].heapPos = i;
    a[j].heapPos = j;
  }
}
