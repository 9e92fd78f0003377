// Deribit-style credit rate limits (issue 14, finding 5; reference/deribit-v2.md section 4).
// Every registry call takes credits from a pool ("leaky bucket": it refills continuously up to its
// size). Two pools per subject: matching-engine requests (order entry, edits, cancels) and
// everything else. Subjects: the user and, for a call made with an API key (or a token issued to
// one), also that key; unauthenticated calls are charged to the client IP. A call that finds too
// few credits is refused with 10028 and the wait until it would pass (retry_after_ms).
//
// This file is the one place that says what a call costs (`callCost`, `replyCost`, `workCost`),
// which pool it draws on (`MATCHING_METHODS`, the quotes pool), and how big each pool is
// (`NON_MATCHING`, `MATCHING_TIERS`, `QUOTE_TIERS`).
//
// Cost follows work (issue 29): a call that carries many orders pays for each of them. mass_quote
// pays, besides its matching-engine request, QUOTE_COST per quote side it carries (bid or ask, an
// amount of 0 included: a removal is work too) from a third pool of its own (Deribit limits mass
// quotes apart from other requests); up to MAX_QUOTES_PER_MESSAGE x 2 sides per call.
// The clock is injected (the services clock), so tests pin it and see exact arithmetic.

export type Pool = 'matching' | 'non_matching' | 'quotes';
export type Tier = 1 | 2 | 3 | 4;

export interface PoolLimits {
  /** Pool size, credits: the burst a full pool allows. */
  maxCredits: number;
  /** Credits added per second, continuously, up to maxCredits. */
  refillPerSec: number;
}

export interface UserLimits {
  tier: Tier;
  matching: PoolLimits;
  nonMatching: PoolLimits;
}

/** Deribit's cost of one request. */
export const REQUEST_COST = 500;
/** Deribit's non-matching-engine pool: 50,000 credits refilling 10,000/s (burst 100, 20 req/s). */
export const NON_MATCHING: PoolLimits = { maxCredits: 50_000, refillPerSec: 10_000 };
/**
 * The matching-engine pool per account tier, Deribit's table (by 7-day volume there; assigned by an
 * administrator here, `private/set_rate_limits`): burst and requests per second, at REQUEST_COST.
 *   tier 1: 100 burst, 30/s;  tier 2: 50 burst, 20/s;  tier 3: 30 burst, 10/s;  tier 4: 20 burst, 5/s.
 */
export const MATCHING_TIERS: Record<Tier, PoolLimits> = {
  1: { maxCredits: 100 * REQUEST_COST, refillPerSec: 30 * REQUEST_COST },
  2: { maxCredits: 50 * REQUEST_COST, refillPerSec: 20 * REQUEST_COST },
  3: { maxCredits: 30 * REQUEST_COST, refillPerSec: 10 * REQUEST_COST },
  4: { maxCredits: 20 * REQUEST_COST, refillPerSec: 5 * REQUEST_COST },
};

/** What one quote side of a mass_quote costs in the quotes pool: as much as one order. */
export const QUOTE_COST = REQUEST_COST;
/**
 * The quotes pool per account tier, in quote sides: burst and sides per second. A full mass_quote
 * (100 two-sided quotes, 200 sides) fits the burst of tier 4 once, and then once every 2 s.
 *   tier 1: 1,000 burst, 500/s;  tier 2: 600, 300/s;  tier 3: 400, 200/s;  tier 4: 200, 100/s.
 */
export const QUOTE_TIERS: Record<Tier, PoolLimits> = {
  1: { maxCredits: 1000 * QUOTE_COST, refillPerSec: 500 * QUOTE_COST },
  2: { maxCredits: 600 * QUOTE_COST, refillPerSec: 300 * QUOTE_COST },
  3: { maxCredits: 400 * QUOTE_COST, refillPerSec: 200 * QUOTE_COST },
  4: { maxCredits: 200 * QUOTE_COST, refillPerSec: 100 * QUOTE_COST },
};

/** Sides read from one mass_quote at most (the schema allows 100 quotes; this bounds the count's own work). */
const MAX_SIDES_COUNTED = 1000;

/**
 * What a call costs in the quotes pool, from its params before it runs: QUOTE_COST per quote side
 * of a mass_quote, 0 for every other method. The other batch methods need no such charge: a cancel
 * (cancel_all*, cancel_by_label, cancel_quotes) removes at most the orders the user has open
 * (bounded per user), each of which paid when it was placed; reads are bounded by `count` and
 * charged by their reply's size (replyCost).
 */
