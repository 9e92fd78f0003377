// A snapshot's text cut into parts (the journal writes a large snapshot part by part: see
// sqliteSnapshots.ts), and the parts as UTF-8 bytes that cross between threads by transfer.
//
// Why bytes (issue 36): a background snapshot is built on a thread of its own (src/app/
// snapshotWorker.ts) and written by the journal's writer thread, but it crossed the engine thread on
// the way. Handed over as one string, the engine thread copied the whole text when the message
// arrived (~28 ms for 37 MB on an idle machine, one stall per snapshot, longer as the state grows).
// As parts whose ArrayBuffers are transferred, nothing is copied on the engine thread: the builder
// encodes, the writer decodes.
//
// Why the cut points: a part ends where a character ends. JSON keeps a character outside the BMP (an
// emoji in a label) as two UTF-16 code units, and a cut between them left each part with half a
// pair, which SQLite's UTF-8 (and any encoder) stores as U+FFFD: the restored label was not the
// label, and the recovered state not the live one.

/** Whether the UTF-16 code unit at `i` of `text` is the first half of a pair. */
function isHighSurrogate(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  return c >= 0xd800 && c <= 0xdbff;
}

/**
 * Where each part of `text` ends (exclusive), parts of at most `partChars` code units (at least 2,
 * so that a pair always fits), never between the two halves of a pair. `[]` for ''.
 */
export function snapshotPartEnds(text: string, partChars: number): number[] {
  if (!(Number.isInteger(partChars) && partChars >= 2)) throw new RangeError(`snapshot part size ${partChars} is not an integer >= 2`);
  const ends: number[] = [];
  let at = 0;
  while (at < text.length) {
    let end = Math.min(at + partChars, text.length);
    // a pair would be cut: end the part before its first half
    if (end < text.length && isHighSurrogate(text, end - 1)) end--;
    ends.push(end);
    at = end;
  }
  return ends;
}

/** The parts of `text` as strings (see snapshotPartEnds). */
export function snapshotTextParts(text: string, partChars: number): string[] {
  let at = 0;
  return snapshotPartEnds(text, partChars).map((end) => {
    const part = text.slice(at, end);
    at = end;
    return part;
  });
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * The parts of `text` as UTF-8, each in an ArrayBuffer of its own (a transfer moves the whole
 * buffer: a view into a shared one would move, or copy, its neighbours too).
 */
export function encodeSnapshotParts(text: string, partChars: number): Uint8Array[] {
  return snapshotTextParts(text, partChars).map((part) => encoder.encode(part));
}

/** One part's text back from its bytes; throws on bytes that are not UTF-8. */
export function decodeSnapshotPart(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

/** The whole text of encoded parts (a journal that takes the snapshot as one string). */
export function joinSnapshotParts(parts: readonly Uint8Array[]): string {
  return parts.map(decodeSnapshotPart).join('');
}

/**
 * `bytes` (UTF-8) as views of at most `maxBytes` bytes each (at least 4, so that a character always
 * fits), never cut inside a character: a part a database checks as text must be whole UTF-8. No
 * byte is copied. `[]` for no bytes.
 */
export function utf8Slices(bytes: Uint8Array, maxBytes: number): Uint8Array[] {
  if (!(Number.isInteger(maxBytes) && maxBytes >= 4)) throw new RangeError(`slice size ${maxBytes} is not an integer >= 4`);
  const slices: Uint8Array[] = [];
  let at = 0;
  while (at < bytes.length) {
    let end = Math.min(at + maxBytes, bytes.length);
    // back over continuation bytes (10xxxxxx): the slice ends before the character they belong to
    // (bytes that are not UTF-8 at all are cut at the size: the database refuses them as text)
    let cut = end;
    while (cut > at && (bytes[cut]! & 0xc0) === 0x80) cut--;
    if (end < bytes.length && cut > at) end = cut;
    slices.push(bytes.subarray(at, end));
    at = end;
  }
  return slices;
}
