import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, scryptSync } from 'node:crypto';
import {
  decryptSecret,
  encryptSecret,
  hashPassword,
  hmacSha256Hex,
  newInviteCode,
  randomToken,
  safeEqual,
  sha256Hex,
  verifyPassword,
} from '../../src/auth/crypto.ts';

const URL_SAFE = /^[A-Za-z0-9_-]+$/;

test('a hashed password verifies and a wrong one does not', async () => {
  const encoded = await hashPassword('correct horse battery staple');
  assert.equal(await verifyPassword('correct horse battery staple', encoded), true);
  assert.equal(await verifyPassword('correct horse battery stapl', encoded), false);
  assert.equal(await verifyPassword('Correct horse battery staple', encoded), false);
  assert.equal(await verifyPassword('', encoded), false);
});

test('a password hash is encoded as scrypt$N$r$p$salt$hash with N >= 2^14, r=8, p=1 and a 16-byte salt', async () => {
  const encoded = await hashPassword('hunter22');
  const [alg, n, r, p, salt, hash] = encoded.split('$');
  assert.equal(alg, 'scrypt');
  assert.ok(Number(n) >= 2 ** 14 && Number.isInteger(Math.log2(Number(n))));
  assert.equal(r, '8');
  assert.equal(p, '1');
  assert.equal(Buffer.from(salt!, 'base64').length, 16);
  assert.equal(Buffer.from(salt!, 'base64').toString('base64'), salt);
  // An independent derivation from the encoded parameters gives the stored hash.
  const expected = scryptSync('hunter22', Buffer.from(salt!, 'base64'), Buffer.from(hash!, 'base64').length, {
    N: Number(n),
    r: 8,
    p: 1,
    maxmem: 256 * Number(n) * 8,
  });
  assert.equal(expected.toString('base64'), hash);
});

test('hashing the same password twice gives different salts and hashes', async () => {
  const [a, b] = await Promise.all([hashPassword('same password'), hashPassword('same password')]);
  assert.notEqual(a, b);
  assert.equal(await verifyPassword('same password', b), true);
});

test('a password verifies whichever Unicode normalization form it was typed in', async () => {
  const composed = 'caf\u00e9 au lait';
  const decomposed = 'cafe\u0301 au lait';
  assert.equal(await verifyPassword(decomposed, await hashPassword(composed)), true);
});

test('a password with a lone surrogate is refused rather than hashed like U+FFFD', async () => {
  await assert.rejects(hashPassword('abc\ud800def'), TypeError);
  const encoded = await hashPassword('abc\ufffddef');
  assert.equal(await verifyPassword('abc\ud800def', encoded), false);
});

test('a hash verifies with the parameters recorded in it', async () => {
  const salt = randomBytes(16);
  const hash = scryptSync('pw-at-2^14', salt, 32, { N: 2 ** 14, r: 8, p: 1 });
  const encoded = `scrypt$16384$8$1$${salt.toString('base64')}$${hash.toString('base64')}`;
  assert.equal(await verifyPassword('pw-at-2^14', encoded), true);
  assert.equal(await verifyPassword('other', encoded), false);
});

test('verifyPassword answers false on malformed or out-of-bounds encodings', async () => {
  const good = await hashPassword('password1');
  const [, n, r, p, salt, hash] = good.split('$');
  const bad = [
    '',
    'garbage',
    good.replace(/^scrypt/, 'bcrypt'),
    `${good}$extra`,
    `scrypt$${n}$${r}$${p}$${salt}`,
    `scrypt$12345$${r}$${p}$${salt}$${hash}`, // N not a power of two
    `scrypt$0$${r}$${p}$${salt}$${hash}`,
    `scrypt$-16384$${r}$${p}$${salt}$${hash}`,
    `scrypt$1048576$64$${p}$${salt}$${hash}`, // 8 GiB of memory
    `scrypt$${n}$${r}$${p}$${salt}$${hash!.slice(0, 8)}`, // short hash
    `scrypt$${n}$${r}$${p}$${salt!.slice(0, 8)}$${hash}`, // short salt
    `scrypt$${n}$${r}$${p}$${salt}$${hash}!`, // junk Buffer.from would skip
    `scrypt$0x8000$${r}$${p}$${salt}$${hash}`,
  ];
  for (const encoded of bad) assert.equal(await verifyPassword('password1', encoded), false, encoded);
  assert.equal(await verifyPassword('password1', null as any), false);
});

