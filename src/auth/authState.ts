// Credentials held in exchange state: invite codes and token hashes. Part of the deterministic
// state (journaled, snapshotted) so sessions survive a restart; no secret is stored in the clear.
import type { InviteCode, TokenRecord } from '../domain/credentials.ts';
// one tag syntax for tokens and sessions: `api_key:<id>`, `.<generation>` after a change ended its tokens
import { API_KEY_TAG } from './apiKeys.ts';

/** Tokens are swept for expiry every this many issues, so memory stays bounded. */
const SWEEP_EVERY = 256;
/**
 * Live sessions (token pairs) per user from password logins. One more revokes that user's oldest
 * password session: a client that logs in again and again (a bot restarting in a loop) cannot grow
 * the state, the snapshots and every token lookup without limit.
 */
export const MAX_SESSIONS_PER_USER = 64;
/**
 * Live sessions per API key (public/auth with client_credentials or client_signature), Deribit's
 * 16. Counted apart from password sessions: a key that logs in again and again (even a trade:read
 * key a third party holds) drops only that key's oldest session, never its owner's (issue 14).
 */
export const MAX_SESSIONS_PER_API_KEY = 16;


/** The group a session counts in: its API key (`k<id>`, from the scope tag), else its user. */
function sessionGroup(userId: number, scope: string): string {
  const m = API_KEY_TAG.exec(scope);
  return m === null ? `u${userId}` : `k${m[1]}`;
}

export class AuthState {
  invites = new Map<string, InviteCode>();
  /** sha256(access token) -> record */
  access = new Map<string, TokenRecord>();
  /** sha256(refresh token) -> record */
  refresh = new Map<string, TokenRecord>();
  issuedCount = 0;
  /**
   * Sessions by refresh token hash (a session lives as long as its refresh token), in issue order,
   * per group: a user's password sessions (`u<userId>`) and each API key's (`k<keyId>`). Derived
   * from `refresh` (whose order is issue order), so not in the snapshot.
   */
  private sessions = new Map<string, Set<string>>();

  issue(userId: number, access: string, refresh: string, scope: string, now: number, accessTtl: number, refreshTtl: number): void {
    this.access.set(access, { userId, scope, expiresAt: now + accessTtl, pair: refresh });
    this.refresh.set(refresh, { userId, scope, expiresAt: now + refreshTtl, pair: access });
    const group = sessionGroup(userId, scope);
    const own = this.sessionsOf(group);
    own.add(refresh);
    const cap = group[0] === 'k' ? MAX_SESSIONS_PER_API_KEY : MAX_SESSIONS_PER_USER;
    if (own.size > cap) this.consumeRefresh(own.values().next().value!);
    if (++this.issuedCount % SWEEP_EVERY === 0) this.sweep(now);
  }

  /** Refresh tokens rotate: using one voids it (and its access token). Also ends a session. */
  consumeRefresh(refresh: string): void {
    const r = this.refresh.get(refresh);
    if (!r) return;
    this.dropRefresh(refresh, r);
    this.access.delete(r.pair);
  }

  revokeAccess(access: string): boolean {
    const a = this.access.get(access);
    if (!a) return false;
    this.access.delete(access);
    const r = this.refresh.get(a.pair);
    if (r) this.dropRefresh(a.pair, r);
    return true;
  }

  /**
   * Ends every session of a user (password change, disable): its access and refresh tokens, and
   * with `keepApiKeys` those issued to its API keys stay. Scans the tables: rare, admin- or
   * user-initiated, and the tables are bounded by the session caps above.
   */
  revokeUser(userId: number, keepApiKeys: boolean): void {
    const spared = (rec: TokenRecord) => keepApiKeys && API_KEY_TAG.test(rec.scope);
    for (const [k, v] of this.refresh) if (v.userId === userId && !spared(v)) this.consumeRefresh(k);
    for (const [k, v] of this.access) if (v.userId === userId && !spared(v)) this.access.delete(k);
  }

  sweep(now: number): void {
    for (const [k, v] of this.access) if (v.expiresAt <= now) this.access.delete(k);
    for (const [k, v] of this.refresh) if (v.expiresAt <= now) this.dropRefresh(k, v);
  }

  /** Replaces the token tables (snapshot restore); entries must be in issue order. */
  restoreTokens(access: Iterable<[string, TokenRecord]>, refresh: Iterable<[string, TokenRecord]>): void {
    this.access = new Map(access);
    this.refresh = new Map(refresh);
    this.sessions.clear();
    for (const [k, v] of this.refresh) this.sessionsOf(sessionGroup(v.userId, v.scope)).add(k);
  }

  /** Live password sessions of a user (for tests and diagnostics). */
  sessionCount(userId: number): number {
    return this.sessions.get(`u${userId}`)?.size ?? 0;
  }

  /** Live sessions of an API key (for tests and diagnostics). */
  keySessionCount(keyId: number): number {
    return this.sessions.get(`k${keyId}`)?.size ?? 0;
  }

  private sessionsOf(group: string): Set<string> {
    let own = this.sessions.get(group);
    if (own === undefined) {
      own = new Set();
      this.sessions.set(group, own);
    }
    return own;
  }

  private dropRefresh(refresh: string, rec: TokenRecord): void {
    this.refresh.delete(refresh);
    const group = sessionGroup(rec.userId, rec.scope);
    const own = this.sessions.get(group);
    if (own === undefined) return;
    own.delete(refresh);
    if (own.size === 0) this.sessions.delete(group);
  }

  inviteStatus(code: string, now: number): 'ok' | 'unknown' | 'expired' | 'exhausted' {
    const inv = this.invites.get(code);
    if (!inv || inv.revoked) return 'unknown';
    if (inv.expiresAt <= now) return 'expired';
    if (inv.uses >= inv.maxUses) return 'exhausted';
    return 'ok';
  }
}
