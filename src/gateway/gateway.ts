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
//   user.portfolio is read from the leader (private/get_account_summary, on the subscriber's own
//   connection) on the tick after an event that may have moved it: the user's orders, trades or
//   money, the currency's index or vol, or a command that moves every account (control.accounts).
// - Every other request is forwarded to the leader over one upstream WebSocket per client
//   connection (opened on the first such request), ids rewritten and answers relayed as they are;
//   cancel-on-disconnect works because the upstream closes with the client.
// - Private channels: the user is the one the leader authenticated on that upstream connection.
//   After a successful public/auth the gateway asks the leader, on the same connection,
//   private/get_account_summary (extended) for its `id`, before it relays the auth answer; a
//   private/subscribe is answered only after every request before it, so it sees that user. Every
//   STRIKEBOOK_GATEWAY_RECHECK_MS the gateway asks again; an answer that is an error (logout,
//   token expired or revoked) drops the private subscriptions, as the leader does with its own.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import WebSocket, { WebSocketServer } from 'ws';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { isPrivate, parseChannel, selects, type ChannelSpec } from '../api/ws/channels.ts';
import { textFrame } from '../api/ws/hub.ts';
import { WS_PATHS } from '../api/ws/server.ts';
import { Reject, errorBody } from '../api/rpc/errors.ts';
import { ERR, type ErrorCode } from '../domain/errors.ts';
import { BookMirror, L2, type BookChange, type BookSnapshot } from './bookMirror.ts';
import { LeaderLocator } from './leaderLocator.ts';
import { forwardedFor, httpForwarder } from './httpForward.ts';
import { ClientConn, type Topic } from './clientConn.ts';
import { Upstreams } from './upstreams.ts';
import { Forwarding } from './forwarding.ts';
import { startNatsStream } from './natsStream.ts';
import { httpHandler } from './httpSide.ts';
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

/** Channel kinds whose first message on subscribe comes from the leader (see initialOf). */
const FIRST_FROM_LEADER = new Set(['ticker', 'quote', 'chart', 'platform_state', 'expiration_price']);
/** Requests one connection may have waiting (Deribit-style 10028 past it, as on the leader). */
const MAX_QUEUED = 100;
/** Methods handled by the gateway itself; everything else goes to the leader. */
const LOCAL = new Set(['public/subscribe', 'private/subscribe', 'public/unsubscribe', 'private/unsubscribe', 'public/unsubscribe_all', 'private/unsubscribe_all', 'public/set_heartbeat', 'public/disable_heartbeat']);

function notification(channel: string, dataJson: string): Buffer {
  return Buffer.from(`{"jsonrpc":"2.0","method":"subscription","params":{"channel":${JSON.stringify(channel)},"data":${dataJson}}}`);
}

function currencyOf(instrument: string): string {
  return instrument.slice(0, instrument.indexOf('-'));
}

/** `quote.*` data of a mirrored book (0 where a side is empty, as the leader's), and its key. */
function quoteOf(book: L2, name: string, timestamp: number): { data: string; key: string } {
  let bid = 0;
  let ask = 0;
  for (const p of book.bids.keys()) if (p > bid) bid = p;
  for (const p of book.asks.keys()) if (ask === 0 || p < ask) ask = p;
  const q = { timestamp, instrument_name: name, best_bid_price: bid, best_bid_amount: book.bids.get(bid) ?? 0, best_ask_price: ask, best_ask_amount: book.asks.get(ask) ?? 0 };
  return { data: JSON.stringify(q), key: quoteKey(q) };
}
/** What a quote notification says apart from its timestamp (sent only when this changes), as the hub. */
function quoteKey(q: Record<string, unknown>): string {
  return `${q.best_bid_price}/${q.best_bid_amount}/${q.best_ask_price}/${q.best_ask_amount}`;
}
/** The leader's wording for refused channels (src/api/ws/server.ts). */
function unknownList(names: string[]): string {
  const shown = names.slice(0, 5).map((n) => (n.length > 128 ? `${n.slice(0, 128)}...` : n));
  return shown.join(', ') + (names.length > 5 ? ` (and ${names.length - 5} more)` : '');
}
const PORTFOLIO_CURRENCIES = ['BTC', 'ETH'];

