// Block-trade signatures (issue 34), made and checked at the edge: an HMAC-SHA256, under a key
// derived from the server key (the journal's meta table, as API-key secrets' key), over every field
// the signer agreed to: its account, its role, the shared timestamp and nonce, each leg (instrument,
// the maker's direction, price, amount as exact integers) and the signature's expiry. The engine
// never sees the key: the command carries the MAC (which names the signature) and the expiry, and
// the engine decides once-only, invalidation and expiry on its own clock (src/blocktrades/execute.ts).
//
// Text: `<expiry ms>.<signer id, base 36>.<MAC, base64url>` (Deribit's is `<expiry>.<8 chars>.<MAC>`).
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { BlockLeg, BlockRole } from './types.ts';

/** What one signature binds. */
export interface SignedFields {
  signer: number;
  role: BlockRole;
  timestamp: number;
  nonce: string;
  legs: readonly BlockLeg[];
  expiry: number;
}

export interface ParsedSignature {
  expiry: number;
  signer: number;
  mac: string;
}

/** The block-trade signing key: separate from every other use of the server key. */
export function blockTradeKey(serverKey: Buffer): Buffer {
  return createHmac('sha256', serverKey).update('strikebook block trade signatures v1').digest();
}

/**
 * The canonical text of the signed fields. Legs are sorted by instrument name (each instrument
 * appears once), so the same agreement signs the same whatever the order of `trades` in the request.
 */
export function canonicalText(f: SignedFields): string {
  const legs = [...f.legs].sort((a, b) => (a.instrument < b.instrument ? -1 : a.instrument > b.instrument ? 1 : 0));
  return ['v1', f.expiry, f.signer, f.role, f.timestamp, f.nonce, ...legs.map((l) => `${l.instrument}:${l.side}:${l.price}:${l.lots}`)].join('|');
}

export function macOf(key: Buffer, f: SignedFields): string {
  return createHmac('sha256', key).update(canonicalText(f)).digest('base64url');
}

export function signatureText(key: Buffer, f: SignedFields): string {
  return `${f.expiry}.${f.signer.toString(36)}.${macOf(key, f)}`;
}

/** Reads a signature's parts; null when it is not one of ours. */
export function parseSignature(text: string): ParsedSignature | null {
  const m = /^(\d{1,16})\.([0-9a-z]{1,11})\.([A-Za-z0-9_-]{43})$/.exec(text);
  if (m === null) return null;
  const expiry = Number(m[1]);
  const signer = parseInt(m[2]!, 36);
  if (!Number.isSafeInteger(expiry) || !Number.isSafeInteger(signer) || signer <= 0) return null;
  return { expiry, signer, mac: m[3]! };
}

/** Whether `mac` is the signature of exactly these fields (constant time). */
export function macMatches(key: Buffer, f: SignedFields, mac: string): boolean {
  const want = Buffer.from(macOf(key, f));
  const got = Buffer.from(mac);
  return want.length === got.length && timingSafeEqual(want, got);
}
