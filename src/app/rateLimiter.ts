// Fixed-window counters per key, in memory at the edge (login attempts, invite-code checks).
// Bounded: windows that have ended are dropped when the map grows.

const MAX_KEYS = 100_000;

export class RateLimiter {
  private windows = new Map<string, { start: number; count: number }>();
  constructor(private readonly now: () => number) {}

  /** Counts one event; false when the key already used `limit` events in the current window. */
  allow(key: string, limit: number, windowMs: number): boolean {
    const w = this.current(key, windowMs);
    if (w.count >= limit) return false;
    w.count++;
    return true;
  }

  /** Whether one more event would be allowed, without counting it. */
  peek(key: string, limit: number, windowMs: number): boolean {
    return this.current(key, windowMs).count < limit;
  }

  private current(key: string, windowMs: number): { start: number; count: number } {
    const t = this.now();
    let w = this.windows.get(key);
    if (!w || t - w.start >= windowMs) {
      if (this.windows.size >= MAX_KEYS) this.prune(t, windowMs);
      w = { start: t, count: 0 };
      this.windows.set(key, w);
    }
    return w;
  }

  private prune(t: number, windowMs: number): void {
    for (const [k, w] of this.windows) if (t - w.start >= windowMs) this.windows.delete(k);
    if (this.windows.size >= MAX_KEYS) this.windows.clear();
  }
}
