// A snapshot's text cut into parts (src/journal/snapshotParts.ts): every cut falls where a character
// ends, so that no part holds half of a UTF-16 pair (an emoji in a label), and parts encoded to
// UTF-8 on one thread decode to the same text on another.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decodeSnapshotPart, encodeSnapshotParts, joinSnapshotParts, snapshotPartEnds, snapshotTextParts, utf8Slices } from '../../src/journal/snapshotParts.ts';

/** Text of ASCII, two-byte, three-byte and four-byte (pair) characters. */
const mixedText = fc.array(fc.constantFrom('a', '"', '\u00e9', '\u20ac', '\ud83d\ude00', '\ud834\udd1e'), { maxLength: 200 }).map((cs) => cs.join(''));

test('parts are at most the part size, join to the text, and never end inside a pair', () => {
  fc.assert(
    fc.property(mixedText, fc.integer({ min: 2, max: 40 }), (text, partChars) => {
      const parts = snapshotTextParts(text, partChars);
      assert.equal(parts.join(''), text);
      for (const part of parts) {
        assert.ok(part.length >= 1 && part.length <= partChars, `part of ${part.length} code units`);
        // a part that ended on a pair's first half would encode it as U+FFFD
        assert.equal(decodeSnapshotPart(new TextEncoder().encode(part)), part);
        assert.ok(!/[\ud800-\udbff]$|^[\udc00-\udfff]/.test(part), `a part holds half of a pair: ${JSON.stringify(part)}`);
      }
    }),
  );
});

test('encoded parts decode to the text, each in a buffer of its own', () => {
  fc.assert(
    fc.property(mixedText, fc.integer({ min: 2, max: 40 }), (text, partChars) => {
      const parts = encodeSnapshotParts(text, partChars);
      assert.equal(joinSnapshotParts(parts), text);
      assert.equal(new Set(parts.map((p) => p.buffer)).size, parts.length, 'a transfer of one part would take its neighbours with it');
      for (const p of parts) assert.equal(p.byteOffset, 0);
    }),
  );
});

test('the cut moves before a pair that straddles it; plain text is cut at the part size', () => {
  // "abc" then an emoji at code units 3-4: a part of 4 would end between its halves
  assert.deepEqual(snapshotPartEnds('abc\ud83d\ude00de', 4), [3, 7]);
  assert.deepEqual(snapshotPartEnds('abcdefghij', 4), [4, 8, 10]);
  assert.deepEqual(snapshotPartEnds('', 4), []);
  assert.throws(() => snapshotPartEnds('ab', 1), RangeError);
  assert.throws(() => decodeSnapshotPart(new Uint8Array([0x61, 0xff])), TypeError, 'bytes that are not UTF-8 are refused, not replaced');
});

test('UTF-8 bytes sliced for a database row are views of at most the size, each whole UTF-8', () => {
  fc.assert(
    fc.property(mixedText, fc.integer({ min: 4, max: 40 }), (text, maxBytes) => {
      const bytes = new TextEncoder().encode(text);
      const slices = utf8Slices(bytes, maxBytes);
      let at = 0;
      for (const s of slices) {
        assert.ok(s.length >= 1 && s.length <= maxBytes, `slice of ${s.length} bytes`);
        assert.equal(s.buffer, bytes.buffer, 'a view, not a copy');
        assert.equal(s.byteOffset, at);
        at += s.length;
        // fatal decoding: a slice cut inside a character throws here
        decodeSnapshotPart(s);
      }
      assert.equal(at, bytes.length);
      assert.equal(slices.map(decodeSnapshotPart).join(''), text);
    }),
  );
  // the cut moves back before a character that straddles it: 'ab' then the emoji's 4 bytes
  const emoji = new TextEncoder().encode('ab\ud83d\ude00c');
  assert.deepEqual(utf8Slices(emoji, 4).map((s) => s.length), [2, 4, 1]);
  assert.deepEqual(utf8Slices(new Uint8Array(0), 4), []);
  // not UTF-8 at all (continuation bytes only): still cut, at the size, and the slicing ends
  assert.deepEqual(utf8Slices(new Uint8Array(10).fill(0x80), 4).map((s) => s.length), [4, 4, 2]);
  assert.throws(() => utf8Slices(emoji, 3), /not an integer >= 4/);
});
