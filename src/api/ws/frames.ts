// WebSocket frames built once and written as they are to every socket (RFC 6455 5.2), and the
// subscription notification every channel message is.

/** A connection as the hub sees it. */
export interface Subscriber {
  readonly id: number;
  /** Queues a complete WebSocket frame on the connection (the connection enforces its buffer bound). */
  sendFrame(frame: Buffer): void;
  /**
   * Writes of released rounds the hub still owes it (kept by the hub; absent: none). A round is
   * written a slice of connections per turn, so a connection can be owed a round while its own
   * answers are due: it asks the hub for them first (`StreamHub.flushOwed`), keeping its order.
   */
  owed?: number;
}

export function notification(channel: string, dataJson: string): Buffer {
  return Buffer.from(`{"jsonrpc":"2.0","method":"subscription","params":{"channel":${JSON.stringify(channel)},"data":${dataJson}}}`);
}

/** A complete unmasked WebSocket text frame (RFC 6455 5.2) around `payload`: built once per message,
 *  written as is to every subscriber's socket. */
export function textFrame(payload: Buffer): Buffer {
  const n = payload.length;
  const frame = frameOf(n);
  payload.copy(frame, frame.length - n);
  return frame;
}

/**
 * The same frame around a string's UTF-8 bytes, encoded straight into it: an answer is counted and
 * copied once, where `ws.send(string)` counted its bytes again, built a header and an options
 * object per message and left the string to be encoded by the socket's writev.
 */
export function textFrameOf(text: string): Buffer {
  const n = Buffer.byteLength(text);
  const frame = frameOf(n);
  frame.write(text, frame.length - n, n, 'utf8');
  return frame;
}

/** A text frame of `n` payload bytes with its header written, the payload (its end) left to fill. */
export function frameOf(n: number): Buffer {
  const head = n < 126 ? 2 : n < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(head + n);
  frame[0] = 0x81;
  if (n < 126) frame[1] = n;
  else if (n < 65536) {
    frame[1] = 126;
    frame.writeUInt16BE(n, 2);
  } else {
    frame[1] = 127;
    frame.writeUInt32BE(Math.floor(n / 2 ** 32), 2);
    frame.writeUInt32BE(n >>> 0, 6);
  }
  return frame;
}
