// The option chain of one currency and expiry: calls | strike | puts with bid/ask and sizes, mark,
// mark IV, delta, open interest, and the user's position and open orders per row. Tickers come from
// `ticker.{instrument}.100ms`, whose subscription starts with the current ticker; the index from `deribit_price_index`; recent trades from
// `trades.option.{currency}.100ms`. The table has fixed column widths and tabular digits, so live
// numbers never move the layout; updates are drawn at most once per animation frame.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { memo } from 'preact/compat';
import * as fmt from '../lib/format.ts';
import { serverNow, syncClock } from '../lib/clock.ts';
import { live, priv, useChannel, useEpoch, useLiveOrders, useReloadOn, useSession, useStale } from '../lib/live.ts';
import { call } from '../lib/rpc.ts';
import { linkClick, navigate } from '../lib/router.ts';
import { fillTicket } from '../lib/ticketStore.ts';
import { addLeg, strategyActive } from '../lib/strategy.ts';
import { useMedia, useNarrow } from '../lib/media.ts';
import type { Instrument, Order, Position, PublicTrade, Ticker } from '../lib/types.ts';
import { StrategyBuilder, StrategyToggle } from './strategy.tsx';

/** Redraws at most once per animation frame, however many messages arrive. */
export function useFrameRedraw(): [number, () => void] {
  const [n, setN] = useState(0);
  const pending = useRef(false);
  const request = () => {
    if (pending.current) return;
    pending.current = true;
    requestAnimationFrame(() => {
      pending.current = false;
      setN((x) => x + 1);
    });
  };
  return [n, request];
}

/**
 * Redraws at most every `ms` (on an animation frame), after `prepare`, which returns true when it
 * left work for another frame (the next redraw then comes on the next frame, not `ms` later). The
 * chain's tickers come ~10 a second per series, and a full chain (every listed series quoted)
 * redrawn each frame spent its frames in style, layout and paint (long tasks over 100 ms); four
 * redraws a second are as live to the eye.
 */
function useThrottledRedraw(ms: number, prepare: () => boolean): () => void {
  const [, setN] = useState(0);
  const pending = useRef(false);
  const last = useRef(0);
  const prep = useRef(prepare);
  prep.current = prepare;
  const frame = () => {
    const more = prep.current();
    last.current = performance.now();
    setN((x) => x + 1);
    if (more) requestAnimationFrame(frame);
    else pending.current = false;
  };
  return () => {
    if (pending.current) return;
    pending.current = true;
    const wait = Math.max(0, last.current + ms - performance.now());
    setTimeout(() => requestAnimationFrame(frame), wait);
  };
}

/**
 * Rows a frame may change: a requote of the demo market moves every series at once, and ~65 rows of
 * 23 cells laid out and painted in one frame made tasks of 50 ms of CPU (far longer on a loaded
 * machine). The rows on screen go first; the rest follow on the next frames.
 */
export const ROWS_PER_FRAME = 12;

/** What a row shows of a ticker, as one string: a message that changes nothing shown redraws nothing. */
export function shownKey(t: Ticker | undefined): string {
  if (!t) return '';
  let k = shownKeys.get(t);
  if (k === undefined) shownKeys.set(t, (k = shownKeyOf(t)));
  return k;
}
/** Worked out once per ticker object: every row's comparison asks for it each frame. */
const shownKeys = new WeakMap<Ticker, string>();
function shownKeyOf(t: Ticker): string {
  const f = (x: number | null | undefined, d: number) => (typeof x === 'number' ? x.toFixed(d) : '');
  return `${f(t.last_price, 4)}|${t.stats?.volume ?? ''}|${f(t.best_bid_price, 4)}|${f(t.best_ask_price, 4)}|${t.best_bid_amount}|${t.best_ask_amount}|${t.best_bid_price ? f(t.bid_iv, 1) : ''}|${t.best_ask_price ? f(t.ask_iv, 1) : ''}|${f(t.mark_price, 4)}|${f(t.mark_iv, 1)}|${f(t.greeks.delta, 2)}|${t.open_interest}`;
}

