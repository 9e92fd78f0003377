// Failed-login throttling (issue 14, finding 6). A fixed "10 failures per email lock it for 5
// minutes" let anyone who knows an email lock its owner out, again and again. Instead:
// - failures are counted per (account, client IP), with exponential back-off: after FREE_FAILURES
//   failures the next attempt waits 1 s, and each further failure doubles it (2 s, 4 s ... 15 min);
// - failures from clients the account has NOT logged in from are also counted per account, with
//   the same back-off, so guessing from many addresses gains nothing;
// - a client IP that logged in to the account successfully before (one of its last KNOWN_PER_ACCOUNT
//   addresses) is "known": only its own failures count against it, so a third party's wrong
//   passwords never block the owner's usual client from the right password.
// Counters decay: FORGET_MS after its last failure a counter starts over. In memory at the edge
// (it throttles requests, it is not exchange state), bounded by MAX_ENTRIES per table.
// The clock is injected (the services clock, so tests pin it).

export const FREE_FAILURES = 5;
export const BASE_BACKOFF_MS = 1_000;
export const MAX_BACKOFF_MS = 15 * 60_000;
export const FORGET_MS = 30 * 60_000;
export const KNOWN_PER_ACCOUNT = 8;
const MAX_ENTRIES = 100_000;

interface Failures {
  count: number;
  last: number;
  lockedUntil: number;
}

export class LoginThrottle {
  private fails = new Map<string, Failures>();
  /** email -> client IPs that logged in successfully, most recent last */
  private known = new Map<string, string[]>();

  constructor(private readonly now: () => number) {}

  isKnown(email: string, ip: string): boolean {
    return this.known.get(email)?.includes(ip) ?? false;
  }

  /** Milliseconds this (email, ip) must wait before its next attempt; 0 when it may try now. */
  retryAfter(email: string, ip: string): number {
    const t = this.now();
    let wait = this.wait(`${email}\n${ip}`, t);
    if (!this.isKnown(email, ip)) wait = Math.max(wait, this.wait(`${email}\n*`, t));
    return wait;
  }

  /** Counts a failed attempt from `ip`. */
  failed(email: string, ip: string): void {
    const t = this.now();
    this.count(`${email}\n${ip}`, t);
    if (!this.isKnown(email, ip)) this.count(`${email}\n*`, t);
  }

  /** A successful login: the client is known from now on and its own counter starts over. */
  succeeded(email: string, ip: string): void {
    this.fails.delete(`${email}\n${ip}`);
    const list = (this.known.get(email) ?? []).filter((x) => x !== ip);
    list.push(ip);
    if (list.length > KNOWN_PER_ACCOUNT) list.shift();
    this.known.delete(email);
    if (this.known.size >= MAX_ENTRIES) this.known.delete(this.known.keys().next().value!);
    this.known.set(email, list);
  }

  private wait(key: string, t: number): number {
    const f = this.fails.get(key);
    if (f === undefined) return 0;
    if (t - f.last > FORGET_MS) {
      this.fails.delete(key);
      return 0;
    }
    return Math.max(0, f.lockedUntil - t);
  }

  private count(key: string, t: number): void {
    let f = this.fails.get(key);
    if (f === undefined || t - f.last > FORGET_MS) {
      if (this.fails.size >= MAX_ENTRIES) this.prune(t);
      f = { count: 0, last: t, lockedUntil: 0 };
      this.fails.set(key, f);
    }
    f.count++;
    f.last = t;
    if (f.count >= FREE_FAILURES) f.lockedUntil = t + backoffMs(f.count);
  }

  private prune(t: number): void {
    for (const [k, f] of this.fails) if (t - f.last > FORGET_MS && f.lockedUntil <= t) this.fails.delete(k);
    // still full: the oldest go first (a flood of distinct emails must not grow memory)
    for (const k of this.fails.keys()) {
      if (this.fails.size < MAX_ENTRIES) break;
      this.fails.delete(k);
    }
  }
}

/** The wait after the `count`-th failure: none before FREE_FAILURES, then doubling up to the cap. */
export function backoffMs(count: number): number {
  if (count < FREE_FAILURES) return 0;
  return Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * (1 << Math.min(30, count - FREE_FAILURES)));
}
