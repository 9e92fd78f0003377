// A least-recently-used cache bounded by bytes (issue 14 finding 2): read results are cached to be
// shared between requesters, and a flood of distinct keys (every `depth` from 1 to 10,000 on an idle
// market) must not grow memory past the bound. Each entry carries its own size: exact for rendered
// text, an estimate for objects; an entry larger than the whole bound is not kept.

export class ByteLru<V> {
  /** Map iteration order is insertion order: the first entry is the least recently used. */
  private readonly entries = new Map<string, { value: V; bytes: number }>();
  private held = 0;

  constructor(readonly maxBytes: number) {}

  get(key: string): V | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    // moved to the end: most recently used
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.value;
  }

  set(key: string, value: V, bytes: number): void {
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.entries.delete(key);
      this.held -= old.bytes;
    }
    if (bytes > this.maxBytes) return;
    this.entries.set(key, { value, bytes });
    this.held += bytes;
    for (const [k, e] of this.entries) {
      if (this.held <= this.maxBytes) break;
      this.entries.delete(k);
      this.held -= e.bytes;
    }
  }

  /** Bytes held by the entries (their stated sizes). */
  get bytes(): number {
    return this.held;
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
    this.held = 0;
  }
}
