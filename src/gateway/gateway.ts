// A stream gateway (`npm run gateway`): serves the WebSocket API of API.md 1.3/6 from the leader's
// events on NATS JetStream (src/app/natsEvents.ts), so that fan-out to subscribers costs the engine
// nothing per subscriber. It can run on any machine that reaches NATS and the leader.
//
// - Streams: every channel of the leader's hub (src/api/ws/channels.ts) is served here from the
//   stream. A book is followed from a snapshot read from the leader (get_order_book) and then the
//   stream's changes that chain on to its change_id (src/gateway/bookMirror.ts): gap-free across a
//   gateway restart, and re-read when a change does not chain. Candles, marks, expiration
//   estimates, instrument and platform states come rendered from the leader (one message per batch,
//   src/api/ws/streamEvents.ts); the conflated ones (`100ms`, `agg2`, chart) are kept for the
//   gateway's own 100 ms tick. A quote is the best bid and ask of the gateway's mirror of the book. A
//   ticker is read from the leader (public/ticker, once per instrument and tick, whatever the
//   subscribers) on the tick after the stream showed it moved: a book change, a trade, an index or
//   vol print of its currency. What a channel sends on subscribe (the current ticker, quote,
//   candle, estimate, platform state) is asked of the leader on a connection of the gateway's own
//   (subscribe, then unsubscribe at once), so it is the leader's own first message.
//   The block RFQ channels (block_rfq.maker/.maker.quotes/.taker/.trades) come rendered per user
//   from the leader (src/blockrfq/channels.ts rfqStreamEvents): the gateway only picks the currency.
//   Combos (issue 34) as options: a combo's book is mirrored (its own change ids), its ticker read,
//   its combo trades and each user's side of them (user.combo_trades) come rendered from the leader
//   (src/api/ws/comboStreamEvents.ts); combo names from get_combo_ids, the stream's `public.combos`,
//   or the leader again for a name not known yet (LeaderReads.refreshCombos).
//   user.portfolio is read from the leader (private/get_account_summary, on the subscriber's own
//   connection) on the tick after an event that may have moved it: the user's orders, trades or
//   money, the currency's index or vol, or a command that moves every account (control.accounts).
// - Every other request is forwarded to the leader (src/gateway/forwarding.ts): an anonymous public
//   call over HTTP on a bounded pool shared by all clients (src/gateway/httpForward.ts), a client the
//   leader must know as a connection (a login, a token param, private calls) over an upstream
//   WebSocket of its own, bounded per address and in all (src/gateway/upstreams.ts); ids rewritten,
//   answers relayed in request order; cancel-on-disconnect works because that upstream closes with
//   the client. Whatever cannot be forwarded is refused at once (10028 or 10040).
// - The leader is followed (src/gateway/leaderLocator.ts): a standby's 10040, a refused or stalled
//   forward sends the gateway looking for it, and upstreams at the old server are moved (a client
//   the old leader knew is closed with 1012, "service restart").
// - Modules: clientConn.ts (a client connection), streams.ts (channels, books, the tick),
//   natsStream.ts (the NATS reader, its state in /health and /metrics), credentials.ts (whose private
//   data a connection streams, and the recheck), httpSide.ts and paths.ts
//   (the HTTP listener and what it forwards), firstMessages.ts, channelData.ts, bookMirror.ts.
// - Private channels: the user is the one the leader authenticated on that upstream connection.
//   After a successful public/auth the gateway asks the leader, on the same connection,
//   private/get_account_summary (extended) for its `id`, before it relays the auth answer; a
//   private/subscribe is answered only after every request before it, so it sees that user. A
//   subscribe with an `access_token` param streams the user of that token (asked the same way, with
//   the param: on the leader it authenticates that call only). Every STRIKEBOOK_GATEWAY_RECHECK_MS
//   the gateway asks again about each credential a connection's private subscriptions were made
//   with (src/gateway/credentials.ts); a refused one (logout, rotation, key removed, expiry) ends
//   exactly its subscriptions, as the leader's credential sweep does, and the next private/subscribe
//   gets the leader's own refusal (13009).
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { WS_PATHS } from '../api/ws/server.ts';
import { ERR } from '../domain/errors.ts';
import { LeaderLocator } from './leaderLocator.ts';
import { forwardedFor, httpForwarder } from './httpForward.ts';
import { ClientConn, envelope, failure } from './clientConn.ts';
import { startStreams } from './streams.ts';
import { Upstreams } from './upstreams.ts';
import { Forwarding } from './forwarding.ts';
import { startNatsStream } from './natsStream.ts';
import { httpHandler } from './httpSide.ts';
import { AddressRate } from './addressRate.ts';
import { recheck as recheckCredentials, whoIsOn } from './credentials.ts';
import { DEFAULT_CONNECTION_LIMITS, checkingIntervalMs, limitConnections } from '../api/http/connectionLimits.ts';

