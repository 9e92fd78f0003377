// API keys (API.md 2 and 3.1): state held by the engine, the server key their secrets are encrypted
// with, and the verification of the three ways a key authenticates (HTTP Basic, deri-hmac-sha256,
// public/auth client_credentials / client_signature).
//
// The engine state holds only the ENCRYPTED secret (AES-256-GCM under the server key, bound to the
// client id); HMAC verification needs the plain secret, so it is decrypted at the edge on use. The
// server key lives in the journal's meta table, never in the journal records or snapshots.
import { randomBytes } from 'node:crypto';
import { decryptSecret, hmacSha256Hex, safeEqual } from './crypto.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { MetaStore } from '../journal/journal.ts';
import type { ReplayGuard } from './replayGuard.ts';

/** Deribit allows 8 API keys per account. */
export const MAX_KEYS_PER_USER = 8;
/** A signature (or client_signature timestamp) further than this from the server clock is stale. */
export const SIGNATURE_WINDOW_MS = 60_000;
export const SERVER_KEY_META = 'api_key_server_key';

export interface ApiKeyRecord {
  id: number;
  userId: number;
  clientId: string;
  /** encryptSecret(secret, serverKey, clientId) */
  encSecret: string;
  /** space-separated scopes, e.g. "account:read trade:read_write" */
  scope: string;
  name: string;
  created: number;
  /** private/disable_api_key: the key authenticates nothing until enabled again */
  disabled?: true;
  /** private/edit_api_key: the addresses it may be used from; absent or empty: any */
  ipWhitelist?: string[];
  /**
   * Bumped by a change that must end the tokens issued to the key (disable, a new secret, a new
   * scope): a token's `api_key:` tag names the generation it was issued in (apiKeyScopeTag).
   */
  gen?: number;
}

/** What private/edit_api_key and its kin change on a key (a journaled `update_api_key` command). */
export interface ApiKeyChange {
  enabled?: boolean;
  name?: string;
  scope?: string;
  ipWhitelist?: string[];
  /** reset_api_key: the new secret, encrypted at the edge as create's is */
  encSecret?: string;
}

/** The scopes a key may carry: Deribit's names. Keys never carry `admin`. */
const KEY_SCOPES = new Set(['trade:read', 'trade:read_write', 'trade:none', 'account:read', 'account:read_write', 'account:none', 'wallet:read', 'wallet:read_write', 'wallet:none']);

/** Normalises a requested scope string; null when it names something a key cannot have. */
export function parseKeyScope(scope: string): string | null {
  const parts = scope.split(/\s+/).filter((s) => s !== '');
  if (parts.length === 0) return null;
  const seen = new Map<string, string>();
  for (const p of parts) {
    if (!KEY_SCOPES.has(p)) return null;
    const group = p.slice(0, p.indexOf(':'));
    // the wider of two grants for one group wins (read_write implies read)
    const prev = seen.get(group);
    if (prev === undefined || p.endsWith('read_write') || (prev.endsWith('none') && p.endsWith('read'))) seen.set(group, p);
  }
  return [...seen.values()].filter((s) => !s.endsWith(':none')).join(' ');
}

export class ApiKeys {
  nextId = 1;
  byId = new Map<number, ApiKeyRecord>();
  byClientId = new Map<string, ApiKeyRecord>();

  create(userId: number, clientId: string, encSecret: string, scope: string, name: string, now: number): ApiKeyRecord | Reject {
    if (this.byClientId.has(clientId)) return reject(ERR.INVALID_ARGUMENTS, 'duplicate_client_id');
    if (this.forUser(userId).length >= MAX_KEYS_PER_USER) return reject(ERR.INVALID_ARGUMENTS, 'max_api_keys', 'scope');
    const rec: ApiKeyRecord = { id: this.nextId++, userId, clientId, encSecret, scope, name, created: now };
    this.byId.set(rec.id, rec);
    this.byClientId.set(clientId, rec);
    return rec;
  }

  /** Removes the user's key `id`; another user's key is simply not found. */
  remove(userId: number, id: number): ApiKeyRecord | Reject {
    const rec = this.byId.get(id);
    if (!rec || rec.userId !== userId) return reject(ERR.NOT_FOUND, 'api_key_not_found', 'id');
    this.byId.delete(id);
    this.byClientId.delete(rec.clientId);
    return rec;
  }

  /** Applies a change to the user's key `id`; another user's key is simply not found. */
  update(userId: number, id: number, ch: ApiKeyChange): ApiKeyRecord | Reject {
    const rec = this.byId.get(id);
    if (!rec || rec.userId !== userId) return reject(ERR.NOT_FOUND, 'api_key_not_found', 'id');
    let endTokens = false;
    if (ch.name !== undefined) rec.name = ch.name;
    if (ch.scope !== undefined && ch.scope !== rec.scope) {
      rec.scope = ch.scope;
      endTokens = true;
    }
    if (ch.ipWhitelist !== undefined) {
      if (ch.ipWhitelist.length > 0) rec.ipWhitelist = ch.ipWhitelist;
      else delete rec.ipWhitelist;
    }
    if (ch.encSecret !== undefined) {
      rec.encSecret = ch.encSecret;
      endTokens = true;
    }
    if (ch.enabled === false && rec.disabled !== true) {
      rec.disabled = true;
      endTokens = true;
    } else if (ch.enabled === true) delete rec.disabled;
    if (endTokens) rec.gen = (rec.gen ?? 0) + 1;
    return rec;
  }

