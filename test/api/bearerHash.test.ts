// The bearer token hash cache (src/api/rpc/dispatch.ts bearerHash): the same hash as hashing the
// token each time, bounded in entries, never holding oversized tokens. That a revoked or expired
// token is refused on its next HTTP request although its hash is cached is test/api/authz.test.ts's
// logout and expiry cases (each request after the first is served from this cache).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bearerHash, bearerHashesHeld } from '../../src/api/rpc/dispatch.ts';
import { randomToken, sha256Hex } from '../../src/auth/crypto.ts';

describe('bearer token hashes', () => {
  it('gives the SHA-256 of the token, the first time and from the cache', () => {
    const token = randomToken();
    assert.equal(bearerHash(token), sha256Hex(token));
    assert.equal(bearerHash(token), sha256Hex(token));
    // one character apart: another hash
    const other = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    assert.equal(bearerHash(other), sha256Hex(other));
    assert.notEqual(bearerHash(other), bearerHash(token));
  });

  it('holds at most 1,024 tokens, however many distinct ones arrive', () => {
    for (let i = 0; i < 5000; i++) {
      const token = randomToken();
      assert.equal(bearerHash(token), sha256Hex(token));
      assert.ok(bearerHashesHeld() <= 1024, `held ${bearerHashesHeld()} after ${i + 1} tokens`);
    }
  });

  it('never keeps a token longer than an access token could be', () => {
    const held = bearerHashesHeld();
    for (const long of ['x'.repeat(100_000), 'y'.repeat(65)]) {
      assert.equal(bearerHash(long), sha256Hex(long));
      assert.equal(bearerHashesHeld(), held, `a ${long.length}-character token took no entry`);
    }
    const access = randomToken();
    bearerHash(access);
    assert.ok(bearerHashesHeld() === held + 1 || bearerHashesHeld() === 1, 'an access token does');
  });
});
