// WebSocket transport (API.md 1.3 and 6): JSON-RPC over `/ws/api/v2` and `/v1/ws`, attached with the
// `ws` package to the HTTP server's `upgrade` event (no Fastify plugin: the socket needs none of
// Fastify's request pipeline, and the raw socket is needed for corking and buffer checks).
//
// Every registry operation is callable with the same params and results as over HTTP (through the
// transport-independent `call`), plus the streaming methods of section 6, handled here.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Services } from '../../app/services.ts';
import { replyCost } from '../../app/credits.ts';
import { ERR, type ErrorCode } from '../../domain/errors.ts';
import { sha256Hex } from '../../auth/crypto.ts';
import { call, callDeferred, chargeSessionCall, compileMethod, settleCall, tokenCaller, type CallOutput, type CompiledMethod } from '../rpc/dispatch.ts';
import { ERROR_TABLE, Reject, errorBody, httpStatus, standbyErrorBody } from '../rpc/errors.ts';
import { scopeAllows, type Caller, type CallSink, type MethodDef } from '../rpc/registry.ts';
import { DEFERRED, StandbyRefusal } from '../../sequencer/sequencer.ts';
import { BAD_RPC_ID_REASON, validRpcId } from '../rpc/validate.ts';
import { PlacedJson } from '../orderJson.ts';
import { parseOrderId } from '../render.ts';
import { resultText, type RenderedJson } from '../reads/rendered.ts';
import { isPrivate } from './channels.ts';
import { StreamHub, textFrame, textFrameOf, type Subscriber } from './hub.ts';
import { micros, renderedAnswerFrame } from './answerFrame.ts';
import { NO_PROXIES, clientAddressOf } from '../http/clientAddress.ts';
import { DRAIN_MS, closeGoingAway } from './goingAway.ts';
import { Subscriptions, channelScope, followNewToken, ownRotation, sweepCredentials } from './credentialSweep.ts';

export const WS_PATHS = new Set(['/ws/api/v2', '/v1/ws']);
/** Deribit's frame limit. */
const FRAME_LIMIT = 32 * 1024;

export interface WsOptions {
  /** A connection whose unsent bytes would pass this is disconnected. */
  maxBufferedBytes: number;
  /** Smallest `set_heartbeat` interval accepted, seconds (Deribit: 10). */
  minHeartbeatSec: number;
  /** Channels one connection may hold. */
  maxSubscriptions: number;
  /** Conflation period of 100ms/agg2 channels. */
  tickMs: number;
  /** Open sockets allowed from one IP address (Deribit: 32). */
  maxConnectionsPerIp: number;
  /**
   * Requests of one connection received but not yet answered (they run one at a time, in order).
   * Past it a frame is answered at once with `10028` and not run: one socket cannot queue up work
   * that holds the engine thread long after it has gone.
   */
  maxQueuedRequests: number;
  /**
   * A connection that sends nothing, not even a pong to our ping, for this long is closed (ms; 0:
   * never). Pings go out every half of it; every WebSocket client answers them by itself.
   */
  idleTimeoutMs: number;
  /** Private subscriptions whose token was revoked or expired end within this (ms; credentialSweep.ts). */
  credentialSweepMs: number;
}

export const DEFAULT_WS_OPTIONS: WsOptions = {
  maxBufferedBytes: 4 * 1024 * 1024,
  minHeartbeatSec: 10,
  maxSubscriptions: 500,
  tickMs: 100,
  maxConnectionsPerIp: 256,
  maxQueuedRequests: 100,
  idleTimeoutMs: 60_000,
  credentialSweepMs: 1000,
};

/** Methods that place orders: the ids they return are tracked for cancel-on-disconnect. */
const PLACING = new Set(['private/buy', 'private/sell', 'private/edit', 'private/mass_quote']);

/**
 * Methods whose next request on the connection may start as soon as their command is applied,
 * before it is durable (pipelining): each submits exactly one command, synchronously within the
 * call, so the next request is applied after it, as when they ran one by one; answers still leave
 * in arrival order. Without this a socket carried one order per journal commit, whatever the
 * client sent ahead (a test shows 40 orders of one burst taking 40 batches before, <= 10 now).
 * A call that applied nothing synchronously (e.g. an edit that first reads the order) releases
 * the next request only when it is answered, as every other method does.
 */