export function workCost(name: string, params: Record<string, unknown>): number {
  if (name !== 'private/mass_quote' || !Array.isArray(params.quotes)) return 0;
  let sides = 0;
  const quotes = params.quotes as unknown[];
  for (let i = 0; i < quotes.length && sides < MAX_SIDES_COUNTED; i++) {
    const q = quotes[i] as { bid?: unknown; ask?: unknown } | null;
    if (q === null || typeof q !== 'object') continue;
    if (q.bid !== undefined) sides++;
    if (q.ask !== undefined) sides++;
  }
  return sides * QUOTE_COST;
}

/** Registry methods (canonical names) that go to the matching engine. */
export const MATCHING_METHODS: ReadonlySet<string> = new Set([
  'private/buy',
  'private/sell',
  'private/edit',
  'private/edit_by_label',
  'private/cancel',
  'private/cancel_all',
  'private/cancel_all_by_currency',
  'private/cancel_all_by_instrument',
  'private/cancel_by_label',
  'private/close_position',
  'private/mass_quote',
  'private/cancel_quotes',
  'private/execute_block_trade',
  'private/approve_block_trade',
]);

/** A reply up to this size costs REQUEST_COST; each further started block of it costs as much again. */
export const REPLY_BYTES_PER_COST = 32 * 1024;

/** What a call costs before it runs: REQUEST_COST (the reply's size may add to it: replyCost). */
export function callCost(): number {
  return REQUEST_COST;
}

/**
 * What a reply of `bytes` adds to its call's cost, charged after the reply is built: nothing up to
 * REPLY_BYTES_PER_COST, then REQUEST_COST per started block of it. A 1 MiB get_instruments reply
 * costs 500 + 31 x 500 = 16,000 credits: 3 in a burst, 0.6 per second sustained from one pool.
 */
export function replyCost(bytes: number): number {
  return bytes <= REPLY_BYTES_PER_COST ? 0 : Math.ceil((bytes - REPLY_BYTES_PER_COST) / REPLY_BYTES_PER_COST) * REQUEST_COST;
}

/** Buckets kept at most per pool; idle (refilled) buckets are dropped first. */
const MAX_BUCKETS = 200_000;

interface Bucket {
  /** millicredits: refill is credits per second = millicredits per millisecond, so it stays exact */
  m: number;
  /** ms of the last refill */
  last: number;
  /** ms until which a refusal of this subject is still "in force" (refusalHold) */
  refusedUntil: number;
}

/**
 * Who pays: a user (its id, a positive number), an API key (minus its id) or a client IP (text).
 * Numbers, so that the per-call lookup hashes no new string.
 */
export type Subject = number | string;

/** Who a call is charged to, and from which pool. */
export interface Charge {
  subjects: Subject[];
  pool: Pool;
  limits: PoolLimits;
}

export class CreditLimiter {
  private readonly pools: Record<Pool, Map<Subject, Bucket>> = { matching: new Map(), non_matching: new Map(), quotes: new Map() };
  /** Per-user limits set by an administrator (kept in the journal's meta table: creditSettings.ts). */
  readonly overrides = new Map<number, UserLimits>();
  /** Writes `overrides` where they survive a restart. */
  persist: () => void | Promise<void> = () => undefined;

  constructor(
    private readonly now: () => number,
    /** STRIKEBOOK_RATE_LIMITS: false turns every limit off (tests and benches that flood). */
    readonly enabled: boolean,
    readonly defaultTier: Tier,
    /** STRIKEBOOK_RATE_LIMIT_HOLD_MAX_MS: the longest a refusal is held (refusalHold); 0 never holds. */
    readonly holdMaxMs = 0,
  ) {}

  /** A user's limits: set by an administrator, else the default tier's. */
  limitsOf(userId: number): UserLimits {
    return this.overrides.get(userId) ?? tierLimits(this.defaultTier);
  }

  /** The pool limits a charge on `pool` uses: a user's (keys share them), or an IP's. */
  poolLimits(userId: number | null, pool: Pool): PoolLimits {
    if (userId === null) return NON_MATCHING;
    const l = this.limitsOf(userId);
    // the quotes pool follows the user's tier (an administrator sets the tier)
    return pool === 'matching' ? l.matching : pool === 'quotes' ? QUOTE_TIERS[l.tier] : l.nonMatching;
  }

