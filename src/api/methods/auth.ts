// Authentication group (API.md 3.1): administrators, users, tokens, logout.
import { Type, type Static } from '@sinclair/typebox';
import { hashPassword, randomToken, safeEqual, sha256Hex, verifyPassword } from '../../auth/crypto.ts';
import { ERR, reject, tooManyRequests } from '../../domain/errors.ts';
import type { User } from '../../engine/types.ts';
import { defineMethod, scopeAllows, type CallContext, type Scope } from '../rpc/registry.ts';
import { Email, Password, caller, unwrap } from './common.ts';
import { apiKeyGrant } from './apiKeys.ts';
import { apiKeyScopeTag, ipAllowed, plainIp } from '../../auth/apiKeys.ts';
import { tokenLifetimeSec } from '../../auth/tokenLifetime.ts';

function renderUser(u: User) {
  return { user_id: u.id, email: u.email, role: u.role, creation_timestamp: u.created };
}

const LOGIN_WINDOW_MS = 5 * 60_000;
const LOGIN_FAILS_PER_IP = 100;
const SIGN_UP_WINDOW_MS = 60_000;
const SIGN_UPS_PER_IP = 30;

const USER_SCOPE = 'account:read_write trade:read_write wallet:read_write';
/** What a password login grants: every scope of the user's role. */
export function roleScope(role: 'admin' | 'user'): string {
  return role === 'admin' ? `${USER_SCOPE} admin` : USER_SCOPE;
}

// A verifier for unknown emails, so a failed login takes as long whether or not the user exists.
const DUMMY_HASH = hashPassword('not-a-real-password-0000');

const GRANT_RE = /^(trade|account|wallet):(read|read_write|none)$/;

/**
 * The scope a token gets when the client asks for one (Deribit `scope`): the requested trade/
 * account/wallet grants, each capped at what the credentials hold; groups not asked for are left
 * out, and `admin` stays only if asked for. Without any grant in the request, the full scope.
 */
export function narrowScope(granted: string, requested: string | undefined): string {
  if (requested === undefined) return granted;
  const asked = requested.split(/\s+/).filter((t) => GRANT_RE.test(t));
  if (asked.length === 0 && !requested.split(/\s+/).includes('admin')) return granted;
  const have = new Set(granted.split(' '));
  const out: string[] = [];
  for (const t of granted.split(' ')) if (!GRANT_RE.test(t) && t !== 'admin') out.push(t);
  for (const g of asked) {
    if (g.endsWith(':none')) continue;
    if (scopeAllows(have, g as Scope)) out.push(g);
    else if (g.endsWith(':read_write') && scopeAllows(have, g.replace('read_write', 'read') as Scope)) out.push(g.replace('read_write', 'read'));
  }
  if (have.has('admin') && requested.split(/\s+/).includes('admin')) out.push('admin');
  return [...new Set(out)].join(' ');
}

export async function issueTokens(ctx: CallContext, user: User, scope: string, replaces: string | null, requested: string | undefined, grant: string) {
  const s = ctx.services;
  // `expires:NUMBER` in the requested scope: the token's lifetime in seconds (Deribit), capped
  const life = unwrap(tokenLifetimeSec(requested, s.config.accessTokenTtlSec, s.config.maxAccessTokenTtlSec));
  const access = randomToken();
  const refresh = randomToken();
  const refreshHash = sha256Hex(refresh);
  return s.seq.submit(
    {
      t: 'issue_token',
      userId: user.id,
      access: sha256Hex(access),
      refresh: refreshHash,
      scope,
      accessTtl: life.sec * 1000,
      refreshTtl: s.config.refreshTokenTtlSec * 1000,
      replaces,
      // the address as the access log shows it (an IPv4 client of a dual-stack socket as IPv4)
      login: { ip: plainIp(ctx.ip).slice(0, 64), grant },
    },
    (r) => {
      unwrap(r);
      return {
        access_token: access,
        token_type: 'bearer',
        expires_in: life.sec,
        refresh_token: refresh,
        scope: `connection mainaccount ${scope}${life.asked ? ` expires:${life.sec}` : ''}`,
        // Deribit's session id: here the start of the refresh token's hash, the key the session is kept under
        sid: refreshHash.slice(0, 16),
      };
    },
  );
}