/** Instruments of a currency grouped by expiry, ascending. */
function useInstruments(currency: string): Map<number, Instrument[]> | null {
  const epoch = useEpoch();
  const [byExpiry, set] = useState<Map<number, Instrument[]> | null>(null);
  useEffect(() => {
    let alive = true;
    void call<Instrument[]>('public/get_instruments', { currency, kind: 'option' }).then((list) => {
      if (!alive) return;
      const m = new Map<number, Instrument[]>();
      for (const i of list.filter((x) => x.is_active)) {
        const arr = m.get(i.expiration_timestamp) ?? [];
        arr.push(i);
        m.set(i.expiration_timestamp, arr);
      }
      set(new Map([...m.entries()].sort((a, b) => a[0] - b[0])));
    });
    return () => void (alive = false);
  }, [currency, epoch]);
  return byExpiry;
}

/** The index of a currency, live. */
export function useIndex(currency: string): number | null {
  const [index, setIndex] = useState<number | null>(null);
  const name = `${currency.toLowerCase()}_usd`;
  const epoch = useEpoch();
  useEffect(() => {
    void call<{ index_price: number }>('public/get_index_price', { index_name: name }).then((r) => setIndex(r.index_price), () => undefined);
  }, [name, epoch]);
  useChannel(`deribit_price_index.${name}`, (d) => setIndex((d as { price: number }).price));
  return index;
}

/** The user's positions and open orders per instrument of a currency, reloaded when they change. */
export function useOwn(currency: string): { positions: Map<string, number>; orders: Map<string, Order[]> } {
  const s = useSession();
  const epoch = useEpoch();
  const channel = s ? `user.changes.option.${currency}.100ms` : null;
  const [loaded, setLoaded] = useState<{ positions: Map<string, number>; orders: Order[] } | undefined>(undefined);
  const n = useReloadOn([channel]);
  useEffect(() => {
    if (!s) return;
    let alive = true;
    void Promise.all([priv<Position[]>('private/get_positions', { currency }), priv<Order[]>('private/get_open_orders_by_currency', { currency })]).then(
      ([ps, os]) => alive && setLoaded({ positions: new Map(ps.map((p) => [p.instrument_name, p.size])), orders: os }),
      () => undefined,
    );
    return () => void (alive = false);
  }, [currency, s?.access, epoch, n]);
  // orders as soon as user.changes tells of them; positions with the reload it triggers
  const openOrders = useLiveOrders(channel, loaded?.orders);
  return useMemo(() => {
    const orders = new Map<string, Order[]>();
    for (const o of openOrders ?? []) orders.set(o.instrument_name, [...(orders.get(o.instrument_name) ?? []), o]);
    return { positions: loaded?.positions ?? new Map<string, number>(), orders };
  }, [loaded, openOrders]);
}

/** The user's marks for a series, as one string (a row redraws only when it changes): glyphs|title. */
function ownOf(name: string, positions: Map<string, number>, orders: Map<string, Order[]>): string {
  const pos = positions.get(name);
  const os = orders.get(name);
  const title = [pos ? `position ${pos}` : '', os ? `${os.length} open order${os.length > 1 ? 's' : ''}` : ''].filter(Boolean).join(', ');
  return `${pos ? (pos > 0 ? '▲' : '▼') : ''}${os ? '●' : ''}|${title}`;
}

function OwnMark({ own }: { own: string }) {
  const [glyphs, title] = own.split('|');
  return (
    <span class="mark-own" title={title} data-own={title || undefined}>
      {glyphs}
    </span>
  );
}

