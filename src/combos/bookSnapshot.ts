// The combo books' part of the snapshot (issue 34; src/combos/book.ts): every combo order kept
// (open and recent closed), the open ones per book in time priority, the combo trades per combo,
// the books' change ids and the cancel-on-disconnect marks. The state hash reads this part as
// written, so its layout and every order in it are fixed (sorted by combo id or order id, never by
// a live map's history).
import type { Instrument } from '../domain/instrument.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { OrderBook, Side } from '../engine/orderBook.ts';
import { compactTradeIds, newOrder, tradeIdsOf, type Order, type Trade } from '../engine/types.ts';
import type { ComboTrade } from './book.ts';
import type { ComboRecord } from './combos.ts';

/** What the snapshot reads of the combo books. */
export interface ComboBooksView {
  nextTradeId: number;
  orders: ReadonlyMap<number, Order>;
  books: ReadonlyMap<string, OrderBook<Order>>;
  trades: ReadonlyMap<string, ComboTrade[]>;
  changeIds: ReadonlyMap<string, number>;
  /** open combo orders per user */
  openByUser: ReadonlyMap<number, ReadonlySet<Order>>;
}

/** What a restore writes into the combo books (ComboBooks.restore hands its own). */
export interface ComboBooksTarget {
  ex: Exchange;
  orders: Map<number, Order>;
  trades: Map<string, ComboTrade[]>;
  changeIds: Map<string, number>;
  setNextTradeId(n: number): void;
  /** the combo's book, made on first use */
  book(comboId: string): OrderBook<Order>;
  inst(r: ComboRecord): Instrument;
  /** an order rests (its holds and lots counted afresh) */
  opened(o: Order): void;
  /** a closed order is kept (counted towards CLOSED_KEPT) */
  closedKept(): void;
}

export function comboBooksJson(b: ComboBooksView): unknown {
  const cod: number[] = [];
  for (const set of b.openByUser.values()) for (const o of set) if (o.cod) cod.push(o.id);
  cod.sort((a, b) => a - b);
  const ord = (o: Order) => [o.id, o.userId, o.side, o.price, o.remaining, o.amount, o.inst.name, o.type, o.tif, o.postOnly, o.rejectPostOnly, o.label, o.created, o.expiresAt, o.filled, o.filledNotional, o.commission, o.state, o.cancelReason, o.lastUpdate, tradeIdsOf(o)];
  return {
    next: b.nextTradeId,
    orders: [...b.orders.values()].map(ord),
    // sorted by combo id: a book emptied and refilled keeps its first place in the live map but not
    // in a restored one, and the state hash must not see that (every reader sorts by order id)
    books: [...b.books].filter(([, x]) => x.orderCount() > 0).sort(byKey).map(([id, x]) => [id, [...x.orders()].map((o) => o.id)]),
    trades: [...b.trades].sort(byKey).map(([id, list]) => [id, list.map((t) => [t.id, t.ts, t.price, t.lots, t.takerSide, t.makerOrder.id, t.takerOrder.id, t.legs.map((l) => l.id)])]),
    // absent while no combo book changed (snapshots made before change ids restore alike)
    ...(b.changeIds.size > 0 ? { changes: [...b.changeIds].sort(byKey) } : {}),
    // open orders marked for cancel-on-disconnect (src/engine/cod.ts), ascending; absent while none
    ...(cod.length === 0 ? {} : { cod }),
  };
}

/** Restores the part `comboBooksJson` wrote; `trade` finds a leg trade by id (the engine's, restored before). */
export function restoreComboBooks(j: unknown, trade: (id: number) => Trade | undefined, b: ComboBooksTarget): void {
  if (j === undefined || j === null) return;
  const s = j as { next: number; orders: unknown[][]; books: [string, number[]][]; trades: [string, unknown[][]][]; changes?: [string, number][]; cod?: number[] };
  b.setNextTradeId(s.next);
  for (const [id, n] of s.changes ?? []) b.changeIds.set(id, n);
  const placeholder = (id: number) => newOrder(id, 0, 0, 0, 0, 0, null as unknown as Instrument, 'limit', 'good_til_cancelled', false, false, false, '', null, 0, 0, null, false);
  for (const a of s.orders) {
    const [id, userId, side, price, remaining, amount, name, type, tif, postOnly, rejectPostOnly, label, created, expiresAt, filled, filledNotional, commission, state, cancelReason, lastUpdate, tradeIds] = a as never[];
    const r = b.ex.combos.byId.get(name)!;
    const o = newOrder(id, userId, side, price, remaining, amount, b.inst(r), type, tif, postOnly, rejectPostOnly, false, label, null, created, expiresAt, null, false);
    Object.assign(o, { filled, filledNotional, commission, state, cancelReason, lastUpdate, tradeIds: compactTradeIds(tradeIds) });
    b.orders.set(o.id, o);
    if (o.state !== 'open') b.closedKept();
  }
  for (const [id, ids] of s.books) {
    const book = b.book(id);
    for (const oid of ids) {
      const o = b.orders.get(oid)!;
      book.add(o);
      b.opened(o);
    }
  }
  for (const id of s.cod ?? []) b.orders.get(id)!.cod = true;
  for (const [id, list] of s.trades) {
    b.trades.set(
      id,
      list.map(([tid, ts, price, lots, takerSide, makerId, takerId, legIds]) => ({
        id: tid as number,
        combo: id,
        ts: ts as number,
        price: price as number,
        lots: lots as number,
        takerSide: takerSide as Side,
        makerOrder: b.orders.get(makerId as number) ?? placeholder(makerId as number),
        takerOrder: b.orders.get(takerId as number) ?? placeholder(takerId as number),
        legs: (legIds as number[]).map(trade).filter((t): t is Trade => t !== undefined),
      })),
    );
  }
}

function byKey<T>(a: [string, T], b: [string, T]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}