const AuthParams = Type.Object({
  grant_type: Type.Union([Type.Literal('password'), Type.Literal('refresh_token'), Type.Literal('client_credentials'), Type.Literal('client_signature')]),
  username: Type.Optional(Type.String({ maxLength: 254 })),
  password: Type.Optional(Type.String({ maxLength: 128 })),
  refresh_token: Type.Optional(Type.String({ maxLength: 256 })),
  client_id: Type.Optional(Type.String({ maxLength: 128 })),
  client_secret: Type.Optional(Type.String({ maxLength: 256 })),
  timestamp: Type.Optional(Type.Integer({ minimum: 0, maximum: 8.64e15 })),
  signature: Type.Optional(Type.String({ maxLength: 128 })),
  nonce: Type.Optional(Type.String({ maxLength: 128 })),
  data: Type.Optional(Type.String({ maxLength: 1024 })),
  // Deribit: any text the client wants back in the answer
  state: Type.Optional(Type.String({ maxLength: 256 })),
  scope: Type.Optional(Type.String({ maxLength: 512 })),
});

export const authMethods = [
  defineMethod({
    name: 'private/create_admin',
    scope: 'none',
    optionalAuth: true,
    params: Type.Object({ email: Email, password: Password, bootstrap_token: Type.Optional(Type.String({ maxLength: 256 })) }),
    async handler(ctx, p) {
      const s = ctx.services;
      const bootstrapping = !s.ex.hasAdmin();
      let by: number | null = null;
      if (bootstrapping) {
        if (p.bootstrap_token === undefined) {
          if (!ctx.caller) throw reject(ERR.AUTHORIZATION_REQUIRED, 'bootstrap_token_required', 'bootstrap_token');
          throw reject(ERR.FORBIDDEN, 'bootstrap_token_required');
        }
        if (s.bootstrapToken === null || !safeEqual(p.bootstrap_token, s.bootstrapToken)) throw reject(ERR.UNAUTHORIZED, 'bad_bootstrap_token', 'bootstrap_token');
      } else {
        const c = caller(ctx);
        if (c.role !== 'admin' || !c.scopes.has('admin')) throw reject(ERR.FORBIDDEN, 'admin_required');
        by = c.userId;
      }
      const passwordHash = await hashPassword(p.password);
      const created = await s.seq.submit({ t: 'create_user', email: p.email, passwordHash, role: 'admin', inviteCode: null, by }, (r) => renderUser(unwrap(r) as User));
      // the bootstrap token is void once the first administrator is durable
      if (bootstrapping) s.onAdminCreated();
      return created;
    },
  }),
  defineMethod({
    name: 'private/create_user',
    scope: 'none',
    optionalAuth: true,
    params: Type.Object({ email: Email, password: Password, invite_code: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })) }),
    async handler(ctx, p) {
      const s = ctx.services;
      const asAdmin = ctx.caller !== null && ctx.caller.role === 'admin' && ctx.caller.scopes.has('admin');
      if (!asAdmin) {
        if (p.invite_code === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'invite_code');
        // scrypt is deliberately expensive: refuse floods and dead codes before paying for it (the
        // code is still checked and consumed atomically by the create_user command)
        if (!s.limiter.allow(`sign-up-ip:${ctx.ip}`, SIGN_UPS_PER_IP, SIGN_UP_WINDOW_MS)) throw reject(ERR.TOO_MANY_REQUESTS, 'too_many_sign_ups');
        const status = await s.seq.read(() => s.ex.auth.inviteStatus(p.invite_code!, s.clock.now()));
        if (status !== 'ok') throw reject(ERR.INVALID_ARGUMENTS, status === 'unknown' ? 'invite_code_invalid' : `invite_code_${status}`, 'invite_code');
      }
      const passwordHash = await hashPassword(p.password);
      return s.seq.submit(
        {
          t: 'create_user',
          email: p.email,
          passwordHash,
          role: 'user',
          inviteCode: asAdmin ? null : p.invite_code!,
          by: asAdmin ? ctx.caller!.userId : null,
        },
        (r) => renderUser(unwrap(r) as User),
      );
    },
  }),
  defineMethod({
    name: 'public/auth',
    aliases: ['public/create_token'],
    scope: 'none',
    params: AuthParams,
    async handler(ctx, p) {
      const tokens = await grantTokens(ctx, p);
      // Deribit's other auth fields: no API key here has block-trade features, there is no two-factor
      // authentication and no Google login; `state` is the client's, copied back
      return { ...tokens, state: p.state ?? '', enabled_features: [], mandatory_tfa_status: 'disabled', google_login: false };
    },
  }),
  defineMethod({
    name: 'private/logout',
    scope: 'none',
    optionalAuth: true,
    params: Type.Object({ invalidate_token: Type.Optional(Type.Boolean()) }),
    async handler(ctx) {
      const c = caller(ctx);
      if (c.tokenHash === null) return 'ok';
      return ctx.services.seq.submit({ t: 'revoke_token', access: c.tokenHash }, () => 'ok');
    },
  }),
];