export interface GatewayOptions {
  /** The leader's HTTP base URL (its WebSocket is the same host, /ws/api/v2), or the leader's and its
   *  standbys' comma-separated: the gateway then follows a takeover (src/gateway/leaderLocator.ts). */
  leaderUrl: string;
  natsUrl: string;
  stream: string;
  prefix: string;
  port: number;
  host: string;
  log: Logger;
  tickMs?: number;
  maxBufferedBytes?: number;
  maxSubscriptions?: number;
  /** How often an authenticated connection's user is confirmed with the leader, ms. */
  recheckMs?: number;
  /** Open WebSocket connections from one address (429 past it). */
  maxConnectionsPerIp?: number;
  /** Smallest public/set_heartbeat interval, seconds (the leader's STRIKEBOOK_WS_MIN_HEARTBEAT). */
  minHeartbeatSec?: number;
  /** A connection silent this long (no frame, no pong to the pings sent every half of it) is closed, ms; 0: never. */
  idleTimeoutMs?: number;
  /** Upstream WebSockets to the leader in all, and for the clients of one address. */
  maxUpstreams?: number;
  maxUpstreamsPerIp?: number;
  /** A forwarded call (or upstream upgrade) unanswered this long is refused (10040) and the leader looked for, ms. */
  forwardTimeoutMs?: number;
  /** Anonymous calls on the shared HTTP pool at once, and waiting per client address. */
  poolSockets?: number;
  poolMaxQueuedPerIp?: number;
  /** Frames read per second from the clients of one address (burst twice that); past it their connections wait. */
  framesPerSecPerIp?: number;
}

export interface RunningGateway {
  url: string;
  readonly connections: number;
  readonly deliveries: number;
  /** Connections terminated for passing STRIKEBOOK_WS_MAX_BUFFERED. */
  readonly overflows: number;
  /** Upstream WebSockets to the leader, open or opening. */
  readonly upstreams: number;
  close(): Promise<void>;
}

/** Requests one connection may have waiting (Deribit-style 10028 past it, as on the leader). */
const MAX_QUEUED = 100;
/** Methods handled by the gateway itself; everything else goes to the leader. */
const LOCAL = new Set(['public/subscribe', 'private/subscribe', 'public/unsubscribe', 'private/unsubscribe', 'public/unsubscribe_all', 'private/unsubscribe_all', 'public/set_heartbeat', 'public/disable_heartbeat']);