/** One side's cells of a row, in the order of `cols` (a put's mirrored). */
function sideCells(inst: Instrument | undefined, side: 'call' | 'put', cols: Col[], t: Ticker | undefined, own: string, indexRef: { current: number | null }) {
  const order = side === 'call' ? cols : [...cols].reverse();
  if (!inst) return order.map((k) => <td key={`${side}${k}`} />);
  const name = inst.instrument_name;
  // while the strategy builder is open a click adds a leg (read at the click: the rows are not drawn again for it)
  const open = (s: 'buy' | 'sell', p: number | undefined) =>
    strategyActive() ? addLeg(inst, s, t) : fillTicket({ instrument: name, side: s, price: p ? p : t?.mark_price ? fmt.roundToTick(inst, t.mark_price) : null });
  // the USD value is worked out when the pointer arrives: the index moves every second, and the
  // row is not redrawn for it
  const usdTitle = (verb: string, p: number | undefined) => (e: MouseEvent) => {
    const index = indexRef.current;
    (e.currentTarget as HTMLElement).title = `${verb} ${name}${p && index !== null ? ` at ${fmt.price(p)} (${fmt.usd(p * index)})` : ''}`;
  };
  const byKey: Record<Col, preact.JSX.Element> = {
    own: (
      <td key="l" class={side === 'call' ? 'l' : ''}>
        {/* the way into the series: a labelled button-like link (the bid and ask open the ticket) */}
        <a class="open-inst" href={`/instrument/${name}`} aria-label={`Open ${name}`} title={`Open ${name}: book, chart and trades`} onClick={(e) => linkClick(e, `/instrument/${name}`)}>
          Open
        </a>
        <OwnMark own={own} />
      </td>
    ),
    oi: <td key="oi">{fmt.amount(t?.open_interest)}</td>,
    // the last trade's price and the 24 h volume, as Deribit's chain shows them
    last: (
      <td key="last" data-cell="last">
        {fmt.price(t?.last_price ?? null)}
      </td>
    ),
    volume: (
      <td key="vol" data-cell="volume">
        {fmt.amount(t?.stats?.volume || null)}
      </td>
    ),
    delta: <td key="d">{fmt.greek(t?.greeks.delta, 2)}</td>,
    iv: (
      <td key="iv" data-cell="iv">
        {fmt.iv(t?.mark_iv)}
      </td>
    ),
    mark: (
      <td key="m" data-cell="mark">
        {fmt.price(t?.mark_price)}
      </td>
    ),
    bidSize: <td key="bs" class="bid">{fmt.amount(t?.best_bid_amount || null)}</td>,
    // the implied vols of the best quotes, as Deribit's chain shows them beside the prices
    bidIv: <td key="biv" class="bid" data-cell="bid_iv">{fmt.iv(t?.best_bid_price ? t.bid_iv : null)}</td>,
    bid: (
      <td key="b" class="bid click" data-cell="bid" title={`Sell ${name}`} onMouseEnter={usdTitle('Sell', t?.best_bid_price)} onClick={() => open('sell', t?.best_bid_price)}>
        {fmt.price(t?.best_bid_price)}
      </td>
    ),
    ask: (
      <td key="a" class="ask click" data-cell="ask" title={`Buy ${name}`} onMouseEnter={usdTitle('Buy', t?.best_ask_price)} onClick={() => open('buy', t?.best_ask_price)}>
        {fmt.price(t?.best_ask_price)}
      </td>
    ),
    askIv: <td key="aiv" class="ask" data-cell="ask_iv">{fmt.iv(t?.best_ask_price ? t.ask_iv : null)}</td>,
    askSize: <td key="as" class="ask">{fmt.amount(t?.best_ask_amount || null)}</td>,
  };
  return order.map((k) => byKey[k]);
}

interface ChainRowProps {
  r: Row;
  cols: Col[];
  cls: string;
  callT: Ticker | undefined;
  putT: Ticker | undefined;
  callOwn: string;
  putOwn: string;
  indexRef: { current: number | null };
}

/**
 * One strike. Memoized: a frame redraws only the rows whose ticker (a new object per message),
 * marks or shading changed, not all ~130 rows of 23 cells (long tasks on a busy demo market).
 */
