// The leader's side of the lease (src/journal/postgresLease.ts): renews it on the journal's writer
// connection and says, at every moment, whether this server may acknowledge.
//
// Three states. HELD: the last renewal that succeeded was sent less than the renew deadline ago
// (lease - renew interval): acknowledgements go out. SUSPENDED: past the deadline without a newer
// renewal (the event loop stalled, the connection is slow or hangs): nothing is acknowledged (a
// committed batch's acknowledgement waits), /ready answers 503, and renewals go on. A renewal that
// gets through with the term still ours makes it HELD again: nobody took over (the takeover and the
// renewal are serialized on the lease row), so the journal still ends with our records. LOST: the
// term is no longer ours (a renewal or an append found another term), or a renewal has gone
// unanswered for longer than the lease plus a renew interval (by then the database has certainly
// let the lease expire): for good; every waiting acknowledgement fails and the server steps down.
//
// Only the journal's term fence (APPEND_SQL) protects the journal; this protects the answers: a
// leader that a standby may have replaced answers nothing until the database says it was not.
import type pg from 'pg';
import { renewDeadlineMs, renewLease, type LeaseGrant, type LeaseStatus, type LeaseTiming } from './postgresLease.ts';

export interface LeaseKeeperOptions {
  client: pg.ClientBase;
  /** Runs a statement on the writer connection in order with the journal's writes. */
  serial<T>(fn: () => Promise<T>): Promise<T>;
  grant: LeaseGrant;
  lockKey: string;
  timing: LeaseTiming;
  /** Whether the journal can no longer write (a failed write): renewals stop, the lease runs out. */
  broken(): boolean;
  onLost(err: Error): void;
}

export class LeaseKeeper {
  private grant: LeaseGrant;
  private readonly deadlineMs: number;
  private lostWhy: string | null = null;
  private renewing = false;
  /** performance.now() when the renewal in flight was issued. */
  private renewIssuedAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private waiters: Array<{ resolve(): void; reject(err: Error): void }> = [];
  private lostError: Error | null = null;

  constructor(private readonly opts: LeaseKeeperOptions) {
    this.grant = opts.grant;
    this.deadlineMs = renewDeadlineMs(opts.timing);
    this.timer = setInterval(() => this.tick(), opts.timing.renewMs);
    this.timer.unref();
  }

  get term(): number {
    return this.grant.term;
  }

  /** Whether this server may acknowledge now: by its monotonic clock, checked at every use. */
  valid(): boolean {
    return this.lostWhy === null && performance.now() < this.grant.sentAt + this.deadlineMs;
  }

  get lost(): string | null {
    return this.lostWhy;
  }

  status(): LeaseStatus {
    const age = performance.now() - this.grant.sentAt;
    const held = this.valid();
    return { term: this.grant.term, ageMs: Math.round(age), validForMs: held ? Math.round(this.deadlineMs - age) : 0, held, lost: this.lostWhy };
  }

  /** Resolves while the lease is held, or once a renewal makes it so; rejects once it is lost. */
  whenValid(): Promise<void> {
    if (this.lostError !== null) return Promise.reject(this.lostError);
    if (this.valid()) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  lose(why: string): void {
    if (this.lostWhy !== null) return;
    this.lostWhy = why;
    this.stop();
    const err = new Error(`journal: lost the leadership lease of term ${this.grant.term}: ${why}`);
    this.lostError = err;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(err);
    this.opts.onLost(err);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** The journal closes: no more renewals, and an acknowledgement still waiting for one fails. */
  close(): void {
    this.stop();
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(new Error('journal: closed while the lease waited for a renewal'));
  }

  private tick(): void {
    if (this.lostWhy !== null) return;
    if (!this.renewing) {
      this.renew();
      return;
    }
    const outstanding = performance.now() - this.renewIssuedAt;
    if (outstanding <= this.opts.timing.leaseMs + this.opts.timing.renewMs) return;
    // After a stall of this thread the answer may be waiting in the socket already: the I/O of this
    // turn runs before setImmediate's callback, so only a renewal still unanswered then is given up on.
    setImmediate(() => {
      if (this.renewing && performance.now() - this.renewIssuedAt > this.opts.timing.leaseMs + this.opts.timing.renewMs) {
        this.lose(`a renewal has gone unanswered for ${Math.round(performance.now() - this.renewIssuedAt)} ms`);
      }
    });
  }

  private renew(): void {
    if (this.opts.broken()) return;
    this.renewing = true;
    this.renewIssuedAt = performance.now();
    const held = this.grant;
    this.opts
      .serial(() => renewLease(this.opts.client, held, this.opts.lockKey, this.opts.timing))
      .then(
        (next) => {
          if (this.lostWhy !== null) return;
          if (next === null) return this.lose('another server took the lease over');
          this.grant = next;
          if (!this.valid()) return;
          const waiters = this.waiters;
          this.waiters = [];
          for (const w of waiters) w.resolve();
        },
        (e: unknown) => this.lose(`renewing failed: ${e instanceof Error ? e.message : String(e)}`),
      )
      .finally(() => {
        this.renewing = false;
        // an answer that came late (after a stall) holds no more: ask again at once
        if (this.lostWhy === null && !this.valid()) this.renew();
      });
  }
}
