// Whose private data a gateway streams, and for how long (issue 29, "every revocation reaches every
// live socket"; docs/security.md "Gateways"). Every private subscription remembers the credential it
// was made with: the connection's own login (public/auth on the socket), or the `access_token` param
// of the subscribe itself, which on the leader authenticates that call only. The recheck asks the
// leader about each of a connection's credentials on its own upstream connection, the same question
// as a private call, so whatever revokes a credential for calls (logout, a refresh that rotates it,
// its API key removed, expiry) ends exactly the subscriptions made with it. A private/subscribe whose
// credential the leader refuses is refused with the leader's code (13009 once revoked), as there.
import { channelScope } from '../api/ws/channels.ts';
import { ERR, type ErrorCode } from '../domain/errors.ts';
import type { ClientConn } from './clientConn.ts';
import { Unserved } from './httpForward.ts';

/**
 * What the leader answers about a credential: the user it authenticates and whether its scopes read
 * trades and orders (`trade:read`; null: the leader did not say, busy or unreachable), or its refusal.
 * The identity comes from an `account:read` call, so a key without that scope streams nothing here
 * (stricter than the leader, never looser); the trade channels need the second answer too.
 */
export type Who = { id: number; tradeRead: boolean | null } | { code: ErrorCode; reason?: string };

/** Codes by which the leader refuses the credential itself; any other (a busy, moving or unreachable
 *  leader) confirms nothing and ends nothing: the next recheck asks again. */
const REFUSALS = new Set<number>([ERR.AUTHORIZATION_REQUIRED, ERR.INVALID_CREDENTIALS, ERR.UNAUTHORIZED, ERR.FORBIDDEN, ERR.SCOPE_EXCEEDED]);

/**
 * Distinct `access_token` params one connection's private subscriptions may hold: each is one call to
 * the leader per recheck, so a client may not make that large (the leader keeps no such count, but
 * a client needs one token per user it streams, and tokens of one user are interchangeable).
 */
export const MAX_TOKENS_PER_CONNECTION = 8;

export type UpstreamCall = (c: ClientConn, method: string, params: unknown) => Promise<string>;
export type WhoIs = (c: ClientConn, accessToken?: string) => Promise<Who>;

/** Asks the leader, on the client's own upstream connection, who a credential is: the connection's
 *  login, or `accessToken` (for that call only, as every call with the param). */
export function whoIsOn(call: UpstreamCall): WhoIs {
  return async (c, accessToken) => {
    const params: Record<string, unknown> = { currency: 'BTC', extended: true };
    if (accessToken !== undefined) params.access_token = accessToken;
    // the trade scope: a trade:read call that lists nothing (no futures are listed), asked beside
    const probe: Record<string, unknown> = { kind: 'future', type: 'limit' };
    if (accessToken !== undefined) probe.access_token = accessToken;
    const [summary, trades] = await Promise.all([ask(call, c, 'private/get_account_summary', params), ask(call, c, 'private/get_open_orders', probe)]);
    if ('code' in summary) return summary;
    if (typeof summary.result?.id !== 'number') return { code: ERR.INTERNAL, reason: 'no_account_id' };
    const tradeRead = 'code' in trades ? (REFUSALS.has(trades.code) ? false : null) : true;
    return { id: summary.result.id, tradeRead };
  };
}

type Answer = { result?: { id?: unknown } } | { code: ErrorCode; reason?: string };

/** One call to the leader: its result, or its refusal (an unreachable leader is INTERNAL). */
async function ask(call: UpstreamCall, c: ClientConn, method: string, params: Record<string, unknown>): Promise<Answer> {
  let text: string;
  try {
    text = await call(c, method, params);
  } catch (err) {
    return err instanceof Unserved ? { code: err.code, reason: err.reason } : { code: ERR.INTERNAL, reason: 'leader_unreachable' };
  }
  const body = JSON.parse(text) as { result?: { id?: unknown }; error?: { code?: unknown; data?: { reason?: unknown } } };
  if (body.error === undefined) return { result: body.result };
  const code = body.error.code;
  const reason = body.error.data?.reason;
  return { code: (typeof code === 'number' ? code : ERR.INTERNAL) as ErrorCode, reason: typeof reason === 'string' ? reason : undefined };
}