interface PrivateEvent {
  orders: Array<Record<string, unknown> & { order_id: string; instrument_name: string }>;
  trades: Array<Record<string, unknown> & { instrument_name: string }>;
  positions: Array<Record<string, unknown> & { instrument_name: string }>;
  mmp?: Array<Record<string, unknown> & { index_name: string }>;
}

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
  const topics = new Map<string, Topic>();
  const mirrors = new Map<string, BookMirror>();
  const conns = new Set<ClientConn>();
  let deliveries = 0;
  let overflows = 0;
  let closing = false;

  // ---- instruments known (for channel names) -----------------------------------------------------
  const known = new Set<string>();
  let knownAt = 0;
  const leaderGet = async (method: string, params: Record<string, string | number>): Promise<unknown> => {
    const qs = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();
    let r: Response;
    try {
      r = await fetch(`${await leader.settled()}/api/v2/${method}?${qs}`);
    } catch {
      // the server is gone (a takeover): once more, at the server that leads now
      r = await fetch(`${await leader.relocate()}/api/v2/${method}?${qs}`);
    }
    const body = (await r.json()) as { result?: unknown; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result;
  };
  const refreshKnown = async () => {
    knownAt = performance.now();
    for (const currency of ['BTC', 'ETH']) {
      const list = (await leaderGet('public/get_instruments', { currency })) as Array<{ instrument_name: string }>;
      for (const i of list) known.add(i.instrument_name);
    }
  };
  await refreshKnown();

  // ---- fan-out -------------------------------------------------------------------------------------
  const corked = new Set<ClientConn>();
  const deliver = (topic: Topic, data: string) => {
    const frame = textFrame(notification(topic.channel, data));
    for (const c of topic.subs) {
      if (!corked.has(c) && !c.closed) {
        corked.add(c);
        c.socket.cork();
      }
      c.sendFrame(frame);
      deliveries++;
    }
  };
  const flush = () => {
    for (const c of corked) if (!c.closed) c.socket.uncork();
    corked.clear();
  };
  // stream messages that arrive together (one batch is several subjects) leave in one write per
  // connection: uncorked once the event-loop turn is over, not after each message (a write per
  // message and connection cost the gateway and its clients ~4x the CPU per delivery)
  let flushDue = false;
  const flushSoon = () => {
    if (flushDue) return;
    flushDue = true;
    setImmediate(() => {
      flushDue = false;
      flush();
    });
  };

  // ---- books ---------------------------------------------------------------------------------------
  const syncing = new Map<string, Promise<void>>();
  const sync = (name: string, m: BookMirror): Promise<void> => {
    let p = syncing.get(name);
    if (p) return p;
    p = (async () => {
      for (let attempt = 0; ; attempt++) {
        const s = (await leaderGet('public/get_order_book', { instrument_name: name, depth: 10000 })) as BookSnapshot;
        if (m.install(s)) return;
        // the snapshot fell between a batch's changes: read again once the stream has caught up
        await new Promise((r) => setTimeout(r, Math.min(1000, 20 * 2 ** attempt)));
      }
    })().finally(() => syncing.delete(name));
    syncing.set(name, p);
    return p;
  };
  const mirrorOf = (name: string): BookMirror => {
    let m = mirrors.get(name);
    if (!m) {
      m = new BookMirror();
      mirrors.set(name, m);
    }
    return m;
  };
  const onBookChange = (name: string, text: string) => {
    const m = mirrors.get(name);
    if (!m) return;
    const c = JSON.parse(text) as BookChange;
    const r = m.offer(c);
    if (r === 'gap') {
      log.warn({ instrument: name, change_id: c.change_id }, 'book change does not chain; reading a new snapshot');
      resync(name, m);
      return;
    }
    if (r !== 'applied') return;
    let quote: { data: string; key: string } | null = null;
    for (const t of topics.values()) {
      const spec = t.spec;
      if (spec.k === 'quote' && spec.instrument === name) {
        quote ??= quoteOf(m.book!, name, c.timestamp);
        if (quote.key === t.last) continue;
        t.last = quote.key;
        deliver(t, quote.data);
      } else if (spec.k === 'book' && spec.cadence === 'raw' && spec.instrument === name) deliver(t, text);
      else if (spec.k === 'book_depth' && spec.cadence === 'raw' && spec.instrument === name) deliver(t, JSON.stringify(m.book!.depthView(name, spec.depth, c.timestamp)));
    }
  };
  const resync = (name: string, m: BookMirror) => {
    m.reset();
    sync(name, m).then(
      () => {
        // raw subscribers start over from the new snapshot (conflated ones go on chaining from the
        // state they last got: the next tick diffs it against the new book)
        for (const t of topics.values()) {
          if (t.spec.k === 'book' && t.spec.cadence === 'raw' && t.spec.instrument === name && m.book !== null) deliver(t, JSON.stringify(m.book.snapshot(name, Date.now())));
        }
        flush();
      },
      (err: unknown) => log.error({ err, instrument: name }, 'book snapshot failed'),
    );
  };

  // ---- conflated (100 ms) channels -----------------------------------------------------------------
  const tradeWindow: Array<{ inst: string; text: string; trades: unknown[] }> = [];
  const orderWindow = new Map<number, Map<string, Record<string, unknown>>>();
  const tradeUserWindow = new Map<number, Array<Record<string, unknown> & { instrument_name: string }>>();
  /** per user, the latest position of each instrument traded in the window */
  const positionWindow = new Map<number, Map<string, Record<string, unknown>>>();
  /** instruments whose ticker may have moved since the last tick (and has subscribers) */
  const tickerDue = new Set<string>();
  const tickerReading = new Set<string>();
  /** the window's candles per `instrument|resolution`, by bucket: the last state of each wins */
  const chartWindow = new Map<string, Map<number, Record<string, unknown>>>();
  const tick = setInterval(() => {
    const now = Date.now();
    for (const [name, m] of mirrors) {
      if (m.book === null || m.agg === null || m.book.changeId === m.agg.changeId) continue;
      const next = m.book.copy();
      const change = JSON.stringify(m.agg.diffTo(next, name, now));
      m.agg = next;
      for (const t of topics.values()) {
        const spec = t.spec;
        if (spec.k === 'book' && spec.cadence === 'agg' && spec.instrument === name) deliver(t, change);
        else if (spec.k === 'book_depth' && spec.cadence === 'agg' && spec.instrument === name) deliver(t, JSON.stringify(next.depthView(name, spec.depth, now)));
      }
    }
    if (tradeWindow.length > 0) {
      for (const t of topics.values()) {
        const spec = t.spec;
        if (spec.k !== 'trades' || spec.cadence !== 'agg') continue;
        const sel = tradeWindow.filter((w) => selects(spec.sel, w.inst, currencyOf(w.inst) as never)).flatMap((w) => w.trades);
        if (sel.length > 0) deliver(t, JSON.stringify(sel));
      }
      tradeWindow.length = 0;
    }
    for (const t of topics.values()) {
      const spec = t.spec;
      if (t.userId === null || !('cadence' in spec) || spec.cadence !== 'agg' || !('sel' in spec)) continue;
      // the window's orders in order id order, each in its last state (as the hub sorts them)
      const orders = () => [...(orderWindow.get(t.userId!)?.values() ?? [])].sort((a, b) => Number(a.order_id) - Number(b.order_id)).filter((o) => selects(spec.sel, o.instrument_name as string, currencyOf(o.instrument_name as string) as never));
      const trades = () => (tradeUserWindow.get(t.userId!) ?? []).filter((x) => selects(spec.sel, x.instrument_name, currencyOf(x.instrument_name) as never));
      if (spec.k === 'user.orders') {
        const mine = orders();
        if (mine.length > 0) deliver(t, JSON.stringify(mine));
      } else if (spec.k === 'user.trades') {
        const mine = trades();
        if (mine.length > 0) deliver(t, JSON.stringify(mine));
      } else if (spec.k === 'user.changes') {
        // per instrument, orders first then trades (the hub's grouping); the position as it is now
        const byInst = new Map<string, { orders: unknown[]; trades: unknown[] }>();
        const entry = (i: string) => {
          let e = byInst.get(i);
          if (!e) byInst.set(i, (e = { orders: [], trades: [] }));
          return e;
        };
        for (const o of orders()) entry(o.instrument_name as string).orders.push(o);
        for (const x of trades()) entry(x.instrument_name).trades.push(x);
        const pos = positionWindow.get(t.userId);
        for (const [inst, e] of byInst) {
          const p = pos?.get(inst);
          deliver(t, JSON.stringify({ instrument_name: inst, orders: e.orders, trades: e.trades, positions: e.trades.length > 0 && p !== undefined ? [p] : [] }));
        }
      }
    }
    for (const t of topics.values()) {
      const spec = t.spec;
      if (spec.k === 'chart') {
        const w = chartWindow.get(`${spec.instrument}|${spec.resolution}`);
        if (w === undefined) continue;
        for (const tick of [...w.keys()].sort((a, b) => a - b)) deliver(t, JSON.stringify(w.get(tick)));
      } else if (spec.k === 'user.portfolio' && t.due !== undefined && t.due.size > 0 && !t.reading) refreshPortfolio(t);
    }
    for (const inst of tickerDue) if (!tickerReading.has(inst)) readTicker(inst);
    tickerDue.clear();
    chartWindow.clear();
    orderWindow.clear();
    tradeUserWindow.clear();
    positionWindow.clear();
    flush();
  }, tickMs);

  /** Reads an instrument's ticker from the leader and sends it where it changed. */
  const readTicker = (inst: string) => {
    tickerReading.add(inst);
    leaderGet('public/ticker', { instrument_name: inst })
      .then((r) => {
        const text = JSON.stringify(r);
        for (const t of topics.values()) {
          if (t.spec.k !== 'ticker' || t.spec.instrument !== inst || text === t.last) continue;
          t.last = text;
          deliver(t, text);
        }
        flushSoon();
      })
      .catch((err: unknown) => log.warn({ err, instrument: inst }, 'ticker read from the leader failed'))
      .finally(() => tickerReading.delete(inst));
  };
  const tickerMoved = (inst: string | null, currency: string | null) => {
    for (const t of topics.values()) if (t.spec.k === 'ticker' && (t.spec.instrument === inst || currencyOf(t.spec.instrument) === currency)) tickerDue.add(t.spec.instrument);
  };

  /** Reads the user's summaries that are due from the leader, on a subscriber's own connection
   *  (the hub computes them in the engine; here they are the same method's answer). */
  const refreshPortfolio = (t: Topic) => {
    const spec = t.spec as { k: 'user.portfolio'; currency: string | null };
    const conn = [...t.subs].find((c) => c.upstream !== null && c.userId === t.userId && !c.closed);
    if (conn === undefined) return;
    const currencies = (spec.currency === null ? PORTFOLIO_CURRENCIES : [spec.currency]).filter((c) => t.due!.has(c));
    t.due!.clear();
    t.reading = true;
    void (async () => {
      const out: string[] = [];
      for (const c of currencies) {
        const text = await upstreamCall(conn, 'private/get_account_summary', { currency: c });
        const body = JSON.parse(text) as { result?: unknown };
        if (body.result === undefined) return;
        out.push(JSON.stringify(body.result));
      }
      for (const data of out) {
        // one currency: sent when it changed; `any`: both, each time (as the hub)
        if (spec.currency !== null) {
          if (data === t.last) continue;
          t.last = data;
        }
        if (topics.has(`${t.userId}\u0000${t.channel}`)) deliver(t, data);
      }
      flushSoon();
    })()
      .catch((err: unknown) => log.warn({ err }, 'portfolio read from the leader failed'))
      .finally(() => (t.reading = false));
  };
  /** Marks user.portfolio topics due: of `uid` (null: every user), for `currency` (null: both). */
  const portfolioDue = (uid: number | null, currency: string | null) => {
    for (const t of topics.values()) {
      if (t.spec.k !== 'user.portfolio' || (uid !== null && t.userId !== uid)) continue;
      const mine = t.spec.currency === null ? PORTFOLIO_CURRENCIES : [t.spec.currency];
      for (const c of mine) if (currency === null || c === currency) t.due!.add(c);
    }
  };
  tick.unref();

  // ---- the stream ----------------------------------------------------------------------------------
  const onPrivate = (uid: number, text: string) => {
    let ev: PrivateEvent | null = null;
    const parsed = () => (ev ??= JSON.parse(text) as PrivateEvent);
    for (const t of topics.values()) {
      if (t.userId !== uid) continue;
      const spec = t.spec;
      if (!('sel' in spec)) continue;
      const sel = spec.sel;
      const pick = <T extends { instrument_name: string }>(a: T[]) => a.filter((x) => selects(sel, x.instrument_name, currencyOf(x.instrument_name) as never));
      if (spec.cadence === 'agg') continue;
      if (spec.k === 'user.orders') for (const o of pick(parsed().orders)) deliver(t, JSON.stringify(o));
      else if (spec.k === 'user.trades') {
        const mine = pick(parsed().trades);
        if (mine.length > 0) deliver(t, JSON.stringify(mine));
      } else if (spec.k === 'user.changes') {
        const e = parsed();
        const insts = new Set([...pick(e.orders), ...pick(e.trades)].map((x) => x.instrument_name));
        for (const inst of insts) {
          const data = { instrument_name: inst, orders: e.orders.filter((o) => o.instrument_name === inst), trades: e.trades.filter((x) => x.instrument_name === inst), positions: e.positions.filter((p) => p.instrument_name === inst) };
          deliver(t, JSON.stringify(data));
        }
      }
    }
    for (const t of topics.values()) {
      if (t.userId !== uid || t.spec.k !== 'user.mmp_trigger') continue;
      const name = t.spec.indexName;
      for (const e of parsed().mmp ?? []) if (e.index_name === name) deliver(t, JSON.stringify(e));
    }
    portfolioDue(uid, null);
    // conflated private channels: kept for the tick only when someone of that user listens
    if ([...topics.values()].some((t) => t.userId === uid && 'cadence' in t.spec && t.spec.cadence === 'agg')) {
      const e = parsed();
      let om = orderWindow.get(uid);
      if (!om) orderWindow.set(uid, (om = new Map()));
      for (const o of e.orders) om.set(o.order_id, o);
      let tw = tradeUserWindow.get(uid);
      if (!tw) tradeUserWindow.set(uid, (tw = []));
      tw.push(...e.trades);
      let pw = positionWindow.get(uid);
      if (!pw) positionWindow.set(uid, (pw = new Map()));
      for (const x of e.positions) pw.set(x.instrument_name, x);
    }
  };

  const onMessage = (subject: string, text: string) => {
    const rest = subject.slice(opts.prefix.length + 1);
    if (rest.startsWith('public.book.')) {
      tickerMoved(rest.slice(12), null);
      onBookChange(rest.slice(12), text);
    } else if (rest.startsWith('public.trades.')) {
      const inst = rest.slice(14);
      tickerMoved(inst, null);
      let parsed: unknown[] | null = null;
      for (const t of topics.values()) {
        const spec = t.spec;
        if (spec.k !== 'trades' || !selects(spec.sel, inst, currencyOf(inst) as never)) continue;
        if (spec.cadence === 'raw') deliver(t, text);
        else parsed ??= JSON.parse(text) as unknown[];
      }
      if (parsed !== null) tradeWindow.push({ inst, text, trades: parsed });
    } else if (rest.startsWith('public.index.')) {
      const ccy = rest.slice(13);
      for (const t of topics.values()) if (t.spec.k === 'index' && t.spec.currency === ccy) deliver(t, text);
      portfolioDue(null, ccy);
      tickerMoved(null, ccy);
    } else if (rest.startsWith('public.chart.')) {
      const inst = rest.slice(13);
      if (![...topics.values()].some((t) => t.spec.k === 'chart' && t.spec.instrument === inst)) return flushSoon();
      for (const [res, candles] of Object.entries(JSON.parse(text) as Record<string, Array<Record<string, unknown> & { tick: number }>>)) {
        const key = `${inst}|${res}`;
        let w = chartWindow.get(key);
        if (!w) chartWindow.set(key, (w = new Map()));
        for (const c of candles) w.set(c.tick, c);
      }
    } else if (rest.startsWith('public.markprice.')) {
      const ccy = rest.slice(17);
      for (const t of topics.values()) if (t.spec.k === 'markprice' && t.spec.currency === ccy) deliver(t, text);
    } else if (rest.startsWith('public.expiration.')) {
      const ccy = rest.slice(18);
      for (const t of topics.values()) if (t.spec.k === 'expiration_price' && t.spec.currency === ccy) deliver(t, text);
    } else if (rest.startsWith('public.instrument_state.')) {
      const ccy = rest.slice(24);
      const states = (JSON.parse(text) as unknown[]).map((e) => JSON.stringify(e));
      const subs = [...topics.values()].filter((t) => t.spec.k === 'instrument_state' && (t.spec.currency === null || t.spec.currency === ccy));
      // state by state to every channel (not channel by channel): a client that has one channel's
      // last state has the others' too, up to one frame
      for (const e of states) for (const t of subs) deliver(t, e);
    } else if (rest === 'public.platform_state') {
      const changes = (JSON.parse(text) as unknown[]).map((e) => JSON.stringify(e));
      for (const t of topics.values()) if (t.spec.k === 'platform_state') for (const e of changes) deliver(t, e);
    } else if (rest === 'control.accounts') portfolioDue(null, null);
    else if (rest.startsWith('private.')) onPrivate(Number(rest.slice(8)), text);
    else if (rest === 'control.gap') {
      log.warn({ gap: text }, 'the leader dropped events; re-reading every book');
      for (const [name, m] of mirrors) resync(name, m);
    }
    flushSoon();
  };

  const stream = await startNatsStream({ url: opts.natsUrl, stream: opts.stream, prefix: opts.prefix, log, register, onMessage });

  // ---- metrics ---------------------------------------------------------------------------------------
  new Counter({
    name: 'strikebook_gateway_deliveries_total',
    help: 'Notifications written to subscribers.',
    registers: [register],
    collect() {
      this.reset();
      this.inc(deliveries);
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
  const envelope = (id: unknown, body: string) => `{"jsonrpc":"2.0","id":${JSON.stringify(id ?? null)},${body},"testnet":true}`;
  const failure = (code: ErrorCode, reason?: string, param?: string) => `"error":${JSON.stringify(errorBody(new Reject(code, reason, param)))}`;

  const upstreamCall = (c: ClientConn, method: string, params: unknown) => upstreams.call(c, method, params);

  // ---- first messages of a subscription, from the leader -------------------------------------------
  // One connection of the gateway's own: the channels are subscribed and unsubscribed in one go,
  // and what the leader sends between the two answers is what a new subscriber of its gets. One
  // request at a time: a channel still subscribed there would get no first message.
  let feed: { ws: WebSocket; open: Promise<void>; next: number; waiting: Map<number, () => void>; notes: Array<[string, string]> } | null = null;
  let feedChain: Promise<unknown> = Promise.resolve();
  const openFeed = () => {
    if (feed !== null && feed.ws.readyState <= WebSocket.OPEN) return feed;
    const ws = new WebSocket(leader.wsUrl, { perMessageDeflate: false });
    const f = {
      ws,
      open: new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      }),
      next: 1,
      waiting: new Map<number, () => void>(),
      notes: [] as Array<[string, string]>,
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
      if (!closing) void leader.relocate();
    });
    ws.on('error', () => undefined);
    feed = f;
    return f;
  };
  /** The leader's first messages for `channels` (channel -> data texts, in order). */
  const initialOf = (channels: string[]): Promise<Map<string, string[]>> => {
    if (channels.length === 0) return Promise.resolve(new Map());
    // raw tickers need an authenticated connection on the leader; the first message is the same
    const asked = channels.map((n) => (n.startsWith('ticker.') && n.endsWith('.raw') ? `${n.slice(0, -4)}.100ms` : n));
    const p = feedChain.then(async () => {
      await leader.settled();
      const f = openFeed();
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
    feedChain = p.catch(() => undefined);
    return p.catch((err: unknown) => {
      log.warn({ err }, 'first messages from the leader failed');
      return new Map<string, string[]>();
    });
  };

  /** The id the leader names for this connection's credentials, or null. */
  const whoAmI = async (c: ClientConn, accessToken?: string): Promise<number | null> => {
    const params: Record<string, unknown> = { currency: 'BTC', extended: true };
    // a token given as a param authenticates the leader's side of the connection too (as there)
    if (accessToken !== undefined) params.access_token = accessToken;
    const text = await upstreamCall(c, 'private/get_account_summary', params);
    const body = JSON.parse(text) as { result?: { id?: unknown } };
    return typeof body.result?.id === 'number' ? body.result.id : null;
  };

  const httpApi = httpForwarder(leader, log, forwardTimeoutMs, opts.poolSockets ?? 32);
  const forwarding = new Forwarding(upstreams, httpApi, { sockets: opts.poolSockets ?? 32, maxQueuedPerIp: opts.poolMaxQueuedPerIp ?? 256, maxQueued: 8192 }, log, async (c, method, text) => {
    if (method !== 'public/auth' && method !== 'private/logout') return;
    const ok = !text.includes('"error":');
    if (method === 'public/auth' && ok) c.userId = await whoAmI(c);
    if (method === 'private/logout' && ok) dropPrivate(c);
  });

  const unsubscribeOne = (c: ClientConn, channel: string) => {
    const t = c.subs.get(channel);
    if (!t) return false;
    c.subs.delete(channel);
    t.subs.delete(c);
    if (t.subs.size === 0) {
      topics.delete(isPrivate(t.spec) ? `${t.userId}\u0000${channel}` : channel);
      if (t.spec.k === 'book' || t.spec.k === 'book_depth' || t.spec.k === 'quote') {
        const name = t.spec.instrument;
        if (![...topics.values()].some((x) => (x.spec.k === 'book' || x.spec.k === 'book_depth' || x.spec.k === 'quote') && x.spec.instrument === name)) mirrors.delete(name);
      }
    }
    return true;
  };
  const dropPrivate = (c: ClientConn) => {
    c.userId = null;
    for (const [ch, t] of [...c.subs]) if (t.userId !== null) unsubscribeOne(c, ch);
  };

  const subscribe = async (c: ClientConn, id: unknown, params: Record<string, unknown>, priv: boolean): Promise<void> => {
    const channels = params.channels;
    if (!Array.isArray(channels) || channels.length === 0 || channels.some((x) => typeof x !== 'string')) return c.send(envelope(id, failure(ERR.INVALID_PARAMS, 'channels must be a non-empty array of strings', 'channels')));
    if (typeof params.access_token === 'string' && c.userId === null) {
      // the leader knows this connection's credentials from now on
      c.stateful = true;
      c.userId = await whoAmI(c, params.access_token).catch(() => null);
    }
    if (priv && c.userId === null) return c.send(envelope(id, failure(ERR.AUTHORIZATION_REQUIRED)));
    const parse = (n: string) => parseChannel(n, (i) => known.has(i));
    if ((channels as string[]).some((n) => parse(n) === null) && performance.now() - knownAt > 5000) await refreshKnown().catch(() => undefined);
    const specs: Array<[string, ChannelSpec]> = [];
    const unknown: string[] = [];
    for (const n of channels as string[]) {
      const spec = c.subs.get(n)?.spec ?? parse(n);
      if (spec === null) unknown.push(n);
      else specs.push([n, spec]);
    }
    if (unknown.length > 0) return c.send(envelope(id, failure(ERR.INVALID_PARAMS, `unknown channel: ${unknownList(unknown)}`, 'channels')));
    // books first (each may wait for a snapshot from the leader); the subscriptions below are then
    // made, answered and given their snapshots without a pause, so no change can reach a
    // subscriber before its snapshot
    for (const [, spec] of specs) {
      if (spec.k !== 'book' && spec.k !== 'book_depth' && spec.k !== 'quote') continue;
      const m = mirrorOf(spec.instrument);
      if (m.book === null) await sync(spec.instrument, m);
    }
    // first messages the leader sends on subscribe (current ticker, quote, candle, ...): asked of it
    // for the channels this request will add
    const firsts = await initialOf(specs.filter(([n, spec]) => FIRST_FROM_LEADER.has(spec.k) && !c.subs.has(n) && !('cadence' in spec && spec.cadence === 'raw' && c.userId === null)).map(([n]) => n));
    const done: string[] = [];
    const after: string[] = [];
    for (const [n, spec] of specs) {
      if (c.subs.has(n)) {
        done.push(n);
        continue;
      }
      if (isPrivate(spec) && (!priv || c.userId === null)) continue;
      // raw intervals need an authenticated connection, as on the leader (silently left out)
      if ('cadence' in spec && spec.cadence === 'raw' && c.userId === null) continue;
      if (c.subs.size >= maxSubs) continue;
      // a gap may have reset a book meanwhile: it is left out (the client can subscribe again)
      if ((spec.k === 'book' || spec.k === 'book_depth') && (mirrors.get(spec.instrument)?.book ?? null) === null) continue;
      const userId = isPrivate(spec) ? c.userId : null;
      const key = userId !== null ? `${userId}\u0000${n}` : n;
      let t = topics.get(key);
      if (!t) topics.set(key, (t = { channel: n, spec, userId, subs: new Set() }));
      t.subs.add(c);
      c.subs.set(n, t);
      done.push(n);
      // a summary on the next tick, as the hub sends one to a new subscriber
      if (spec.k === 'user.portfolio') (t.due ??= new Set()).add(spec.currency ?? 'BTC').add(spec.currency ?? 'ETH');
      for (const data of firsts.get(n) ?? []) {
        if (spec.k === 'ticker') t.last ??= data;
        else if (spec.k === 'quote') t.last ??= quoteKey(JSON.parse(data) as Record<string, unknown>);
        after.push(`{"jsonrpc":"2.0","method":"subscription","params":{"channel":${JSON.stringify(n)},"data":${data}}}`);
      }
      if (spec.k === 'book' || spec.k === 'book_depth') {
        const m = mirrors.get(spec.instrument)!;
        // the state of the cadence the subscriber follows, so its next change chains on to it
        const st: L2 = spec.cadence === 'raw' ? m.book! : m.agg!;
        const data = spec.k === 'book' ? st.snapshot(spec.instrument, Date.now()) : st.depthView(spec.instrument, spec.depth, Date.now());
        after.push(`{"jsonrpc":"2.0","method":"subscription","params":{"channel":${JSON.stringify(n)},"data":${JSON.stringify(data)}}}`);
      }
    }
    if (done.length === 0 && c.subs.size >= maxSubs) return c.send(envelope(id, failure(ERR.INVALID_ARGUMENTS, `at most ${maxSubs} subscriptions per connection`, 'channels')));
    c.send(envelope(id, `"result":${JSON.stringify(done)}`));
    for (const a of after) c.send(a);
  };

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
    for (const c of conns) {
      if (c.userId === null || c.closed) continue;
      whoAmI(c).then(
        (uid) => {
          if (uid !== c.userId) dropPrivate(c);
        },
        () => undefined,
      );
    }
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
    const body = { status: n.connected ? 'ok' : 'degraded', role: 'gateway', leader: leader.url, connections: conns.size, upstreams: upstreams.count, books: mirrors.size, nats: { connected: n.connected, last_seq: n.lastSeq, disconnects: n.disconnects, down_ms: n.downMs } };
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
      ws.on('message', (data) => {
        c.heard = true;
        const text = data.toString();
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
      return deliveries;
    },
    get upstreams() {
      return upstreams.count;
    },
    async close() {
      closing = true;
      feed?.ws.close();
      clearInterval(tick);
      clearInterval(recheck);
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