const ChainRow = memo(
  function ChainRow({ r, cols, cls, callT, putT, callOwn, putOwn, indexRef }: ChainRowProps) {
    return (
      <tr class={cls} data-strike={r.strike} data-call={r.call?.instrument_name} data-put={r.put?.instrument_name}>
        {sideCells(r.call, 'call', cols, callT, callOwn, indexRef)}
        <td class="strike">{fmt.strike(r.strike)}</td>
        {sideCells(r.put, 'put', cols, putT, putOwn, indexRef)}
      </tr>
    );
  },
  // equal when everything shown is: a new ticker object whose shown values are the same is no change
  (a, b) =>
    a.r === b.r && a.cols === b.cols && a.cls === b.cls && a.callOwn === b.callOwn && a.putOwn === b.putOwn && a.indexRef === b.indexRef && shownKey(a.callT) === shownKey(b.callT) && shownKey(a.putT) === shownKey(b.putT),
);

type Col = 'own' | 'volume' | 'last' | 'oi' | 'delta' | 'iv' | 'mark' | 'bidSize' | 'bidIv' | 'bid' | 'ask' | 'askIv' | 'askSize';
/** A call's columns from the outside in; a put's are the mirror image. */
const WIDE_COLS: Col[] = ['own', 'volume', 'last', 'oi', 'delta', 'iv', 'mark', 'bidSize', 'bidIv', 'bid', 'ask', 'askIv', 'askSize'];
/** Below 1440 px: the last price stays, open interest and volume go (their digits were cut at 1280). */
const MEDIUM_COLS: Col[] = WIDE_COLS.filter((k) => k !== 'oi' && k !== 'volume');
const NARROW_COLS: Col[] = ['own', 'bid', 'ask'];
const HEAD: Record<Col, string> = { own: 'Own', volume: 'Vol', last: 'Last', oi: 'OI', delta: 'Δ', iv: 'Mark IV', mark: 'Mark', bidSize: 'Size', bidIv: 'Bid IV', bid: 'Bid', ask: 'Ask', askIv: 'Ask IV', askSize: 'Size' };
/** The Open link and the own marks side by side; on a phone the marks go under the link (styles.css). */
const OWN_WIDTH = 64;
const OWN_WIDTH_NARROW = 44;

interface Row {
  strike: number;
  call?: Instrument;
  put?: Instrument;
}

/**
 * Moves the latest tickers of up to ROWS_PER_FRAME rows whose shown values changed into `shown`:
 * the rows on screen first, then the others from the nearest. True when changed rows are left.
 */
export function nextRows(rows: Row[], latest: Map<string, Ticker>, shown: Map<string, Ticker>, tbody: HTMLElement | null): boolean {
  const changed = (i: Instrument | undefined) => {
    if (!i) return false;
    const t = latest.get(i.instrument_name);
    return t !== undefined && t !== shown.get(i.instrument_name) && (!shown.has(i.instrument_name) || shownKey(t) !== shownKey(shown.get(i.instrument_name)));
  };
  const dirty: number[] = [];
  rows.forEach((r, k) => {
    if (changed(r.call) || changed(r.put)) dirty.push(k);
    else {
      // a new ticker that shows the same: kept, so its row is not looked at again
      for (const i of [r.call, r.put]) if (i && latest.has(i.instrument_name)) shown.set(i.instrument_name, latest.get(i.instrument_name)!);
    }
  });
  if (dirty.length === 0) return false;
  // the middle of the screen, in rows (rows are of one height)
  let centre = rows.length / 2;
  if (tbody && rows.length > 0) {
    const box = tbody.getBoundingClientRect();
    const h = box.height / rows.length;
    if (h > 0) centre = (innerHeight / 2 - box.top) / h;
  }
  dirty.sort((a, b) => Math.abs(a - centre) - Math.abs(b - centre));
  for (const k of dirty.slice(0, ROWS_PER_FRAME)) {
    for (const i of [rows[k].call, rows[k].put]) if (i && latest.has(i.instrument_name)) shown.set(i.instrument_name, latest.get(i.instrument_name)!);
  }
  return dirty.length > ROWS_PER_FRAME;
}

