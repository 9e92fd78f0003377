// WebSocket transport (API.md 1.3 and 6): JSON-RPC over `/ws/api/v2` and `/v1/ws`, attached with the
// `ws` package to the HTTP server's `upgrade` event (no Fastify plugin: the socket needs none of
// Fastify's request pipeline, and the raw socket is needed for corking and buffer checks).
//
// Every registry operation is callable with the same params and results as over HTTP (through the
// transport-independent `call`), plus the streaming methods of section 6, handled here.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import type { Services } from '../../app/services.ts';
import { replyCost } from '../../app/credits.ts';
import { ERR, type ErrorCode } from '../../domain/errors.ts';
import { DEFERRED_METHODS, call, callDeferred, compileMethod, settleCall, type CallOutput, type CompiledMethod } from '../rpc/dispatch.ts';
import { Reject } from '../rpc/errors.ts';
import type { Caller, CallSink, MethodDef } from '../rpc/registry.ts';
import { DEFERRED } from '../../sequencer/sequencer.ts';
import { BAD_RPC_ID_REASON, validRpcId } from '../rpc/validate.ts';
import { PlacedJson } from '../orderJson.ts';
import { resultText, type RenderedJson } from '../reads/rendered.ts';
import { StreamHub } from './hub.ts';
import { micros, renderedAnswerFrame } from './answerFrame.ts';
import { NO_PROXIES, clientAddressOf } from '../http/clientAddress.ts';
import { DRAIN_MS, closeGoingAway } from './goingAway.ts';
import { ownRotation, sweepCredentials } from './credentialSweep.ts';
import { Connection } from './connection.ts';
import { PIPELINED, PLACING, SESSION_METHODS } from './methodKinds.ts';
import { fail, sessionHandlers } from './sessionMethods.ts';
import { DEFAULT_WS_OPTIONS, type WsOptions } from './wsOptions.ts';

// the options moved to wsOptions.ts; importers of server.ts keep them
export { DEFAULT_WS_OPTIONS, type WsOptions } from './wsOptions.ts';

export const WS_PATHS = new Set(['/ws/api/v2', '/v1/ws']);
/** Deribit's frame limit. */
const FRAME_LIMIT = 32 * 1024;

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
  const codPending = new Set<Promise<unknown>>();
  const { session, authOf, setAuth, track, cancelOnDisconnect } = sessionHandlers({ s, hub, opts, codPending, onClose: (c) => onClose(c) });

  const envelope = (id: unknown, usIn: number, out: CallOutput): string => {
    const usOut = micros();
    const head = id === undefined ? '{"jsonrpc":"2.0"' : `{"jsonrpc":"2.0","id":${JSON.stringify(id)}`;
    const body = out.error ? `,"error":${JSON.stringify(out.error)}` : `,"result":${resultText(out.result)}`;
    // a big reply costs credits by its size (src/app/credits.ts); string length is a close, cheap bound
    if (out.charge !== undefined) s.credits.charge(out.charge, replyCost(body.length));
    return `${head}${body},"usIn":${usIn},"usOut":${usOut},"usDiff":${usOut - usIn},"testnet":${testnet}}`;
  };

  let overflows = 0;
  const overflow = (c: Connection) => {
    if (c.closed) return;
    overflows++;
    s.log.warn({ conn: c.id }, 'websocket send buffer full; disconnecting');
    c.ws.terminate();
    onClose(c);
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
      c.hub = hub;
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
