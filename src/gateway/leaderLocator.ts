// Which server a gateway forwards to (docs/operations.md, "Gateways and NATS"). STRIKEBOOK_LEADER_URL
// is one URL (a load balancer that checks /ready, or a single server) or a comma-separated list of
// the leader and its standbys. With a list, the gateway follows a takeover itself: when the server
// it uses stops answering, closes its connections or answers as a standby (10040), it asks every
// one's /ready at once (200 only on the leader: a frozen old leader's silence delays nothing) until
// one leads, and opens its connections there. Listeners of `onMove` move what is open (the
// per-client upstream WebSockets, src/gateway/upstreams.ts).
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
  private readonly moved: Array<(to: string, from: string) => void> = [];

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

  /** Calls `fn` each time the server in use changes. */
  onMove(fn: (to: string, from: string) => void): void {
    this.moved.push(fn);
  }

  /**
   * The server in use failed: finds the one that leads (with one URL there is nothing to find).
   * `failed` names the server that failed; when the search already moved away from it, the server
   * in use now is kept.
   */
  relocate(failed?: string): Promise<string> {
    if (this.urls.length === 1) return Promise.resolve(this.current);
    if (this.search === null && failed !== undefined && failed !== this.current) return Promise.resolve(this.current);
    this.search ??= this.find().finally(() => (this.search = null));
    return this.search;
  }

  private async find(): Promise<string> {
    const deadline = performance.now() + SEARCH_MS;
    do {
      // the first to answer 200 (two never lead for long: the lock or lease decides); a frozen
      // server's silence delays nothing
      const u = await new Promise<string | null>((resolve) => {
        let left = this.urls.length;
        for (const url of this.urls) {
          fetch(`${url}/ready`, { signal: AbortSignal.timeout(READY_TIMEOUT_MS) })
            .then(
              (r) => {
                void r.body?.cancel();
                return r.status === 200;
              },
              () => false,
            )
            .then((leads) => {
              if (leads) resolve(url);
              else if (--left === 0) resolve(null);
            });
        }
      });
      if (u !== null) {
        const from = this.current;
        this.current = u;
        if (u !== from) {
          this.log.warn({ from, to: u }, 'gateway: the leader moved');
          for (const fn of this.moved) fn(u, from);
        }
        return u;
      }
      await new Promise((r) => setTimeout(r, ROUND_PAUSE_MS));
    } while (performance.now() < deadline);
    this.log.warn({ urls: this.urls }, 'gateway: no server answers /ready; keeping the last leader');
    return this.current;
  }
}