  /** The key of a client id while it is enabled. */
  active(clientId: string): ApiKeyRecord | undefined {
    const rec = this.byClientId.get(clientId);
    return rec === undefined || rec.disabled === true ? undefined : rec;
  }

  forUser(userId: number): ApiKeyRecord[] {
    const out: ApiKeyRecord[] = [];
    for (const r of this.byId.values()) if (r.userId === userId) out.push(r);
    return out;
  }

  toJson(): unknown {
    return { next: this.nextId, keys: [...this.byId.values()] };
  }

  static fromJson(j: unknown): ApiKeys {
    const k = new ApiKeys();
    if (j === undefined || j === null) return k;
    const o = j as { next: number; keys: ApiKeyRecord[] };
    k.nextId = o.next;
    for (const r of o.keys) {
      k.byId.set(r.id, r);
      k.byClientId.set(r.clientId, r);
    }
    return k;
  }
}

/**
 * Marks the scope of a token issued to an API key (public/auth), so the token dies with the key:
 * `api_key:<id>`, then `.<generation>` once a change has ended the key's earlier tokens.
 */
export function apiKeyScopeTag(rec: ApiKeyRecord): string {
  return rec.gen ? `api_key:${rec.id}.${rec.gen}` : `api_key:${rec.id}`;
}

/** A token's API-key tag: the key id and the generation it was issued in. */
export const API_KEY_TAG = /(?:^| )api_key:(\d+)(?:\.(\d+))?(?: |$)/;

/** The key a token tag names while the token may be used: the key exists, is enabled, and has not ended it. */
export function taggedKey(keys: ApiKeys, tag: RegExpExecArray): ApiKeyRecord | undefined {
  const rec = keys.byId.get(Number(tag[1]));
  if (rec === undefined || rec.disabled === true || (rec.gen ?? 0) !== Number(tag[2] ?? 0)) return undefined;
  return rec;
}

/** False when the token scope names an API key that no longer exists, is disabled, or ended it. */
export function apiKeyTagValid(keys: ApiKeys, scope: string): boolean {
  const m = API_KEY_TAG.exec(scope);
  return m === null || taggedKey(keys, m) !== undefined;
}

/** `::ffff:1.2.3.4` (an IPv4 client on a dual-stack socket) as `1.2.3.4`. */
export function plainIp(ip: string): string {
  return ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip;
}

/** Whether the key may be used from `ip`: no whitelist, or `ip` on it. */
export function ipAllowed(rec: ApiKeyRecord, ip: string): boolean {
  return rec.ipWhitelist === undefined || rec.ipWhitelist.length === 0 || rec.ipWhitelist.includes(plainIp(ip));
}

/** A fresh client id (12 URL-safe characters) and client secret (43 characters, 256 bits). */
export function newClientCredentials(): { clientId: string; clientSecret: string } {
  return { clientId: randomBytes(9).toString('base64url'), clientSecret: randomBytes(32).toString('base64url') };
}

/** The server key API-key secrets are encrypted with: 32 random bytes generated once, kept in meta. */
export async function loadServerKey(meta: MetaStore): Promise<Buffer> {
  const stored = await meta.getMeta(SERVER_KEY_META);
  if (stored !== null) {
    const key = Buffer.from(stored, 'base64');
    if (key.length !== 32) throw new Error('the stored API-key server key is corrupt');
    return key;
  }
  const key = randomBytes(32);
  await meta.setMeta(SERVER_KEY_META, key.toString('base64'));
  return key;
}

export function secretOf(rec: ApiKeyRecord, serverKey: Buffer): string | null {
  try {
    return decryptSecret(rec.encSecret, serverKey, rec.clientId);
  } catch {
    return null;
  }
}

/** What a signed request looks like to the verifier. */
export interface SignedRequest {
  /** HTTP method, e.g. GET */
  method: string;
  /** raw request target: path and raw query, exactly as received */
  uri: string;
  /** raw body, or "" */
  body: string;
}

/**
 * Whether a client timestamp is within the window of one of the server's clocks. Clients sign with
 * their wall clock; with the test clock (API.md 8) moved forward the exchange time differs from it,
 * and both are accepted so a client keeps working after set_test_time.
 */
function fresh(ts: number, now: readonly number[]): boolean {
  return now.some((n) => Math.abs(n - ts) <= SIGNATURE_WINDOW_MS);
}

const HMAC_FIELD = /^(id|ts|sig|nonce)=(.*)$/;