const PIPELINED = new Set([
  'private/buy',
  'private/sell',
  'private/edit',
  'private/cancel',
  'private/cancel_all',
  'private/cancel_all_by_currency',
  'private/cancel_all_by_instrument',
  'private/cancel_by_label',
  'private/mass_quote',
  'private/cancel_quotes',
]);

/**
 * Methods called with callDeferred: their handler submits its command with Sequencer.submitThen,
 * and the answer goes out from the durable batch itself (DeferredCall), with no promise per call.
 */
const DEFERRED_METHODS = new Set(['private/buy', 'private/sell']);

/** Whether an order placed over a connection is cancelled when it closes: open orders, and
 *  untriggered trigger orders too. */
function stays(state: unknown): boolean {
  return state === 'open' || state === 'untriggered';
}

/** Methods answered by the connection itself (API.md 6; `session` below), not by the registry. */
const SESSION_METHODS = new Set([
  'public/subscribe',
  'private/subscribe',
  'public/unsubscribe',
  'private/unsubscribe',
  'public/unsubscribe_all',
  'private/unsubscribe_all',
  'public/set_heartbeat',
  'public/disable_heartbeat',
  'private/enable_cancel_on_disconnect',
  'private/disable_cancel_on_disconnect',
  'private/get_cancel_on_disconnect',
]);

/** An answer waiting for the ones before it: its text (or complete frame) and, for a subscribe, the
 *  frames after it. */
interface HeldAnswer {
  data: string | Buffer | null;
  after: Buffer[] | undefined;
}

let nextConnId = 1;

/** Fewest ids a connection's set of placed orders holds before closed orders are swept from it. */
const PLACED_SWEEP_MIN = 1000;

/**
 * The orders a connection placed for one user (cancel-on-disconnect), and the size at which orders
 * no longer open are next swept out: twice what the last sweep left. A fixed bound (1,000) swept
 * the whole set on every order once more than that many stayed open (a quoting bot's resting
 * orders): 2% of the engine thread under the WebSocket orders bench, and growing with the book.
 */
class PlacedIds extends Set<number> {
  sweepAt = PLACED_SWEEP_MIN;
}

class Connection implements Subscriber {
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
    this.sendFrame(textFrameOf(text));
  }

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
    else if (data !== null) this.sendFrame(data);
    if (after) for (const b of after) this.sendFrame(textFrame(b));
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

export interface WsTransport {
  hub: StreamHub;
  /** Open connections (for tests and metrics). */
  readonly connections: number;
  /** Connections cut off because their send buffer passed the bound. */
  readonly overflows: number;
  /** Requests that ran (a handler started); frames refused or dropped at close are not counted. */
  readonly requestsRun: number;
  /** Frames answered with 10028 because the connection had `maxQueuedRequests` waiting. */
  readonly requestsRefused: number;
  /**
   * Closes every connection with 1001 once it has answered the requests it received (at most
   * `drainMs`; 0 cuts them off at once), then waits for their cancel-on-disconnect commands.
   */
  close(drainMs?: number): Promise<void>;
}

