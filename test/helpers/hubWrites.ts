// Reading what the stream hub wrote to a recording subscriber (tests that drive the hub directly).
import assert from 'node:assert/strict';

/** The notifications in one write: unmasked text frames (RFC 6455 5.2), each parsed. */
export function frames(b: Buffer): Array<{ channel: string; data: any }> {
  const out: Array<{ channel: string; data: any }> = [];
  let at = 0;
  while (at < b.length) {
    assert.equal(b[at], 0x81, 'a final text frame');
    let len = b[at + 1]!;
    let head = 2;
    if (len === 126) {
      len = b.readUInt16BE(at + 2);
      head = 4;
    } else if (len === 127) {
      len = Number(b.readBigUInt64BE(at + 2));
      head = 10;
    }
    out.push(JSON.parse(b.toString('utf8', at + head, at + head + len)).params);
    at += head + len;
  }
  assert.equal(at, b.length, 'the write ends with a whole frame');
  return out;
}

/** Waits until `cond` holds (polled every 5 ms), failing after `ms` with what was awaited. */
export async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
