// A small JSON-RPC WebSocket client for tests: calls with ids, notifications kept per channel,
// waiting for a notification that satisfies a predicate.
import WebSocket from 'ws';

export interface Notification {
  channel: string;
  data: any;
  /** receive time, performance.now() */
  at: number;
}

export class WsClient {
  private nextId = 1;
  private readonly pending = new Map<number, (body: any) => void>();
  /** Every subscription notification, in arrival order. */
  readonly notes: Notification[] = [];
  /** Other server-initiated messages (heartbeats). */
  readonly heartbeats: any[] = [];
  private waiters: Array<() => void> = [];
  closed = false;
  readonly closedP: Promise<void>;
  /** Answer `test_request` heartbeats with public/test (true by default). */
  answerHeartbeats = true;

  private constructor(readonly ws: WebSocket) {
    this.closedP = new Promise((resolve) => ws.on('close', () => {
      this.closed = true;
      this.wake();
      resolve();
    }));
    ws.on('message', (raw) => {
      const msg = JSON.parse(raw.toString());
      if (msg.method === 'subscription') this.notes.push({ channel: msg.params.channel, data: msg.params.data, at: performance.now() });
      else if (msg.method === 'heartbeat') {
        this.heartbeats.push(msg);
        if (this.answerHeartbeats && msg.params.type === 'test_request') void this.call('public/test', {});
      } else if (typeof msg.id === 'number') {
        const r = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        r?.(msg);
      }
      this.wake();
    });
  }

  static open(url: string, path = '/ws/api/v2'): Promise<WsClient> {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + path);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new WsClient(ws)));
      ws.once('error', reject);
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Sends a request; resolves with the whole response envelope. */
  call(method: string, params: Record<string, unknown> = {}): Promise<any> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('socket closed'));
      this.pending.set(id, resolve);
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  /** Like call, but returns `result` and throws on an error. */
  async ok(method: string, params: Record<string, unknown> = {}): Promise<any> {
    const r = await this.call(method, params);
    if (r.error) throw new Error(`${method} failed: ${JSON.stringify(r.error)}`);
    return r.result;
  }

  async auth(email: string, password = 'user-password-1'): Promise<void> {
    await this.ok('public/auth', { grant_type: 'password', username: email, password });
  }

  on(channel: string): Notification[] {
    return this.notes.filter((n) => n.channel === channel);
  }

  /** Waits until `pred` holds (checked on every incoming message), or fails after `ms`. */
  async until(pred: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
    const deadline = performance.now() + ms;
    while (!pred()) {
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 100));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  close(): Promise<void> {
    if (!this.closed) this.ws.close();
    return this.closedP;
  }
}
