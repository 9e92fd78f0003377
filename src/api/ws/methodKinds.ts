// How the WebSocket transport runs each method: which place orders (tracked for cancel-on-disconnect),
// which may be pipelined or answered from the durable batch, and which the connection answers itself.

/** Methods that place orders: the ids they return are tracked for cancel-on-disconnect. */
export const PLACING = new Set(['private/buy', 'private/sell', 'private/edit', 'private/mass_quote']);

/**
 * Methods whose next request on the connection may start as soon as their command is applied,
 * before it is durable (pipelining): each submits exactly one command, synchronously within the
 * call, so the next request is applied after it, as when they ran one by one; answers still leave
 * in arrival order. Without this a socket carried one order per journal commit, whatever the
 * client sent ahead (a test shows 40 orders of one burst taking 40 batches before, <= 10 now).
 * A call that applied nothing synchronously (e.g. an edit that first reads the order) releases
 * the next request only when it is answered, as every other method does.
 */
export const PIPELINED = new Set([
  'private/buy',
  'private/sell',
  'private/edit',
  'private/cancel',
  'private/cancel_all',
  'private/cancel_all_by_currency',
  'private/cancel_all_by_instrument',
  'private/cancel_by_label',
  'private/mass_quote',
  'private/cancel_quotes',
]);

/** Whether an order placed over a connection is cancelled when it closes: open orders, and
 *  untriggered trigger orders too. */
export function stays(state: unknown): boolean {
  return state === 'open' || state === 'untriggered';
}

/** Methods answered by the connection itself (API.md 6; `session` below), not by the registry. */
export const SESSION_METHODS = new Set([
  'public/subscribe',
  'private/subscribe',
  'public/unsubscribe',
  'private/unsubscribe',
  'public/unsubscribe_all',
  'private/unsubscribe_all',
  'public/set_heartbeat',
  'public/disable_heartbeat',
  'private/enable_cancel_on_disconnect',
  'private/disable_cancel_on_disconnect',
  'private/get_cancel_on_disconnect',
]);
