// A result already rendered as JSON text. Big answers (every instrument, every book, deep books)
// are rendered once per state and the same text is spliced into every requester's envelope, instead
// of being serialized again for each (a 1 MB get_instruments took the engine thread ~10 ms a call).
//
// Its size is known exactly: `bytes` is what the rate limiter charges for a reply by its size
// (`resultBytes` below, for any result).

export class RenderedJson {
  private size = -1;

  constructor(readonly text: string) {}

  /** UTF-8 bytes of `text`, counted when first asked for: an order's answer (src/api/orderJson.ts)
   *  is rendered once per call and mostly never asked. */
  get bytes(): number {
    if (this.size < 0) this.size = Buffer.byteLength(this.text);
    return this.size;
  }

  /** The value again (for in-process callers that want objects; parses the text, so not for hot paths). */
  parse(): unknown {
    return JSON.parse(this.text);
  }
}

/** JSON text of a call's result, a RenderedJson as it is. */
export function resultText(result: unknown): string {
  return result instanceof RenderedJson ? result.text : JSON.stringify(result ?? null);
}

/**
 * The size in bytes of a call's result as it goes out: exact and free for a rendered result, else
 * one serialization (the limiter should call it only for methods whose answers can be big).
 */
export function resultBytes(result: unknown): number {
  return result instanceof RenderedJson ? result.bytes : Buffer.byteLength(JSON.stringify(result ?? null));
}