/** The user a subscribe streams private channels of (null: none), the token param it carried, and
 *  whether that credential reads trades and orders (the trade channels need it). */
export type Subscriber = { user: number | null; token: string | null; tradeRead: boolean } | { code: ErrorCode; reason?: string };

/** Who a (public or private) subscribe subscribes as. */
export async function subscriberOf(c: ClientConn, params: Record<string, unknown>, priv: boolean, whoIs: WhoIs): Promise<Subscriber> {
  const token = params.access_token;
  if (typeof token === 'string') {
    // the leader knows this connection's credentials from now on
    c.stateful = true;
    const held = new Set(c.credentials.values());
    if (priv && !held.has(token) && [...held].filter((x) => x !== null).length >= MAX_TOKENS_PER_CONNECTION) {
      return { code: ERR.INVALID_ARGUMENTS, reason: `at most ${MAX_TOKENS_PER_CONNECTION} access tokens for the subscriptions of one connection` };
    }
    const w = await whoIs(c, token);
    // a refused token refuses the whole call, public/subscribe too, as on the leader
    if (!('id' in w)) return w;
    if (w.tradeRead !== null) c.tradeRead.set(token, w.tradeRead);
    return { user: w.id, token, tradeRead: w.tradeRead === true };
  }
  if (c.userId !== null || !priv) return { user: c.userId, token: null, tradeRead: c.tradeRead.get(null) === true };
  // no login confirmed here: an anonymous connection has none at the leader either; one the leader
  // knows may hold a login not confirmed yet, or a revoked one (the leader then answers 13009)
  if (!c.stateful) return { code: ERR.AUTHORIZATION_REQUIRED };
  const w = await whoIs(c);
  if (!('id' in w)) return w;
  c.userId = w.id;
  if (w.tradeRead !== null) c.tradeRead.set(null, w.tradeRead);
  return { user: w.id, token: null, tradeRead: w.tradeRead === true };
}

/**
 * Asks the leader about every credential of `c` (its login, if one is confirmed, and each token its
 * private subscriptions carry) and ends, with `drop`, the private subscriptions whose credential is
 * refused or now names another user. One recheck at a time per connection.
 */
export async function recheck(c: ClientConn, whoIs: WhoIs, drop: (channel: string) => void): Promise<void> {
  if (c.closed || c.rechecking) return;
  const byToken = new Map<string | null, string[]>();
  if (c.userId !== null) byToken.set(null, []);
  for (const [channel, token] of c.credentials) {
    const list = byToken.get(token);
    if (list) list.push(channel);
    else byToken.set(token, [channel]);
  }
  if (byToken.size === 0) return;
  c.rechecking = true;
  const logins = c.logins;
  try {
    await Promise.all(
      [...byToken].map(async ([token, channels]) => {
        const w = await whoIs(c, token ?? undefined);
        if (!('id' in w) && !REFUSALS.has(w.code)) return;
        // a login made meanwhile is confirmed by its own public/auth, not by this answer
        if (token === null && c.logins !== logins) return;
        if (token === null && !('id' in w && w.id === c.userId)) c.userId = null;
        // a key's scopes can change (private/edit_api_key): the trade channels follow them
        if ('id' in w && w.tradeRead !== null) c.tradeRead.set(token, w.tradeRead);
        for (const ch of channels) {
          // subscribed again meanwhile, perhaps with another token: that one is rechecked next time
          if (c.credentials.get(ch) !== token) continue;
          const sub = c.subs.get(ch);
          if (!('id' in w) || sub?.userId !== w.id) drop(ch);
          else if (w.tradeRead === false && sub !== undefined && channelScope(sub.spec) === 'trade:read') drop(ch);
        }
      }),
    );
  } finally {
    c.rechecking = false;
  }
}
