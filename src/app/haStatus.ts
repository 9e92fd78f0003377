// Leader or standby, and what /ready and /health say about it (docs/operations.md): the role, the
// lease's term and age, how long since the last commit, and on a standby how far behind it is. A
// leader that lost its lease is still running for a moment (src/app/leadership.ts): it answers
// /ready 503 then, and its /health says why.
import type { LeaseStatus } from '../journal/postgresJournal.ts';
import type { StandbyFollower } from './standby.ts';

/** Leader or hot standby (docs/operations.md); a server without DATABASE_URL is always the leader. */
export interface HaState {
  role: 'leader' | 'standby';
  /** Follows the leader's journal while a standby; kept after the takeover for its figures. */
  follower: StandbyFollower | null;
  /** When this server became the leader by a takeover (performance.now()), or null. */
  tookOverAt: number | null;
  /** Why this leader stepped down (its lease is lost); null while it leads or follows. */
  fenced: string | null;
  /** When the last batch of this server's own was committed (performance.now()), or null. */
  lastCommitAt: number | null;
  /** The lease the leader writes under (PostgreSQL), or null (SQLite, a standby). */
  lease(): LeaseStatus | null;
}

export function newHaState(role: HaState['role'], follower: StandbyFollower | null, lease: () => LeaseStatus | null): HaState {
  return { role, follower, tookOverAt: null, fenced: null, lastCommitAt: null, lease };
}

/** Whether this server takes traffic that writes: the leader, with its lease held (PostgreSQL). */
export function isReady(ha: HaState): boolean {
  if (ha.role !== 'leader' || ha.fenced !== null) return false;
  const lease = ha.lease();
  return lease === null || lease.held;
}

export function readyBody(ha: HaState): { ready: boolean; role: string; term?: number; reason?: string } {
  const ready = isReady(ha);
  const lease = ha.role === 'leader' ? ha.lease() : null;
  const body: { ready: boolean; role: string; term?: number; reason?: string } = { ready, role: ha.role };
  if (lease !== null) body.term = lease.term;
  if (!ready && ha.role === 'leader') body.reason = ha.fenced ?? lease?.lost ?? 'the leadership lease is not held';
  return body;
}

export function healthBody(ha: HaState, seq: number): Record<string, unknown> {
  const now = performance.now();
  const body: Record<string, unknown> = { status: ha.fenced === null ? 'ok' : 'fenced', seq, role: ha.role };
  if (ha.role === 'standby') {
    const st = ha.follower?.status();
    if (st !== undefined) {
      body.leader = st.leaderUrl;
      body.lag = { seq: st.leaderSeq - st.appliedSeq, ms: st.lagMs, leader_seq: st.leaderSeq, since_last_read_ms: st.sinceLastReadMs };
    }
    return body;
  }
  const lease = ha.lease();
  if (lease !== null) {
    body.term = lease.term;
    body.lease = { held: lease.held, age_ms: lease.ageMs, valid_for_ms: lease.validForMs, ...(lease.lost !== null ? { lost: lease.lost } : {}) };
  }
  body.last_commit_age_ms = ha.lastCommitAt === null ? null : Math.round(now - ha.lastCommitAt);
  if (ha.fenced !== null) body.reason = ha.fenced;
  return body;
}
