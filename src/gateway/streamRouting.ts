// How a gateway routes the stream's event messages (src/gateway/natsStream.ts) to its channels and
// renders them: book changes to the book, depth and quote channels, the 100 ms tick of the
// conflated channels, tickers and portfolios read from the leader, public and private events.
import { selects, selectsComboTrade } from '../api/ws/channels.ts';
import type { BookChange } from './bookMirror.ts';
import type { Topic } from './clientConn.ts';
import { PORTFOLIO_CURRENCIES, currencyOf, quoteOf, takesTrades, volKey, type PrivateEvent } from './channelData.ts';
import { changedFields } from '../api/ws/parityChannels.ts';
import type { StreamCore } from './streamCore.ts';
import type { StreamDeps } from './streams.ts';

export interface Routing {
  onMessage(subject: string, text: string): void;
  /** Stops the tick. */
  close(): void;
}

export function startRouting(core: StreamCore, deps: Pick<StreamDeps, 'prefix' | 'tickMs' | 'upstreamCall'>): Routing {
  const { log, reads, topics, mirrors, deliver, flush, flushSoon, resync } = core;
  const { tickMs, upstreamCall } = deps;
  const leaderGet = (method: string, params: Record<string, string | number>) => reads.get(method, params);

  // ---- books ---------------------------------------------------------------------------------------
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

  return { onMessage, close: () => clearInterval(tick) };
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
