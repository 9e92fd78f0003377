// Secret-handling primitives (API.md section 2, "Secrets at rest"): passwords through a memory-hard
// KDF, tokens and invite codes from the system CSPRNG, API-key secrets encrypted with a server key,
// every comparison of secrets in constant time.

import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  hash,
  randomBytes,
  scrypt,
  timingSafeEqual,
  type ScryptOptions,
} from 'node:crypto';

// scrypt cost. N=2^15, r=8 needs 128*N*r = 32 MiB per hash and takes on the order of 100 ms on one
// core: harder to brute-force than the 2^14 minimum, while a burst of logins stays bounded by the
// libuv thread pool (4 threads = 128 MiB).
const SCRYPT_N = 2 ** 15;
const SCRYPT_R = 8;
const SCRYPT_P = 1;
const SALT_BYTES = 16;
const HASH_BYTES = 32;
// Bounds accepted when verifying a stored hash, so a corrupted or hostile record cannot make one
// login allocate gigabytes or spin for minutes.
const VERIFY_MAX_MEM_BYTES = 256 * 1024 * 1024;
const VERIFY_MAX_R = 32;
const VERIFY_MAX_P = 16;

const GCM_KEY_BYTES = 32;
const GCM_IV_BYTES = 12;
const GCM_TAG_BYTES = 16;
const SECRET_FORMAT = 'v1';

const INVITE_CODE_BYTES = 18; // 144 bits, 24 base64url characters
const MIN_TOKEN_BYTES = 16;

// Lone UTF-16 surrogates: UTF-8 encoding turns every one of them into U+FFFD, so two different
// passwords would hash alike.
const LONE_SURROGATE = /\p{Cs}/u;

function scryptAsync(password: string, salt: Buffer, keylen: number, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, keylen, opts, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

function scryptOptions(N: number, r: number, p: number): ScryptOptions {
  // Node refuses when 128*N*r exceeds maxmem (default 32 MiB, which N=2^15 reaches); allow headroom.
  return { N, r, p, maxmem: 256 * N * r };
}

// NFC so that the same password typed on systems that compose accents differently matches.
function passwordText(password: string): string {
  return password.normalize('NFC');
}

/** Decodes canonical standard base64 only (Buffer.from silently skips junk characters). */
function strictBase64(s: string): Buffer | null {
  const buf = Buffer.from(s, 'base64');
  return buf.toString('base64') === s ? buf : null;
}

/** Decodes canonical unpadded base64url only. */
function strictBase64url(s: string): Buffer | null {
  const buf = Buffer.from(s, 'base64url');
  return buf.toString('base64url') === s ? buf : null;
}

function positiveIntText(s: string): number | null {
  return /^[1-9][0-9]{0,9}$/.test(s) ? Number(s) : null;
}

/** scrypt hash with a fresh 16-byte salt, encoded `scrypt$N$r$p$saltB64$hashB64`. */
export async function hashPassword(password: string): Promise<string> {
  if (typeof password !== 'string' || LONE_SURROGATE.test(password)) {
    throw new TypeError('password must be a well-formed string');
  }
  const salt = randomBytes(SALT_BYTES);
  const hash = await scryptAsync(passwordText(password), salt, HASH_BYTES, scryptOptions(SCRYPT_N, SCRYPT_R, SCRYPT_P));
  return ['scrypt', SCRYPT_N, SCRYPT_R, SCRYPT_P, salt.toString('base64'), hash.toString('base64')].join('$');
}

/**
 * True when `password` matches the output of hashPassword. Honours the N, r, p recorded in the hash
 * (so raising the cost later keeps old hashes valid), within bounds. False on anything malformed.
 */
export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  if (typeof password !== 'string' || typeof encoded !== 'string' || LONE_SURROGATE.test(password)) return false;
  const parts = encoded.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const N = positiveIntText(parts[1]);
  const r = positiveIntText(parts[2]);
  const p = positiveIntText(parts[3]);
  const salt = strictBase64(parts[4]);
  const expected = strictBase64(parts[5]);
  if (N === null || r === null || p === null || salt === null || expected === null) return false;
  if (N < 2 || !Number.isInteger(Math.log2(N)) || r > VERIFY_MAX_R || p > VERIFY_MAX_P) return false;
  if (128 * N * r > VERIFY_MAX_MEM_BYTES) return false;
  if (salt.length < SALT_BYTES || expected.length < HASH_BYTES || expected.length > 64) return false;
  let actual: Buffer;
  try {
    actual = await scryptAsync(passwordText(password), salt, expected.length, scryptOptions(N, r, p));
  } catch {
    return false;
  }
  return timingSafeEqual(actual, expected);
}