  /**
   * Takes `cost` credits from every subject's pool, or none: 0 when taken, else the milliseconds
   * until all of them would have enough.
   */
  take(c: Charge, cost: number): number {
    const t = this.now();
    const map = this.pools[c.pool];
    let wait = 0;
    for (const s of c.subjects) {
      const short = cost * 1000 - this.bucket(map, s, c.limits, t).m;
      if (short > 0) wait = Math.max(wait, Math.ceil(short / c.limits.refillPerSec));
    }
    if (wait > 0) return wait;
    for (const s of c.subjects) this.bucket(map, s, c.limits, t).m -= cost * 1000;
    return 0;
  }

  /**
   * How long to hold the 10028 of a charge that `take` just refused with `wait` ms, before it is
   * answered. A client that waited as it was told gets its refusal at once (0). One that sends again
   * while a refusal is still in force (a flooder that ignores retry_after, or many concurrent
   * requests past the burst) queues: each such refusal pushes the subject's horizon one request's
   * refill further (at most holdMaxMs ahead) and is held until its place in it.
   *
   * Why: the refusals themselves cost the engine thread (parse, authenticate, answer). 256
   * connections resending each refusal at once took every other client's turn (abuse bench (c):
   * another trader's p99 11.8x); held, each connection sends at most one request per hold.
   */
  refusalHold(c: Charge, wait: number, cost: number): number {
    if (this.holdMaxMs <= 0) return 0;
    const t = this.now();
    const map = this.pools[c.pool];
    const step = Math.ceil((cost * 1000) / c.limits.refillPerSec);
    let hold = 0;
    for (const s of c.subjects) {
      const b = this.bucket(map, s, c.limits, t);
      if (t < b.refusedUntil) {
        b.refusedUntil = Math.min(b.refusedUntil + step, t + this.holdMaxMs);
        hold = Math.max(hold, b.refusedUntil - t);
      } else b.refusedUntil = t + wait;
    }
    return hold;
  }

  /** Charges `cost` more after the fact (a big reply); a pool may go below zero, delaying the next call. */
  charge(c: Charge, cost: number): void {
    if (cost <= 0) return;
    const t = this.now();
    const map = this.pools[c.pool];
    for (const s of c.subjects) this.bucket(map, s, c.limits, t).m -= cost * 1000;
  }

  /** Credits left in a subject's pool now (admin reads, tests). */
  credits(subject: Subject, pool: Pool, limits: PoolLimits): number {
    return Math.floor(this.bucket(this.pools[pool], subject, limits, this.now()).m / 1000);
  }

  /** Forgets a subject's buckets (new limits start from a full pool). */
  reset(subject: Subject): void {
    this.pools.matching.delete(subject);
    this.pools.non_matching.delete(subject);
    this.pools.quotes.delete(subject);
  }

  get size(): number {
    return this.pools.matching.size + this.pools.non_matching.size + this.pools.quotes.size;
  }

  private bucket(map: Map<Subject, Bucket>, subject: Subject, limits: PoolLimits, t: number): Bucket {
    const max = limits.maxCredits * 1000;
    let b = map.get(subject);
    if (b === undefined) {
      if (map.size >= MAX_BUCKETS) prune(map, t);
      b = { m: max, last: t, refusedUntil: 0 };
      map.set(subject, b);
      return b;
    }
    if (t > b.last) {
      b.m = Math.min(max, b.m + (t - b.last) * limits.refillPerSec);
      b.last = t;
    } else if (b.m > max) b.m = max; // limits lowered by an administrator
    return b;
  }
}

/**
 * Idle buckets have refilled, and a full bucket is the same as an absent one, so they go first; if
 * that is not enough (more than MAX_BUCKETS subjects busy at once), the least recently used go.
 */
function prune(map: Map<Subject, Bucket>, t: number): void {
  for (const [k, b] of map) if (b.m >= 0 && t - b.last >= 60_000) map.delete(k);
  for (const k of map.keys()) {
    if (map.size < MAX_BUCKETS * 0.9) break;
    map.delete(k);
  }
}

export function tierLimits(tier: Tier): UserLimits {
  return { tier, matching: MATCHING_TIERS[tier], nonMatching: NON_MATCHING };
}