export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const log = opts.log;
  const tickMs = opts.tickMs ?? 100;
  const maxBuffered = opts.maxBufferedBytes ?? 4 * 1024 * 1024;
  const maxSubs = opts.maxSubscriptions ?? 500;
  const minHeartbeat = opts.minHeartbeatSec ?? 10;
  const leader = new LeaderLocator(LeaderLocator.parse(opts.leaderUrl), log);
  const register = new Registry();
  collectDefaultMetrics({ register });
  const forwardTimeoutMs = opts.forwardTimeoutMs ?? 5_000;
  const upstreams = new Upstreams(leader, log, { maxTotal: opts.maxUpstreams ?? 1024, maxPerIp: opts.maxUpstreamsPerIp ?? 32, timeoutMs: forwardTimeoutMs });
  const conns = new Set<ClientConn>();
  let overflows = 0;
  let closing = false;

  const upstreamCall = (c: ClientConn, method: string, params: unknown) => upstreams.call(c, method, params);
  const whoIs = whoIsOn(upstreamCall);
  const streams = await startStreams({ log, tickMs, maxSubs, prefix: opts.prefix, leader, timeoutMs: forwardTimeoutMs, upstreamCall, whoIs, closing: () => closing });
  const { subscribe, unsubscribeOne, dropPrivate } = streams;
  const stream = await startNatsStream({ url: opts.natsUrl, stream: opts.stream, prefix: opts.prefix, log, register, onMessage: streams.onMessage });

  // ---- metrics ---------------------------------------------------------------------------------------
  new Counter({
    name: 'strikebook_gateway_deliveries_total',
    help: 'Notifications written to subscribers.',
    registers: [register],
    collect() {
      this.reset();
      this.inc(streams.deliveries);
    },
  });
  new Gauge({
    name: 'strikebook_ws_connections',
    help: 'Open WebSocket connections.',
    registers: [register],
    collect() {
      this.set(conns.size);
    },
  });

  // ---- client connections ------------------------------------------------------------------------------
  const httpApi = httpForwarder(leader, log, forwardTimeoutMs, opts.poolSockets ?? 32);
  const forwarding = new Forwarding(upstreams, httpApi, { sockets: opts.poolSockets ?? 32, maxQueuedPerIp: opts.poolMaxQueuedPerIp ?? 256, maxQueued: 8192 }, log, async (c, method, text) => {
    if (method !== 'public/auth' && method !== 'private/logout') return;
    const ok = !text.includes('"error":');
    if (method === 'public/auth' && ok) {
      c.logins++;
      const w = await whoIs(c);
      c.userId = 'id' in w ? w.id : null;
      c.tradeRead.set(null, 'id' in w && w.tradeRead === true);
    }
    if (method === 'private/logout' && ok) dropPrivate(c);
  });

  const local = async (c: ClientConn, id: unknown, method: string, params: Record<string, unknown>): Promise<void> => {
    switch (method) {
      case 'public/subscribe':
        return subscribe(c, id, params, false);
      case 'private/subscribe':
        return subscribe(c, id, params, true);
      case 'public/unsubscribe':
      case 'private/unsubscribe': {
        const chs = Array.isArray(params.channels) ? (params.channels as unknown[]) : [];
        c.send(envelope(id, `"result":${JSON.stringify(chs.filter((ch) => typeof ch === 'string' && unsubscribeOne(c, ch)))}`));
        return;
      }
      case 'public/unsubscribe_all':
      case 'private/unsubscribe_all':
        for (const ch of [...c.subs.keys()]) unsubscribeOne(c, ch);
        c.send(envelope(id, '"result":"ok"'));
        return;
      case 'public/set_heartbeat': {
        const iv = params.interval;
        if (typeof iv !== 'number' || !Number.isFinite(iv) || iv < minHeartbeat || iv > 3600) return c.send(envelope(id, failure(ERR.INVALID_PARAMS, `interval must be a number of seconds >= ${minHeartbeat}`, 'interval')));
        if (c.heartbeat) clearInterval(c.heartbeat);
        c.awaitingTest = false;
        c.heartbeat = setInterval(() => {
          if (c.awaitingTest) return c.ws.terminate();
          c.awaitingTest = true;
          c.send('{"jsonrpc":"2.0","method":"heartbeat","params":{"type":"test_request"}}');
        }, iv * 1000);
        c.heartbeat.unref();
        c.send(envelope(id, '"result":"ok"'));
        return;
      }
      case 'public/disable_heartbeat':
        if (c.heartbeat) clearInterval(c.heartbeat);
        c.heartbeat = null;
        c.send(envelope(id, '"result":"ok"'));
        return;
    }
  };

  const handle = async (c: ClientConn, text: string): Promise<void> => {
    let msg: { id?: unknown; method?: unknown; params?: unknown };
    try {
      msg = JSON.parse(text) as typeof msg;
    } catch {
      return c.send(envelope(null, failure(ERR.PARSE, 'frame is not valid JSON')));
    }
    if (msg === null || typeof msg !== 'object' || typeof msg.method !== 'string') return c.send(envelope(null, failure(ERR.INVALID_REQUEST, 'method is required')));
    const method = msg.method.replace(/^\//, '');
    if (method === 'public/test') c.awaitingTest = false;
    const params = (msg.params ?? {}) as Record<string, unknown>;
    if (typeof params !== 'object' || Array.isArray(params)) return c.send(envelope(msg.id, failure(ERR.INVALID_PARAMS, 'params must be an object')));
    if (!LOCAL.has(method)) return forwarding.forward(c, msg.id, method, params);
    // a subscribe sees every request before it answered (the user of a public/auth, first of all)
    await Promise.allSettled([...c.outstanding]);
    return local(c, msg.id, method, params);
  };

  const maxPerIp = opts.maxConnectionsPerIp ?? 256;
  const frameRate = new AddressRate(opts.framesPerSecPerIp ?? 1000);
  const rateSweep = setInterval(() => frameRate.sweep(), 10_000);
  rateSweep.unref();
  // idle connections (as on the leader): one silent since the last check, not even a pong, is closed
  const idleMs = opts.idleTimeoutMs ?? 60_000;
  const idleSweep =
    idleMs > 0
      ? setInterval(() => {
          for (const c of conns) {
            if (!c.heard) {
              c.ws.terminate();
              onClose(c);
              continue;
            }
            c.heard = false;
            c.ws.ping();
          }
        }, Math.max(1, Math.floor(idleMs / 2)))
      : null;
  idleSweep?.unref();
  const recheckMs = opts.recheckMs ?? 10_000;
  const recheck = setInterval(() => {
    for (const c of conns) void recheckCredentials(c, whoIs, (ch) => unsubscribeOne(c, ch)).catch((err: unknown) => log.warn({ err }, 'gateway: credential recheck failed'));
  }, recheckMs);
  recheck.unref();

  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024, perMessageDeflate: false });
  const onClose = (c: ClientConn) => {
    if (c.closed) return;
    c.closed = true;
    conns.delete(c);
    if (c.heartbeat) clearInterval(c.heartbeat);
    for (const ch of [...c.subs.keys()]) unsubscribeOne(c, ch);
    // the leader sees the client go: its cancel-on-disconnect runs there
    upstreams.release(c);
  };
  const health = () => {
    const n = stream.state();
    const body = { status: n.connected ? 'ok' : 'degraded', role: 'gateway', leader: leader.url, connections: conns.size, upstreams: upstreams.count, books: streams.books, nats: { connected: n.connected, last_seq: n.lastSeq, disconnects: n.disconnects, down_ms: n.downMs } };
    return { ok: n.connected, body };
  };
  const http: Server = createServer({ connectionsCheckingInterval: checkingIntervalMs(DEFAULT_CONNECTION_LIMITS) }, httpHandler({ health, register, forwarder: httpApi }));
  // the leader's own bounds (docs/security.md): connections per address and in all, and how long a
  // request may take, so that what a gateway forwards or holds is bounded as it is there; per
  // address never below the WebSocket cap, which is the gateway's own setting
  limitConnections(http, { ...DEFAULT_CONNECTION_LIMITS, maxPerIp: Math.max(DEFAULT_CONNECTION_LIMITS.maxPerIp, maxPerIp) });
  http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (closing || !WS_PATHS.has((req.url ?? '').split('?')[0]!)) {
      socket.destroy();
      return;
    }
    const ip = req.socket.remoteAddress ?? '';
    let fromIp = 0;
    for (const c of conns) if (c.ip === ip) fromIp++;
    if (fromIp >= maxPerIp) {
      socket.end('HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const c = new ClientConn(ws, socket, maxBuffered, ip, forwardedFor(req.headers['x-forwarded-for'], ip), () => overflows++);
      conns.add(c);
      ws.on('pong', () => (c.heard = true));
      const accept = (text: string) => {
        // frames waiting here plus requests waiting at the leader: past the bound, refused at once
        if (c.queued + c.outstanding.size >= MAX_QUEUED) {
          let id: unknown = null;
          try {
            id = (JSON.parse(text) as { id?: unknown }).id ?? null;
          } catch {
            // no id to echo
          }
          c.send(envelope(id, failure(ERR.TOO_MANY_REQUESTS, `more than ${MAX_QUEUED} requests waiting on this connection`)));
          return;
        }
        c.queued++;
        c.chain = c.chain
          .then(() => handle(c, text))
          .catch((err: unknown) => log.error({ err }, 'gateway request failed'))
          .finally(() => c.queued--);
      };
      // past its address's frame rate a connection is not read (ws.pause) until the rate allows; the
      // frames ws had already read when it paused are held here (at most one read's worth)
      const held: string[] = [];
      let paused = false;
      const drain = () => {
        while (held.length > 0 && !paused) {
          accept(held.shift()!);
          const wait = frameRate.take(ip);
          if (wait <= 0) continue;
          paused = true;
          ws.pause();
          setTimeout(() => {
            paused = false;
            if (c.closed) return;
            ws.resume();
            drain();
          }, wait).unref();
        }
      };
      ws.on('message', (data) => {
        c.heard = true;
        held.push(data.toString());
        drain();
      });
      ws.on('close', () => onClose(c));
      ws.on('error', () => onClose(c));
    });
  });
  await new Promise<void>((resolve) => http.listen(opts.port, opts.host, resolve));
  const addr = http.address();
  const url = `http://${opts.host}:${typeof addr === 'object' && addr ? addr.port : opts.port}`;

  return {
    url,
    get connections() {
      return conns.size;
    },
    get overflows() {
      return overflows;
    },
    get deliveries() {
      return streams.deliveries;
    },
    get upstreams() {
      return upstreams.count;
    },
    async close() {
      closing = true;
      streams.close();
      clearInterval(recheck);
      clearInterval(rateSweep);
      if (idleSweep) clearInterval(idleSweep);
      for (const c of [...conns]) {
        c.ws.terminate();
        onClose(c);
      }
      wss.close();
      await new Promise<void>((resolve) => http.close(() => resolve()));
      httpApi.close();
      await stream.close();
    },
  };
}