/** `bytes` random bytes (at least 16) from the CSPRNG as base64url: bearer and refresh tokens, ids. */
export function randomToken(bytes = 32): string {
  if (!Number.isInteger(bytes) || bytes < MIN_TOKEN_BYTES || bytes > 1024) {
    throw new RangeError(`randomToken: bytes must be an integer in ${MIN_TOKEN_BYTES}..1024, got ${bytes}`);
  }
  return randomBytes(bytes).toString('base64url');
}

/** Lower-case hex SHA-256 of the UTF-8 text: how tokens are stored and looked up. */
export function sha256Hex(s: string): string {
  // the one-shot form: it runs on every authenticated request, and skips the Hash object
  return hash('sha256', s, 'hex');
}

// Per-process key for safeEqual. Comparing keyed digests instead of the strings gives equal-length,
// fixed-size inputs to timingSafeEqual: no early exit and not even the secret's length leaks.
const EQUAL_KEY = randomBytes(32);

function equalDigest(s: string): Buffer {
  // utf16le keeps every UTF-16 code unit as it is; UTF-8 would map distinct lone surrogates to one.
  return createHmac('sha256', EQUAL_KEY).update(Buffer.from(s, 'utf16le')).digest();
}

/** Constant-time string equality; false for different lengths without revealing where they differ. */
export function safeEqual(a: string, b: string): boolean {
  if (typeof a !== 'string' || typeof b !== 'string') return false;
  return timingSafeEqual(equalDigest(a), equalDigest(b));
}

/** A fresh invite code: 144 random bits, 24 characters of [A-Za-z0-9_-]. */
export function newInviteCode(): string {
  return randomBytes(INVITE_CODE_BYTES).toString('base64url');
}

function checkKey(key: Buffer): void {
  if (!Buffer.isBuffer(key) || key.length !== GCM_KEY_BYTES) {
    throw new RangeError(`secret key must be a ${GCM_KEY_BYTES}-byte Buffer`);
  }
}

/**
 * AES-256-GCM encryption of an API-key secret under the server key, as `v1.<iv>.<ciphertext>.<tag>`
 * (base64url parts, fresh random 12-byte IV each call). `aad`, when given (e.g. the key's client_id),
 * binds the ciphertext to its record: decrypting it under another record's aad fails, so encrypted
 * secrets cannot be swapped between rows.
 */
export function encryptSecret(plain: string, key: Buffer, aad?: string): string {
  checkKey(key);
  const iv = randomBytes(GCM_IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: GCM_TAG_BYTES });
  if (aad !== undefined) cipher.setAAD(Buffer.from(aad, 'utf8'));
  const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [SECRET_FORMAT, iv.toString('base64url'), ct.toString('base64url'), tag.toString('base64url')].join('.');
}

/** Inverse of encryptSecret. Throws on a wrong key, a wrong aad, tampering or a malformed input. */
export function decryptSecret(enc: string, key: Buffer, aad?: string): string {
  checkKey(key);
  const parts = typeof enc === 'string' ? enc.split('.') : [];
  if (parts.length !== 4 || parts[0] !== SECRET_FORMAT) throw new Error('decryptSecret: malformed ciphertext');
  const iv = strictBase64url(parts[1]);
  const ct = strictBase64url(parts[2]);
  const tag = strictBase64url(parts[3]);
  if (iv === null || ct === null || tag === null || iv.length !== GCM_IV_BYTES || tag.length !== GCM_TAG_BYTES) {
    throw new Error('decryptSecret: malformed ciphertext');
  }
  const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: GCM_TAG_BYTES });
  if (aad !== undefined) decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ct), decipher.final()]).toString('utf8');
  } catch {
    throw new Error('decryptSecret: authentication failed (wrong key, wrong aad or tampered data)');
  }
}

/** Lower-case hex HMAC-SHA256 keyed by the UTF-8 text of `key` (Deribit signature scheme). */
export function hmacSha256Hex(key: string, msg: string): string {
  return createHmac('sha256', key).update(msg, 'utf8').digest('hex');
}
