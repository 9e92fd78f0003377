// The events of one durable batch as messages for an external stream (NATS JetStream, read by the
// gateways of src/gateway/): rendered once per batch, whatever the number of subscribers anywhere.
//
// Subjects (`<p>` is the prefix, `strikebook` by default; docs/operations.md lists them):
//   <p>.public.book.<instrument>    the book's raw `change` (Deribit `book.X.raw` data), chained by
//                                   prev_change_id; one per batch that moved the book
//   <p>.public.trades.<instrument>  the batch's public trades in that instrument (array)
//   <p>.public.index.<currency>     `deribit_price_index` data, when an index command committed
//   <p>.private.<user id>           { orders, trades, positions } of one user in the batch: the
//                                   order objects at the end of the batch, the user's trades, the
//                                   positions in the instruments they traded (user.changes)
// Public data is exactly what the hub sends on the matching channel, so a gateway only frames it.
import type { CurrencyCode } from '../../domain/currency.ts';
import { priceToNumber, type Instrument } from '../../domain/instrument.ts';
import type { Exchange } from '../../engine/exchange.ts';
import { BUY, SELL } from '../../engine/orderBook.ts';
import type { TriggerOrder } from '../../engine/triggers.ts';
import type { Order, Trade } from '../../engine/types.ts';
import { renderPosition } from '../methods/account.ts';
import { renderOrder, renderPublicTrade, renderUserTrade } from '../render.ts';

/** What one durable batch touched (collected by the hub's engine observer). */
export interface BatchTouched {
  trades: readonly Trade[];
  orders: ReadonlySet<Order | TriggerOrder>;
  /** currencies whose index moved */
  currencies: ReadonlySet<CurrencyCode>;
}

export interface EventMessage {
  subject: string;
  data: string;
}

interface L2 {
  changeId: number;
  bids: Map<number, number>;
  asks: Map<number, number>;
}

const INDEX_NAMES: Record<string, string> = { BTC: 'btc_usd', ETH: 'eth_usd' };

function lotsAmount(inst: Instrument, lots: number): number {
  return Number(((lots * inst.lotScaled) / 1e8).toFixed(8));
}

export class StreamEvents {
  /** The L2 book last published per instrument id: the next change is diffed against it. */
  private readonly books = new Map<number, L2>();

  constructor(
    private readonly ex: Exchange,
    readonly prefix: string,
  ) {
    for (const m of ex.markets.values()) this.books.set(m.inst.id, this.levelsOf(m.inst, m.changeId));
  }

  private levelsOf(inst: Instrument, changeId: number): L2 {
    const book = this.ex.books.get(inst.id)!;
    return { changeId, bids: new Map(book.depth(BUY, Number.MAX_SAFE_INTEGER)), asks: new Map(book.depth(SELL, Number.MAX_SAFE_INTEGER)) };
  }

  /** The messages of one durable batch, in a fixed order (books, trades, index, private). */
  render(batch: BatchTouched): EventMessage[] {
    const ex = this.ex;
    const out: EventMessage[] = [];
    // every market is checked, not only those the observer saw: settlement and listings move books
    // without an order event; a few hundred integer compares per batch
    for (const m of ex.markets.values()) {
      let st = this.books.get(m.inst.id);
      if (st === undefined) {
        // listed since: its book started empty at change id 0
        st = { changeId: 0, bids: new Map(), asks: new Map() };
        this.books.set(m.inst.id, st);
      }
      if (m.changeId === st.changeId) continue;
      const next = this.levelsOf(m.inst, m.changeId);
      const data = {
        type: 'change',
        timestamp: ex.now,
        instrument_name: m.inst.name,
        prev_change_id: st.changeId,
        change_id: m.changeId,
        bids: diff(m.inst, st.bids, next.bids, true),
        asks: diff(m.inst, st.asks, next.asks, false),
      };
      this.books.set(m.inst.id, next);
      out.push({ subject: `${this.prefix}.public.book.${m.inst.name}`, data: JSON.stringify(data) });
    }
    const tradesByInst = new Map<Instrument, Trade[]>();
    for (const t of batch.trades) {
      let a = tradesByInst.get(t.inst);
      if (!a) tradesByInst.set(t.inst, (a = []));
      a.push(t);
    }
    for (const [inst, ts] of tradesByInst) out.push({ subject: `${this.prefix}.public.trades.${inst.name}`, data: JSON.stringify(ts.map(renderPublicTrade)) });
    for (const c of batch.currencies) {
      const idx = ex.index[c];
      if (idx) out.push({ subject: `${this.prefix}.public.index.${c}`, data: JSON.stringify({ index_name: INDEX_NAMES[c], price: idx.price, timestamp: idx.ts }) });
    }
    // private: per user, orders (by id) and trades (each once, as the user's side)
    const perUser = new Map<number, { orders: Array<Order | TriggerOrder>; trades: Trade[] }>();
    const entry = (u: number) => {
      let e = perUser.get(u);
      if (!e) perUser.set(u, (e = { orders: [], trades: [] }));
      return e;
    };
    for (const o of batch.orders) entry(o.userId).orders.push(o);
    for (const t of batch.trades) {
      entry(t.makerOrder.userId).trades.push(t);
      if (t.takerOrder.userId !== t.makerOrder.userId) entry(t.takerOrder.userId).trades.push(t);
    }
    for (const [uid, e] of perUser) {
      const user = ex.users.get(uid);
      if (!user) continue;
      e.orders.sort((a, b) => a.id - b.id);
      const traded = new Set<Instrument>();
      for (const t of e.trades) traded.add(t.inst);
      const data = {
        orders: e.orders.map(renderOrder),
        trades: e.trades.map((t) => renderUserTrade(t, uid)),
        positions: [...traded].map((inst) => renderPosition(ex, user, inst)),
      };
      out.push({ subject: `${this.prefix}.private.${uid}`, data: JSON.stringify(data) });
    }
    return out;
  }
}

/** Deribit book change entries between two L2 states, best price first. */
function diff(inst: Instrument, before: Map<number, number>, after: Map<number, number>, desc: boolean): Array<[string, number, number]> {
  const out: Array<[string, number, number, number]> = [];
  for (const [p, q] of after) {
    const old = before.get(p);
    if (old === undefined) out.push(['new', priceToNumber(p), lotsAmount(inst, q), p]);
    else if (old !== q) out.push(['change', priceToNumber(p), lotsAmount(inst, q), p]);
  }
  for (const p of before.keys()) if (!after.has(p)) out.push(['delete', priceToNumber(p), 0, p]);
  out.sort((a, b) => (desc ? b[3] - a[3] : a[3] - b[3]));
  return out.map(([a, p, q]) => [a, p, q]);
}
