// Which server a gateway forwards to (docs/operations.md, "Gateways and NATS"). STRIKEBOOK_LEADER_URL
// is one URL (a load balancer that checks /ready, or a single server) or a comma-separated list of
// the leader and its standbys. With a list, the gateway follows a takeover itself: when the server
// it uses stops answering, closes its connections or answers as a standby (10040), it asks each
// one's /ready (200 only on the leader) until one leads, and opens its connections there.
import type { Logger } from 'pino';

/** How long one /ready may take before the next server is asked, ms. */
const READY_TIMEOUT_MS = 1_000;
/** Pause between rounds of asking while no server leads (a takeover in progress), ms. */
const ROUND_PAUSE_MS = 100;
/** How long a search goes on before the current server is kept (the next failure searches again), ms. */
const SEARCH_MS = 10_000;

export class LeaderLocator {
  private current: string;
  private search: Promise<string> | null = null;

  constructor(
    private readonly urls: readonly string[],
    private readonly log: Logger,
  ) {
    if (urls.length === 0) throw new Error('gateway: no leader URL');
    this.current = urls[0]!;
  }

  /** Parses STRIKEBOOK_LEADER_URL: one URL or several, comma-separated, trailing slashes dropped. */
  static parse(value: string): string[] {
    return value
      .split(',')
      .map((u) => u.trim().replace(/\/$/, ''))
      .filter((u) => u !== '');
  }

  /** The HTTP base URL of the server in use. */
  get url(): string {
    return this.current;
  }

  /** Its WebSocket API. */
  get wsUrl(): string {
    return `${this.current.replace(/^http/, 'ws')}/ws/api/v2`;
  }

  /** The server to use now: after a search in progress, if one is. */
  settled(): Promise<string> {
    return this.search ?? Promise.resolve(this.current);
  }

  /** The server in use failed: finds the one that leads (with one URL there is nothing to find). */
  relocate(): Promise<string> {
    if (this.urls.length === 1) return Promise.resolve(this.current);
    this.search ??= this.find().finally(() => (this.search = null));
    return this.search;
  }

  private async find(): Promise<string> {
    const deadline = performance.now() + SEARCH_MS;
    do {
      for (const u of this.urls) {
        const leads = await fetch(`${u}/ready`, { signal: AbortSignal.timeout(READY_TIMEOUT_MS) }).then(
          (r) => r.status === 200,
          () => false,
        );
        if (!leads) continue;
        if (u !== this.current) this.log.info({ from: this.current, to: u }, 'gateway: the leader moved');
        this.current = u;
        return u;
      }
      await new Promise((r) => setTimeout(r, ROUND_PAUSE_MS));
    } while (performance.now() < deadline);
    this.log.warn({ urls: this.urls }, 'gateway: no server answers /ready; keeping the last leader');
    return this.current;
  }
}
