// One WebSocket to /ws/api/v2, shared by every screen, used as a bot would: JSON-RPC requests,
// public/private subscribe, heartbeats answered. It reconnects with exponential back-off (0.25 s
// doubling to 8 s) and, once open again, authenticates and re-subscribes every channel still
// wanted; a `book.*` subscription then starts with a fresh snapshot, and the screens reload what
// they fetched once (state 'open' again is their signal).

export type ConnState = 'connecting' | 'open' | 'reconnecting' | 'closed';
type Handler = (data: unknown) => void;
/** Told after each subscribe answer that names the channel's fate: false when the server left it out. */
type ServedListener = (served: boolean) => void;

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

const MIN_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 8000;
/** How long opening may take (heartbeat set, channels subscribed) before the socket is tried again. */
const SETUP_TIMEOUT_MS = 10_000;
/** Requests a screen may have on the socket at once (the server refuses a connection's past 100). */
const MAX_IN_FLIGHT = 32;

export class LiveSocket {
  state: ConnState = 'connecting';
  /** How many times the socket has (re)opened: screens reload their snapshots when it grows. */
  epoch = 0;
  private ws: WebSocket | null = null;
  private nextId = 1;
  private pending = new Map<number, Pending>();
  /** Requests waiting for a place among the MAX_IN_FLIGHT, oldest first. */
  private waiting: Array<{ send: () => void; reject: (e: Error) => void }> = [];
  /** Channels a screen asked for in this turn: sent as one subscribe request (a chain asks for ~100). */
  private toSubscribe = new Set<string>();
  private handlers = new Map<string, Set<Handler>>();
  private servedListeners = new Map<string, Set<ServedListener>>();
  private stateListeners = new Set<(s: ConnState) => void>();
  private backoff = MIN_BACKOFF_MS;
  private token: string | null = null;
  private stopped = false;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly url: string,
    private readonly setupTimeoutMs = SETUP_TIMEOUT_MS,
  ) {
    this.open();
  }

  onState(l: (s: ConnState) => void): () => void {
    this.stateListeners.add(l);
    return () => this.stateListeners.delete(l);
  }

  private setState(s: ConnState): void {
    this.state = s;
    for (const l of this.stateListeners) l(s);
  }

  private open(): void {
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.onopen = () => void this.onOpen(ws);
    ws.onmessage = (ev) => this.onMessage(ev.data as string);
    ws.onclose = () => this.onClose(ws);
  }

  private async onOpen(ws: WebSocket): Promise<void> {
    const sent = new Set(this.handlers.keys());
    // a set-up that gets no answer would leave the screen "Connecting" for good: past the limit the
    // socket is closed, and onClose schedules the next attempt
    const stuck = setTimeout(() => {
      if (this.ws === ws && this.state !== 'open') ws.close();
    }, this.setupTimeoutMs);
    try {
      await this.request('public/set_heartbeat', { interval: 30 });
      await this.sendSubscribe([...sent]);
    } catch {
      // the socket closed while setting up: onClose schedules the next attempt
    } finally {
      clearTimeout(stuck);
    }
    if (this.ws !== ws || ws.readyState !== WebSocket.OPEN) return;
    this.backoff = MIN_BACKOFF_MS;
    this.epoch++;
    this.setState('open');
    // channels a screen asked for while the socket was being set up (subscribe() sends only once
    // it is open): without this they were never subscribed and the screen waited forever
    const late = [...this.handlers.keys()].filter((c) => !sent.has(c));
    if (late.length > 0) void this.sendSubscribe(late).catch(() => undefined);
  }

  private onClose(ws: WebSocket): void {
    if (this.ws !== ws) return;
    this.ws = null;
    for (const p of this.pending.values()) p.reject(new Error('connection closed'));
    this.pending.clear();
    for (const w of this.waiting.splice(0)) w.reject(new Error('connection closed'));
    this.toSubscribe.clear();
    if (this.stopped) return this.setState('closed');
    this.setState('reconnecting');
    this.retryTimer = setTimeout(() => this.open(), this.backoff);
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
  }

  private onMessage(text: string): void {
    let msg: { id?: number; result?: unknown; error?: { code: number; message: string }; method?: string; params?: { channel?: string; data?: unknown; type?: string } };
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    if (msg.method === 'subscription' && msg.params?.channel) {
      const hs = this.handlers.get(msg.params.channel);
      if (hs) for (const h of hs) h(msg.params.data);
      return;
    }
    if (msg.method === 'heartbeat') {
      if (msg.params?.type === 'test_request') void this.request('public/test', {}).catch(() => undefined);
      return;
    }
    if (typeof msg.id === 'number') {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      this.waiting.shift()?.send();
      if (msg.error) p.reject(Object.assign(new Error(`${msg.error.code} ${msg.error.message}`), { code: msg.error.code }));
      else p.resolve(msg.result);
    }
  }

  /** A JSON-RPC request over the socket (private methods carry the session's token). */
  request<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error('not connected'));
    const withToken = method.startsWith('private/') && this.token ? { ...params, access_token: this.token } : params;
    return new Promise<T>((resolve, reject) => {
      const send = () => {
        const ws = this.ws;
        if (!ws || ws.readyState !== WebSocket.OPEN) return reject(new Error('not connected'));
        const id = this.nextId++;
        this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params: withToken }));
      };
      // the server answers a connection's requests one after another and refuses those past 100
      // waiting (10028): a screen's burst (a ticker per series) waits here instead
      if (this.pending.size < MAX_IN_FLIGHT) send();
      else this.waiting.push({ send, reject });
    });
  }

  /**
   * Sets the token for private calls and channels. A connection keeps the identity it first
   * authenticated with, so a new token (sign-in, refresh, sign-out) reconnects: the private channels
   * then come back under the new identity, and none outlives a sign-out.
   */
  setToken(token: string | null): void {
    if (token === this.token) return;
    const had = this.token !== null;
    this.token = token;
    if (had && this.ws) this.ws.close();
    else if (token && this.state === 'open') void this.sendSubscribe([...this.handlers.keys()].filter(isPrivate)).catch(() => undefined);
  }

  /**
   * Subscribes `handler` to `channel` (kept across reconnects); returns the unsubscribe. `onServed`
   * hears after every subscribe answer for the channel whether the server took it (a server leaves
   * out channels it does not carry, as gateways before the combo stream events did with the combo
   * channels: the caller can then fall back to polling).
   */
  subscribe(channel: string, handler: Handler, onServed?: ServedListener): () => void {
    if (onServed) {
      let ls = this.servedListeners.get(channel);
      if (!ls) this.servedListeners.set(channel, (ls = new Set()));
      ls.add(onServed);
    }
    let hs = this.handlers.get(channel);
    const fresh = !hs;
    if (!hs) {
      hs = new Set();
      this.handlers.set(channel, hs);
    }
    hs.add(handler);
    if (fresh && this.state === 'open') {
      if (this.toSubscribe.size === 0) {
        queueMicrotask(() => {
          const channels = [...this.toSubscribe].filter((c) => this.handlers.has(c));
          this.toSubscribe.clear();
          if (channels.length > 0) void this.sendSubscribe(channels).catch(() => undefined);
        });
      }
      this.toSubscribe.add(channel);
    }
    return () => {
      if (onServed) {
        const ls = this.servedListeners.get(channel);
        ls?.delete(onServed);
        if (ls?.size === 0) this.servedListeners.delete(channel);
      }
      const set = this.handlers.get(channel);
      if (!set) return;
      set.delete(handler);
      if (set.size === 0) {
        this.handlers.delete(channel);
        if (this.state === 'open') void this.request(isPrivate(channel) ? 'private/unsubscribe' : 'public/unsubscribe', { channels: [channel] }).catch(() => undefined);
      }
    };
  }

  /** Unsubscribes and subscribes again: the server answers a `book.*` channel with a fresh snapshot. */
  async resnapshot(channel: string): Promise<void> {
    if (this.state !== 'open') return; // the reconnect re-subscribes anyway
    await this.request(isPrivate(channel) ? 'private/unsubscribe' : 'public/unsubscribe', { channels: [channel] });
    if (this.handlers.has(channel)) await this.sendSubscribe([channel]);
  }

  private async sendSubscribe(channels: string[]): Promise<void> {
    const pub = channels.filter((c) => !isPrivate(c));
    const priv = channels.filter(isPrivate);
    // at most 500 channels per connection (server bound); the screens stay far below
    if (pub.length > 0) this.tellServed(pub, await this.request('public/subscribe', { channels: pub }));
    if (priv.length > 0 && this.token) this.tellServed(priv, await this.request('private/subscribe', { channels: priv }));
  }

  private tellServed(asked: string[], answer: unknown): void {
    const refused = new Set(leftOut(asked, answer));
    for (const c of asked) for (const l of this.servedListeners.get(c) ?? []) l(!refused.has(c));
  }

  close(): void {
    this.stopped = true;
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.ws?.close();
  }
}

/**
 * The channels a subscribe answer leaves out: the answer lists the channels subscribed (Deribit's
 * shape); one that is not a list says nothing, so nothing counts as refused.
 */
export function leftOut(asked: string[], answer: unknown): string[] {
  if (!Array.isArray(answer)) return [];
  const took = new Set(answer);
  return asked.filter((c) => !took.has(c));
}

/** Channels of one user, subscribed with private/subscribe: user.*, the block-trade confirmations and an account's block RFQs (the public block_rfq.trades.* is not). */
export function isPrivate(channel: string): boolean {
  return channel.startsWith('user.') || channel.startsWith('block_trade_confirmations') || channel.startsWith('block_rfq.maker.') || channel.startsWith('block_rfq.taker.');
}