export function attachWebSocket(s: Services, server: Server, methods: MethodDef[], opts: WsOptions = DEFAULT_WS_OPTIONS): WsTransport {
  const hub = new StreamHub(s, { tickMs: opts.tickMs });
  const testnet = s.config.mode !== 'production';
  const byName = new Map<string, CompiledMethod>();
  for (const def of methods) {
    const c = compileMethod(def);
    for (const n of [def.name, ...(def.aliases ?? [])]) byName.set(n, c);
  }
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024, perMessageDeflate: false });
  const conns = new Set<Connection>();
  /** Set when the server stops: new frames are refused while the requests received are answered. */
  let goingAway = false;
  const connectionsOf = (ip: string): number => {
    let n = 0;
    for (const c of conns) if (c.ip === ip) n++;
    return n;
  };
  // Credentials can expire or be revoked while a socket streams private data: each sweep, private
  // subscriptions whose token no longer authenticates go, whichever form carried it (credentialSweep.ts)
  const credentialSweep = setInterval(() => sweepCredentials(s, conns, (c, channel, sub) => hub.unsubscribe(c, channel, sub.spec, sub.userId)), opts.credentialSweepMs);
  credentialSweep.unref();
  // Idle connections: one that sent nothing since the previous check, not even the pong to the
  // ping sent then, is closed; the others are pinged. A dead peer is found within idleTimeoutMs.
  const idleSweep =
    opts.idleTimeoutMs > 0
      ? setInterval(() => {
          for (const c of conns) {
            if (!c.heard) {
              s.log.info({ conn: c.id }, 'websocket idle; closing');
              c.ws.terminate();
              onClose(c);
              continue;
            }
            c.heard = false;
            c.ws.ping();
          }
        }, Math.max(1, Math.floor(opts.idleTimeoutMs / 2)))
      : null;
  idleSweep?.unref();
  /** Account-scope cancel-on-disconnect: new connections of these users start with it on (engine
   *  state, a journaled `cod_account`; read only here). */
  const accountCod = s.ex.codAccounts;
  const codPending = new Set<Promise<unknown>>();

  const envelope = (id: unknown, usIn: number, out: CallOutput): string => {
    const usOut = micros();
    const head = id === undefined ? '{"jsonrpc":"2.0"' : `{"jsonrpc":"2.0","id":${JSON.stringify(id)}`;
    const body = out.error ? `,"error":${JSON.stringify(out.error)}` : `,"result":${resultText(out.result)}`;
    // a big reply costs credits by its size (src/app/credits.ts); string length is a close, cheap bound
    if (out.charge !== undefined) s.credits.charge(out.charge, replyCost(body.length));
    return `${head}${body},"usIn":${usIn},"usOut":${usOut},"usDiff":${usOut - usIn},"testnet":${testnet}}`;
  };
  const fail = (code: keyof typeof ERROR_TABLE, reason?: string, param?: string): CallOutput => ({
    status: ERROR_TABLE[code].status,
    error: errorBody(new Reject(code, reason, param)),
  });

  let overflows = 0;
  const overflow = (c: Connection) => {
    if (c.closed) return;
    overflows++;
    s.log.warn({ conn: c.id }, 'websocket send buffer full; disconnecting');
    c.ws.terminate();
    onClose(c);
  };

  /**
   * Marks (or unmarks) in the engine the orders the connection placed so far, so that the state a
   * restart or a takeover recovers says what the connection would cancel if it closed now: every
   * order it placed while COD is on, none while it is off (src/engine/cod.ts). Submitted at once,
   * before any later request of the connection can place an order.
   */
  const markPlaced = (c: Connection, on: boolean): Promise<unknown> => {
    const marks: Promise<unknown>[] = [];
    for (const [userId, ids] of c.placed) {
      if (ids.size === 0) continue;
      marks.push(s.seq.submit({ t: 'cod_mark', userId, orderIds: [...ids].sort((a, b) => a - b), on }, (r) => r));
    }
    return Promise.all(marks);
  };

  /** Turns the connection's COD on or off, marking or unmarking what it placed before. */
  const setCod = (c: Connection, on: boolean): Promise<unknown> => {
    if (c.cod === on) return Promise.resolve();
    c.cod = on;
    return markPlaced(c, on);
  };

  const cancelOnDisconnect = (c: Connection) => {
    if (!c.cod) return;
    const run = c.whenIdle().then(async () => {
      // logout closes without cancelling (Deribit): its orders stay, so they lose their mark too,
      // or a restart would cancel what the live path kept
      if (c.loggedOut) return markPlaced(c, false);
      for (const [userId, ids] of c.placed) {
        if (ids.size === 0) continue;
        await s.seq.submit({ t: 'cancel_orders', userId, orderIds: [...ids].sort((a, b) => a - b), reason: 'cancel_on_disconnect' }, (r) => r);
      }
    });
    const p = run.catch((err: unknown) => s.log.error({ err, conn: c.id }, 'cancel-on-disconnect failed'));
    codPending.add(p);
    void p.finally(() => codPending.delete(p));
  };

  function onClose(c: Connection): void {
    if (c.closed) return;
    c.closed = true;
    conns.delete(c);
    if (c.heartbeat) clearInterval(c.heartbeat);
    for (const [channel, sub] of c.subs) hub.unsubscribe(c, channel, sub.spec, sub.userId);
    c.subs.clear();
    cancelOnDisconnect(c);
  }

  const track = (c: Connection, userId: number, result: unknown) => {
    type Placed = { order_id?: string; order_state?: string };
    let set = c.placed.get(userId);
    if (result instanceof PlacedJson) {
      // buy/sell/edit: their answer is text, with the order's id and state beside it
      if (!stays(result.orderState)) return;
      if (!set) c.placed.set(userId, (set = new PlacedIds()));
      set.add(result.orderId);
    } else {
      // mass_quote answers a list of `orders`
      const orders = (result as { orders?: Placed[] } | null)?.orders;
      for (const order of Array.isArray(orders) ? orders : []) {
        if (!order || typeof order.order_id !== 'string' || !stays(order.order_state)) continue;
        const id = parseOrderId(order.order_id);
        if (id === null) continue;
        if (!set) c.placed.set(userId, (set = new PlacedIds()));
        set.add(id);
      }
    }
    if (!set || set.size <= set.sweepAt) return;
    // forget orders that are no longer open, so the set stays within twice the open orders
    const user = s.ex.users.get(userId);
    for (const x of set) if (user?.orders.get(x)?.state !== 'open' && s.ex.triggers.get(userId, x)?.state !== 'untriggered') set.delete(x);
    set.sweepAt = Math.max(PLACED_SWEEP_MIN, 2 * set.size);
  };

  /** A call's caller: its `access_token` param (that call only), else the connection's. (As
   *  resolveCaller would answer for these credentials, with the token hashed once per connection.) */
  const authOf = (c: Connection, params: Record<string, unknown>): Caller | Reject | null => {
    if (typeof params.access_token === 'string') return tokenCaller(s, c.hashOf(params.access_token));
    if (c.token === undefined) return null;
    return tokenCaller(s, c.hashOf(c.token));
  };

  const setAuth = (c: Connection, token: string) => {
    const previous = c.token === undefined ? null : c.hashOf(c.token);
    const r = tokenCaller(s, c.hashOf(token));
    if (!(r instanceof Reject)) {
      followNewToken(c, previous, r);
      c.token = token;
      if (accountCod.has(r.userId)) setCod(c, true).catch((err: unknown) => s.log.error({ err, conn: c.id }, 'cancel-on-disconnect marks failed'));
    }
  };

  async function subscribe(c: Connection, params: Record<string, unknown>, priv: boolean): Promise<CallOutput> {
    const channels = params.channels;
    if (!Array.isArray(channels) || channels.length === 0 || channels.some((x) => typeof x !== 'string')) return fail(ERR.INVALID_PARAMS, 'channels must be a non-empty array of strings', 'channels');
    let caller: Caller | null = null;
    const a = authOf(c, params);
    if (a instanceof Reject) return { status: 401, error: errorBody(a) };
    caller = a;
    if (priv && !caller) return fail(ERR.AUTHORIZATION_REQUIRED);
    const initial: Buffer[] = [];
    const done: string[] = [];
    let tooMany = false;
    await s.seq.read(() => {
      // as Deribit: a channel the server does not serve is left out of the answer and the rest
      // subscribe (issue 31; a bot that batches its subscriptions otherwise got nothing at all)
      for (const ch of channels as string[]) {
        if (c.closed) return;
        if (c.subs.has(ch)) {
          done.push(ch);
          continue;
        }
        const spec = hub.parse(ch);
        if (!spec) continue;
        // private channels need private/subscribe and an authenticated connection; raw intervals
        // need authentication (Deribit 13778): both are silently left out of the result otherwise
        if (isPrivate(spec) && (!priv || !caller)) continue;
        // an API key's scopes bound what it may stream, as they bound what it may call
        if (isPrivate(spec) && !scopeAllows(caller!.scopes, channelScope(spec))) continue;
        if ('cadence' in spec && spec.cadence === 'raw' && !caller) continue;
        if (c.subs.size >= opts.maxSubscriptions) {
          tooMany = true;
          break;
        }
        const userId = isPrivate(spec) ? caller!.userId : null;
        c.subs.set(ch, { spec, userId, tokenHash: userId === null ? null : caller!.tokenHash });
        const first = hub.subscribe(c, ch, spec, userId);
        if (Array.isArray(first)) initial.push(...first);
        else if (first) initial.push(first);
        done.push(ch);
      }
    });
    if (tooMany && done.length === 0) return fail(ERR.INVALID_ARGUMENTS, `at most ${opts.maxSubscriptions} subscriptions per connection`, 'channels');
    // the reply goes out before the snapshots it announces
    return { status: 200, result: done, after: initial } as CallOutput & { after: Buffer[] };
  }

  function unsubscribe(c: Connection, channels: unknown): CallOutput {
    if (!Array.isArray(channels)) return fail(ERR.INVALID_PARAMS, 'channels must be an array of strings', 'channels');
    const removed: string[] = [];
    for (const ch of channels) {
      const sub = typeof ch === 'string' ? c.subs.get(ch) : undefined;
      if (!sub) continue;
      hub.unsubscribe(c, ch as string, sub.spec, sub.userId);
      c.subs.delete(ch as string);
      removed.push(ch as string);
    }
    return { status: 200, result: removed };
  }

  function privateCheck(c: Connection, params: Record<string, unknown>): Caller | CallOutput {
    const a = authOf(c, params);
    if (a instanceof Reject) return { status: 401, error: errorBody(a) };
    if (!a) return fail(ERR.AUTHORIZATION_REQUIRED);
    return a;
  }

  function codScope(params: Record<string, unknown>): 'connection' | 'account' | null {
    const sc = params.scope ?? 'connection';
    return sc === 'connection' || sc === 'account' ? sc : null;
  }

  /** Streaming and session methods (API.md 6); null when `method` is not one of them. */
  async function session(c: Connection, method: string, params: Record<string, unknown>): Promise<CallOutput | null> {
    switch (method) {
      case 'public/subscribe':
        return subscribe(c, params, false);
      case 'private/subscribe':
        return subscribe(c, params, true);
      // after every round of the batches sealed so far (the hub holds a batch's round until it is
      // durable): nothing of a channel follows its unsubscribe answer
      case 'public/unsubscribe':
      case 'private/unsubscribe':
        return s.seq.read(() => unsubscribe(c, params.channels));
      case 'public/unsubscribe_all':
      case 'private/unsubscribe_all':
        return s.seq.read(() => {
          unsubscribe(c, [...c.subs.keys()]);
          return { status: 200, result: 'ok' };
        });
      case 'public/set_heartbeat': {
        const iv = params.interval;
        if (typeof iv !== 'number' || !Number.isFinite(iv) || iv < opts.minHeartbeatSec || iv > 3600) return fail(ERR.INVALID_PARAMS, `interval must be a number of seconds >= ${opts.minHeartbeatSec}`, 'interval');
        if (c.heartbeat) clearInterval(c.heartbeat);
        c.awaitingTest = false;
        c.heartbeat = setInterval(() => {
          if (c.awaitingTest) {
            // the previous test_request went unanswered: the connection is considered dead
            s.log.info({ conn: c.id }, 'heartbeat missed; closing websocket');
            c.ws.terminate();
            onClose(c);
            return;
          }
          c.awaitingTest = true;
          c.send('{"jsonrpc":"2.0","method":"heartbeat","params":{"type":"test_request"}}');
        }, iv * 1000);
        c.heartbeat.unref();
        return { status: 200, result: 'ok' };
      }
      case 'public/disable_heartbeat':
        if (c.heartbeat) clearInterval(c.heartbeat);
        c.heartbeat = null;
        c.awaitingTest = false;
        return { status: 200, result: 'ok' };
      case 'private/enable_cancel_on_disconnect':
      case 'private/disable_cancel_on_disconnect':
      case 'private/get_cancel_on_disconnect': {
        const who = privateCheck(c, params);
        if ('status' in who) return who;
        // Deribit's scopes: reading the setting needs account:read, changing it account:read_write
        if (!scopeAllows(who.scopes, method === 'private/get_cancel_on_disconnect' ? 'account:read' : 'account:read_write')) return fail(ERR.SCOPE_EXCEEDED, `requires ${method === 'private/get_cancel_on_disconnect' ? 'account:read' : 'account:read_write'}`);
        const scope = codScope(params);
        if (scope === null) return fail(ERR.INVALID_PARAMS, 'scope must be connection or account', 'scope');
        if (method === 'private/get_cancel_on_disconnect') {
          return { status: 200, result: { scope, enabled: scope === 'connection' ? c.cod : accountCod.has(who.userId) } };
        }
        const refused = chargeSessionCall(s, method, who, c.ip);
        if (refused !== undefined) {
          const r = await refused;
          return { status: httpStatus(r), error: errorBody(r) };
        }
        const on = method === 'private/enable_cancel_on_disconnect';
        try {
          // the account flag, then the connection's: both journaled before the answer
          if (scope === 'account') await s.seq.submit({ t: 'cod_account', userId: who.userId, on }, (r) => r);
          await setCod(c, on);
        } catch (err) {
          if (err instanceof StandbyRefusal) return { status: ERROR_TABLE[ERR.RETRY].status, error: standbyErrorBody(err.leaderUrl) };
          throw err;
        }
        return { status: 200, result: 'ok' };
      }
      default:
        return null;
    }
  }

  let requestsRun = 0;
  let requestsRefused = 0;

  /** Answers a frame without running it: its connection's queue is full (10028), or the server is stopping (10040). */
  function refuseQueued(c: Connection, text: string, code: ErrorCode = ERR.TOO_MANY_REQUESTS, why = `more than ${opts.maxQueuedRequests} requests waiting on this connection`): void {
    let id: unknown;
    if (text.length <= FRAME_LIMIT) {
      try {
        const msg: unknown = JSON.parse(text);
        if (msg !== null && typeof msg === 'object' && !Array.isArray(msg)) id = (msg as { id?: unknown }).id;
      } catch {
        // no id to echo
      }
    }
    requestsRefused++;
    c.send(envelope(id, micros(), fail(code, why)));
  }

  /**
   * `envelope` around a result already rendered (an order's answer, PlacedJson), written straight
   * into one frame (answerFrame.ts): the envelope as one string was a rope that counting its bytes
   * flattened, a copy of the whole answer (3% of the engine thread under the WebSocket orders
   * bench). Same text, same charge.
   */
  const renderedFrame = (id: unknown, usIn: number, out: CallOutput, result: RenderedJson): Buffer => {
    const usOut = micros();
    // the length of `envelope`'s body: ',"result":' and the text
    if (out.charge !== undefined) s.credits.charge(out.charge, replyCost(10 + result.text.length));
    return renderedAnswerFrame(id, usIn, usOut, result.text, result.bytes, testnet);
  };

  /** Sends a request's answer in its turn (no closure per request: see `run`). */
  function reply(c: Connection, ticket: number, id: unknown, usIn: number, out: CallOutput): void {
    c.answer(ticket, !out.error && out.result instanceof PlacedJson ? renderedFrame(id, usIn, out, out.result) : envelope(id, usIn, out));
  }

  /**
   * A frame arrived: it starts now if no request holds the connection's turn, else it waits for it.
   * A connection's requests start in the order they arrive (Deribit): auth, then what needs it.
   */
  function admit(c: Connection, text: string): void {
    // stopping: what came before is answered, what comes now is told to go elsewhere (goingAway.ts)
    if (goingAway) return refuseQueued(c, text, ERR.RETRY, 'server shutting down; reconnect');
    if (c.queued >= opts.maxQueuedRequests) return refuseQueued(c, text);
    c.queued++;
    if (c.holder >= 0 || c.waiting.length > 0) {
      c.waiting.push(text);
      return;
    }
    void run(c, text, c.nextTicket++);
  }

  /** Request `ticket` gives up the connection's turn: the frames waiting for it start, in order. */
  function release(c: Connection, ticket: number): void {
    if (c.holder !== ticket) return;
    c.holder = -1;
    if (c.draining) return;
    c.draining = true;
    try {
      while (c.holder < 0 && c.waiting.length > 0) void run(c, c.waiting.shift()!, c.nextTicket++);
    } finally {
      c.draining = false;
    }
  }

  /**
   * Runs request `ticket` of a connection holding the connection's turn, answers it in its turn,
   * and always finishes it. A pipelined order releases the connection's turn as soon as its
   * command is applied (PIPELINED); every other request holds it until it is done.
   *
   * Written without closures: under `npm start` (tsx) every named function expression is passed
   * through esbuild's `__name`, a defineProperty per call, and this runs for every frame. One async
   * function, not one awaiting another: each level was a generator, a promise and an await's
   * reaction per order, alive until the order's batch was durable (scavenges copied them).
   */
  async function run(c: Connection, text: string, ticket: number): Promise<void> {
    c.holder = ticket;
    let deferred = false;
    try {
      // a socket that closed while this frame waited behind its others: nobody reads the answer
      if (c.closed) return;
      requestsRun++;
      const usIn = micros();
      if (text.length > FRAME_LIMIT && Buffer.byteLength(text) > FRAME_LIMIT) {
        return reply(c, ticket, undefined, usIn, { status: 400, error: { code: ERR.INVALID_REQUEST, message: 'request entity too large', data: { reason: `frame over ${FRAME_LIMIT} bytes` } } });
      }
      let msg: unknown;
      try {
        msg = JSON.parse(text);
      } catch {
        return reply(c, ticket, undefined, usIn, fail(ERR.PARSE, 'frame is not valid JSON'));
      }
      if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return reply(c, ticket, undefined, usIn, fail(ERR.INVALID_REQUEST, 'request must be a JSON object'));
      const req = msg as { id?: unknown; method?: unknown; params?: unknown };
      if (!validRpcId(req.id)) return reply(c, ticket, null, usIn, fail(ERR.INVALID_REQUEST, BAD_RPC_ID_REASON));
      // Deribit refuses a request without an id (its answer could not be matched to it) and runs nothing
      if (req.id === undefined) return reply(c, ticket, undefined, usIn, fail(ERR.INVALID_REQUEST, 'id is required'));
      const id = req.id;
      if (typeof req.method !== 'string') return reply(c, ticket, id, usIn, fail(ERR.INVALID_REQUEST, 'method is required'));
      const method = req.method.charCodeAt(0) === 47 /* '/' */ ? req.method.slice(1) : req.method;
      const p = req.params ?? {};
      if (p === null || typeof p !== 'object' || Array.isArray(p)) return reply(c, ticket, id, usIn, fail(ERR.INVALID_PARAMS, 'params must be an object'));
      // the parsed object itself, not a copy: validation adds defaults to it, and on a spread copy of
      // a JSON.parse result V8 took 18 us to validate a private/buy instead of 0.2 (measured alone;
      // 12% of the engine thread under the WebSocket orders bench); the frame's object is this request's
      const params = p as Record<string, unknown>;
      if (method === 'public/test') c.awaitingTest = false;

      const pipelined = PIPELINED.has(method);
      // connection state (auth, subscriptions, heartbeat, logout) changes only with nothing ahead of it
      if (!pipelined) await c.turn(ticket);
      // (an await of session() for every other method was a promise and a turn of the microtask queue)
      const sess = SESSION_METHODS.has(method) ? await session(c, method, params) : null;
      if (sess) {
        c.answer(ticket, envelope(id, usIn, sess), (sess as { after?: Buffer[] }).after);
        return;
      }
      const m = byName.get(method);
      if (!m) return reply(c, ticket, id, usIn, fail(ERR.METHOD_NOT_FOUND));
      if (m.def.name === 'public/auth') c.rotating = ownRotation(s, c.token === undefined ? null : c.hashOf(c.token), params);
      // resolved once here, for the call and for cancel-on-disconnect (`track`); a public method that
      // reads no credentials leaves it to call()
      const callerBefore = m.def.scope !== 'none' || m.def.optionalAuth === true ? authOf(c, params) : undefined;
      const appliedBefore = s.ex.seq;
      // `cod`: the connection's setting, never a param (only this edge marks orders for cancel-on-disconnect)
      const input = { params, fromQuery: false, credentials: { authorization: undefined, accessToken: c.token }, ip: c.ip, resolved: callerBefore, cod: c.cod };
      let out: CallOutput;
      if (DEFERRED_METHODS.has(m.def.name)) {
        const now = callDeferred(s, m, input, new DeferredCall(c, ticket, id, usIn, m, callerBefore));
        if (pipelined && s.ex.seq !== appliedBefore) release(c, ticket);
        if (now === DEFERRED) {
          // the call answers and finishes when its batch is durable (DeferredCall.settle)
          deferred = true;
          return;
        }
        out = now instanceof Promise ? await now : now;
      } else {
        const pending = call(s, m, input);
        if (pipelined && s.ex.seq !== appliedBefore) release(c, ticket);
        out = await pending;
      }
      answerCall(c, ticket, id, usIn, m, callerBefore, out);
    } catch (err) {
      c.rotating = null;
      s.log.error({ err, conn: c.id }, 'websocket request failed');
    } finally {
      // a request that failed or was dropped has no answer: the ones after it go on
      if (!deferred) done(c, ticket);
    }
  }

  /** Request `ticket` is over: answered (or it has no answer), it lets the ones after it go on. */
  function done(c: Connection, ticket: number): void {
    c.answer(ticket, null);
    c.finished();
    release(c, ticket);
  }

  /** A registry call's answer, and what it changes on the connection (auth, tracked orders, logout). */
  function answerCall(c: Connection, ticket: number, id: unknown, usIn: number, m: CompiledMethod, callerBefore: Caller | Reject | null | undefined, out: CallOutput): void {
    if (m.def.name === 'public/auth') c.rotating = null;
    if (!out.error) {
      // exchange_token switches the connection to the subaccount's session, as Deribit's does
      if (m.def.name === 'public/auth' || m.def.name === 'public/exchange_token') {
        const token = (out.result as { access_token?: unknown } | null)?.access_token;
        if (typeof token === 'string') setAuth(c, token);
      }
      if (PLACING.has(m.def.name) && callerBefore !== undefined && callerBefore !== null && !(callerBefore instanceof Reject)) track(c, callerBefore.userId, out.result);
    }
    reply(c, ticket, id, usIn, out);
    if (m.def.name === 'private/logout' && !out.error) {
      // Deribit: logout closes the connection gracefully, without cancel-on-disconnect
      c.loggedOut = true;
      c.ws.close(1000, 'logout');
    }
  }

  /**
   * An order taken by callDeferred: what its answer needs once the batch is durable, instead of a
   * suspended `run` and `call` and a promise chain per order (they lived until the batch was
   * durable, and every scavenge meanwhile copied them).
   */
  class DeferredCall implements CallSink {
    started = 0;
    charge: CallSink['charge'] = undefined;

    constructor(
      readonly c: Connection,
      readonly ticket: number,
      readonly id: unknown,
      readonly usIn: number,
      readonly m: CompiledMethod,
      readonly callerBefore: Caller | Reject | null | undefined,
    ) {}

    settle(result: unknown, ok: boolean): void {
      try {
        answerCall(this.c, this.ticket, this.id, this.usIn, this.m, this.callerBefore, settleCall(s, this.m, this, result, ok));
      } catch (err) {
        s.log.error({ err, conn: this.c.id }, 'websocket request failed');
      } finally {
        done(this.c, this.ticket);
      }
    }
  }

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? '').split('?')[0];
    if (!WS_PATHS.has(path)) {
      socket.destroy();
      return;
    }
    const ip = clientAddressOf(req, s.config.proxyTrust ?? NO_PROXIES);
    if (connectionsOf(ip) >= opts.maxConnectionsPerIp) {
      socket.end('HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const c = new Connection(ws, socket, ip, opts.maxBufferedBytes, overflow);
      conns.add(c);
      ws.on('message', (data, isBinary) => {
        if (c.closed) return;
        c.heard = true;
        admit(c, isBinary ? '' : Array.isArray(data) ? Buffer.concat(data).toString() : data.toString());
      });
      ws.on('pong', () => (c.heard = true));
      ws.on('close', () => onClose(c));
      ws.on('error', () => onClose(c));
    });
  };
  server.on('upgrade', onUpgrade);

  return {
    hub,
    get connections() {
      return conns.size;
    },
    get overflows() {
      return overflows;
    },
    get requestsRun() {
      return requestsRun;
    },
    get requestsRefused() {
      return requestsRefused;
    },
    async close(drainMs = DRAIN_MS) {
      clearInterval(credentialSweep);
      if (idleSweep) clearInterval(idleSweep);
      server.off('upgrade', onUpgrade);
      goingAway = true;
      await closeGoingAway([...conns], onClose, drainMs);
      await Promise.allSettled([...codPending]);
      hub.close();
      wss.close();
    },
  };
}
