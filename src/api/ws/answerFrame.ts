// The WebSocket frame of an answer whose result is already rendered (an order's PlacedJson), and
// the microsecond clock of the envelope. Split from server.ts because this runs for every order
// answered over a socket: each piece here was measured on the engine thread under the WebSocket
// orders bench (bench/wsOrdersAB.ts), and the text written is exactly the envelope's.
import { frameOf } from './hub.ts';

// The process's time origin is fixed when it starts; `performance.timeOrigin` is a getter that
// recomputed it on every call (a third of micros() under the bench). Same value, read once.
const ORIGIN = performance.timeOrigin;

/** Wall-clock microseconds since the epoch (the envelope's usIn/usOut). */
export function micros(): number {
  return Math.round((ORIGIN + performance.now()) * 1000);
}

/** The raw encoders behind Buffer#write, which checks its arguments and looks up the encoding by
 *  name on every call (most of what `write` cost here). Node has them on every Buffer since v0.x;
 *  undocumented, so `write` stands in if a runtime lacks them. */
interface RawWrites {
  utf8Write?(s: string, offset: number, length: number): number;
  latin1Write?(s: string, offset: number, length: number): number;
}
const raw = Buffer.prototype as unknown as RawWrites;
const utf8Into: (b: Buffer, s: string, at: number, n: number) => number =
  typeof raw.utf8Write === 'function' ? (b, s, at, n) => (b as unknown as Required<RawWrites>).utf8Write(s, at, n) : (b, s, at, n) => b.write(s, at, n, 'utf8');
const latin1Into: (b: Buffer, s: string, at: number, n: number) => number =
  typeof raw.latin1Write === 'function' ? (b, s, at, n) => (b as unknown as Required<RawWrites>).latin1Write(s, at, n) : (b, s, at, n) => b.write(s, at, n, 'latin1');

/** Digits of `x` if it is a safe integer >= 0, else 0 (written as text by String()). */
function digitsOf(x: number): number {
  if (!(x >= 0 && x <= Number.MAX_SAFE_INTEGER && Math.floor(x) === x)) return 0;
  let n = 1;
  for (let p = 10; p <= x; p *= 10) n++;
  return n;
}

/** Writes the `n` digits of `x` (digitsOf) at `at`: converting the three timestamps to strings and
 *  encoding those cost ~0.15 us each, these digits a third of it. */
function putDigits(b: Buffer, at: number, x: number, n: number): number {
  const end = at + n;
  for (let i = end - 1; i >= at; i--) {
    const q = Math.floor(x / 10);
    b[i] = 48 + (x - q * 10);
    x = q;
  }
  return end;
}

/** Writes an ASCII constant (a few bytes: a loop is cheaper than a native call). */
function putAscii(b: Buffer, at: number, s: string): number {
  for (let i = 0; i < s.length; i++) b[at + i] = s.charCodeAt(i);
  return at + s.length;
}

/** A number as JSON writes it, or its digits (n > 0). */
function putNumber(b: Buffer, at: number, x: number, n: number, text: string | null): number {
  return n > 0 ? putDigits(b, at, x, n) : at + latin1Into(b, text!, at, text!.length);
}

const HEAD = '{"jsonrpc":"2.0","id":';
const RESULT = ',"result":';
const NO_ID_HEAD = '{"jsonrpc":"2.0","result":';
const US_IN = ',"usIn":';
const US_OUT = ',"usOut":';
const US_DIFF = ',"usDiff":';

/**
 * The text frame of `{"jsonrpc":"2.0","id":..,"result":<text>,"usIn":..,"usOut":..,"usDiff":..,
 * "testnet":..}` (the envelope's text exactly), every part written straight into it: no string is
 * built for the head or the tail (the envelope as one string was a rope whose byte count copied the
 * answer). `id` is a valid JSON-RPC id (validRpcId) or undefined; `textBytes` is the UTF-8 size of
 * `text`.
 */
export function renderedAnswerFrame(id: unknown, usIn: number, usOut: number, text: string, textBytes: number, testnet: boolean): Buffer {
  const usDiff = usOut - usIn;
  // a non-negative integer id (what clients send) and the timestamps go in as digits; anything else
  // as JSON.stringify / the template literal write it
  const idDigits = typeof id === 'number' ? digitsOf(id) : 0;
  const idText = id === undefined || idDigits > 0 ? null : typeof id === 'number' ? String(id) : JSON.stringify(id);
  // only a string id can bring other than ASCII into the head
  const idBytes = idDigits > 0 ? idDigits : idText === null ? 0 : typeof id === 'string' ? Buffer.byteLength(idText) : idText.length;
  const inDigits = digitsOf(usIn);
  const outDigits = digitsOf(usOut);
  const diffDigits = digitsOf(usDiff);
  const inText = inDigits > 0 ? null : String(usIn);
  const outText = outDigits > 0 ? null : String(usOut);
  const diffText = diffDigits > 0 ? null : String(usDiff);
  const testnetText = testnet ? ',"testnet":true}' : ',"testnet":false}';
  const headBytes = id === undefined ? NO_ID_HEAD.length : HEAD.length + idBytes + RESULT.length;
  const tailBytes =
    US_IN.length + (inText?.length ?? inDigits) + US_OUT.length + (outText?.length ?? outDigits) + US_DIFF.length + (diffText?.length ?? diffDigits) + testnetText.length;
  const frame = frameOf(headBytes + textBytes + tailBytes);
  let at = frame.length - headBytes - textBytes - tailBytes;
  if (id === undefined) at = putAscii(frame, at, NO_ID_HEAD);
  else {
    at = putAscii(frame, at, HEAD);
    at = idDigits > 0 ? putDigits(frame, at, id as number, idDigits) : at + utf8Into(frame, idText!, at, idBytes);
    at = putAscii(frame, at, RESULT);
  }
  // as many bytes as characters: all ASCII, whose UTF-8 is its latin1 (a plain copy, half the time)
  at += textBytes === text.length ? latin1Into(frame, text, at, textBytes) : utf8Into(frame, text, at, textBytes);
  at = putAscii(frame, at, US_IN);
  at = putNumber(frame, at, usIn, inDigits, inText);
  at = putAscii(frame, at, US_OUT);
  at = putNumber(frame, at, usOut, outDigits, outText);
  at = putAscii(frame, at, US_DIFF);
  at = putNumber(frame, at, usDiff, diffDigits, diffText);
  putAscii(frame, at, testnetText);
  return frame;
}