/**
 * Verifies `Authorization: deri-hmac-sha256 id=..,ts=..,sig=..,nonce=..` (API.md 2): the signature
 * of `ts \n nonce \n METHOD \n URI \n body \n` under the key's secret, ts within 60 s of now, where
 * URI is the request target exactly as received (path and raw query). Nothing is cut from it: each
 * prefix (/v1/, /api/v1/, /api/v2/) is verified for what it is, so a captured signature cannot be
 * pointed at another path by hiding the signed target in a query string (issue 14). A signature is
 * accepted once (`replay`); one nonce on different requests passes (ccxt signs parallel calls in one
 * millisecond with the same nonce). Every failure is 13009, a key past its replay-cache share 10028.
 */
export function verifyHmac(keys: ApiKeys, serverKey: Buffer, params: string, req: SignedRequest, now: readonly number[], replay: ReplayGuard): ApiKeyRecord | Reject {
  const f: Record<string, string> = {};
  for (const part of params.split(',')) {
    const m = HMAC_FIELD.exec(part.trim());
    if (!m || m[1] in f) return reject(ERR.UNAUTHORIZED, 'malformed_signature_header');
    f[m[1]] = m[2];
  }
  if (f.id === undefined || f.ts === undefined || f.sig === undefined || f.nonce === undefined) return reject(ERR.UNAUTHORIZED, 'malformed_signature_header');
  if (!/^[0-9]{1,16}$/.test(f.ts)) return reject(ERR.UNAUTHORIZED, 'invalid_timestamp');
  const ts = Number(f.ts);
  if (!fresh(ts, now)) return reject(ERR.UNAUTHORIZED, 'stale_signature');
  const rec = keys.active(f.id);
  const secret = rec ? secretOf(rec, serverKey) : null;
  if (!rec || secret === null) return reject(ERR.UNAUTHORIZED, 'invalid_signature');
  const sig = f.sig.toLowerCase();
  const expected = hmacSha256Hex(secret, `${f.ts}\n${f.nonce}\n${req.method.toUpperCase()}\n${req.uri}\n${req.body}\n`);
  if (!safeEqual(sig, expected)) return reject(ERR.UNAUTHORIZED, 'invalid_signature');
  return admitOnce(replay, rec, sig, ts, now, ERR.UNAUTHORIZED);
}

/** The replay check after a signature verified: first use passes, a second is refused. */
function admitOnce(replay: ReplayGuard, rec: ApiKeyRecord, sig: string, ts: number, now: readonly number[], code: typeof ERR.UNAUTHORIZED | typeof ERR.INVALID_CREDENTIALS): ApiKeyRecord | Reject {
  const verdict = replay.admit(rec.clientId, sig, ts, now);
  if (verdict === 'replayed') return reject(code, 'replayed_signature');
  if (verdict === 'full') return reject(ERR.TOO_MANY_REQUESTS, 'too_many_signed_requests');
  return rec;
}

/** `Authorization: Basic base64(client_id:client_secret)`. */
export function verifyBasic(keys: ApiKeys, serverKey: Buffer, b64: string): ApiKeyRecord | Reject {
  const text = Buffer.from(b64.trim(), 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0) return reject(ERR.UNAUTHORIZED, 'malformed_basic_credentials');
  return verifySecret(keys, serverKey, text.slice(0, colon), text.slice(colon + 1), ERR.UNAUTHORIZED);
}

export function verifySecret(keys: ApiKeys, serverKey: Buffer, clientId: string, clientSecret: string, code: typeof ERR.UNAUTHORIZED | typeof ERR.INVALID_CREDENTIALS): ApiKeyRecord | Reject {
  const rec = keys.active(clientId);
  const secret = rec ? secretOf(rec, serverKey) : null;
  // compared even for an unknown id, so both failures take the same time
  const good = safeEqual(clientSecret, secret ?? 'unknown-client-id-placeholder');
  return rec && secret !== null && good ? rec : reject(code, 'invalid_credentials');
}

/** public/auth `client_signature`: HMAC(secret, timestamp \n nonce \n data), timestamp within 60 s, accepted once. */
export function verifyClientSignature(
  keys: ApiKeys,
  serverKey: Buffer,
  p: { client_id: string; timestamp: number; signature: string; nonce: string; data: string },
  now: readonly number[],
  replay: ReplayGuard,
): ApiKeyRecord | Reject {
  if (!fresh(p.timestamp, now)) return reject(ERR.INVALID_CREDENTIALS, 'stale_signature', 'timestamp');
  const rec = keys.active(p.client_id);
  const secret = rec ? secretOf(rec, serverKey) : null;
  if (!rec || secret === null) return reject(ERR.INVALID_CREDENTIALS, 'invalid_credentials', 'client_id');
  const expected = hmacSha256Hex(secret, `${p.timestamp}\n${p.nonce}\n${p.data}`);
  const sig = p.signature.toLowerCase();
  if (!safeEqual(sig, expected)) return reject(ERR.INVALID_CREDENTIALS, 'invalid_signature', 'signature');
  return admitOnce(replay, rec, sig, p.timestamp, now, ERR.INVALID_CREDENTIALS);
}
