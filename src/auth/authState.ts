// Credentials held in exchange state: invite codes and token hashes. Part of the deterministic
// state (journaled, snapshotted) so sessions survive a restart; no secret is stored in the clear.
import type { InviteCode, TokenRecord } from '../engine/types.ts';

/** Tokens are swept for expiry every this many issues, so memory stays bounded. */
const SWEEP_EVERY = 256;

export class AuthState {
  invites = new Map<string, InviteCode>();
  /** sha256(access token) -> record */
  access = new Map<string, TokenRecord>();
  /** sha256(refresh token) -> record */
  refresh = new Map<string, TokenRecord>();
  issuedCount = 0;

  issue(userId: number, access: string, refresh: string, scope: string, now: number, accessTtl: number, refreshTtl: number): void {
    this.access.set(access, { userId, scope, expiresAt: now + accessTtl, pair: refresh });
    this.refresh.set(refresh, { userId, scope, expiresAt: now + refreshTtl, pair: access });
    if (++this.issuedCount % SWEEP_EVERY === 0) this.sweep(now);
  }

  /** Refresh tokens rotate: using one voids it (and its access token). */
  consumeRefresh(refresh: string): void {
    const r = this.refresh.get(refresh);
    if (!r) return;
    this.refresh.delete(refresh);
    this.access.delete(r.pair);
  }

  revokeAccess(access: string): boolean {
    const a = this.access.get(access);
    if (!a) return false;
    this.access.delete(access);
    this.refresh.delete(a.pair);
    return true;
  }

  sweep(now: number): void {
    for (const [k, v] of this.access) if (v.expiresAt <= now) this.access.delete(k);
    for (const [k, v] of this.refresh) if (v.expiresAt <= now) this.refresh.delete(k);
  }

  inviteStatus(code: string, now: number): 'ok' | 'unknown' | 'expired' | 'exhausted' {
    const inv = this.invites.get(code);
    if (!inv || inv.revoked) return 'unknown';
    if (inv.expiresAt <= now) return 'expired';
    if (inv.uses >= inv.maxUses) return 'exhausted';
    return 'ok';
  }
}
