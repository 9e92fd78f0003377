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

/** The envelope's head up to the result: `id` is a valid JSON-RPC id (validRpcId) or undefined. */
function headOf(id: unknown): string {
  if (id === undefined) return '{"jsonrpc":"2.0","result":';
  // a finite number is written by JSON.stringify as String() writes it (-0 as 0, 1e21 as 1e+21)
  if (typeof id === 'number') return '{"jsonrpc":"2.0","id":' + id + ',"result":';
  return '{"jsonrpc":"2.0","id":' + JSON.stringify(id) + ',"result":';
}

/**
 * The text frame of `{"jsonrpc":"2.0","id":..,"result":<text>,"usIn":..,"usOut":..,"usDiff":..,
 * "testnet":..}`, its three parts encoded into it one after the other (the envelope as one string
 * was a rope whose byte count copied the answer). `textBytes` is the UTF-8 size of `text`.
 */
export function renderedAnswerFrame(id: unknown, usIn: number, usOut: number, text: string, textBytes: number, testnet: boolean): Buffer {
  const head = headOf(id);
  // numbers and true/false: ASCII, one byte per character
  const tail = ',"usIn":' + usIn + ',"usOut":' + usOut + ',"usDiff":' + (usOut - usIn) + (testnet ? ',"testnet":true}' : ',"testnet":false}');
  // only a string id can bring other than ASCII into the head
  const headBytes = typeof id === 'string' ? Buffer.byteLength(head) : head.length;
  const frame = frameOf(headBytes + textBytes + tail.length);
  let at = frame.length - headBytes - textBytes - tail.length;
  at += utf8Into(frame, head, at, headBytes);
  at += utf8Into(frame, text, at, textBytes);
  latin1Into(frame, tail, at, tail.length);
  return frame;
}
