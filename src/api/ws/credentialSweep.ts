// Revocation on live sockets (issue 29 item 1). Every private subscription remembers the access
// token (its SHA-256, the key tokens are stored under) it was made with, whatever form carried it:
// a public/auth on the socket (password, client_credentials, client_signature, refresh_token) or an
// `access_token` param on the subscribe itself. The sweep asks tokenCaller about each of those
// tokens, the same check every call makes, so whatever revokes a token for calls (logout, a refresh
// that rotates it, its API key removed, expiry) also ends the subscriptions made with it.
import type { Services } from '../../app/services.ts';
import { tokenCaller } from '../rpc/dispatch.ts';
import { Reject } from '../rpc/errors.ts';
import { scopeAllows, type Caller, type Scope } from '../rpc/registry.ts';
import type { ChannelSpec } from './channels.ts';

export interface Subscription {
  spec: ChannelSpec;
  /** The user a private channel streams; null for a public channel. */
  userId: number | null;
  /** SHA-256 of the access token a private channel was subscribed with; null for a public one. */
  tokenHash: string | null;
}

export interface SweptConnection {
  readonly subs: Map<string, Subscription>;
}

/** What a private channel needs of its credential's scopes (as a call reading the same data). */
export function channelScope(spec: ChannelSpec): Scope {
  return spec.k.startsWith('user.portfolio') ? 'account:read' : 'trade:read';
}

/**
 * Ends every private subscription whose token no longer authenticates its user: `drop` takes it
 * out of the hub, the connection forgets it. Each distinct token is looked up once per sweep.
 */
export function sweepCredentials<C extends SweptConnection>(s: Services, conns: Iterable<C>, drop: (c: C, channel: string, sub: Subscription) => void): void {
  const valid = new Map<string, boolean>();
  for (const c of conns) {
    for (const [channel, sub] of c.subs) {
      if (sub.userId === null || sub.tokenHash === null) continue;
      let ok = valid.get(sub.tokenHash);
      if (ok === undefined) {
        const r = tokenCaller(s, sub.tokenHash);
        ok = !(r instanceof Reject) && r.userId === sub.userId;
        valid.set(sub.tokenHash, ok);
      }
      if (ok) continue;
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
