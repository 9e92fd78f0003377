// One WebSocket connection: its socket, credentials, subscriptions, cancel-on-disconnect state and
// the order in which its requests start and are answered (pipelining), with the corking that
// gathers a durable batch's answers into one write per connection.
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { sha256Hex } from '../../auth/crypto.ts';
import { textFrame, textFrameOf, type Subscriber } from './frames.ts';
import { Subscriptions } from './credentialSweep.ts';

/** An answer waiting for the ones before it: its text (or complete frame) and, for a subscribe, the
 *  frames after it. */
interface HeldAnswer {
  data: string | Buffer | null;
  after: Buffer[] | undefined;
}

let nextConnId = 1;

/** Fewest ids a connection's set of placed orders holds before closed orders are swept from it. */
export const PLACED_SWEEP_MIN = 1000;

/**
 * The orders a connection placed for one user (cancel-on-disconnect), and the size at which orders
 * no longer open are next swept out: twice what the last sweep left. A fixed bound (1,000) swept
 * the whole set on every order once more than that many stayed open (a quoting bot's resting
 * orders): 2% of the engine thread under the WebSocket orders bench, and growing with the book.
 */
export class PlacedIds extends Set<number> {
  sweepAt = PLACED_SWEEP_MIN;
}

export class Connection implements Subscriber {
  readonly id = nextConnId++;
  /** The access token of the last public/auth on the socket; kept once revoked, so calls get 13009. */
  token: string | undefined;
  /** channel -> spec, the user it was subscribed as and with which token */
  readonly subs = new Subscriptions();
  rotating: string | null = null;
  /** Cancel-on-disconnect is on: orders placed now carry `cod` in their command (src/engine/cod.ts);
   *  change it only through `setCod`, which marks or unmarks the orders placed before. */
  cod = false;
  /** Orders placed over this connection, per user (cancel-on-disconnect), with COD on or not. */
  readonly placed = new Map<number, PlacedIds>();
  /** Requests received and not yet finished (bounded by `maxQueuedRequests`); their orders must be
   *  known before cancel-on-disconnect fires (`whenIdle`). */
  queued = 0;
  private idleWaiters: (() => void)[] | null = null;
  /**
   * The ticket of the request that holds the connection's turn to start requests (-1: none): the
   * next frame starts when it releases it (answered, or a pipelined order applied). Frames that
   * arrive meanwhile wait in `waiting`, in order. (A promise chain per frame did this before: five
   * promises and three closures per order.)
   */
  holder = -1;
  readonly waiting: string[] = [];
  /** Releasing the turn starts the waiting frames in a loop here, not by recursion. */
  draining = false;
  /** Something (a frame or a pong) arrived since the last idle check. */
  heard = true;
  heartbeat: NodeJS.Timeout | null = null;
  awaitingTest = false;
  /** Closed by private/logout: no cancel-on-disconnect. */
  loggedOut = false;
  closed = false;
  private corkDepth = 0;
  /** Writes the hub owes this connection (`Subscriber.owed`), and the hub that owes them. */
  owed = 0;
  hub: { flushOwed(sub: Subscriber): void } | null = null;
  /** Tickets: requests are numbered as they arrive and answered in that order (pipelining). */
  nextTicket = 0;
  private nextAnswer = 0;
  private readonly held = new Map<number, HeldAnswer>();
  private readonly turnWaiters = new Map<number, () => void>();

  /**
   * The last access token this connection resolved and its SHA-256: a bot sends the same token in
   * every frame (or authenticates the socket once), and hashing it was 3.6% of the engine thread
   * under the WebSocket orders bench (twice per order). Only the hash is saved; the token is still
   * looked up, and its expiry, user and key checked, on every call.
   */
  private hashedToken: string | undefined;
  private tokenHash = '';

  hashOf(token: string): string {
    if (token !== this.hashedToken) {
      this.tokenHash = sha256Hex(token);
      this.hashedToken = token;
    }
    return this.tokenHash;
  }

  constructor(
    readonly ws: WebSocket,
    readonly socket: Duplex,
    readonly ip: string,
    private readonly maxBuffered: number,
    private readonly onOverflow: (c: Connection) => void,
  ) {}

