// Cancels of resting orders (src/engine/trading.ts delegates here): one order or cancel_all by the
// user, lists of ids (MMP, self-trade prevention, settlement), a whole instrument, good_til_day
// expiry and an account's orders in one currency (liquidation). Each cancels oldest id first.
import type { CurrencyCode } from '../domain/currency.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Instrument } from '../domain/instrument.ts';
import type { Command } from './commands.ts';
import type { Exchange } from './exchange.ts';
import type { Trading } from './trading.ts';
import type { CancelReason, Order, User } from './types.ts';

type CancelAllCmd = Extract<Command, { t: 'cancel_all' }>;

export function cancelOrderByUser(t: Trading, ex: Exchange, userId: number, orderId: number): Order | Reject {
  const refused = userCancelRefusal(ex, userId, orderId);
  if (refused !== null) return refused;
  const user = ex.users.get(userId)!;
  const order = user.orders.get(orderId)!;
  t.closeResting(user, order, 'cancelled', 'user_request', true);
  return order;
}

/** Why a user's cancel would be refused, or null when it would cancel. Reads only. */
export function userCancelRefusal(ex: Exchange, userId: number, orderId: number): Reject | null {
  const order = ex.users.get(userId)?.orders.get(orderId);
  if (!order) return reject(ERR.ORDER_NOT_FOUND, undefined, 'order_id');
  if (order.state !== 'open') return reject(ERR.ALREADY_CLOSED, undefined, 'order_id');
  return null;
}

export function cancelAllMatching(t: Trading, ex: Exchange, c: CancelAllCmd): Order[] {
  const user = ex.users.get(c.userId);
  if (!user) return [];
  const victims: Order[] = [];
  for (const e of user.exposures.values()) {
    if (e.openOrders.size === 0) continue;
    if (c.currency !== null && e.inst.currency !== c.currency) continue;
    if (c.instrument !== null && e.inst.name !== c.instrument) continue;
    for (const o of e.openOrders) {
      if (c.side !== null && o.side !== c.side) continue;
      if (c.label !== null && o.label !== c.label) continue;
      victims.push(o);
    }
  }
  victims.sort((a, b) => a.id - b.id);
  for (const o of victims) t.closeResting(user, o, 'cancelled', 'user_request', true);
  return victims;
}

/** Cancels the listed orders of a user that are still open; unknown or closed ids are skipped. */
export function cancelOpenOrders(t: Trading, ex: Exchange, userId: number, orderIds: number[], reason: CancelReason): Order[] {
  const user = ex.users.get(userId);
  if (!user) return [];
  const victims: Order[] = [];
  for (const id of new Set(orderIds)) {
    const o = user.orders.get(id);
    if (o !== undefined && o.state === 'open') victims.push(o);
  }
  victims.sort((a, b) => a.id - b.id);
  for (const o of victims) t.closeResting(user, o, 'cancelled', reason, true);
  return victims;
}

export function cancelInstrumentOrders(t: Trading, ex: Exchange, inst: Instrument, reason: CancelReason): number {
  const book = ex.books.get(inst.id)!;
  const victims = [...book.orders()].sort((a, b) => a.id - b.id);
  for (const o of victims) t.closeResting(ex.users.get(o.userId)!, o, 'cancelled', reason, true);
  return victims.length;
}

export function expireGoodTilDay(t: Trading, ex: Exchange): number {
  const now = ex.now;
  const victims: Order[] = [];
  for (const o of t.gtdOrders) if (o.expiresAt <= now) victims.push(o);
  victims.sort((a, b) => a.id - b.id);
  for (const o of victims) t.closeResting(ex.users.get(o.userId)!, o, 'cancelled', 'good_til_day', true);
  return victims.length;
}

/** Earliest good_til_day expiry among open orders, or Infinity. */
export function nextGoodTilDayExpiry(t: Trading, ex: Exchange): number {
  // untriggered good_til_day trigger orders expire by the same command (src/engine/triggers.ts)
  let next = Math.min(ex.triggers.nextExpiry(), ex.comboBooks.nextExpiry());
  for (const o of t.gtdOrders) if (o.expiresAt < next) next = o.expiresAt;
  return next;
}

// ---- liquidation (driven by src/engine/liquidation.ts) ----------------------------------------

/** Cancels every open order of a user in one currency (oldest first). */
export function cancelUserCurrencyOrders(t: Trading, user: User, currency: CurrencyCode, reason: CancelReason): Order[] {
  const victims: Order[] = [];
  for (const e of user.exposures.values()) {
    if (e.openOrders.size === 0 || e.inst.currency !== currency) continue;
    for (const o of e.openOrders) victims.push(o);
  }
  victims.sort((a, b) => a.id - b.id);
  for (const o of victims) t.closeResting(user, o, 'cancelled', reason, true);
  return victims;
}
