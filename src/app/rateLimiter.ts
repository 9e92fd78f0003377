// Fixed-window counters per key, in memory at the edge (login attempts, invite-code checks).
// Bounded: windows that have ended are dropped when the map grows.

const MAX_KEYS = 100_000;

export class RateLimiter {
  private windows = new Map<string, { start: number; count: number }>();
  private queues = new Map<string, Promise<unknown>>();

  /**
   * Runs `fn` after every earlier call with the same key has finished: parallel attempts on one
   * key are taken one at a time, so each sees the failures counted before it.
   */
  exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.queues.set(key, tail);
    void tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    return run;
  }
  constructor(private readonly now: () => number) {}

  /** Counts one event; false when the key already used `limit` events in the current window. */
  allow(key: string, limit: number, windowMs: number): boolean {
    const w = this.current(key, windowMs);
    if (w.count >= limit) return false;
    w.count++;
    return true;
  }

  /** Takes back one counted event (e.g. a login attempt that turned out to succeed). */
  release(key: string): void {
    const w = this.windows.get(key);
    if (w && w.count > 0) w.count--;
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
