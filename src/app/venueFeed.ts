// The poller of the `venues` index (src/market/venueIndex.ts): asks every source for the ticker of
// every currency each poll interval, with a timeout, and keeps the last good price of each with the
// time it was observed. The market timers read `price()` once a second and sequence what it gives as
// an `index` command; with too few fresh sources it gives null and nothing is printed, so the index
// ages past the engine's staleness bound and trading in that currency is refused (index_stale).
import type { Logger } from 'pino';
import { ADAPTERS, medianIndex, observedAt, tickerUrl, type IndexResult, type IndexSourceSpec, type SourceReading } from '../market/venueIndex.ts';

/** A ticker is a few hundred bytes; a larger answer is not one. */
const MAX_BODY_BYTES = 64 * 1024;

export interface VenueFeedOptions {
  sources: readonly IndexSourceSpec[];
  currencies: readonly string[];
  minSources: number;
  maxAgeMs: number;
  pollMs: number;
  timeoutMs: number;
  log: Logger;
  /** Wall-clock ms: freshness is real time, whatever the exchange's (test) clock says. */
  now?: () => number;
}

export interface SourceStatus {
  venue: string;
  currency: string;
  /** The last good price, or null if none yet. */
  price: number | null;
  /** Since it was observed, ms (null: never). */
  ageMs: number | null;
  /** Why the last request failed, or null when it succeeded. */
  error: string | null;
}

interface Slot {
  spec: IndexSourceSpec;
  currency: string;
  url: string;
  reading: SourceReading | null;
  error: string | null;
  inFlight: boolean;
}

/** Reads at most `MAX_BODY_BYTES` of a response as text. */
async function boundedText(res: Response): Promise<string> {
  if (res.body === null) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel();
      throw new Error(`answer larger than ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export class VenueFeed {
  private readonly slots: Slot[] = [];
  private readonly now: () => number;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly controllers = new Set<AbortController>();

  constructor(private readonly opts: VenueFeedOptions) {
    this.now = opts.now ?? (() => Date.now());
    for (const currency of opts.currencies) {
      for (const spec of opts.sources) this.slots.push({ spec, currency, url: tickerUrl(spec, currency), reading: null, error: null, inFlight: false });
    }
  }

  /** Polls every source once (each ends within the timeout), then every `pollMs`. */
  async start(): Promise<void> {
    await this.pollAll();
    if (this.stopped) return;
    this.timer = setInterval(() => void this.pollAll(), this.opts.pollMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    for (const c of this.controllers) c.abort();
  }

  /** The index of `currency` now: the median of its fresh sources, or null with too few. */
  index(currency: string): IndexResult {
    const readings = this.slots.filter((s) => s.currency === currency).map((s) => s.reading);
    return medianIndex(readings, this.now(), { maxAgeMs: this.opts.maxAgeMs, minSources: this.opts.minSources });
  }

  price(currency: string): number | null {
    return this.index(currency).price;
  }

  status(): SourceStatus[] {
    const now = this.now();
    return this.slots.map((s) => ({ venue: s.spec.venue, currency: s.currency, price: s.reading?.price ?? null, ageMs: s.reading === null ? null : now - s.reading.observedAt, error: s.error }));
  }

  private pollAll(): Promise<void> {
    return Promise.all(this.slots.map((s) => this.poll(s))).then(() => undefined);
  }

  private async poll(slot: Slot): Promise<void> {
    // a venue slower than the poll interval is asked again only once it has answered
    if (slot.inFlight || this.stopped) return;
    slot.inFlight = true;
    const ctl = new AbortController();
    this.controllers.add(ctl);
    const timeout = setTimeout(() => ctl.abort(), this.opts.timeoutMs);
    let error: string | null = null;
    try {
      const res = await fetch(slot.url, { signal: ctl.signal, headers: { accept: 'application/json' } });
      const text = await boundedText(res);
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const ticker = ADAPTERS[slot.spec.venue].parse(JSON.parse(text));
      if (ticker === null) throw new Error('not the documented ticker shape');
      const received = this.now();
      slot.reading = { venue: slot.spec.venue, price: ticker.price, observedAt: observedAt(received, ticker.at) };
    } catch (err) {
      error = ctl.signal.aborted ? `no answer within ${this.opts.timeoutMs} ms` : (err as Error).message;
    } finally {
      clearTimeout(timeout);
      this.controllers.delete(ctl);
      slot.inFlight = false;
    }
    // one line when a source starts failing and one when it recovers, not one per poll
    if (error !== null && slot.error === null && !this.stopped) this.opts.log.warn({ venue: slot.spec.venue, currency: slot.currency, error }, 'index source failing');
    if (error === null && slot.error !== null) this.opts.log.info({ venue: slot.spec.venue, currency: slot.currency }, 'index source answering again');
    slot.error = error;
  }
}
