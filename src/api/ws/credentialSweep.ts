// Revocation on live sockets (issue 29 item 1). Every private subscription remembers the access
// token (its SHA-256, the key tokens are stored under) it was made with, whatever form carried it:
// a public/auth on the socket (password, client_credentials, client_signature, refresh_token) or an
// `access_token` param on the subscribe itself. The sweep asks tokenCaller about each of those
// tokens, the same check every call makes, so whatever revokes a token for calls (logout, a refresh
// that rotates it, its API key removed, expiry) also ends the subscriptions made with it.
import type { Services } from '../../app/services.ts';
import { sha256Hex } from '../../auth/crypto.ts';
import { tokenCaller } from '../rpc/dispatch.ts';
import { Reject } from '../rpc/errors.ts';
import { scopeAllows, type Caller } from '../rpc/registry.ts';
import { channelScope, type ChannelSpec } from './channels.ts';

export interface Subscription {
  spec: ChannelSpec;
  /** The user a private channel streams; null for a public channel. */
  userId: number | null;
  /** SHA-256 of the access token a private channel was subscribed with; null for a public one. */
  tokenHash: string | null;
}

/**
 * A connection's subscriptions by channel, counting its private ones as they come and go: the
 * sweep skips a connection with none without reading its channels (a market-data socket may hold
 * 500 of them, and there may be thousands of such sockets).
 */
export class Subscriptions extends Map<string, Subscription> {
  privateCount = 0;

  override set(channel: string, sub: Subscription): this {
    const old = super.get(channel);
    if (old !== undefined && old.userId !== null) this.privateCount--;
    if (sub.userId !== null) this.privateCount++;
    return super.set(channel, sub);
  }

  override delete(channel: string): boolean {
    const old = super.get(channel);
    if (old !== undefined && old.userId !== null) this.privateCount--;
    return super.delete(channel);
  }

  override clear(): void {
    this.privateCount = 0;
    super.clear();
  }
}

export interface SweptConnection {
  readonly subs: Subscriptions;
  /**
   * The hash of the socket's own token while a public/auth on the socket refreshes it (ownRotation):
   * the refresh voids that token when its command applies, and the socket learns its successor only
   * when the answer is durable; a sweep in between must not end the streams the answer moves on.
   */
  rotating: string | null;
}

/**
 * The socket's own token hash when `params` (a public/auth) refresh the session that token belongs
 * to, else null. Read before the call runs: the refresh token still names its pair then.
 */
export function ownRotation(s: Services, ownHash: string | null, params: Record<string, unknown>): string | null {
  if (ownHash === null || params.grant_type !== 'refresh_token' || typeof params.refresh_token !== 'string' || params.refresh_token.length > 256) return null;
  return s.ex.auth.refresh.get(sha256Hex(params.refresh_token))?.pair === ownHash ? ownHash : null;
}

// What a private channel needs of its credential's scopes: in channels.ts, which the gateway shares.
export { channelScope } from './channels.ts';

/**
 * Ends every private subscription whose token no longer authenticates its user: `drop` takes it
 * out of the hub, the connection forgets it. Each distinct token is looked up once per sweep.
 */
export function sweepCredentials<C extends SweptConnection>(s: Services, conns: Iterable<C>, drop: (c: C, channel: string, sub: Subscription) => void): void {
  // token hash -> the user it authenticates now, or null
  const owner = new Map<string, number | null>();
  for (const c of conns) {
    if (c.subs.privateCount === 0) continue;
    for (const [channel, sub] of c.subs) {
      if (sub.userId === null || sub.tokenHash === null || sub.tokenHash === c.rotating) continue;
      let who = owner.get(sub.tokenHash);
      if (who === undefined) {
        const r = tokenCaller(s, sub.tokenHash);
        who = r instanceof Reject ? null : r.userId;
        owner.set(sub.tokenHash, who);
      }
      if (who === sub.userId) continue;
      drop(c, channel, sub);
      c.subs.delete(channel);
    }
  }
}

/**
 * A socket authenticated again (public/auth on it, typically a refresh before the token expires):
 * the private subscriptions made with its previous token move to the new one when it is the same
 * user's and its scopes still allow each channel, so a client that refreshes in time keeps its
 * streams. The others stay with the token they were made with, and go when it is revoked.
 */
export function followNewToken(c: SweptConnection, previous: string | null, next: Caller): void {
  if (previous === null || next.tokenHash === null) return;
  for (const sub of c.subs.values()) {
    if (sub.tokenHash !== previous || sub.userId !== next.userId) continue;
    if (scopeAllows(next.scopes, channelScope(sub.spec))) sub.tokenHash = next.tokenHash;
  }
}
