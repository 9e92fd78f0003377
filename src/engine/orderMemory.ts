// What an account remembers of its orders (src/engine/trading.ts calls here): its client_order_ids
// (the idempotent retry of a place, the id's record) and its closed orders, the oldest of which are
// forgotten past `closedOrdersKept`, with client_order_ids past their TTL.
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Command } from './commands.ts';
import type { Exchange } from './exchange.ts';
import { forgetOldestClientOrderIds, requestPrint } from './orderRules.ts';
import { forgetIntoTrades } from './tradedOrders.ts';
import type { PlaceResult } from './trading.ts';
import { tradeIdsOf, type Order, type User } from './types.ts';

type PlaceCmd = Extract<Command, { t: 'place' }>;

/**
 * A place that carries a client_order_id (`clientOrderId`, the place's own): the first request's
 * order and its trades when the id is live, a refusal, or null when the id is free.
 */
export function clientOrderIdRetry(ex: Exchange, user: User, c: PlaceCmd, clientOrderId: string): PlaceResult | Reject | null {
  // idempotent retry: the first request's order, never a second one
  const prev = findByClientOrderId(ex, user, clientOrderId);
  // the id is live but its order was pruned from memory (over `closedOrdersKept` closed orders
  // since): it cannot be returned, and creating a second order would break the guarantee
  if (prev === undefined) return reject(ERR.INVALID_ARGUMENTS, 'client_order_id_in_use', 'client_order_id');
  if (prev) {
    // the same id for another order (instrument, side, type, amount or price) is a client bug:
    // answering with the earlier, unrelated order would let it believe the new one was placed
    const rec = user.clientOrderIds.get(clientOrderId)!;
    if (rec.fp !== undefined && rec.fp !== requestPrint(c)) return reject(ERR.INVALID_ARGUMENTS, 'client_order_id_reused', 'client_order_id');
    const ids = new Set(tradeIdsOf(prev));
    return { order: prev, trades: user.trades.filter((t) => ids.has(t.id)) };
  }
  return null;
}

/** Records the client_order_id of a new order (`clientOrderId`, the place's own). */
export function rememberClientOrderId(ex: Exchange, user: User, c: PlaceCmd, clientOrderId: string, order: Order): void {
  // delete first so that a re-used (expired) id moves to the end: the map stays in time order,
  // which the TTL sweep in pruneClosed relies on
  user.clientOrderIds.delete(clientOrderId);
  user.clientOrderIds.set(clientOrderId, { orderId: order.id, ts: ex.now, fp: requestPrint(c) });
  forgetOldestClientOrderIds(user, ex.limits.clientOrderIdsKept, ex.now - ex.limits.clientOrderIdTtlMs);
}

/** The existing order for a client_order_id used by this user within the last 24 h: null when the
 *  id is free, undefined when it is taken but its order is no longer kept in memory. */
export function findByClientOrderId(ex: Exchange, user: User, clientOrderId: string): Order | null | undefined {
  const rec = user.clientOrderIds.get(clientOrderId);
  if (!rec || rec.ts < ex.now - ex.limits.clientOrderIdTtlMs) return null;
  return user.orders.get(rec.orderId);
}

/**
 * Keeps the per-user order map bounded: the oldest closed orders are forgotten first. A forgotten
 * order's trades keep a stub of what they read instead of the order (`forgetIntoTrades`).
 */
export function pruneClosed(ex: Exchange, user: User): void {
  const keep = ex.limits.closedOrdersKept;
  if (user.orders.size <= keep + user.openOrderCount + 64) return;
  let excess = user.orders.size - keep - user.openOrderCount;
  for (const [id, o] of user.orders) {
    if (excess <= 0) break;
    if (o.state !== 'open') {
      user.orders.delete(id);
      forgetIntoTrades(ex, user, o);
      excess--;
    }
  }
  const cutoff = ex.now - ex.limits.clientOrderIdTtlMs;
  for (const [k, v] of user.clientOrderIds) {
    if (v.ts >= cutoff) break;
    user.clientOrderIds.delete(k);
  }
}
