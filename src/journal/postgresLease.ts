// Leadership with a lease (issue 30, docs/architecture.md "Leadership lease"). A session-level
// advisory lock alone cannot replace a leader that is frozen (SIGSTOP, a stalled VM) or whose
// connection hangs in a proxy: its session, and the lock, live on while it acknowledges nothing.
// So the right to append is a row in the journal's schema: a term, a holder and an expiry computed
// with the DATABASE's clock (now()), never the servers' (their clocks may disagree; the database is
// the one judge both sides ask). The leader renews it every `renewMs` on the journal's own writer
// connection (so a renewal proves the connection that writes still works); every append is fenced
// on the term in the same statement (postgresJournal.ts APPEND_SQL); a standby takes the lease, with
// the next term, once it has expired, whatever stopped the renewals. The leader answers clients only
// while its own clock says the lease cannot have ended (src/journal/leaseKeeper.ts).
//
// The advisory lock is kept beside it for one case only: a leader that crashed or exited has lost
// its session at once, and waiting out its lease would add seconds to every kill -9 failover. The
// leader records in the row whether it holds the lock; a standby that finds the lock free while the
// row says the holder had it knows the holder's session is gone (and its writes with it: the
// journal never reconnects) and takes over without waiting. The lock also keeps out a server of an
// older version, which knows only the lock.
import type pg from 'pg';

export const LEASE_TABLE_SQL = `
  CREATE TABLE IF NOT EXISTS leader_lease (
    id int PRIMARY KEY CHECK (id = 1),
    term bigint NOT NULL,
    holder text NOT NULL,
    expires_at timestamptz NOT NULL,
    renewed_at timestamptz NOT NULL,
    lock_held boolean NOT NULL
  )`;

/** How long a lease lasts past its last renewal, and how often the leader renews it (ms). */
export interface LeaseTiming {
  leaseMs: number;
  renewMs: number;
}

export const DEFAULT_LEASE: LeaseTiming = { leaseMs: 5_000, renewMs: 1_000 };

/** Why `timing` cannot work, or null: the renew deadline must leave at least one renewal before it. */
export function leaseTimingProblem(timing: LeaseTiming): string | null {
  const { leaseMs, renewMs } = timing;
  if (!Number.isSafeInteger(leaseMs) || !Number.isSafeInteger(renewMs) || renewMs < 10 || leaseMs < 100) return 'lease and renew intervals must be integers (renew >= 10 ms, lease >= 100 ms)';
  if (leaseMs < 3 * renewMs) return `the lease (${leaseMs} ms) must be at least 3 times the renew interval (${renewMs} ms)`;
  return null;
}

/**
 * How long after a renewal was SENT the leader may still acknowledge: one renew interval before the
 * lease can end. The database computed the expiry as its now() + leaseMs when the renewal ran, which
 * is after it was sent, so the leader's own monotonic clock, counted from the send, stops it at
 * least `renewMs` before any standby may take over (clock rates agree far better than that).
 */
export function renewDeadlineMs(timing: LeaseTiming): number {
  return timing.leaseMs - timing.renewMs;
}

/** A lease this session holds: its term, and whether it also holds the advisory lock. */
export interface LeaseGrant {
  term: number;
  lockHeld: boolean;
  /** performance.now() when the statement that granted it was sent. */
  sentAt: number;
}

function ms(n: number): string {
  return String(Math.trunc(n));
}

/**
 * One attempt to take the lease on `client`: granted when there is none yet, when it has expired,
 * or when its holder held the advisory lock and the lock is free now (its session ended). Null
 * while someone else holds it. Takes the advisory lock too when it is free.
 */