/** public/auth's tokens for each grant type. */
async function grantTokens(ctx: CallContext, p: Static<typeof AuthParams>) {
  const s = ctx.services;
  if (p.grant_type === 'password') {
    if (p.username === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'username');
    if (p.password === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'password');
    const email = p.username.toLowerCase();
    // failed logins back off per (email, client) and, for clients that never logged in to the
    // account, per email (src/auth/loginThrottle.ts); per client address (ctx.ip is the
    // client's, not a proxy's: src/api/http/clientAddress.ts), at most LOGIN_FAILS_PER_IP in
    // the window. A client known to the account is held only by its own back-off on it, not by
    // that ceiling: others behind the same address (a NAT) spraying other emails must not
    // refuse its right password. Attempts on one email run one at a time, so parallel guesses
    // each meet the failures counted before them; per IP, an attempt is counted before the
    // password is checked and a success gives it back.
    const ipKey = `login-fail-ip:${ctx.ip}`;
    const user = await s.limiter.exclusive(`login:${email}`, async () => {
      const wait = s.loginThrottle.retryAfter(email, ctx.ip);
      if (wait > 0) throw tooManyRequests('too_many_login_attempts', wait);
      const known = s.loginThrottle.isKnown(email, ctx.ip);
      if (!known && !s.limiter.allow(ipKey, LOGIN_FAILS_PER_IP, LOGIN_WINDOW_MS)) throw reject(ERR.TOO_MANY_REQUESTS, 'too_many_login_attempts');
      const found = await s.seq.read(() => s.ex.usersByEmail.get(email) ?? null);
      const ok = found ? await verifyPassword(p.password!, found.passwordHash) : (await verifyPassword(p.password!, await DUMMY_HASH), false);
      if (!found || !ok) {
        s.loginThrottle.failed(email, ctx.ip);
        throw reject(ERR.INVALID_CREDENTIALS, 'invalid_credentials');
      }
      if (!known) s.limiter.release(ipKey);
      s.loginThrottle.succeeded(email, ctx.ip);
      return found;
    });
    return issueTokens(ctx, user, narrowScope(roleScope(user.role), p.scope), null, p.scope, p.grant_type);
  }
  if (p.grant_type === 'refresh_token') {
    if (p.refresh_token === undefined) throw reject(ERR.INVALID_PARAMS, 'missing required parameter', 'refresh_token');
    const hash = sha256Hex(p.refresh_token);
    const rec = await s.seq.read(() => s.ex.auth.refresh.get(hash) ?? null);
    if (!rec || rec.expiresAt <= s.clock.now()) throw reject(ERR.UNAUTHORIZED, 'invalid_refresh_token', 'refresh_token');
    const user = s.ex.users.get(rec.userId)!;
    return issueTokens(ctx, user, rec.scope, hash, p.scope, p.grant_type);
  }
  // API keys (src/auth/apiKeys.ts): a token with the key's scopes
  const key = await s.seq.read(() => apiKeyGrant(s.ex.apiKeys, s.serverKey, p, [s.clock.now(), Date.now()], s.replay));
  if (!ipAllowed(key, ctx.ip)) throw reject(ERR.FORBIDDEN, 'ip_not_whitelisted');
  const keyUser = s.ex.users.get(key.userId);
  if (!keyUser) throw reject(ERR.INVALID_CREDENTIALS, 'invalid_credentials', 'client_id');
  return issueTokens(ctx, keyUser, narrowScope(`${key.scope} ${apiKeyScopeTag(key)}`, p.scope), null, p.scope, p.grant_type);
}
