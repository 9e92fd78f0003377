// Replay refusal for signed requests (deri-hmac-sha256 and public/auth client_signature): a
// signature is accepted once. A signature covers the timestamp, the nonce and the whole request,
// so two different requests never share one, while a captured request re-sent as it is does.
// Keyed by (client id, signature) rather than by nonce alone: ccxt uses the millisecond as its
// nonce and signs parallel calls in one millisecond with the same nonce, and those must pass.
//
// Memory is bounded: an entry is kept only while its timestamp can still pass the freshness check
// (every clock past ts + window), and there are at most `maxEntries` in all and `maxPerKey` per
// client id. When a key has used its share of the window, its next signed request is refused
// (10028) rather than an entry dropped early: dropping one would let that signature be replayed.

/** Why a signature was not admitted. */
export type ReplayVerdict = 'ok' | 'replayed' | 'full';

export class ReplayGuard {
  /** `${clientId} ${signature prefix}` -> [client timestamp, client id], in insertion order */
  private seen = new Map<string, { ts: number; clientId: string }>();
  private perKey = new Map<string, number>();

  constructor(
    private readonly windowMs: number,
    readonly maxEntries: number,
    readonly maxPerKey: number,
  ) {}

  /**
   * Admits (clientId, signature) once. `now` are the clocks the freshness check accepts against
   * (the exchange clock and the wall clock); an entry goes when all of them are past its window.
   */
  admit(clientId: string, signature: string, ts: number, now: readonly number[]): ReplayVerdict {
    // 128 bits of an HMAC-SHA256 are plenty to tell signatures apart, and halve the memory
    const k = `${clientId} ${signature.slice(0, 32).toLowerCase()}`;
    this.expire(now);
    if (this.seen.has(k)) return 'replayed';
    const n = this.perKey.get(clientId) ?? 0;
    if (n >= this.maxPerKey || this.seen.size >= this.maxEntries) return 'full';
    this.seen.set(k, { ts, clientId });
    this.perKey.set(clientId, n + 1);
    return 'ok';
  }

  /** Entries held (tests, metrics). */
  get size(): number {
    return this.seen.size;
  }

  /**
   * Drops entries from the oldest while their window has passed on every clock. Insertion order is
   * timestamp order give or take the window, so this is amortized O(1) and may keep a few expired
   * entries behind a younger one for up to one window.
   */
  private expire(now: readonly number[]): void {
    const earliest = Math.min(...now);
    for (const [k, e] of this.seen) {
      if (earliest - e.ts <= this.windowMs) break;
      this.seen.delete(k);
      const n = (this.perKey.get(e.clientId) ?? 1) - 1;
      if (n <= 0) this.perKey.delete(e.clientId);
      else this.perKey.set(e.clientId, n);
    }
  }
}