test('randomToken gives base64url of the requested number of random bytes', () => {
  const t = randomToken();
  assert.match(t, URL_SAFE);
  assert.equal(Buffer.from(t, 'base64url').length, 32);
  assert.equal(Buffer.from(randomToken(48), 'base64url').length, 48);
  assert.notEqual(randomToken(), randomToken());
  assert.throws(() => randomToken(8), RangeError);
  assert.throws(() => randomToken(16.5), RangeError);
});

test('sha256Hex matches the known digests', () => {
  assert.equal(sha256Hex(''), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
});

test('safeEqual is true only for identical strings', () => {
  assert.equal(safeEqual('secret-token', 'secret-token'), true);
  assert.equal(safeEqual('', ''), true);
  assert.equal(safeEqual('secret-token', 'secret-tokem'), false);
  assert.equal(safeEqual('secret-token', 'secret-token-longer'), false);
  assert.equal(safeEqual('secret-token', ''), false);
  // Distinct lone surrogates encode to the same UTF-8 bytes; they are still different strings.
  assert.equal(safeEqual('\ud800', '\udc00'), false);
  assert.equal(safeEqual('x', undefined as any), false);
});

test('an invite code carries at least 128 random bits in URL-safe characters', () => {
  const codes = new Set<string>();
  for (let i = 0; i < 1000; i++) {
    const code = newInviteCode();
    assert.match(code, URL_SAFE);
    assert.equal(encodeURIComponent(code), code);
    // base64url of at least 16 bytes: 6 bits per character, at least 128 bits.
    assert.ok(code.length * 6 >= 128, code);
    assert.ok(Buffer.from(code, 'base64url').length >= 16, code);
    codes.add(code);
  }
  assert.equal(codes.size, 1000);
});

test('an encrypted secret decrypts back, with a fresh IV each time', () => {
  const key = randomBytes(32);
  for (const plain of ['', 'client-secret-abc', 'ünïcödé ✓', 'x'.repeat(5000)]) {
    const enc = encryptSecret(plain, key);
    assert.equal(decryptSecret(enc, key), plain);
    assert.doesNotMatch(enc, new RegExp(plain === '' ? '^$' : plain.slice(0, 8)));
  }
  assert.notEqual(encryptSecret('same', key), encryptSecret('same', key));
});

test('tampered ciphertext, IV or tag fails to decrypt', () => {
  const key = randomBytes(32);
  const enc = encryptSecret('client-secret-abc', key);
  const parts = enc.split('.');
  for (let i = 1; i <= 3; i++) {
    const bytes = Buffer.from(parts[i]!, 'base64url');
    bytes[0] ^= 1;
    const tampered = parts.map((p, j) => (j === i ? bytes.toString('base64url') : p)).join('.');
    assert.throws(() => decryptSecret(tampered, key), /decryptSecret/, `part ${i}`);
  }
});

test('decrypting with another key or another aad fails', () => {
  const key = randomBytes(32);
  const enc = encryptSecret('s3cret', key, 'client-1');
  assert.equal(decryptSecret(enc, key, 'client-1'), 's3cret');
  assert.throws(() => decryptSecret(enc, randomBytes(32), 'client-1'), /authentication failed/);
  assert.throws(() => decryptSecret(enc, key, 'client-2'), /authentication failed/);
  assert.throws(() => decryptSecret(enc, key), /authentication failed/);
});

test('malformed ciphertexts and wrong-size keys are refused', () => {
  const key = randomBytes(32);
  const [v, iv, ct, tag] = encryptSecret('s3cret', key).split('.');
  for (const bad of ['', 'v1', `v2.${iv}.${ct}.${tag}`, `v1.${iv}.${ct}`, `v1.${iv}.${ct}.${tag}.x`, `v1.${iv}x.${ct}.${tag}`, `v1.${iv}.${ct}.${tag!.slice(4)}`]) {
    assert.throws(() => decryptSecret(bad, key), /malformed/, bad);
  }
  assert.equal(v, 'v1');
  assert.throws(() => encryptSecret('s', randomBytes(16)), RangeError);
  assert.throws(() => decryptSecret('v1.a.b.c', randomBytes(31)), RangeError);
});

test('hmacSha256Hex matches the RFC 4231 test vector and the Deribit signing scheme', () => {
  // RFC 4231 test case 2: key "Jefe".
  assert.equal(
    hmacSha256Hex('Jefe', 'what do ya want for nothing?'),
    '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
  );
  const sig = hmacSha256Hex('secret', '1700000000000\nabc\nGET\n/api/v2/private/get_positions?currency=BTC\n\n');
  assert.match(sig, /^[0-9a-f]{64}$/);
});
