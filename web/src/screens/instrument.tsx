// One instrument: the order book ladder (depth 20, cumulative sizes, own orders marked) rebuilt from
// `book.{instrument}.100ms` (lib/book.ts; a gap re-subscribes for a fresh snapshot), recent trades,
// a price chart (candles from get_tradingview_chart_data, the mark from get_mark_price_history),
// the greeks from the ticker, and the order ticket (a click on a level fills it in).
import { useEffect, useRef, useState } from 'preact/hooks';
import { CandlestickSeries, ColorType, LineSeries, createChart, type IChartApi, type ISeriesApi, type UTCTimestamp } from 'lightweight-charts';
import { Book, type BookMessage } from '../lib/book.ts';
import * as fmt from '../lib/format.ts';
import { serverNow, syncClock } from '../lib/clock.ts';
import { live, useChannel, useEpoch, useStale } from '../lib/live.ts';
import { call } from '../lib/rpc.ts';
import { fillTicket, useTicket } from '../lib/ticketStore.ts';
import type { PublicTrade, Ticker } from '../lib/types.ts';
import { useFrameRedraw, useIndex, useOwn } from './chain.tsx';
import { OrderTicket } from './ticket.tsx';
import { OwnPanel } from './instrumentOwn.tsx';
import { DepthChart } from './depth.tsx';
import { themeColor } from '../lib/theme.ts';

function Ladder({ name, ownPrices }: { name: string; ownPrices: Set<number> }) {
  const book = useRef(new Book(name));
  const [, redraw] = useFrameRedraw();
  const channel = `book.${name}.100ms`;
  useEffect(() => {
    book.current = new Book(name);
    redraw();
  }, [name]);
  useChannel(channel, (d) => {
    if (book.current.apply(d as BookMessage) === 'gap') void live.resnapshot(channel).catch(() => undefined);
    redraw();
  });
  const stale = useStale();
  const b = book.current;
  const asks = b.askLadder(20);
  const bids = b.bidLadder(20);
  const maxCum = Math.max(asks.at(-1)?.cumulative ?? 0, bids.at(-1)?.cumulative ?? 0, 1e-9);
  // the keyboard's level: ArrowUp/ArrowDown move it (from the best ask / best bid), Enter fills the
  // ticket there as a click does, Esc lets it go. Held by side and price, so it stays put as the book moves.
  const [cursor, setCursor] = useState<{ side: 'bid' | 'ask'; price: number } | null>(null);
  const levels: { side: 'bid' | 'ask'; price: number }[] = [...asks.map((r) => ({ side: 'ask' as const, price: r.price })).reverse(), ...bids.map((r) => ({ side: 'bid' as const, price: r.price }))];
  const at = cursor ? levels.findIndex((l) => l.side === cursor.side && l.price === cursor.price) : -1;
  const fill = (side: 'bid' | 'ask', price: number) => fillTicket({ instrument: name, side: side === 'ask' ? 'buy' : 'sell', price });
  const onKey = (e: KeyboardEvent) => {
    if (e.ctrlKey || e.metaKey || e.altKey || levels.length === 0) return;
    let next = -1;
    if (e.key === 'ArrowUp') next = at < 0 ? Math.max(asks.length - 1, 0) : Math.max(at - 1, 0);
    else if (e.key === 'ArrowDown') next = at < 0 ? Math.min(asks.length, levels.length - 1) : Math.min(at + 1, levels.length - 1);
    else if (e.key === 'Enter' && at >= 0) {
      e.preventDefault();
      fill(levels[at].side, levels[at].price);
      return;
    } else if (e.key === 'Escape' && cursor) {
      setCursor(null);
      return;
    } else return;
    e.preventDefault();
    setCursor(levels[next]);
    document.getElementById(`lvl-${levels[next].side}-${levels[next].price}`)?.scrollIntoView({ block: 'nearest' });
  };
  const row = (r: { price: number; amount: number; cumulative: number }, side: 'bid' | 'ask') => {
    const selected = cursor !== null && cursor.side === side && cursor.price === r.price;
    return (
      <tr
        key={`${side}${r.price}`}
        id={`lvl-${side}-${r.price}`}
        class={`${side}row${ownPrices.has(r.price) ? ' own' : ''}${selected ? ' cursor' : ''}`}
        data-side={side}
        data-price={r.price}
        data-amount={r.amount}
        aria-selected={selected ? 'true' : undefined}
        onClick={() => (setCursor({ side, price: r.price }), fill(side, r.price))}
        style="cursor:pointer"
        title={`${side === 'ask' ? 'Buy' : 'Sell'} at ${r.price}`}
      >
        <td class={`price ${side}`}>{fmt.price(r.price)}</td>
        <td>{fmt.amount(r.amount)}</td>
        <td>
          <span class="depthbar" style={`width:${(100 * r.cumulative) / maxCum}%`} />
          {fmt.amount(r.cumulative)}
        </td>
      </tr>
    );
  };
  return (
    <div class="panel ladder-panel">
      <h2>Order book {stale && <span class="stale-tag">stale: reconnecting</span>}</h2>
      <table
        class={`ladder fixed${stale ? ' stale' : ''}`}
        aria-label="Order book"
        aria-activedescendant={at >= 0 ? `lvl-${levels[at].side}-${levels[at].price}` : undefined}
        tabIndex={0}
        onKeyDown={onKey}
        data-change-id={b.changeId ?? ''}
        data-stale={stale ? 'true' : undefined}
      >
        <thead>
          <tr>
            <th>Price</th>
            <th>Size</th>
            <th>Total</th>
          </tr>
        </thead>
        <tbody>
          {asks
            .slice()
            .reverse()
            .map((r) => row(r, 'ask'))}
          <tr class="spreadrow">
            <td colSpan={3}>{b.ready ? (asks[0] && bids[0] ? `spread ${fmt.price(asks[0].price - bids[0].price)}` : 'one-sided book') : 'loading…'}</td>
          </tr>
          {bids.map((r) => row(r, 'bid'))}
        </tbody>
      </table>
      <p class="muted hint">↑ ↓ choose a level, Enter fills the ticket</p>
      <DepthChart bids={bids} asks={asks} />
    </div>
  );
}

