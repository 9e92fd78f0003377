// Transport-independent call path: credentials -> scope -> params -> handler -> envelope.
// Used by HTTP today and by the WebSocket endpoint later.
import { randomUUID } from 'node:crypto';
import { sha256Hex } from '../../auth/crypto.ts';
import { API_KEY_TAG, ipAllowed, taggedKey, verifyBasic, verifyHmac, type SignedRequest } from '../../auth/apiKeys.ts';
import { ERR, Reject, reject, tooManyRequests } from '../../domain/errors.ts';
import { MATCHING_METHODS, callCost, workCost, type Charge } from '../../app/credits.ts';
import type { Services } from '../../app/services.ts';
import { DEFERRED, StandbyRefusal } from '../../sequencer/sequencer.ts';
import { ERROR_TABLE, errorBody, httpStatus, standbyErrorBody } from './errors.ts';
import { scopeAllows, type Caller, type CallSink, type MethodDef } from './registry.ts';
import { compileValidators, validateParams, type Validators } from './validate.ts';
import { pmWarmup } from '../../risk/portfolio/warmup.ts';

export interface CompiledMethod {
  def: MethodDef;
  validators: Validators;
}

export function compileMethod(def: MethodDef): CompiledMethod {
  return { def, validators: compileValidators(def.params) };
}

export interface Credentials {
  authorization: string | undefined;
  accessToken: string | undefined;
  /** What a deri-hmac-sha256 signature covers: HTTP method, raw request target, raw body. */
  signed?: SignedRequest;
}

export interface CallInput {
  params: Record<string, unknown>;
  fromQuery: boolean;
  credentials: Credentials;
  ip: string;
  /**
   * The caller, already resolved by the transport from these same credentials (resolveCaller's
   * answer); absent: call() resolves them. Lets a WebSocket resolve a frame's caller once (it needs
   * it itself for cancel-on-disconnect) with the token's hash it keeps, instead of twice per order.
   */
  resolved?: Caller | Reject | null;
  /** The WebSocket connection has cancel-on-disconnect on (CallContext.cod); never set from params. */
  cod?: boolean;
  /** The HTTP request's id (src/api/http/requestIds.ts): an 11094's correlation id. */
  requestId?: string;
}

export interface CallOutput {
  status: number;
  result?: unknown;
  error?: ReturnType<typeof errorBody>;
  /** Who paid for the call: the transport adds what its reply's size costs (replyCost). */
  charge?: Charge;
}

/** Resolves the caller from a bearer token (header or access_token param) or an API key (HTTP Basic, deri-hmac-sha256). */
export function resolveCaller(s: Services, cred: Credentials): Caller | Reject | null {
  let token: string | undefined;
  const h = cred.authorization;
  if (h !== undefined && h !== '') {
    const sp = h.indexOf(' ');
    const kind = (sp < 0 ? h : h.slice(0, sp)).toLowerCase();
    if (kind === 'basic' || kind === 'deri-hmac-sha256') return apiKeyCaller(s, kind, sp < 0 ? '' : h.slice(sp + 1), cred.signed);
    if (kind !== 'bearer' || sp < 0) return reject(ERR.UNAUTHORIZED, 'unsupported_authorization');
    token = h.slice(sp + 1).trim();
  } else if (cred.accessToken !== undefined) {
    token = cred.accessToken;
  }
  if (token === undefined) return null;
  return tokenCaller(s, bearerHash(token));
}

/** Access tokens (43 characters) fit; longer text is hashed every time and never kept. */
const CACHED_TOKEN_LENGTH = 64;
/** How many recent tokens' hashes are kept; the map is emptied when it reaches this. */
const CACHED_TOKENS = 1024;
const recentTokenHashes = new Map<string, string>();

/**
 * A bearer token's SHA-256, from a small cache of recent ones: a client over HTTP sends the same
 * token with every request, and hashing it was ~2% of the engine thread under the HTTP order
 * benchmarks. Only the hash is cached, never a decision: every call still looks the hash up
 * (tokenCaller), so a revoked or expired token is refused on its next request. Bounded in entries
 * and in each key's length, so random or oversized tokens cost a hash each, as before, and at most
 * ~1,024 x 64 characters of memory. Raw tokens held here are no more than a WebSocket connection
 * keeps for its own token (`Connection.token`).
 */
export function bearerHash(token: string): string {
  if (token.length > CACHED_TOKEN_LENGTH) return sha256Hex(token);
  let h = recentTokenHashes.get(token);
  if (h === undefined) {
    h = sha256Hex(token);
    if (recentTokenHashes.size >= CACHED_TOKENS) recentTokenHashes.clear();
    recentTokenHashes.set(token, h);
  }
  return h;
}

