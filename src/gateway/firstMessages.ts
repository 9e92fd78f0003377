// The first messages of a new subscription (the current ticker, quote, candle, estimate, platform
// state), asked of the leader itself: on one WebSocket of the gateway's own the channels are
// subscribed and unsubscribed in one go, and what the leader sends between the two answers is what a
// new subscriber of its gets. One request at a time: a channel still subscribed there would get no
// first message. When the leader moves, the connection is closed and the next request opens one
// at the new leader.
import type { Logger } from 'pino';
import WebSocket from 'ws';
import type { LeaderLocator } from './leaderLocator.ts';

interface Feed {
  ws: WebSocket;
  open: Promise<void>;
  next: number;
  waiting: Map<number, () => void>;
  notes: Array<[string, string]>;
}

export class FirstMessages {
  private feed: Feed | null = null;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly leader: LeaderLocator,
    private readonly log: Logger,
    private readonly closing: () => boolean,
  ) {
    leader.onMove(() => this.feed?.ws.close());
  }

  private openFeed(): Feed {
    if (this.feed !== null && this.feed.ws.readyState <= WebSocket.OPEN) return this.feed;
    const base = this.leader.url;
    const ws = new WebSocket(this.leader.wsUrl, { perMessageDeflate: false });
    const f: Feed = {
      ws,
      open: new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      }),
      next: 1,
      waiting: new Map<number, () => void>(),
      notes: [],
    };
    ws.on('message', (raw) => {
      const msg = JSON.parse(raw.toString()) as { id?: number; method?: string; params?: { channel: string; data: unknown } };
      if (msg.method === 'subscription' && msg.params) f.notes.push([msg.params.channel, JSON.stringify(msg.params.data)]);
      else if (typeof msg.id === 'number') {
        f.waiting.get(msg.id)?.();
        f.waiting.delete(msg.id);
      }
    });
    ws.on('close', () => {
      for (const w of f.waiting.values()) w();
      f.waiting.clear();
      // closed unasked: the leader may have moved (a close after a move finds it moved already)
      if (!this.closing()) void this.leader.relocate(base);
    });
    ws.on('error', () => undefined);
    this.feed = f;
    return f;
  }

  /** The leader's first messages for `channels` (channel -> data texts, in order). */
  of(channels: string[]): Promise<Map<string, string[]>> {
    if (channels.length === 0) return Promise.resolve(new Map());
    // raw tickers need an authenticated connection on the leader; the first message is the same
    const asked = channels.map((n) => (n.startsWith('ticker.') && n.endsWith('.raw') ? `${n.slice(0, -4)}.100ms` : n));
    const p = this.chain.then(async () => {
      await this.leader.settled();
      const f = this.openFeed();
      await f.open;
      f.notes = [];
      const call = (method: string) =>
        new Promise<void>((resolve) => {
          const id = f.next++;
          f.waiting.set(id, resolve);
          f.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params: { channels: asked } }));
        });
      const subscribed = call('public/subscribe');
      await Promise.all([subscribed, call('public/unsubscribe')]);
      const out = new Map<string, string[]>();
      for (const [k, n] of channels.entries()) {
        const got = f.notes.filter(([ch]) => ch === asked[k]).map(([, d]) => d);
        if (got.length > 0) out.set(n, got);
      }
      return out;
    });
    this.chain = p.catch(() => undefined);
    return p.catch((err: unknown) => {
      this.log.warn({ err }, 'first messages from the leader failed');
      return new Map<string, string[]>();
    });
  }

  close(): void {
    this.feed?.ws.close();
  }
}
