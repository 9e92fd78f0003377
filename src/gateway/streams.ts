// The streams a gateway serves (src/gateway/gateway.ts's header tells what each channel is made of):
// the channels' topics and their subscribers, the books mirrored from the leader, the 100 ms tick of
// the conflated channels, tickers and portfolios read from the leader, the handling of each event
// message from NATS (src/gateway/natsStream.ts), and subscribe/unsubscribe.
import type { Logger } from 'pino';
import { channelScope, isComboName, isPrivate, parseChannel, selects, selectsComboTrade, type ChannelSpec } from '../api/ws/channels.ts';
import { textFrame } from '../api/ws/hub.ts';
import { ERR } from '../domain/errors.ts';
import { BookMirror, type BookChange, type BookSnapshot, type L2 } from './bookMirror.ts';
import { envelope, failure, type ClientConn, type Topic } from './clientConn.ts';
import type { LeaderLocator } from './leaderLocator.ts';
import { FirstMessages } from './firstMessages.ts';
import { LeaderReads } from './leaderReads.ts';
import { subscriberOf, type WhoIs } from './credentials.ts';
import { FIRST_FROM_LEADER, PORTFOLIO_CURRENCIES, currencyOf, notification, quoteKey, quoteOf, takesTrades, volKey, type PrivateEvent } from './channelData.ts';
import { changedFields } from '../api/ws/parityChannels.ts';


export interface StreamDeps {
  log: Logger;
  tickMs: number;
  maxSubs: number;
  /** The first token of the stream's subjects. */
  prefix: string;
  leader: LeaderLocator;
  /** How long a read from the leader may take before the leader is looked for, ms. */
  timeoutMs: number;
  /** Sends a request on the client's own upstream connection; resolves with the answer text. */
  upstreamCall(c: ClientConn, method: string, params: unknown): Promise<string>;
  /** Who the leader says a credential is, asked on the client's connection (src/gateway/credentials.ts). */
  whoIs: WhoIs;
  closing(): boolean;
}

export interface Streams {
  onMessage(subject: string, text: string): void;
  subscribe(c: ClientConn, id: unknown, params: Record<string, unknown>, priv: boolean): Promise<void>;
  unsubscribeOne(c: ClientConn, channel: string): boolean;
  /** Ends the private subscriptions made with the connection's login, and forgets its user. */
  dropPrivate(c: ClientConn): void;
  readonly books: number;
  readonly deliveries: number;
  close(): void;
}