/** How many tokens' hashes `bearerHash` holds (its bound is tested). */
export function bearerHashesHeld(): number {
  return recentTokenHashes.size;
}

/**
 * The caller of an access token, given the token's SHA-256 (the key tokens are stored under): its
 * expiry, user and API key are checked on every call. A transport that sees the same token again
 * and again (a WebSocket's every frame) hashes it once and calls this.
 */
export function tokenCaller(s: Services, hash: string): Caller | Reject {
  const rec = s.ex.auth.access.get(hash);
  if (!rec || rec.expiresAt <= s.clock.now()) return reject(ERR.UNAUTHORIZED, 'invalid_token');
  const user = s.ex.users.get(rec.userId);
  if (!user) return reject(ERR.UNAUTHORIZED, 'invalid_token');
  if (s.ex.disabledUsers.size > 0 && s.ex.disabledUsers.has(user.id)) return reject(ERR.UNAUTHORIZED, 'user_disabled');
  // a token issued to an API key dies with the key (apiKeyTagValid's test, with the tag read once:
  // this runs for every call, and the regular expression twice per call was ~0.1 us of it)
  const keyTag = rec.scope.includes('api_key:') ? API_KEY_TAG.exec(rec.scope) : null;
  if (keyTag !== null && taggedKey(s.ex.apiKeys, keyTag) === undefined) return reject(ERR.UNAUTHORIZED, 'api_key_removed');
  return keyTag === null ? { userId: user.id, role: user.role, scopes: scopeSet(rec.scope), tokenHash: hash } : { userId: user.id, role: user.role, scopes: scopeSet(rec.scope), tokenHash: hash, apiKeyId: Number(keyTag[1]) };
}


/** Who a call is charged to (src/app/credits.ts): the user and its API key, or the client IP. */
function chargeFor(s: Services, name: string, caller: Caller | null, ip: string): Charge {
  if (caller === null) return { subjects: [ip], pool: 'non_matching', limits: s.credits.poolLimits(null, 'non_matching') };
  const pool = MATCHING_METHODS.has(name) ? 'matching' : 'non_matching';
  // users by their id, keys by minus theirs, IPs by their text (credits.ts Subject)
  const subjects = caller.apiKeyId === undefined ? [caller.userId] : [caller.userId, -caller.apiKeyId];
  return { subjects, pool, limits: s.credits.poolLimits(caller.userId, pool) };
}

/**
 * Takes a call's credits: undefined when taken, else the 10028 (with the wait still left), given
 * once the refusal has been held as long as `refusalHold` says (credits.ts).
 */
function takeCredits(s: Services, charge: Charge, cost = callCost()): Promise<Reject> | undefined {
  const wait = s.credits.take(charge, cost);
  if (wait <= 0) return undefined;
  const hold = s.credits.refusalHold(charge, wait, cost);
  if (hold <= 0) return Promise.resolve(tooManyRequests('rate_limit_exceeded', wait));
  return new Promise((resolve) => setTimeout(resolve, hold, tooManyRequests('rate_limit_exceeded', Math.max(0, wait - hold))));
}

/**
 * Charges a call that a WebSocket connection answers itself, as call() would charge the method
 * (the cancel-on-disconnect settings journal a command, so they may not be free: an uncharged
 * toggle loop would grow the journal as fast as batches commit). Undefined when taken or when
 * limits are off, else the 10028 to answer.
 */
export function chargeSessionCall(s: Services, name: string, caller: Caller, ip: string): Promise<Reject> | undefined {
  return s.credits.enabled ? takeCredits(s, chargeFor(s, name, caller, ip)) : undefined;
}

// Tokens carry one of a handful of scope strings; their parsed sets are shared (read-only) rather
// than rebuilt on every request. Bounded so that odd scope strings cannot grow it without limit.
const SCOPE_SETS_MAX = 1024;
const scopeSets = new Map<string, ReadonlySet<string>>();

function scopeSet(scope: string): ReadonlySet<string> {
  let set = scopeSets.get(scope);
  if (set === undefined) {
    if (scopeSets.size >= SCOPE_SETS_MAX) scopeSets.clear();
    set = new Set(scope.split(' '));
    scopeSets.set(scope, set);
  }
  return set;
}

