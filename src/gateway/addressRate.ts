// Frames a gateway reads per client address (docs/security.md "Gateways"): a token bucket per
// address, refilled at STRIKEBOOK_GATEWAY_FRAMES_PER_SEC_PER_IP with a burst of twice that. An
// address past it is not refused frame by frame (a refusal costs as much as a cheap answer, and a
// flood of instantly refused requests is a tight loop that takes the gateway's CPU from everyone):
// its connection stops being read until the bucket has refilled, so what it sends waits in its own
// socket buffers and costs the gateway nothing. The leader's own per-user and per-address credits
// still apply to what is forwarded.
export class AddressRate {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly burst: number;

  constructor(private readonly perSec: number) {
    this.burst = 2 * perSec;
  }

  /** Takes one frame of `ip`; returns 0 within the rate, else how long to stop reading it, ms. */
  take(ip: string, now = performance.now()): number {
    let b = this.buckets.get(ip);
    if (!b) this.buckets.set(ip, (b = { tokens: this.burst, at: now }));
    b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) * this.perSec) / 1000);
    b.at = now;
    b.tokens -= 1;
    return b.tokens >= 0 ? 0 : Math.ceil((-b.tokens * 1000) / this.perSec);
  }

  /** Forgets the addresses whose buckets are full again (bounded memory). */
  sweep(now = performance.now()): void {
    for (const [ip, b] of this.buckets) if (b.tokens + ((now - b.at) * this.perSec) / 1000 >= this.burst) this.buckets.delete(ip);
  }
}
