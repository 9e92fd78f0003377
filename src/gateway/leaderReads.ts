// Reads a gateway makes of the leader for itself (src/gateway/streams.ts): book snapshots, tickers,
// and the instruments it knows (channel names are checked against them). Over HTTP, bounded by the
// forward timeout; a server that is gone or stalled sends the gateway looking for the leader
// (src/gateway/leaderLocator.ts) and the read is made once more there.
import { PRICE_SCALE } from '../domain/instrument.ts';
import type { LeaderLocator } from './leaderLocator.ts';

/** A combo's tick (every combo trades on 0.0001: src/combos/book.ts inst), coin. */
const COMBO_TICK = 1 / 10 ** PRICE_SCALE;
/** Least time between the starts of two reads of the leader's combos, ms. */
const COMBO_READ_SPACING_MS = 100;

export class LeaderReads {
  /** Instrument names the leader listed at the last refresh. */
  readonly known = new Set<string>();
  /** When that was, performance.now(). */
  knownAt = 0;
  /** Combo names (issue 34): the leader's combos at the last refresh and those the stream announced since. */
  readonly combos = new Set<string>();
  /** Their base tick (`tick_size`), for grouped books. */
  readonly ticks = new Map<string, number>();

  private combosPending: Promise<void> | null = null;
  private combosRunning: Promise<void> | null = null;
  private combosStartedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly leader: LeaderLocator,
    private readonly timeoutMs: number,
  ) {}

  async get(method: string, params: Record<string, string | number>): Promise<unknown> {
    const qs = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();
    const get = (base: string) => fetch(`${base}/api/v2/${method}?${qs}`, { signal: AbortSignal.timeout(this.timeoutMs) });
    const base = await this.leader.settled();
    let r: Response;
    try {
      r = await get(base);
    } catch {
      // the server is gone or stalled (a takeover, a frozen leader): once more, at the server that leads now
      r = await get(await this.leader.relocate(base));
    }
    const body = (await r.json()) as { result?: unknown; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result;
  }

  async refreshKnown(): Promise<void> {
    this.knownAt = performance.now();
    for (const currency of ['BTC', 'ETH']) {
      const list = (await this.get('public/get_instruments', { currency, kind: 'option' })) as Array<{ instrument_name: string; tick_size: number }>;
      for (const i of list) {
        this.known.add(i.instrument_name);
        this.ticks.set(i.instrument_name, i.tick_size);
      }
      // every combo, active or not (the leader accepts the channels of an inactive one too)
      this.addCombos((await this.get('public/get_combo_ids', { currency })) as string[]);
    }
  }

  /**
   * Reads the leader's combos again, for a channel naming a combo the gateway does not know: a client
   * may subscribe to a combo it has just made before the stream's `public.combos` arrives. Resolves
   * once a read started after this call is done (one read at a time, starts at least
   * COMBO_READ_SPACING_MS apart, callers meanwhile share the next one: a flood of unknown names costs
   * the leader a bounded number of reads).
   */
  refreshCombos(): Promise<void> {
    if (this.combosPending !== null) return this.combosPending;
    const before = this.combosRunning ?? Promise.resolve();
    const p: Promise<void> = before
      .catch(() => undefined)
      .then(async () => {
        this.combosPending = null;
        this.combosRunning = p;
        const wait = this.combosStartedAt + COMBO_READ_SPACING_MS - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        this.combosStartedAt = performance.now();
        for (const currency of ['BTC', 'ETH']) this.addCombos((await this.get('public/get_combo_ids', { currency })) as string[]);
      });
    this.combosPending = p;
    p.finally(() => {
      if (this.combosRunning === p) this.combosRunning = null;
    }).catch(() => undefined);
    return p;
  }

  /** Combos named by the leader (get_combo_ids, or the stream's `public.combos`). */
  addCombos(names: readonly string[]): void {
    for (const n of names) {
      this.combos.add(n);
      this.ticks.set(n, COMBO_TICK);
    }
  }
}