/** An API key's caller: the key's scopes, never admin. */
function apiKeyCaller(s: Services, kind: 'basic' | 'deri-hmac-sha256', rest: string, signed: SignedRequest | undefined): Caller | Reject {
  const rec =
    kind === 'basic'
      ? verifyBasic(s.ex.apiKeys, s.serverKey, rest)
      : signed === undefined
        ? reject(ERR.UNAUTHORIZED, 'signature_needs_http')
        : verifyHmac(s.ex.apiKeys, s.serverKey, rest, signed, [s.clock.now(), Date.now()], s.replay);
  if (rec instanceof Reject) return rec;
  const user = s.ex.users.get(rec.userId);
  if (!user) return reject(ERR.UNAUTHORIZED, 'invalid_credentials');
  if (s.ex.disabledUsers.has(user.id)) return reject(ERR.UNAUTHORIZED, 'user_disabled');
  return { userId: user.id, role: user.role, scopes: scopeSet(rec.scope), tokenHash: null, apiKeyId: rec.id };
}

/** What a call's credentials, credits, scope and params checks give the handler. */
interface Admitted {
  caller: Caller | null;
  charge: Charge | undefined;
}

/**
 * A call's checks before its handler, in call()'s order: credentials -> credits -> scope ->
 * params. Throws the Reject of a check that fails at once; a refusal of credits that is held (or
 * failed credentials charged to the IP) comes as a promise of the Reject to throw.
 */
function admit(s: Services, m: CompiledMethod, input: CallInput): Admitted | Promise<Reject> {
  const def = m.def;
  const params = input.params;
  const accessToken = typeof params.access_token === 'string' ? params.access_token : undefined;
  const wantsAuth = def.scope !== 'none' || def.optionalAuth === true;
  let caller: Caller | null = null;
  let charge: Charge | undefined;
  const limited = s.credits.enabled;
  if (wantsAuth) {
    const r =
      input.resolved !== undefined
        ? input.resolved
        : resolveCaller(s, { authorization: input.credentials.authorization, accessToken: accessToken ?? input.credentials.accessToken, signed: input.credentials.signed });
    if (r instanceof Reject) {
      // failed credentials cost the client IP, so they cannot be tried (or verified) for free
      const held = limited ? takeCredits(s, chargeFor(s, def.name, null, input.ip)) : undefined;
      if (held === undefined) throw r;
      return held;
    }
    caller = r;
    // an API key with an IP whitelist is used only from its addresses (src/auth/apiKeys.ts)
    if (caller !== null && caller.apiKeyId !== undefined) {
      const key = s.ex.apiKeys.byId.get(caller.apiKeyId);
      if (key !== undefined && !ipAllowed(key, input.ip)) throw reject(ERR.FORBIDDEN, 'ip_not_whitelisted');
    }
  }
  if (limited) {
    // a public call that carries credentials is charged to its user, as Deribit does, so that
    // clients behind one address (a NAT, a reverse proxy) do not share one IP's pool; credentials
    // that do not resolve leave it an anonymous call, charged to the IP, as before
    let payer = caller;
    if (!wantsAuth && (input.credentials.authorization !== undefined || accessToken !== undefined)) {
      const r = resolveCaller(s, { authorization: input.credentials.authorization, accessToken, signed: input.credentials.signed });
      if (r !== null && !(r instanceof Reject)) payer = r;
    }
    charge = chargeFor(s, def.name, payer, input.ip);
    const refused = takeCredits(s, charge);
    if (refused !== undefined) return refused;
  }
  if (def.scope !== 'none') {
    if (!caller) throw reject(ERR.AUTHORIZATION_REQUIRED);
    if (def.scope === 'admin') {
      if (caller.role !== 'admin' || !caller.scopes.has('admin')) throw reject(ERR.FORBIDDEN, 'admin_required');
    } else if (!scopeAllows(caller.scopes, def.scope)) throw reject(ERR.SCOPE_EXCEEDED, `requires ${def.scope}`);
  }
  const bad = validateParams(m.validators, params, input.fromQuery);
  if (bad) throw bad;
  // a call that carries many orders pays for each from a pool of its own (credits.ts workCost)
  const work = charge !== undefined && caller !== null ? workCost(def.name, params) : 0;
  if (work > 0) {
    const refused = takeCredits(s, { subjects: charge!.subjects, pool: 'quotes', limits: s.credits.poolLimits(caller!.userId, 'quotes') }, work);
    if (refused !== undefined) return refused;
  }
  return { caller, charge };
}

/** A handler's result as call() answers it. */
function succeeded(s: Services, name: string, started: number, charge: Charge | undefined, result: unknown): CallOutput {
  s.metrics.callOk(name, (performance.now() - started) / 1000);
  return charge === undefined ? { status: 200, result } : { status: 200, result, charge };
}

