// The L2 book views of the book channels: a cadence's snapshot, its diff against the book last
// published (`change` messages), grouped top-N views (book.{instrument}.{group}.{depth}), and the
// amounts and keys the messages use.
import { priceToNumber, type Instrument } from '../../domain/instrument.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { BookState } from './hubState.ts';
import { groupLevels } from './parityChannels.ts';

export function lotsAmount(inst: Instrument, lots: number): number {
  return Number(((lots * inst.lotScaled) / 1e8).toFixed(8));
}

/** What a quote notification says apart from its timestamp (sent only when this changes). */
export function quoteKey(q: Record<string, unknown>): string {
  return `${q.best_bid_price}/${q.best_bid_amount}/${q.best_ask_price}/${q.best_ask_amount}`;
}

export const PRICE_INDICES = ['btc_usd', 'eth_usd'];

/** Every level of a side of the book of `inst`: an option's, or a combo's (src/combos/book.ts). */
export function levels(ex: Exchange, inst: Instrument, side: 0 | 1): Map<number, number> {
  const book = ex.books.get(inst.id) ?? ex.comboBooks.books.get(inst.name);
  return new Map(book === undefined ? [] : book.depth(side, Number.MAX_SAFE_INTEGER));
}

/** The change id of the book of `inst` (a combo's is kept by its combo book). */
export function bookChangeId(ex: Exchange, inst: Instrument): number {
  return ex.markets.get(inst.id)?.changeId ?? ex.comboBooks.changeId(inst.name);
}

function side(st: BookState, m: Map<number, number>, desc: boolean): Array<[string, number, number]> {
  const prices = [...m.keys()].sort((a, b) => (desc ? b - a : a - b));
  return prices.map((p) => ['new', priceToNumber(p), lotsAmount(st.inst, m.get(p)!)]);
}

export function snapshot(ex: Exchange, st: BookState) {
  return {
    type: 'snapshot',
    timestamp: ex.now,
    instrument_name: st.inst.name,
    change_id: st.changeId,
    bids: side(st, st.bids, true),
    asks: side(st, st.asks, false),
  };
}

export function depthView(ex: Exchange, st: BookState, depth: number, group: number) {
  const top = (m: Map<number, number>, desc: boolean) => groupLevels(m, st.inst, group, desc, depth).map(([p, q]) => [priceToNumber(p), lotsAmount(st.inst, q)]);
  return { timestamp: ex.now, instrument_name: st.inst.name, change_id: st.changeId, bids: top(st.bids, true), asks: top(st.asks, false) };
}

export function diff(st: BookState, before: Map<number, number>, after: Map<number, number>, desc: boolean): Array<[string, number, number]> {
  const out: Array<[string, number, number, number]> = [];
  for (const [p, q] of after) {
    const old = before.get(p);
    if (old === undefined) out.push(['new', priceToNumber(p), lotsAmount(st.inst, q), p]);
    else if (old !== q) out.push(['change', priceToNumber(p), lotsAmount(st.inst, q), p]);
  }
  for (const p of before.keys()) if (!after.has(p)) out.push(['delete', priceToNumber(p), 0, p]);
  out.sort((a, b) => (desc ? b[3] - a[3] : a[3] - b[3]));
  return out.map(([a, p, q]) => [a, p, q]);
}