function Trades({ name }: { name: string }) {
  const epoch = useEpoch();
  const [trades, setTrades] = useState<PublicTrade[]>([]);
  useEffect(() => {
    let alive = true;
    void call<{ trades: PublicTrade[] }>('public/get_last_trades_by_instrument', { instrument_name: name, count: 30, sorting: 'desc' }).then((r) => alive && setTrades(r.trades), () => undefined);
    return () => void (alive = false);
  }, [name, epoch]);
  useChannel(`trades.${name}.100ms`, (d) => setTrades((prev) => [...(d as PublicTrade[]).slice().reverse(), ...prev].slice(0, 30)));
  return (
    <div class="panel">
      <h2>Recent trades</h2>
      <table aria-label="Trades">
        <thead>
          <tr>
            <th class="l">Time (UTC)</th>
            <th>Price</th>
            <th>Amount</th>
          </tr>
        </thead>
        <tbody>
          {trades.map((t) => (
            <tr key={t.trade_id} data-trade-id={t.trade_id}>
              <td class="l muted">{fmt.utc(t.timestamp).slice(11)}</td>
              <td class={t.direction === 'buy' ? 'bid' : 'ask'}>{fmt.price(t.price)}</td>
              <td>{fmt.amount(t.amount)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {trades.length === 0 && <p class="muted">No trades yet.</p>}
    </div>
  );
}

interface Candles {
  ticks: number[];
  open: number[];
  high: number[];
  low: number[];
  close: number[];
}

function Chart({ name }: { name: string }) {
  const el = useRef<HTMLDivElement>(null);
  const chart = useRef<IChartApi | null>(null);
  const indexLine = useRef<ISeriesApi<'Line'> | null>(null);
  const markLine = useRef<ISeriesApi<'Line'> | null>(null);
  const candleSeries = useRef<ISeriesApi<'Candlestick'> | null>(null);
  /** The newest candle, extended by live trades of its five minutes (or a new one started). */
  const lastCandle = useRef<{ time: number; open: number; high: number; low: number; close: number } | null>(null);
  useChannel(`trades.${name}.100ms`, (d) => {
    for (const t of d as PublicTrade[]) {
      const time = Math.floor(t.timestamp / 300_000) * 300;
      const c = lastCandle.current;
      const next = c && c.time === time ? { ...c, high: Math.max(c.high, t.price), low: Math.min(c.low, t.price), close: t.price } : { time, open: t.price, high: t.price, low: t.price, close: t.price };
      if (c && time < c.time) continue;
      lastCandle.current = next;
      try {
        candleSeries.current?.update({ ...next, time: next.time as UTCTimestamp });
      } catch {
        // an update older than the chart's last bar: skipped
      }
    }
  });
  useChannel(`ticker.${name}.100ms`, (d) => {
    const x = d as Ticker & { timestamp: number };
    try {
      markLine.current?.update({ time: Math.floor(x.timestamp / 1000) as UTCTimestamp, value: x.mark_price });
    } catch {
      // older than the last point
    }
  });
  // the index (USD, left scale) from the moment the page opened: the API keeps no index history
  useChannel(`deribit_price_index.${name.split('-')[0].toLowerCase()}_usd`, (d) => {
    const x = d as { price: number; timestamp: number };
    try {
      indexLine.current?.update({ time: Math.floor(x.timestamp / 1000) as UTCTimestamp, value: x.price });
    } catch {
      // a tick older than the last point (after a reconnect): the chart keeps the newer one
    }
  });
  const epoch = useEpoch();
  const [note, setNote] = useState('');
  useEffect(() => {
    if (!el.current) return;
    const c = createChart(el.current, {
      autoSize: true,
      // the library's logo brings an inline <style>, which the CSP refuses: the attribution its
      // licence asks for is the link under the chart instead
      layout: { background: { type: ColorType.Solid, color: themeColor('--panel') }, textColor: themeColor('--muted'), attributionLogo: false },
      grid: { vertLines: { color: themeColor('--grid') }, horzLines: { color: themeColor('--grid') } },
      timeScale: { timeVisible: true },
      leftPriceScale: { visible: true },
      rightPriceScale: { visible: true },
      // the grid follows the default scale: the index's USD axis, whose round numbers suit a grid
      defaultVisiblePriceScaleId: 'left',
    });
    el.current.dataset.gridScale = c.options().defaultVisiblePriceScaleId;
    chart.current = c;
    return () => {
      c.remove();
      chart.current = null;
    };
  }, []);
  useEffect(() => {
    const c = chart.current;
    if (!c) return;
    let alive = true;
    // option prices are a few hundredths of a coin on a 0.0001 tick: two decimals would read 0.01
    const coinFormat = { type: 'price', precision: 4, minMove: 0.0001 } as const;
    const candles = c.addSeries(CandlestickSeries, { upColor: '#3fb68b', downColor: '#ff6b6b', borderVisible: false, wickUpColor: '#3fb68b', wickDownColor: '#ff6b6b', priceScaleId: 'right', priceFormat: coinFormat });
    const mark = c.addSeries(LineSeries, { color: '#4ea1ff', lineWidth: 2, priceScaleId: 'right', priceFormat: coinFormat });
    if (el.current) el.current.dataset.coinPrecision = String((mark.options().priceFormat as { precision: number }).precision);
    const index = c.addSeries(LineSeries, { color: '#f0b429', lineWidth: 1, priceScaleId: 'left' });
    indexLine.current = index;
    markLine.current = mark;
    candleSeries.current = candles;
    void syncClock().then(async () => {
      const end = serverNow();
      const start = end - 86_400_000;
      const [tv, marks] = await Promise.all([
        call<Candles>('public/get_tradingview_chart_data', { instrument_name: name, start_timestamp: start, end_timestamp: end, resolution: 5 }),
        call<[number, number][]>('public/get_mark_price_history', { instrument_name: name, start_timestamp: start, end_timestamp: end }),
      ]);
      if (!alive) return;
      const bars = tv.ticks.map((t, k) => ({ time: t / 1000, open: tv.open[k], high: tv.high[k], low: tv.low[k], close: tv.close[k] }));
      candles.setData(bars.map((b) => ({ ...b, time: b.time as UTCTimestamp })));
      lastCandle.current = bars.at(-1) ?? null;
      // one point per time: the chart refuses repeated times
      const seen = new Set<number>();
      mark.setData(marks.filter(([t]) => !seen.has(Math.floor(t / 1000)) && seen.add(Math.floor(t / 1000))).map(([t, p]) => ({ time: Math.floor(t / 1000) as UTCTimestamp, value: p })));
      setNote(`five-minute candles of trades and the mark, last 24 h, then live (${tv.ticks.length} candles, ${marks.length} mark points at load)`);
      c.timeScale().fitContent();
    }).catch(() => setNote('chart data unavailable'));
    return () => {
      alive = false;
      // leaving the page runs the chart's own clean-up first (it was declared first): its series
      // went with it, and removing them again throws inside the library
      if (chart.current === c) {
        c.removeSeries(candles);
        c.removeSeries(mark);
        c.removeSeries(index);
      }
      indexLine.current = null;
      markLine.current = null;
      candleSeries.current = null;
      lastCandle.current = null;
    };
  }, [name, epoch]);
  return (
    <div class="panel">
      <h2>Price: trades (candles), mark (blue, coin) and index (yellow, USD)</h2>
      <div ref={el} class="chart" aria-label="Price chart" />
      <p class="muted">
        {note}. Chart by{' '}
        <a href="https://www.tradingview.com/" rel="noopener noreferrer" target="_blank">
          TradingView Lightweight Charts
        </a>
        .
      </p>
    </div>
  );
}

function Greeks({ name }: { name: string }) {
  const epoch = useEpoch();
  const [t, setT] = useState<Ticker | null>(null);
  useEffect(() => {
    void call<Ticker>('public/ticker', { instrument_name: name }).then(setT, () => undefined);
  }, [name, epoch]);
  useChannel(`ticker.${name}.100ms`, (d) => setT(d as Ticker));
  const stale = useStale();
  const g = t?.greeks;
  return (
    <div class="panel">
      <h2>Ticker and greeks {stale && <span class="stale-tag">stale: reconnecting</span>}</h2>
      <dl class={`kv${stale ? ' stale' : ''}`} aria-label="Greeks" data-stale={stale ? 'true' : undefined}>
        <dt>Mark</dt>
        <dd data-field="mark">{fmt.price(t?.mark_price)}</dd>
        <dt>Mark IV</dt>
        <dd>{fmt.iv(t?.mark_iv)}</dd>
        <dt>Index</dt>
        <dd>{fmt.usd(t?.index_price)}</dd>
        <dt>Best bid / ask</dt>
        <dd>
          {fmt.price(t?.best_bid_price)} / {fmt.price(t?.best_ask_price)}
        </dd>
        {/* units as API.md section 7.2 gives them, per contract */}
        <dt>Delta (coin)</dt>
        <dd>{fmt.greek(g?.delta, 4)}</dd>
        <dt>Gamma (per USD)</dt>
        <dd>{fmt.greek(g?.gamma, 6)}</dd>
        <dt>Vega (USD per 1% vol)</dt>
        <dd>{fmt.greek(g?.vega, 2)}</dd>
        <dt>Theta (USD per day)</dt>
        <dd>{fmt.greek(g?.theta, 2)}</dd>
        <dt>Rho (USD per 1% rate)</dt>
        <dd>{fmt.greek(g?.rho, 2)}</dd>
        <dt>Open interest</dt>
        <dd>{fmt.amount(t?.open_interest)}</dd>
        <dt>Price band</dt>
        <dd>
          {fmt.price(t?.min_price)} – {fmt.price(t?.max_price)}
        </dd>
      </dl>
    </div>
  );
}

export function InstrumentScreen({ name }: { name: string }) {
  const currency = name.split('-')[0];
  const own = useOwn(currency);
  const index = useIndex(currency);
  const ticket = useTicket();
  const ownPrices = new Set((own.orders.get(name) ?? []).map((o) => o.price));
  const pos = own.positions.get(name);
  // B and S turn the ticket to a buy or a sell (and put the cursor in its amount), unless typing
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      if (e.ctrlKey || e.metaKey || e.altKey || (t && /^(INPUT|SELECT|TEXTAREA)$/.test(t.tagName))) return;
      const side = e.key === 'b' || e.key === 'B' ? 'buy' : e.key === 's' || e.key === 'S' ? 'sell' : null;
      if (!side) return;
      e.preventDefault();
      fillTicket({ instrument: name, side, price: null });
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [name]);
  return (
    <>
      <h1>
        {name} <span class="muted">index {fmt.usd(index)}</span> {pos ? <span class="muted">position {fmt.amount(pos)}</span> : null}
      </h1>
      <div class="row">
        <Ladder name={name} ownPrices={ownPrices} />
        <div class="grow">
          <Chart name={name} />
          <div class="row">
            <div class="grow">
              <Trades name={name} />
            </div>
            <Greeks name={name} />
          </div>
        </div>
        <div class="ticket-col">
          <OrderTicket instrument={name} fill={ticket.fill} version={ticket.version} />
          <OwnPanel name={name} />
        </div>
      </div>
    </>
  );
}