/** What a call threw as call() answers it: a Reject as its error, anything else as 11094, logged. */
function failed(s: Services, name: string, err: unknown, requestId?: string): CallOutput {
  if (err instanceof Reject) {
    s.metrics.callFailed(name, err.code);
    return { status: httpStatus(err), error: errorBody(err) };
  }
  if (err instanceof StandbyRefusal) {
    s.metrics.callFailed(name, ERR.RETRY);
    return { status: ERROR_TABLE[ERR.RETRY].status, error: standbyErrorBody(err.leaderUrl) };
  }
  const correlationId = requestId ?? randomUUID();
  s.metrics.callFailed(name, ERR.INTERNAL);
  s.log.error({ err, correlationId, method: name }, 'unexpected error in handler');
  return { status: 500, error: { code: ERR.INTERNAL, message: 'internal_server_error', data: { reason: `correlation_id ${correlationId}` } } };
}

/**
 * Whether an admitted call must first wait for its caller's portfolio-margin sums (a PM account the
 * scan has not refreshed since the last tick): then its order check or summary would rebuild the
 * whole account inside its own turn (src/risk/portfolio/warmup.ts).
 */
function mustWarmUp(s: Services, a: Admitted): boolean {
  return a.caller !== null && s.ex.pm.models.size > 0 && pmWarmup(s.ex).needs(a.caller.userId);
}

export async function call(s: Services, m: CompiledMethod, input: CallInput): Promise<CallOutput> {
  const started = performance.now();
  try {
    const a = admit(s, m, input);
    if (a instanceof Promise) throw await a;
    if (mustWarmUp(s, a)) await pmWarmup(s.ex).readyAll([a.caller!.userId]);
    return await handled(s, m, input, a, started);
  } catch (err) {
    return failed(s, m.def.name, err, input.requestId);
  }
}

/**
 * Methods that both transports call with callDeferred: their handler submits its command with
 * Sequencer.submitThen, and the answer goes out from the durable batch itself (the WebSocket's
 * DeferredCall, the HTTP fast path's HttpDeferredCall), with no promise per call.
 */
export const DEFERRED_METHODS: ReadonlySet<string> = new Set(['private/buy', 'private/sell']);

/**
 * A call whose answer a transport takes by a call instead of a promise (the WebSocket's orders):
 * the sink goes to the handler (`CallContext.sink`); a handler that submits its command with
 * `Sequencer.submitThen` returns DEFERRED, and then `sink.settle` is called once the command is
 * durable, to be turned into the answer by `settleCall`. Returns DEFERRED so, else the answer: at
 * once (refused by a check, or a handler that threw), or as call()'s promise (credits refused and
 * held, or a handler that answered by a promise).
 */
export function callDeferred(s: Services, m: CompiledMethod, input: CallInput, sink: CallSink): CallOutput | Promise<CallOutput> | typeof DEFERRED {
  const started = performance.now();
  try {
    const a = admit(s, m, input);
    if (a instanceof Promise) return a.then((r) => failed(s, m.def.name, r, input.requestId));
    // the caller's PM sums are rebuilt in slices first; the call then answers by promise, as call() does
    if (mustWarmUp(s, a)) return pmWarmup(s.ex).readyAll([a.caller!.userId]).then(() => handled(s, m, input, a, started));
    sink.started = started;
    sink.charge = a.charge;
    const result: unknown = m.def.handler({ services: s, caller: a.caller, ip: input.ip, sink, cod: input.cod === true }, input.params as never);
    if (result === DEFERRED) return DEFERRED;
    if (result instanceof Promise) {
      return result.then(
        (r: unknown) => succeeded(s, m.def.name, started, a.charge, r),
        (err: unknown) => failed(s, m.def.name, err, input.requestId),
      );
    }
    return succeeded(s, m.def.name, started, a.charge, result);
  } catch (err) {
    return failed(s, m.def.name, err, input.requestId);
  }
}

/** The handler's answer of an admitted call, as call() gives it. */
async function handled(s: Services, m: CompiledMethod, input: CallInput, a: Admitted, started: number): Promise<CallOutput> {
  try {
    const result = await m.def.handler({ services: s, caller: a.caller, ip: input.ip, cod: input.cod === true }, input.params as never);
    return succeeded(s, m.def.name, started, a.charge, result);
  } catch (err) {
    return failed(s, m.def.name, err, input.requestId);
  }
}

/** A deferred call's reply (see callDeferred) as call() would have answered it. */
export function settleCall(s: Services, m: CompiledMethod, sink: CallSink, reply: unknown, ok: boolean): CallOutput {
  return ok ? succeeded(s, m.def.name, sink.started, sink.charge, reply) : failed(s, m.def.name, reply, sink.requestId);
}