  /** Sends a text message: framed here and written as any other frame (`textFrameOf`). */
  send(text: string): void {
    if (this.closed) return;
    this.reply(textFrameOf(text));
  }

  /** Writes a frame of the connection's own (an answer, a snapshot), after every stream round the
   *  hub still owes it: the hub writes a round a slice of connections per turn. */
  reply(frame: Buffer): void {
    if (this.owed > 0) this.hub?.flushOwed(this);
    this.sendFrame(frame);
  }

  /** The hub's write (and the one under `reply`). */
  sendFrame(frame: Buffer): void {
    if (this.closed || this.ws.readyState !== this.ws.OPEN) return;
    // bufferedAmount counts the socket's unsent bytes, these direct writes included
    if (this.ws.bufferedAmount + frame.length > this.maxBuffered) {
      this.onOverflow(this);
      return;
    }
    // without per-message compression `ws` writes each message synchronously to the socket, so a
    // frame written here keeps its place among the replies
    this.socket.write(frame);
  }

  /**
   * Sends request `ticket`'s answer (null: it has none, e.g. dropped after close) once every earlier
   * request is answered; a pipelined order can finish before the one ahead of it (a refusal does not
   * wait for the journal). Idempotent per ticket.
   */
  answer(ticket: number, data: string | Buffer | null, after?: Buffer[]): void {
    if (ticket < this.nextAnswer || this.held.has(ticket)) return;
    if (ticket !== this.nextAnswer) {
      this.held.set(ticket, { data, after });
      return;
    }
    corkUntilTick(this);
    this.emit(data, after);
    this.nextAnswer++;
    for (let h = this.held.get(this.nextAnswer); h !== undefined; h = this.held.get(this.nextAnswer)) {
      this.held.delete(this.nextAnswer);
      this.emit(h.data, h.after);
      this.nextAnswer++;
    }
    const waiter = this.turnWaiters.get(this.nextAnswer);
    if (waiter !== undefined) {
      this.turnWaiters.delete(this.nextAnswer);
      waiter();
    }
  }

  /** Resolves once no request of this connection is waiting or running. */
  whenIdle(): Promise<void> {
    if (this.queued === 0) return Promise.resolve();
    return new Promise((resolve) => (this.idleWaiters ??= []).push(resolve));
  }

  /** A request finished (answered, refused or dropped). */
  finished(): void {
    if (--this.queued > 0 || this.idleWaiters === null) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = null;
    for (const w of waiters) w();
  }

  /** Resolves once every request before `ticket` is answered. */
  turn(ticket: number): Promise<void> {
    if (this.nextAnswer >= ticket) return Promise.resolve();
    return new Promise((resolve) => this.turnWaiters.set(ticket, resolve));
  }

  private emit(data: string | Buffer | null, after: Buffer[] | undefined): void {
    if (typeof data === 'string') this.send(data);
    else if (data !== null) this.reply(data);
    if (after) for (const b of after) this.reply(textFrame(b));
  }

  cork(): void {
    if (this.corkDepth++ === 0 && !this.closed) this.socket.cork();
  }

  uncork(): void {
    if (--this.corkDepth === 0 && !this.closed) this.socket.uncork();
  }
}

/**
 * Connections corked by `corkUntilTick`, uncorked together once the current callback and the
 * promise jobs it set off have run. A durable journal batch releases hundreds of answers at once
 * (their awaits resume one after another as microtasks); written one by one, each was its own
 * socket write, and writev took 15% of the busy engine thread under the WebSocket orders bench. A
 * nextTick queued from a promise job runs only once the promise job queue is empty, so every answer
 * of the release goes out in one write per connection, with no wait for other I/O.
 */
const corkedUntilTick = new Set<Connection>();

function uncorkAll(): void {
  for (const c of corkedUntilTick) c.uncork();
  corkedUntilTick.clear();
}

function corkUntilTick(c: Connection): void {
  if (corkedUntilTick.has(c)) return;
  if (corkedUntilTick.size === 0) process.nextTick(uncorkAll);
  corkedUntilTick.add(c);
  c.cork();
}