export async function startStreams(deps: StreamDeps): Promise<Streams> {
  const { log, tickMs, maxSubs, leader, upstreamCall, whoIs } = deps;
  const topics = new Map<string, Topic>();
  const mirrors = new Map<string, BookMirror>();
  let deliveries = 0;
  // the instruments known (for channel names), snapshots and tickers
  const reads = new LeaderReads(leader, deps.timeoutMs);
  const leaderGet = (method: string, params: Record<string, string | number>) => reads.get(method, params);

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
      else if (spec.k === 'book_depth' && spec.cadence === 'raw' && spec.instrument === name) deliver(t, JSON.stringify(m.book!.depthView(name, spec.depth, c.timestamp, spec.group, reads.ticks.get(name))));
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
  /** per user, the combo trades of the window (user.combo_trades.* at 100ms/agg2) */
  const comboTradeUserWindow = new Map<number, Array<Record<string, unknown> & { instrument_name: string }>>();
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
        else if (spec.k === 'book_depth' && spec.cadence === 'agg' && spec.instrument === name) deliver(t, JSON.stringify(next.depthView(name, spec.depth, now, spec.group, reads.ticks.get(name))));
      }
    }
    if (tradeWindow.length > 0) {
      for (const t of topics.values()) {
        const spec = t.spec;
        if (spec.k !== 'trades' || spec.cadence !== 'agg') continue;
        const sel = tradeWindow.filter((w) => takesTrades(spec.sel, w.inst)).flatMap((w) => w.trades);
        if (sel.length > 0) deliver(t, JSON.stringify(sel));
      }
      tradeWindow.length = 0;
    }
    for (const t of topics.values()) {
      const spec = t.spec;
      if (t.userId === null || !('cadence' in spec) || spec.cadence !== 'agg' || !('sel' in spec)) continue;
      // the window's orders in order id order, each in its last state (as the hub sorts them)
      const orders = () => [...(orderWindow.get(t.userId!)?.values() ?? [])].sort((a, b) => idNumber(String(a.order_id)) - idNumber(String(b.order_id))).filter((o) => selects(spec.sel, o.instrument_name as string, currencyOf(o.instrument_name as string) as never));
      const trades = () => (tradeUserWindow.get(t.userId!) ?? []).filter((x) => selects(spec.sel, x.instrument_name, currencyOf(x.instrument_name) as never));
      if (spec.k === 'user.orders') {
        const mine = orders();
        if (mine.length > 0) deliver(t, JSON.stringify(mine));
      } else if (spec.k === 'user.trades') {
        const mine = trades();
        if (mine.length > 0) deliver(t, JSON.stringify(mine));
      } else if (spec.k === 'user.combo_trades') {
        const mine = (comboTradeUserWindow.get(t.userId) ?? []).filter((x) => selectsComboTrade(spec, x.instrument_name, currencyOf(x.instrument_name) as never, legNames(x)));
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
    comboTradeUserWindow.clear();
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
          if (t.spec.k === 'incremental_ticker' && t.spec.instrument === inst && text !== t.last) {
            // only the fields that changed since what the topic last sent (as the hub: parityChannels.ts)
            const before = t.last === undefined ? {} : (JSON.parse(t.last) as Record<string, unknown>);
            t.last = text;
            const now = r as Record<string, unknown>;
            const changed = changedFields(before, now);
            delete changed.timestamp;
            if (Object.keys(changed).length > 0) deliver(t, JSON.stringify({ type: 'change', timestamp: now.timestamp, instrument_name: inst, ...changed }));
            continue;
          }
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
    for (const t of topics.values()) if ((t.spec.k === 'ticker' || t.spec.k === 'incremental_ticker') && (t.spec.instrument === inst || currencyOf(t.spec.instrument) === currency)) tickerDue.add(t.spec.instrument);
  };

  /** Reads the user's summaries that are due from the leader, on a subscriber's own connection
   *  (the hub computes them in the engine; here they are the same method's answer). */
  const refreshPortfolio = (t: Topic) => {
    const spec = t.spec as { k: 'user.portfolio'; currency: string | null };
    const conn = [...t.subs].find((c) => c.upstream !== null && !c.closed);
    if (conn === undefined) return;
    // read with the credential that subscriber holds the channel by (its login, or its token param)
    const token = conn.credentials.get(t.channel) ?? null;
    const currencies = (spec.currency === null ? PORTFOLIO_CURRENCIES : [spec.currency]).filter((c) => t.due!.has(c));
    t.due!.clear();
    t.reading = true;
    void (async () => {
      const out: string[] = [];
      for (const c of currencies) {
        const text = await upstreamCall(conn, 'private/get_account_summary', token === null ? { currency: c } : { currency: c, access_token: token });
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
      } else if (spec.k === 'user.combo_trades') {
        // rendered for this user by the leader (src/api/ws/comboStreamEvents.ts): its side of each combo trade
        const mine = (parsed().combo_trades ?? []).filter((x) => selectsComboTrade(spec, x.instrument_name, currencyOf(x.instrument_name) as never, legNames(x)));
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
      if (t.userId !== uid) continue;
      if (t.spec.k === 'user.mmp_trigger') {
        const name = t.spec.indexName;
        for (const e of parsed().mmp ?? []) if (e.index_name === name) deliver(t, JSON.stringify(e));
      } else if (t.spec.k === 'user.access_log') for (const e of parsed().access_log ?? []) deliver(t, JSON.stringify(e));
      else if (t.spec.k === 'user.lock') for (const e of parsed().lock ?? []) deliver(t, JSON.stringify(e));
      else if (t.spec.k === 'user.block_trade_confirmations') {
        const want = t.spec.currency;
        for (const e of parsed().block_trade_confirmations ?? []) if (want === null || e.currency === want) deliver(t, JSON.stringify(e.data));
      } else if (t.spec.k === 'user.block_rfq_maker' || t.spec.k === 'user.block_rfq_taker' || t.spec.k === 'user.block_rfq_quotes') {
        // rendered for this user by the leader (src/blockrfq/channels.ts rfqStreamEvents): a maker's
        // list holds only RFQs sent to it, as it may see them; the taker's only its own
        const want = t.spec.currency;
        const list = t.spec.k === 'user.block_rfq_maker' ? parsed().block_rfq_maker : t.spec.k === 'user.block_rfq_taker' ? parsed().block_rfq_taker : parsed().block_rfq_quotes;
        for (const e of list ?? []) if (want === null || e.currency === want) deliver(t, JSON.stringify(e.data));
      }
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
      if (e.combo_trades !== undefined && e.combo_trades.length > 0) {
        let cw = comboTradeUserWindow.get(uid);
        if (!cw) comboTradeUserWindow.set(uid, (cw = []));
        cw.push(...e.combo_trades);
      }
      let pw = positionWindow.get(uid);
      if (!pw) positionWindow.set(uid, (pw = new Map()));
      for (const x of e.positions) pw.set(x.instrument_name, x);
    }
  };

  const onMessage = (subject: string, text: string) => {
    const rest = subject.slice(deps.prefix.length + 1);
    if (rest.startsWith('public.book.')) {
      tickerMoved(rest.slice(12), null);
      onBookChange(rest.slice(12), text);
    } else if (rest.startsWith('public.trades.')) {
      const inst = rest.slice(14);
      tickerMoved(inst, null);
      let parsed: unknown[] | null = null;
      for (const t of topics.values()) {
        const spec = t.spec;
        if (spec.k !== 'trades' || !takesTrades(spec.sel, inst)) continue;
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
    } else if (rest.startsWith('public.vol_index.')) {
      const ccy = rest.slice(17);
      const key = volKey(text);
      for (const t of topics.values()) {
        if (t.spec.k !== 'vol_index' || t.spec.currency !== ccy || t.last === key) continue;
        t.last = key;
        deliver(t, text);
      }
    } else if (rest === 'public.announcements') {
      const news = (JSON.parse(text) as unknown[]).map((e) => JSON.stringify(e));
      for (const t of topics.values()) if (t.spec.k === 'announcements') for (const e of news) deliver(t, e);
    } else if (rest === 'public.block_rfq_trades') {
      let trades: Array<{ currency: string; data: unknown }> | null = null;
      for (const t of topics.values()) {
        if (t.spec.k !== 'block_rfq_trades') continue;
        const want = t.spec.currency;
        trades ??= JSON.parse(text) as Array<{ currency: string; data: unknown }>;
        for (const e of trades) if (want === null || e.currency === want) deliver(t, JSON.stringify(e.data));
      }
    } else if (rest === 'public.combos') reads.addCombos(JSON.parse(text) as string[]);
    else if (rest === 'control.accounts') portfolioDue(null, null);
    else if (rest.startsWith('private.')) onPrivate(Number(rest.slice(8)), text);
    else if (rest === 'control.gap') {
      log.warn({ gap: text }, 'the leader dropped events; re-reading every book');
      for (const [name, m] of mirrors) resync(name, m);
    }
    flushSoon();
  };

  const firsts = new FirstMessages(leader, log, deps.closing);
  const initialOf = (channels: string[]) => firsts.of(channels);

  const unsubscribeOne = (c: ClientConn, channel: string) => {
    const t = c.subs.get(channel);
    if (!t) return false;
    c.subs.delete(channel);
    c.credentials.delete(channel);
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
    for (const [ch, token] of [...c.credentials]) if (token === null) unsubscribeOne(c, ch);
  };

  const subscribe = async (c: ClientConn, id: unknown, params: Record<string, unknown>, priv: boolean): Promise<void> => {
    const channels = params.channels;
    if (!Array.isArray(channels) || channels.length === 0 || channels.some((x) => typeof x !== 'string')) return c.send(envelope(id, failure(ERR.INVALID_PARAMS, 'channels must be a non-empty array of strings', 'channels')));
    const who = await subscriberOf(c, params, priv, whoIs);
    if ('code' in who) return c.send(envelope(id, failure(who.code, who.reason)));
    const { user, token } = who;
    // combos too (issue 34): their book, ticker and trades channels come from the stream as the options'
    const parse = (n: string) => parseChannel(n, (i) => reads.known.has(i), { parity: true, rfq: true, combo: (i) => reads.combos.has(i) });
    const unknown = (channels as string[]).filter((n) => parse(n) === null);
    if (unknown.length > 0 && performance.now() - reads.knownAt > 5000) await reads.refreshKnown().catch(() => undefined);
    // a combo made a moment ago (its name not yet on the stream): the leader is asked
    else if (unknown.some((n) => n.split('.').some((part) => isComboName(part) && !reads.combos.has(part)))) await reads.refreshCombos().catch(() => undefined);
    // as Deribit and the leader: a channel not served is left out of the answer and the rest subscribe
    const specs: Array<[string, ChannelSpec]> = [];
    for (const n of channels as string[]) {
      const spec = c.subs.get(n)?.spec ?? parse(n);
      if (spec !== null) specs.push([n, spec]);
    }
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
    const firsts = await initialOf(specs.filter(([n, spec]) => FIRST_FROM_LEADER.has(spec.k) && !c.subs.has(n) && !('cadence' in spec && spec.cadence === 'raw' && user === null)).map(([n]) => n));
    const done: string[] = [];
    const after: string[] = [];
    for (const [n, spec] of specs) {
      if (c.subs.has(n)) {
        done.push(n);
        continue;
      }
      if (isPrivate(spec) && (!priv || user === null)) continue;
      // a credential whose scopes do not read trades and orders gets none of their channels (left
      // out of the answer, as the leader does: src/api/ws/sessionMethods.ts)
      if (isPrivate(spec) && channelScope(spec) === 'trade:read' && !who.tradeRead) continue;
      // raw intervals need an authenticated caller, as on the leader (silently left out)
      if ('cadence' in spec && spec.cadence === 'raw' && user === null) continue;
      if (c.subs.size >= maxSubs) continue;
      // a gap may have reset a book meanwhile: it is left out (the client can subscribe again)
      if ((spec.k === 'book' || spec.k === 'book_depth') && (mirrors.get(spec.instrument)?.book ?? null) === null) continue;
      const userId = isPrivate(spec) ? user : null;
      const key = userId !== null ? `${userId}\u0000${n}` : n;
      let t = topics.get(key);
      if (!t) topics.set(key, (t = { channel: n, spec, userId, subs: new Set() }));
      t.subs.add(c);
      c.subs.set(n, t);
      if (userId !== null) c.credentials.set(n, token);
      done.push(n);
      // a summary on the next tick, as the hub sends one to a new subscriber
      if (spec.k === 'user.portfolio') (t.due ??= new Set()).add(spec.currency ?? 'BTC').add(spec.currency ?? 'ETH');
      for (const data of firsts.get(n) ?? []) {
        if (spec.k === 'ticker') t.last ??= data;
        else if (spec.k === 'vol_index') t.last ??= volKey(data);
        else if (spec.k === 'incremental_ticker' && t.last === undefined) {
          // the snapshot is the ticker with its type: the topic diffs the next reads against it
          const { type: _type, ...ticker } = JSON.parse(data) as Record<string, unknown>;
          t.last = JSON.stringify(ticker);
        }
        else if (spec.k === 'quote') t.last ??= quoteKey(JSON.parse(data) as Record<string, unknown>);
        after.push(`{"jsonrpc":"2.0","method":"subscription","params":{"channel":${JSON.stringify(n)},"data":${data}}}`);
      }
      if (spec.k === 'book' || spec.k === 'book_depth') {
        const m = mirrors.get(spec.instrument)!;
        // the state of the cadence the subscriber follows, so its next change chains on to it
        const st: L2 = spec.cadence === 'raw' ? m.book! : m.agg!;
        const data = spec.k === 'book' ? st.snapshot(spec.instrument, Date.now()) : st.depthView(spec.instrument, spec.depth, Date.now(), spec.group, reads.ticks.get(spec.instrument));
        after.push(`{"jsonrpc":"2.0","method":"subscription","params":{"channel":${JSON.stringify(n)},"data":${JSON.stringify(data)}}}`);
      }
    }
    if (done.length === 0 && c.subs.size >= maxSubs) return c.send(envelope(id, failure(ERR.INVALID_ARGUMENTS, `at most ${maxSubs} subscriptions per connection`, 'channels')));
    c.send(envelope(id, `"result":${JSON.stringify(done)}`));
    for (const a of after) c.send(a);
  };
  await reads.refreshKnown();

  return {
    onMessage,
    subscribe,
    unsubscribeOne,
    dropPrivate,
    get books() {
      return mirrors.size;
    },
    get deliveries() {
      return deliveries;
    },
    close() {
      firsts.close();
      clearInterval(tick);
    },
  };
}

/** The number of an order id, with or without its currency (`ETH-584864807`: ids other than BTC's carry it). */
function idNumber(id: string): number {
  return Number(id.slice(id.lastIndexOf('-') + 1));
}

/** The legs' names of a user combo trade the leader rendered (its `legs`: the user's leg trades, one per leg). */
function legNames(t: Record<string, unknown>): string[] {
  const legs = t.legs;
  return Array.isArray(legs) ? legs.map((l) => (l as { instrument_name?: unknown }).instrument_name).filter((n): n is string => typeof n === 'string') : [];
}
