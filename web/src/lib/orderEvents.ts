// Own orders shown the moment `user.changes` tells of them, not one HTTP reload later: a screen keeps
// the order changes it heard since its last snapshot and lays them over it. The reload the change
// also triggers then brings the snapshot up to date, and the changes it has caught up with are
// dropped, so what is kept stays as small as the changes between two loads.
import type { Order } from './types.ts';

/** Order changes heard since the snapshot they are laid over, by order id (the latest of each). */
export type OrderEvents = ReadonlyMap<string, Order>;

/** Still working: in the book, or a stop order waiting for its trigger (both in open-order lists). */
export function isOpen(o: Order): boolean {
  return o.order_state === 'open' || o.order_state === 'untriggered';
}

/** `events` with `orders` (one notification's) added; an older state of an order never replaces a newer one. */
export function withHeard(events: OrderEvents, orders: readonly Order[]): Map<string, Order> {
  const next = new Map(events);
  for (const o of orders) {
    const had = next.get(o.order_id);
    if (!had || had.last_update_timestamp <= o.last_update_timestamp) next.set(o.order_id, o);
  }
  return next;
}

/**
 * The open orders to show: the snapshot's, each replaced by a newer heard state (which may have
 * closed it), then the heard open orders the snapshot does not have yet (placed after it was read),
 * oldest first as a list of open orders is.
 */
export function overlay(snapshot: readonly Order[], events: OrderEvents): Order[] {
  const out: Order[] = [];
  const inSnapshot = new Set<string>();
  for (const o of snapshot) {
    inSnapshot.add(o.order_id);
    const heard = events.get(o.order_id);
    const now = heard && heard.last_update_timestamp > o.last_update_timestamp ? heard : o;
    if (isOpen(now)) out.push(now);
  }
  const added = [...events.values()].filter((o) => !inSnapshot.has(o.order_id) && isOpen(o));
  added.sort((a, b) => a.creation_timestamp - b.creation_timestamp);
  return out.concat(added);
}

/**
 * The heard changes a fresh snapshot has not caught up with: a change the snapshot holds at the same
 * or a later state goes, and so does a closed order the snapshot no longer lists. A heard open order
 * the snapshot lacks stays (it was placed after the snapshot was read) until a snapshot lists it or
 * its close is heard.
 */
export function notCaughtUp(events: OrderEvents, snapshot: readonly Order[]): Map<string, Order> {
  const bySnapshot = new Map(snapshot.map((o) => [o.order_id, o]));
  const next = new Map<string, Order>();
  for (const [id, heard] of events) {
    const read = bySnapshot.get(id);
    if (read ? read.last_update_timestamp >= heard.last_update_timestamp : !isOpen(heard)) continue;
    next.set(id, heard);
  }
  return next;
}
