// Reads a gateway makes of the leader for itself (src/gateway/streams.ts): book snapshots, tickers,
// and the instruments it knows (channel names are checked against them). Over HTTP, bounded by the
// forward timeout; a server that is gone or stalled sends the gateway looking for the leader
// (src/gateway/leaderLocator.ts) and the read is made once more there.
import type { LeaderLocator } from './leaderLocator.ts';

export class LeaderReads {
  /** Instrument names the leader listed at the last refresh. */
  readonly known = new Set<string>();
  /** When that was, performance.now(). */
  knownAt = 0;
  /** Their base tick (`tick_size`), for grouped books. */
  readonly ticks = new Map<string, number>();

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
      // options only: the combos' channels are the leader's alone (the stream events carry no combo book)
      const list = (await this.get('public/get_instruments', { currency, kind: 'option' })) as Array<{ instrument_name: string; tick_size: number }>;
      for (const i of list) {
        this.known.add(i.instrument_name);
        this.ticks.set(i.instrument_name, i.tick_size);
      }
    }
  }
}
