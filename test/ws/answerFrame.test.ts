// An order's answer frame (src/api/ws/answerFrame.ts) must carry exactly the envelope text the
// generic path writes (server.ts `envelope`: JSON.stringify of the id, the result text, the
// timestamps, testnet), inside a well-formed unmasked text frame, for every valid JSON-RPC id and
// any result text, ASCII or not.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { micros, renderedAnswerFrame } from '../../src/api/ws/answerFrame.ts';

/** The generic envelope of a result (as server.ts `envelope` writes it). */
function envelopeText(id: unknown, usIn: number, usOut: number, text: string, testnet: boolean): string {
  const head = id === undefined ? '{"jsonrpc":"2.0"' : `{"jsonrpc":"2.0","id":${JSON.stringify(id)}`;
  return `${head},"result":${text},"usIn":${usIn},"usOut":${usOut},"usDiff":${usOut - usIn},"testnet":${testnet}}`;
}

/** The payload of an unmasked, unfragmented text frame, checking its header. */
function payloadOf(frame: Buffer): Buffer {
  assert.equal(frame[0], 0x81);
  const n7 = frame[1]! & 0x7f;
  assert.equal(frame[1]! & 0x80, 0, 'server frames are not masked');
  const [len, at] = n7 < 126 ? [n7, 2] : n7 === 126 ? [frame.readUInt16BE(2), 4] : [frame.readUInt32BE(2) * 2 ** 32 + frame.readUInt32BE(6), 10];
  assert.equal(frame.length, at + len);
  return frame.subarray(at);
}

const rpcId = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(-0, 1e21, 5e-324, Number.MAX_SAFE_INTEGER + 2),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
);

/** Timestamps: real microsecond clocks, small and odd numbers (a negative or fractional difference
 *  is written as the template literal writes it). */
const stamp = fc.oneof(
  fc.integer({ min: 1_700_000_000_000_000, max: Number.MAX_SAFE_INTEGER }),
  fc.nat(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 9, 10, 99, 100, 2 ** 53, 1e21),
);

describe('an order answer frame', () => {
  it('carries the generic envelope text for every id and result text', () => {
    fc.assert(
      fc.property(rpcId, fc.string({ unit: 'binary', maxLength: 300 }), stamp, stamp, fc.boolean(), (id, raw, usIn, usOut, testnet) => {
        const text = JSON.stringify(raw);
        const frame = renderedAnswerFrame(id, usIn, usOut, text, Buffer.byteLength(text), testnet);
        assert.equal(payloadOf(frame).toString('utf8'), envelopeText(id, usIn, usOut, text, testnet));
      }),
      { numRuns: 2000 },
    );
  });

  it('frames answers past both length-field bounds (125 and 65535 bytes)', () => {
    for (const size of [100, 125, 126, 200, 65_535, 65_536, 70_000]) {
      const text = JSON.stringify('é'.repeat(size));
      const frame = renderedAnswerFrame(7, 1, 2, text, Buffer.byteLength(text), false);
      assert.equal(payloadOf(frame).toString('utf8'), envelopeText(7, 1, 2, text, false));
    }
  });

  it('encodes any text as UTF-8, ASCII or not (a lone surrogate too, as Buffer.from does)', () => {
    for (const text of ['"plain"', '"é"', '"日本"', '"\u{1F600}"', '"\ud800"', '"a\udc00b"', '"\x7f\x80\xff"']) {
      const frame = renderedAnswerFrame('é', 3, 5, text, Buffer.byteLength(text), true);
      assert.deepEqual(payloadOf(frame), Buffer.from(envelopeText('é', 3, 5, text, true)));
    }
  });

  it('stamps microseconds since the epoch', () => {
    const before = Date.now() * 1000;
    const us = micros();
    assert.ok(Number.isSafeInteger(us));
    assert.ok(us >= before - 2000 && us <= Date.now() * 1000 + 2000);
  });
});