export async function tryAcquireLease(client: pg.ClientBase, lockKey: string, holder: string, timing: LeaseTiming): Promise<LeaseGrant | null> {
  const cur = await client.query<{ term: string; expired: boolean; lock_held: boolean }>('SELECT term::text AS term, expires_at <= now() AS expired, lock_held FROM leader_lease WHERE id = 1');
  const row = cur.rows[0];
  // The lock is tried only when it would decide something: a standby that took it while a live
  // leader holds the lease (a leader that took over from a frozen one has no lock) would keep that
  // leader from ever taking it.
  let lockHeld = false;
  if (row === undefined || row.expired || row.lock_held) {
    lockHeld = (await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [lockKey])).rows[0]!.ok;
  }
  // no row and the lock taken: a server of an older version (which knows only the lock) writes,
  // or a leader between taking the lock and writing its row
  const free = row === undefined ? lockHeld : row.expired || (row.lock_held && lockHeld);
  if (!free) {
    if (lockHeld) await client.query('SELECT pg_advisory_unlock($1::bigint)', [lockKey]);
    return null;
  }
  const sentAt = performance.now();
  // Conditioned again on what was read: another standby may have taken the lease meanwhile (the
  // row lock of ON CONFLICT serializes the two; the second sees the new term and changes nothing).
  const res = await client.query<{ term: string }>(
    `INSERT INTO leader_lease (id, term, holder, expires_at, renewed_at, lock_held)
       VALUES (1, 1, $1, now() + $2::bigint * interval '1 millisecond', now(), $3)
     ON CONFLICT (id) DO UPDATE SET term = leader_lease.term + 1, holder = excluded.holder, expires_at = excluded.expires_at,
       renewed_at = excluded.renewed_at, lock_held = excluded.lock_held
     WHERE leader_lease.term = $4::bigint AND (leader_lease.expires_at <= now() OR (leader_lease.lock_held AND $3))
     RETURNING term::text AS term`,
    [holder, ms(timing.leaseMs), lockHeld, row?.term ?? null],
  );
  const granted = res.rows[0];
  if (granted === undefined) {
    if (lockHeld) await client.query('SELECT pg_advisory_unlock($1::bigint)', [lockKey]);
    return null;
  }
  return { term: Number(granted.term), lockHeld, sentAt };
}

/**
 * Renews the lease of `term` if it is still this term's, expired or not: a takeover and a renewal
 * are serialized on the row, so a renewal that finds its term has nobody after it, and the leader
 * that stalled past its expiry with no standby waiting carries on. Takes the advisory lock in the
 * same statement while it is not held yet (a leader that took over from a frozen one gets it once
 * the frozen one is gone). Null when another server has taken the lease.
 */
export async function renewLease(client: pg.ClientBase, grant: LeaseGrant, lockKey: string, timing: LeaseTiming): Promise<LeaseGrant | null> {
  const sentAt = performance.now();
  const res = await client.query<{ lock_held: boolean }>(
    grant.lockHeld
      ? `UPDATE leader_lease SET expires_at = now() + $2::bigint * interval '1 millisecond', renewed_at = now()
          WHERE id = 1 AND term = $1::bigint RETURNING lock_held`
      : `UPDATE leader_lease SET expires_at = now() + $2::bigint * interval '1 millisecond', renewed_at = now(), lock_held = pg_try_advisory_lock($3::bigint)
          WHERE id = 1 AND term = $1::bigint RETURNING lock_held`,
    grant.lockHeld ? [grant.term, ms(timing.leaseMs)] : [grant.term, ms(timing.leaseMs), lockKey],
  );
  const row = res.rows[0];
  return row === undefined ? null : { term: grant.term, lockHeld: row.lock_held, sentAt };
}

/** Ends the lease of `term` now (a clean stop): a standby takes over without waiting for it to expire. */
export async function releaseLease(client: pg.ClientBase, term: number): Promise<void> {
  await client.query('UPDATE leader_lease SET expires_at = now() WHERE id = 1 AND term = $1::bigint', [term]);
}

/** What /health shows of the lease (src/app/haStatus.ts). */
export interface LeaseStatus {
  term: number;
  /** Since the last renewal that succeeded was sent, ms. */
  ageMs: number;
  /** How long this server may still acknowledge without another renewal, ms (0 once lost). */
  validForMs: number;
  /** Whether this server holds the lease now; false from the renew deadline on, for good. */
  held: boolean;
  /** Why the lease was lost, or null. */
  lost: string | null;
}

/** Another server holds the lease (a leader is running): a standby can wait for it. */
export class WriterLockTaken extends Error {
  override name = 'WriterLockTaken';
}

export interface AcquireOptions {
  /** How long to wait for the lease while another server holds it. */
  waitMs: number;
  /** How often it is tried again meanwhile. */
  retryMs: number;
  signal?: AbortSignal;
  /** For the refusal's message: where, and which schema. */
  where: string;
  schema: string;
}

/** Takes the lease, waiting up to `waitMs` for the holder's to expire (or its session to end). */
export async function acquireLease(client: pg.ClientBase, lockKey: string, holder: string, timing: LeaseTiming, opts: AcquireOptions): Promise<LeaseGrant> {
  const deadline = performance.now() + opts.waitMs;
  for (;;) {
    opts.signal?.throwIfAborted();
    const grant = await tryAcquireLease(client, lockKey, holder, timing);
    if (grant !== null) return grant;
    if (performance.now() >= deadline) {
      throw new WriterLockTaken(`journal: another Strikebook server is writing to this database (${opts.where}, schema "${opts.schema}"); stop it first`);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(opts.retryMs, Math.max(0, deadline - performance.now()))));
  }
}
