// The combo part of a durable batch's stream events (src/api/ws/streamEvents.ts; issue 34): what the
// leader's hub sends on a combo's channels, rendered once per batch for the gateways.
//
//   <p>.public.book.<combo>    the combo book's raw `change` (as `book.<combo>.raw`), chained by
//                              prev_change_id on the combo book's own change id (get_order_book's)
//   <p>.public.trades.<combo>  the batch's combo trades of that combo (as `trades.<combo>.raw`);
//                              a gateway tells them from leg trades by the name (isComboName)
//   <p>.public.combos          [names]: combos created by the batch, so a gateway accepts their
//                              channels without asking the leader (a combo is made at run time)
//   private `combo_trades`     the user's side of each of its combo trades (user.combo_trades.*)
import type { Exchange } from '../../engine/exchange.ts';
import { BUY, SELL } from '../../engine/orderBook.ts';
import type { Trade } from '../../engine/types.ts';
import { comboTradesOf, renderComboTrade, renderUserComboTrade } from '../methods/comboMarketData.ts';
import { bookChangeId, diff, levels } from './bookViews.ts';
import type { BookState } from './hubState.ts';
import type { EventMessage } from './streamEvents.ts';

export class ComboStreamEvents {
  /** The L2 book last published per combo id (its next change is diffed against it). */
  private readonly books = new Map<string, BookState>();
  /** Combos published so far (Combos.byId only grows, in creation order). */
  private combosSeen: number;

  constructor(
    private readonly ex: Exchange,
    private readonly prefix: string,
  ) {
    for (const r of ex.combos.byId.values()) this.books.set(r.id, this.stateOf(r.id));
    this.combosSeen = ex.combos.byId.size;
  }

  private stateOf(id: string): BookState {
    const inst = this.ex.comboBooks.inst(this.ex.combos.byId.get(id)!);
    return { inst, changeId: bookChangeId(this.ex, inst), bids: levels(this.ex, inst, BUY), asks: levels(this.ex, inst, SELL), topics: 0 };
  }

  /**
   * Appends the batch's combo messages to `out` and returns, per user, its side of the batch's combo
   * trades (the `combo_trades` of its private message).
   */
  render(trades: readonly Trade[], out: EventMessage[]): Map<number, unknown[]> {
    const ex = this.ex;
    const p = this.prefix;
    if (ex.combos.byId.size > this.combosSeen) {
      const fresh = [...ex.combos.byId.keys()].slice(this.combosSeen);
      this.combosSeen = ex.combos.byId.size;
      out.push({ subject: `${p}.public.combos`, data: JSON.stringify(fresh) });
    }
    // only combos whose change id moved (a few hundred integer compares at most: MAX_COMBOS)
    for (const [id, n] of ex.comboBooks.changeIds) {
      let st = this.books.get(id);
      if (st === undefined) {
        // created since: its book started empty at change id 0
        st = { ...this.stateOf(id), changeId: 0, bids: new Map(), asks: new Map() };
        this.books.set(id, st);
      }
      if (n === st.changeId) continue;
      const bids = levels(ex, st.inst, BUY);
      const asks = levels(ex, st.inst, SELL);
      const data = { type: 'change', timestamp: ex.now, instrument_name: id, prev_change_id: st.changeId, change_id: n, bids: diff(st, st.bids, bids, true), asks: diff(st, st.asks, asks, false) };
      st.changeId = n;
      st.bids = bids;
      st.asks = asks;
      out.push({ subject: `${p}.public.book.${id}`, data: JSON.stringify(data) });
    }
    const users = new Map<number, unknown[]>();
    if (!trades.some((t) => t.combo !== undefined)) return users;
    const rows = comboTradesOf(ex, trades);
    const byCombo = new Map<string, unknown[]>();
    for (const row of rows) {
      let a = byCombo.get(row.r.id);
      if (!a) byCombo.set(row.r.id, (a = []));
      a.push(renderComboTrade(ex, row));
      // a combo order never trades with the same user's (src/combos/placement.ts): two users, each its own side
      for (const uid of [row.ct.makerOrder.userId, row.ct.takerOrder.userId]) {
        let u = users.get(uid);
        if (!u) users.set(uid, (u = []));
        u.push(renderUserComboTrade(ex, row, uid));
      }
    }
    for (const [id, list] of byCombo) out.push({ subject: `${p}.public.trades.${id}`, data: JSON.stringify(list) });
    return users;
  }
}
