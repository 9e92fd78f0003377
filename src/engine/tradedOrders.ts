// A forgotten order in its trades (issue 36). An account's order map forgets its oldest closed
// orders past `closedOrdersKept` (orderMemory.ts pruneClosed), but the account's trades, the
// counterparty's and the instrument's public ones are kept longer and each names both of its
// orders. Holding the orders themselves kept every forgotten order alive (330 bytes and its trade-id
// array) for as long as any of its trades was kept: at a busy venue most of the old generation,
// which each major GC marks again. A forgotten order's trades hold a stub of what they read instead
// (`TradedOrder`), the form a snapshot has always written them in, so a live engine, a restored one
// and a replayed one hold the same stubs and hash the same.
import type { Exchange } from './exchange.ts';
import { tradedOrderStub, type Order, type Trade, type TradedOrder, type User } from './types.ts';

/** The trade with id `id` in `trades` (ids ascending, as every trade list is appended), or undefined. */
export function tradeById(trades: readonly Trade[], id: number): Trade | undefined {
  let lo = 0;
  let hi = trades.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const t = trades[mid]!;
    if (t.id === id) return t;
    if (t.id < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

/**
 * Puts one stub of `o` in place of `o` in each of its trades still kept: found in the account's own
 * trades, or, once those have let it go, in the instrument's public ones (the same trade objects the
 * counterparty's list and the recent-trades list hold). A trade kept by neither keeps the order: it
 * is only memory, never what anything reads.
 */
export function forgetIntoTrades(ex: Exchange, user: User, o: Order): void {
  const ids = o.tradeIds;
  if (typeof ids === 'number') {
    // traded once (most orders that traded): no list to walk
    replaceInTrade(ex, user, o, ids, null);
    return;
  }
  let stub: TradedOrder | null = null;
  for (const id of ids) stub = replaceInTrade(ex, user, o, id, stub);
}

/** Puts `stub` (made now when null) in place of `o` in trade `id` if it is kept; returns the stub, if any. */
function replaceInTrade(ex: Exchange, user: User, o: Order, id: number, stub: TradedOrder | null): TradedOrder | null {
  let t = tradeById(user.trades, id);
  if (t === undefined) {
    const publicTrades = ex.markets.get(o.inst.id)?.trades;
    if (publicTrades !== undefined) t = tradeById(publicTrades, id);
    if (t === undefined) return stub;
  }
  stub ??= tradedOrderStub(o);
  if (t.makerOrder === o) t.makerOrder = stub;
  if (t.takerOrder === o) t.takerOrder = stub;
  return stub;
}
