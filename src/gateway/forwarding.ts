// Where a WebSocket client's forwarded request goes (issue 29 item 3; docs/security.md "Gateways").
//
// - A client the leader must know as a connection (it logged in, gave a token as a param, calls a
//   private method, or asked for state of its connection) uses an upstream WebSocket of its own
//   (src/gateway/upstreams.ts): cancel-on-disconnect, heartbeats on the leader's side and the
//   session are per connection there.
// - Every other call (an anonymous public read) needs nothing of a connection: it goes to the
//   leader as a JSON-RPC request over HTTP on a bounded pool of kept-alive connections, with the
//   client's address in X-Forwarded-For. The pool serves client addresses in turn (a queue per
//   address), so one address with many connections and many requests waits behind itself, not in
//   front of others; past the queue bounds a call is refused at once (10028).
// Answers leave in request order, with the client's id.
import type { Logger } from 'pino';
import { ERR } from '../domain/errors.ts';
import { envelope, failure, type ClientConn } from './clientConn.ts';
import { Unserved, type HttpForwarder } from './httpForward.ts';
import type { Upstreams } from './upstreams.ts';

export interface PoolLimits {
  /** Calls on the pool at once (its kept-alive connections to the leader). */
  sockets: number;
  /** Calls of one client address waiting for the pool. */
  maxQueuedPerIp: number;
  /** Calls waiting for the pool in all. */
  maxQueued: number;
}

/** Public methods that create state of the connection on the leader (a session). */
const SESSION_METHODS = new Set(['public/auth', 'public/exchange_token', 'public/fork_token']);
/** A method name the leader may have: anything else is answered here (it also goes into a URL path). */
const METHOD_NAME = /^(?:public|private)\/[a-z0-9_]+$/;

/** Whether a call must go on the client's own upstream connection. */
export function needsConnection(c: ClientConn, method: string, params: Record<string, unknown>): boolean {
  return c.stateful || c.upstream !== null || c.upstreamOpen !== null || method.startsWith('private/') || SESSION_METHODS.has(method) || params.access_token !== undefined;
}

/** Runs calls at most `sockets` at once, taking client addresses in turn. */
export class FairPool {
  private running = 0;
  private waiting = 0;
  /** Per address, the calls waiting; the Map's order is the turn (an address served goes last). */
  private readonly queues = new Map<string, Array<() => void>>();

  constructor(private readonly limits: PoolLimits) {}

  get inFlight(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting;
  }

  run<T>(ip: string, fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = () => {
        this.running++;
        fn()
          .then(resolve, reject)
          .finally(() => {
            this.running--;
            this.next();
          });
      };
      if (this.running < this.limits.sockets && this.queues.size === 0) return start();
      const q = this.queues.get(ip) ?? [];
      if (q.length >= this.limits.maxQueuedPerIp) return reject(new Unserved(ERR.TOO_MANY_REQUESTS, 'too_many_requests_waiting_from_address', 429));
      if (this.waiting >= this.limits.maxQueued) return reject(new Unserved(ERR.TOO_MANY_REQUESTS, 'gateway_busy', 429));
      q.push(start);
      this.queues.set(ip, q);
      this.waiting++;
    });
  }

  private next(): void {
    while (this.running < this.limits.sockets) {
      const first = this.queues.entries().next();
      if (first.done) return;
      const [ip, q] = first.value;
      const job = q.shift()!;
      // this address goes to the back of the turn
      this.queues.delete(ip);
      if (q.length > 0) this.queues.set(ip, q);
      this.waiting--;
      job();
    }
  }
}

/** The leader's answer `text` with the client's `id` in place of the gateway's. */
export function withClientId(text: string, id: unknown): string {
  return text.replace(/^\{"jsonrpc":"2\.0"(?:,"id":[0-9]*)?,/, `{"jsonrpc":"2.0","id":${JSON.stringify(id ?? null)},`);
}

export class Forwarding {
  readonly pool: FairPool;

  constructor(
    private readonly upstreams: Upstreams,
    private readonly http: HttpForwarder,
    limits: PoolLimits,
    private readonly log: Logger,
    /** Runs on the leader's answer before the client gets it (a login names the user first). */
    private readonly after: (c: ClientConn, method: string, text: string) => Promise<void>,
  ) {
    this.pool = new FairPool(limits);
  }

  /** Relays a client's request to the leader; its answer (or the refusal) goes back with the client's id. */
  forward(c: ClientConn, id: unknown, method: string, params: Record<string, unknown>): void {
    let answer: Promise<string>;
    if (!METHOD_NAME.test(method)) answer = Promise.resolve(envelope(0, failure(ERR.METHOD_NOT_FOUND)));
    else if (needsConnection(c, method, params)) {
      c.stateful = true;
      answer = this.upstreams.call(c, method, params);
    } else {
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
      answer = this.pool.run(c.ip, () => this.http.call(method, body, c.xff));
    }
    const text = answer.then(
      async (t) => {
        if (!c.closed) await this.after(c, method, t);
        return withClientId(t, id);
      },
      (err: unknown) => {
        if (err instanceof Unserved) return envelope(id, failure(err.code, err.reason));
        throw err;
      },
    ).catch((err: unknown) => {
      this.log.warn({ err }, 'forwarding to the leader failed');
      return envelope(id, failure(ERR.INTERNAL, 'leader_unreachable'));
    });
    const sent = (c.replies = c.replies.then(() => text).then((t) => c.send(t)));
    c.outstanding.add(sent);
    void sent.finally(() => c.outstanding.delete(sent));
  }
}
