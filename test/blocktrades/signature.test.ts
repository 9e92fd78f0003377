// Block-trade signatures (src/blocktrades/signature.ts): a signature matches only the exact fields
// it was made over; any altered field (amount, price, instrument, direction, nonce, timestamp, role,
// expiry, signer) or another server key gives another MAC.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { blockTradeKey, macMatches, parseSignature, signatureText, type SignedFields } from '../../src/blocktrades/signature.ts';

const KEY = blockTradeKey(Buffer.alloc(32, 7));
const FIELDS: SignedFields = {
  signer: 42,
  role: 'maker',
  timestamp: 1_790_000_000_000,
  nonce: 'deal-1',
  expiry: 1_790_000_300_000,
  legs: [
    { instrument: 'BTC-27MAR26-100000-C', side: 1, price: 1_000, lots: 2_500_000_000 },
    { instrument: 'BTC-27MAR26-90000-P', side: 0, price: 500, lots: 2_500_000_000 },
  ],
};

describe('block trade signatures', () => {
  const text = signatureText(KEY, FIELDS);
  const sig = parseSignature(text)!;

  it('reads back its expiry and signer, and matches the fields it signed, in any leg order', () => {
    assert.match(text, /^1790000300000\.16\.[A-Za-z0-9_-]{43}$/);
    assert.equal(sig.expiry, FIELDS.expiry);
    assert.equal(sig.signer, 42);
    assert.ok(macMatches(KEY, FIELDS, sig.mac));
    assert.ok(macMatches(KEY, { ...FIELDS, legs: [...FIELDS.legs].reverse() }, sig.mac));
  });

  it('matches no altered field', () => {
    const leg0 = FIELDS.legs[0]!;
    const altered: [string, SignedFields][] = [
      ['amount', { ...FIELDS, legs: [{ ...leg0, lots: leg0.lots + 10_000_000 }, FIELDS.legs[1]!] }],
      ['price', { ...FIELDS, legs: [{ ...leg0, price: leg0.price + 5 }, FIELDS.legs[1]!] }],
      ['instrument', { ...FIELDS, legs: [{ ...leg0, instrument: 'BTC-27MAR26-110000-C' }, FIELDS.legs[1]!] }],
      ['direction', { ...FIELDS, legs: [{ ...leg0, side: 0 }, FIELDS.legs[1]!] }],
      ['a leg dropped', { ...FIELDS, legs: [leg0] }],
      ['nonce', { ...FIELDS, nonce: 'deal-2' }],
      ['timestamp', { ...FIELDS, timestamp: FIELDS.timestamp + 1 }],
      ['role', { ...FIELDS, role: 'taker' }],
      ['expiry', { ...FIELDS, expiry: FIELDS.expiry + 60_000 }],
      ['signer', { ...FIELDS, signer: 43 }],
    ];
    for (const [what, f] of altered) assert.equal(macMatches(KEY, f, sig.mac), false, `an altered ${what} matched`);
    assert.equal(macMatches(blockTradeKey(Buffer.alloc(32, 8)), FIELDS, sig.mac), false, 'another server key matched');
  });

  it('parses only its own form', () => {
    for (const bad of ['', 'x', '1.2', `${FIELDS.expiry}.16.short`, `${FIELDS.expiry}.-1.${sig.mac}`, `${FIELDS.expiry}.0.${sig.mac}`, `${text}x`]) assert.equal(parseSignature(bad), null, bad);
  });
});