export function ChainScreen({ currency, expiry }: { currency: string; expiry: number | null }) {
  const byExpiry = useInstruments(currency);
  const index = useIndex(currency);
  const own = useOwn(currency);
  const epoch = useEpoch();
  // the latest ticker of each series, and the one its row shows (moved over ROWS_PER_FRAME rows a frame)
  const tickers = useRef(new Map<string, Ticker>());
  const shown = useRef(new Map<string, Ticker>());
  const tbody = useRef<HTMLTableSectionElement>(null);
  const rowsRef = useRef<Row[]>([]);
  const redraw = useThrottledRedraw(250, () => nextRows(rowsRef.current, tickers.current, shown.current, tbody.current));
  const [trades, setTrades] = useState<PublicTrade[]>([]);
  const [clockReady, setClockReady] = useState(false);
  useEffect(() => void syncClock().then(() => setClockReady(true)), []);

  const expiries = byExpiry ? [...byExpiry.keys()] : [];
  const selected = expiry !== null && byExpiry?.has(expiry) ? expiry : (expiries[0] ?? null);
  const series = (selected !== null && byExpiry?.get(selected)) || [];

  const rows = useMemo(() => {
    const m = new Map<number, Row>();
    for (const i of series) {
      const r = m.get(i.strike) ?? { strike: i.strike };
      if (i.option_type === 'call') r.call = i;
      else r.put = i;
      m.set(i.strike, r);
    }
    return [...m.values()].sort((a, b) => a.strike - b.strike);
  }, [series]);
  rowsRef.current = rows;

  // tickers: the live channel, which starts with the current ticker (also after a reconnect)
  useEffect(() => {
    if (series.length === 0) return;
    const names = series.map((i) => i.instrument_name);
    const onTicker = (d: unknown) => {
      const t = d as Ticker;
      tickers.current.set(t.instrument_name, t);
      redraw();
    };
    // a ticker subscription answers with the current ticker at once: no request per series (a
    // chain of 140 series would spend more than the default burst of rate-limit credits)
    const unsubs = names.map((n) => live.subscribe(`ticker.${n}.100ms`, onTicker));
    return () => {
      for (const u of unsubs) u();
    };
  }, [series, epoch]);

  // recent trades of the currency: the last 20 public trades, newest first
  useEffect(() => {
    let alive = true;
    void call<{ trades: PublicTrade[] }>('public/get_last_trades_by_currency', { currency, kind: 'option', count: 20, sorting: 'desc' }).then((r) => alive && setTrades(r.trades), () => undefined);
    return () => void (alive = false);
  }, [currency, epoch]);
  useChannel(`trades.option.${currency}.100ms`, (d) => setTrades((prev) => [...(d as PublicTrade[]).slice().reverse(), ...prev].slice(0, 20)));

  const atm = index !== null && rows.length > 0 ? rows.reduce((best, r) => (Math.abs(r.strike - index) < Math.abs(best.strike - index) ? r : best)).strike : null;
  const go = (e: number) => navigate(`/chain/${currency}?expiry=${e}`);
  const now = serverNow();
  const narrow = useNarrow();
  const stale = useStale();
  // a phone shows what a trade needs (bid, ask, own marks and the way in); the rest on wide screens
  const full = useMedia('(min-width: 1440px)');
  const cols: Col[] = narrow ? NARROW_COLS : full ? WIDE_COLS : MEDIUM_COLS;
  const n = cols.length;
  const complete = series.length > 0 && series.every((i) => shown.current.has(i.instrument_name));

  const indexRef = useRef<number | null>(null);
  indexRef.current = index;
  // on opening an expiry the at-the-money strike is brought to the middle of the screen, once
  const centred = useRef<string | null>(null);
  useEffect(() => {
    const key = `${currency}:${selected}`;
    if (atm === null || centred.current === key) return;
    centred.current = key;
    document.querySelector(`table.chain tr[data-strike="${atm}"]`)?.scrollIntoView({ block: 'center' });
  }, [atm, currency, selected]);
  return (
    <div class="row">
      <div class="grow chain-main">
        <div class="panel">
          <div class="row" style="align-items:center;justify-content:space-between">
            <h1>
              {currency} options {selected !== null && <span class="muted">{fmt.expiryCode(selected)}</span>}
            </h1>
            <StrategyToggle />
            <span aria-label="Index" data-index={index ?? ''}>
              Index {currency.toLowerCase()}_usd <b class="num">{fmt.usd(index)}</b>
            </span>
          </div>
          <div class="tabs" role="tablist" aria-label="Expiries">
            {expiries.map((e) => (
              <button key={e} role="tab" type="button" aria-selected={e === selected} onClick={() => go(e)}>
                {fmt.expiryCode(e)}
                <small>{clockReady ? fmt.timeToExpiry(e, now) : ''}</small>
              </button>
            ))}
          </div>
          <table class={`chain fixed ${narrow ? 'narrow' : full ? 'wide' : 'medium'}${stale ? ' stale' : ''}`} aria-label="Option chain" data-complete={complete ? 'true' : 'false'} data-stale={stale ? 'true' : undefined}>
            <colgroup>
              {cols.map((k) => <col key={`c${k}`} style={k === 'own' ? `width:${narrow ? OWN_WIDTH_NARROW : OWN_WIDTH}px` : ''} />)}
              <col style={`width:${narrow ? 64 : 80}px`} />
              {[...cols].reverse().map((k) => <col key={`p${k}`} style={k === 'own' ? `width:${narrow ? OWN_WIDTH_NARROW : OWN_WIDTH}px` : ''} />)}
            </colgroup>
            <thead>
              <tr>
                <th class="l" colSpan={n}>Calls</th>
                <th class="strike">Strike</th>
                <th colSpan={n}>Puts</th>
              </tr>
              <tr>
                {cols.map((k) => <th key={`ch${k}`} class={k === 'own' ? 'l' : ''}>{HEAD[k]}</th>)}
                <th class="strike">USD</th>
                {[...cols].reverse().map((k) => <th key={`ph${k}`}>{HEAD[k]}</th>)}
              </tr>
            </thead>
            <tbody ref={tbody}>
              {rows.map((r) => (
                <ChainRow
                  key={r.strike}
                  r={r}
                  cols={cols}
                  cls={[r.strike === atm ? 'atm' : '', index !== null && r.strike < index ? 'itm-call' : '', index !== null && r.strike > index ? 'itm-put' : ''].join(' ').trim()}
                  callT={r.call && shown.current.get(r.call.instrument_name)}
                  putT={r.put && shown.current.get(r.put.instrument_name)}
                  callOwn={r.call ? ownOf(r.call.instrument_name, own.positions, own.orders) : ''}
                  putOwn={r.put ? ownOf(r.put.instrument_name, own.positions, own.orders) : ''}
                  indexRef={indexRef}
                />
              ))}
            </tbody>
          </table>
          {!byExpiry && <p class="muted">Loading instruments…</p>}
        </div>
        <StrategyBuilder currency={currency} />
      </div>
      <div class="panel trades-side">
        <h2>Recent trades</h2>
        <table aria-label="Recent trades">
          <thead>
            <tr>
              <th class="l">Instrument</th>
              <th>Price</th>
              <th>Amount</th>
            </tr>
          </thead>
          <tbody>
            {trades.map((t) => (
              <tr key={t.trade_id} data-trade-id={t.trade_id}>
                <td class={`l ${t.direction === 'buy' ? 'bid' : 'ask'}`}>{t.instrument_name}</td>
                <td>{fmt.price(t.price)}</td>
                <td>{fmt.amount(t.amount)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {trades.length === 0 && <p class="muted">No trades yet.</p>}
      </div>
    </div>
  );
}
