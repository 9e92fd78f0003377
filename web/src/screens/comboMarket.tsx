// A combo's market in the strategy builder (issue 34): its order book from `book.{combo}.100ms`
// (lib/book.ts; a click on a level fills the combo ticket) and its ticker (`ticker.{combo}.100ms`:
// mark, last, band; live through a stream gateway too. From a server that leaves these channels out
// of its subscribe answer (a gateway older than the combo stream events), public/get_order_book and
// public/ticker are asked every second instead), the order ticket
// for the combo (the ordinary private/buy|sell with its name), the user's combo orders and the combo fills. Fills are the user's leg trades carrying this `combo_id`, one row per `combo_trade_id`, at the
// net price (the sum of ratio x leg price, worked in integer ticks). Combo orders are those this
// screen placed plus what `get_open_orders_by_instrument`, `get_order_history_by_instrument`,
// `get_order_state` and
// `user.orders.{combo}.raw` tell of them; a server that keeps combo orders out of its account views
// tells nothing, and the fills after an order are then counted as its fills.
import { useEffect, useRef, useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { Book, type BookMessage, type Level, type LevelChange } from '../lib/book.ts';
import { live, priv, useChannel, useEpoch, useReloadOn } from '../lib/live.ts';
import { errorText } from '../lib/rpc.ts';
import { comboFills, inferFilled, type ComboRecord, type LegTrade } from '../lib/strategy.ts';
import type { TicketFill } from '../lib/ticketStore.ts';
import type { Order, Ticker } from '../lib/types.ts';
import { useFrameRedraw } from './chain.tsx';
import { OrderTicket } from './ticket.tsx';

/** How often a combo's book and ticker are asked when the server will not stream them. */
const COMBO_POLL_MS = 1000;

function ComboBook({ id, onLevel }: { id: string; onLevel: (side: 'buy' | 'sell', price: number) => void }) {
  const book = useRef(new Book(id));
  const [, redraw] = useFrameRedraw();
  const channel = `book.${id}.100ms`;
  useEffect(() => {
    book.current = new Book(id);
    redraw();
  }, [id]);
  const bookRefused = useChannel(channel, (d) => {
    if (book.current.apply(d as BookMessage) === 'gap') void live.resnapshot(channel).catch(() => undefined);
    redraw();
  });
  // the combo's ticker: its mark (the net of the legs' marks), band and last trade
  const [t, setT] = useState<Ticker | null>(null);
  const tickerRefused = useChannel(`ticker.${id}.100ms`, (d) => {
    setT(d as Ticker);
  });
  // a channel left out of the subscribe answer (an older stream gateway carried no combo book): asked every
  // second while this is shown, each answer taken as a fresh snapshot
  useEffect(() => {
    if (!bookRefused && !tickerRefused) return;
    let alive = true;
    const poll = () => {
      if (document.hidden) return; // a tab in the background asks nothing
      if (bookRefused) {
        void live.request<{ change_id: number; bids: Level[]; asks: Level[] }>('public/get_order_book', { instrument_name: id, depth: 5 }).then((r) => {
          if (!alive) return;
          const level = ([p, a]: Level): LevelChange => ['new', p, a];
          book.current.apply({ type: 'snapshot', instrument_name: id, change_id: r.change_id, bids: r.bids.map(level), asks: r.asks.map(level) });
          redraw();
        }, () => undefined);
      }
      if (tickerRefused) void live.request<Ticker>('public/ticker', { instrument_name: id }).then((x) => alive && setT(x), () => undefined);
    };
    poll();
    const every = setInterval(poll, COMBO_POLL_MS);
    return () => {
      alive = false;
      clearInterval(every);
    };
  }, [id, bookRefused, tickerRefused]);
  const b = book.current;
  const asks = b.askLadder(5).reverse();
  const bids = b.bidLadder(5);
  const row = (r: { price: number; amount: number }, side: 'bid' | 'ask') => (
    <tr key={`${side}${r.price}`} class={`${side}row click`} data-side={side} data-price={r.price} data-amount={r.amount} title={`${side === 'ask' ? 'Buy' : 'Sell'} the combo at ${fmt.fixed(r.price, 4)}`} onClick={() => onLevel(side === 'ask' ? 'buy' : 'sell', r.price)}>
      <td class={side}>{fmt.fixed(r.price, 4)}</td>
      <td>{fmt.amount(r.amount)}</td>
    </tr>
  );
  return (
    <div class="combo-book">
      <h3>Combo book</h3>
      <table class="ladder" aria-label="Combo book" data-ready={b.ready ? 'true' : 'false'}>
        <thead>
          <tr>
            <th class="l">Net price</th>
            <th>Amount</th>
          </tr>
        </thead>
        <tbody>
          {asks.map((r) => row(r, 'ask'))}
          {bids.map((r) => row(r, 'bid'))}
        </tbody>
      </table>
      {t && (
        <p class="muted num" aria-label="Combo ticker" data-mark={t.mark_price}>
          Mark {fmt.fixed(t.mark_price, 4)} · last {t.last_price == null ? '–' : fmt.fixed(t.last_price, 4)}
          <br />
          Band {fmt.fixed(t.min_price, 4)} to {fmt.fixed(t.max_price, 4)}
        </p>
      )}
      {!b.ready && <p class="muted">Waiting for the combo's book…</p>}
      {bookRefused && b.ready && <p class="muted" data-combo-polled="true">Not streamed here: read every second.</p>}
      {b.ready && asks.length === 0 && bids.length === 0 && <p class="muted">No orders on this combo yet.</p>}
    </div>
  );
}

/** The combo's book, ticket, the user's combo orders and fills. */
export function ComboMarket({ combo, currency, minTrade, initial }: { combo: ComboRecord; currency: string; minTrade: number; initial: TicketFill }) {
  const epoch = useEpoch();
  const [fill, setFill] = useState<TicketFill>(initial);
  const [version, setVersion] = useState(1);
  const [orders, setOrders] = useState(new Map<string, Order>());
  const [trades, setTrades] = useState<LegTrade[]>([]);
  const [error, setError] = useState<string | null>(null);
  const n = useReloadOn([`user.changes.option.${currency}.100ms`]);
  useEffect(() => {
    setFill(initial);
    setVersion((v) => v + 1);
  }, [initial.instrument, initial.side, initial.price, initial.amount]);

  const merge = (os: Order[]) => setOrders((prev) => {
    const m = new Map(prev);
    for (const o of os) if (o.instrument_name === combo.id) m.set(o.order_id, o);
    return m;
  });
  const ordersRef = useRef(orders);
  ordersRef.current = orders;
  // orders whose state the server would not tell (a server without combo orders in its account views)
  const [unread, setUnread] = useState(new Set<string>());
  // the open combo orders, the state of the ones shown open, and the fills, again after every change
  // of the user's options
  useEffect(() => {
    let alive = true;
    // asked on the socket: a server without combo orders in its account views refuses these, which
    // over HTTP the browser logs as a failed resource (the socket answers an error quietly)
    void live.request<Order[]>('private/get_open_orders_by_instrument', { instrument_name: combo.id }).then((os) => alive && merge(os), () => undefined);
    void live.request<Order[]>('private/get_order_history_by_instrument', { instrument_name: combo.id, count: 20 }).then((os) => alive && merge(os), () => undefined);
    for (const o of ordersRef.current.values()) {
      if (o.order_state !== 'open') continue;
      void live.request<Order>('private/get_order_state', { order_id: o.order_id }).then(
        (x) => alive && merge([x]),
        () => alive && setUnread((u) => (u.has(o.order_id) ? u : new Set(u).add(o.order_id))),
      );
    }
    void priv<{ trades: LegTrade[] }>('private/get_user_trades_by_currency', { currency, kind: 'option', count: 100, sorting: 'desc' }).then(
      (r) => alive && (setTrades(r.trades.filter((t) => t.combo_id === combo.id)), setError(null)),
      (e) => alive && setError(errorText(e)),
    );
    return () => void (alive = false);
  }, [combo.id, currency, epoch, n]);
  useChannel(`user.orders.${combo.id}.raw`, (d) => merge(Array.isArray(d) ? (d as Order[]) : [d as Order]));

  const fills = comboFills(combo, trades);
  // an order whose state could not be read is filled by the fills after it, oldest order first
  const guessed = inferFilled([...orders.values()].filter((o) => unread.has(o.order_id)), fills);
  const shownOrders = [...orders.values()].map((o) => {
    const filled = Math.max(o.filled_amount, guessed.get(o.order_id) ?? 0);
    return { ...o, filled_amount: filled, order_state: o.order_state === 'open' && filled >= o.amount ? 'filled' : o.order_state };
  }).sort((a, b) => b.creation_timestamp - a.creation_timestamp);

  return (
    <div class="combo-market row">
      <ComboBook
        id={combo.id}
        onLevel={(side, price) => {
          setFill({ instrument: combo.id, side, price, amount: fill.amount });
          setVersion((v) => v + 1);
        }}
      />
      <OrderTicket instrument={combo.id} fill={fill} version={version} combo={{ currency, minTrade }} onDone={(o) => o && merge([o])} />
      <div class="grow combo-own">
        <h3>Your combo orders</h3>
        <table aria-label="Combo orders">
          <thead>
            <tr>
              <th class="l">Side</th>
              <th>Price</th>
              <th>Filled</th>
              <th class="l">State</th>
            </tr>
          </thead>
          <tbody>
            {shownOrders.map((o) => (
              <tr key={o.order_id} data-order-id={o.order_id} data-state={o.order_state}>
                <td class={`l ${o.direction === 'buy' ? 'bid' : 'ask'}`}>{o.direction}</td>
                <td>{fmt.fixed(o.price, 4)}</td>
                <td>
                  {fmt.amount(o.filled_amount)}/{fmt.amount(o.amount)}
                </td>
                <td class="l">{o.order_state}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {shownOrders.length === 0 && <p class="muted">No combo orders yet.</p>}
        <h3>Combo fills</h3>
        <table aria-label="Combo fills">
          <thead>
            <tr>
              <th class="l">Side</th>
              <th>Amount</th>
              <th>Net price</th>
              <th class="l">Time</th>
            </tr>
          </thead>
          <tbody>
            {fills.map((f) => (
              <tr key={f.id} data-combo-trade-id={f.id} title={f.legs.map((t) => `${t.direction} ${fmt.amount(t.amount)} ${t.instrument_name} at ${fmt.price(t.price)}`).join('; ')}>
                <td class={`l ${f.direction === 'buy' ? 'bid' : 'ask'}`}>{f.direction}</td>
                <td>{fmt.amount(f.amount)}</td>
                <td>{fmt.fixed(f.price, 4)}</td>
                <td class="l">{fmt.utc(f.timestamp).slice(11, 19)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {fills.length === 0 && <p class="muted">No fills on this combo yet.</p>}
        {error && <p class="error">{error}</p>}
      </div>
    </div>
  );
}
