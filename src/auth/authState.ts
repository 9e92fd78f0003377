// Credentials held in exchange state: invite codes and token hashes. Part of the deterministic
// state (journaled, snapshotted) so sessions survive a restart; no secret is stored in the clear.
import type { InviteCode, TokenRecord } from '../engine/types.ts';

/** Tokens are swept for expiry every this many issues, so memory stays bounded. */
const SWEEP_EVERY = 256;
/**
 * Live sessions (token pairs) per user. One more revokes that user's oldest, as Deribit drops the
 * oldest of its 16 sessions per API key: a client that logs in again and again (a bot restarting
 * in a loop) cannot grow the state, the snapshots and every token lookup without limit.
 */
export const MAX_SESSIONS_PER_USER = 64;

export class AuthState {
  invites = new Map<string, InviteCode>();
  /** sha256(access token) -> record */
  access = new Map<string, TokenRecord>();
  /** sha256(refresh token) -> record */
  refresh = new Map<string, TokenRecord>();
  issuedCount = 0;
  /**
   * Each user's sessions, by refresh token hash (a session lives as long as its refresh token), in
   * issue order. Derived from `refresh` (whose order is issue order), so not in the snapshot.
   */
  private sessions = new Map<number, Set<string>>();

  issue(userId: number, access: string, refresh: string, scope: string, now: number, accessTtl: number, refreshTtl: number): void {
    this.access.set(access, { userId, scope, expiresAt: now + accessTtl, pair: refresh });
    this.refresh.set(refresh, { userId, scope, expiresAt: now + refreshTtl, pair: access });
    const own = this.sessionsOf(userId);
    own.add(refresh);
    if (own.size > MAX_SESSIONS_PER_USER) this.consumeRefresh(own.values().next().value!);
    if (++this.issuedCount % SWEEP_EVERY === 0) this.sweep(now);
  }

  /** Refresh tokens rotate: using one voids it (and its access token). Also ends a session. */
  consumeRefresh(refresh: string): void {
    const r = this.refresh.get(refresh);
    if (!r) return;
    this.dropRefresh(refresh, r.userId);
    this.access.delete(r.pair);
  }

  revokeAccess(access: string): boolean {
    const a = this.access.get(access);
    if (!a) return false;
    this.access.delete(access);
    this.dropRefresh(a.pair, a.userId);
    return true;
  }

  sweep(now: number): void {
    for (const [k, v] of this.access) if (v.expiresAt <= now) this.access.delete(k);
    for (const [k, v] of this.refresh) if (v.expiresAt <= now) this.dropRefresh(k, v.userId);
  }

  /** Replaces the token tables (snapshot restore); entries must be in issue order. */
  restoreTokens(access: Iterable<[string, TokenRecord]>, refresh: Iterable<[string, TokenRecord]>): void {
    this.access = new Map(access);
    this.refresh = new Map(refresh);
    this.sessions.clear();
    for (const [k, v] of this.refresh) this.sessionsOf(v.userId).add(k);
  }

  /** Live sessions of a user (for tests and diagnostics). */
  sessionCount(userId: number): number {
    return this.sessions.get(userId)?.size ?? 0;
  }

  private sessionsOf(userId: number): Set<string> {
    let own = this.sessions.get(userId);
    if (own === undefined) {
      own = new Set();
      this.sessions.set(userId, own);
    }
    return own;
  }

  private dropRefresh(refresh: string, userId: number): void {
    this.refresh.delete(refresh);
    const own = this.sessions.get(userId);
    if (own === undefined) return;
    own.delete(refresh);
    if (own.size === 0) this.sessions.delete(userId);
  }

  inviteStatus(code: string, now: number): 'ok' | 'unknown' | 'expired' | 'exhausted' {
    const inv = this.invites.get(code);
    if (!inv || inv.revoked) return 'unknown';
    if (inv.expiresAt <= now) return 'expired';
    if (inv.uses >= inv.maxUses) return 'exhausted';
    return 'ok';
  }
}
