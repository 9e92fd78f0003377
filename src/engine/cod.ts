// Cancel-on-disconnect as engine state: which users have it on for their account, and which orders
// it covers. Only the WebSocket edge knows connections, so it decides both and journals them
// (`cod` on place/edit/mass_quote, `cod_mark`, `cod_account`); a process that recovers or takes
// over has no connection left, and cancels from this state what the dead connections would have
// (`codSweep`, docs/architecture.md "WebSocket and live streams").
import { ERR, isReject, reject, type Reject } from '../domain/errors.ts';
import type { Command } from './commands.ts';
import type { Exchange } from './exchange.ts';
import { TriggerOrder } from './triggers.ts';
import type { Order } from './types.ts';

/**
 * Marks or unmarks an open order or an untriggered trigger order; a closed one never matters
 * again (only open orders' marks are in the snapshot). A trigger order keeps its mark in its
 * `cmd` (in the snapshot already). The order it fires into has an id of its own and is not marked:
 * the live path (the connection's set of ids) does not cancel it either.
 */
export function setCod(x: Order | TriggerOrder, on: boolean): void {
  if (x instanceof TriggerOrder) {
    if (x.state !== 'untriggered' || (x.cmd.cod === true) === on) return;
    if (on) x.cmd = { ...x.cmd, cod: true };
    else {
      const { cod: _, ...rest } = x.cmd;
      x.cmd = rest;
    }
  } else if (x.state === 'open') x.cod = on;
}

/** Marks what a place, edit or mass_quote carrying `cod` placed or kept (its result). */
export function markPlaced(result: unknown): void {
  if (result === null || typeof result !== 'object' || isReject(result)) return;
  const r = result as { order?: Order | TriggerOrder; orders?: Order[] };
  if (r.order !== undefined) setCod(r.order, true);
  if (r.orders !== undefined) for (const o of r.orders) setCod(o, true);
}

export function applyCodAccount(ex: Exchange, c: Extract<Command, { t: 'cod_account' }>): true | Reject {
  if (!ex.users.has(c.userId)) return reject(ERR.UNAUTHORIZED);
  if (c.on) ex.codAccounts.add(c.userId);
  else ex.codAccounts.delete(c.userId);
  return true;
}

/** Marks or unmarks the listed orders of that user only (another user's id is not found); returns how many. */
export function applyCodMark(ex: Exchange, c: Extract<Command, { t: 'cod_mark' }>): number {
  const user = ex.users.get(c.userId);
  if (user === undefined) return 0;
  let n = 0;
  for (const id of c.orderIds) {
    const o = user.orders.get(id) ?? ex.comboBooks.orderOf(c.userId, id);
    if (o !== undefined && o.state === 'open') {
      o.cod = c.on;
      n++;
      continue;
    }
    const t = ex.triggers.get(c.userId, id);
    if (t !== undefined && t.state === 'untriggered') {
      setCod(t, c.on);
      n++;
    }
  }
  return n;
}

/**
 * What a process that starts or takes over owes the connections that died with the previous one:
 * per user, one `cancel_orders` of its marked open and untriggered orders (ids ascending), the
 * command the closing connections would have submitted. Reads only; the caller sequences them.
 */
export function codSweep(ex: Exchange): Extract<Command, { t: 'cancel_orders' }>[] {
  const out: Extract<Command, { t: 'cancel_orders' }>[] = [];
  for (const user of ex.users.values()) {
    const ids: number[] = [];
    for (const e of user.exposures.values()) for (const o of e.openOrders) if (o.cod) ids.push(o.id);
    for (const t of ex.triggers.openOf(user.id)) if (t.cmd.cod === true) ids.push(t.id);
    for (const o of ex.comboBooks.openOf(user.id)) if (o.cod) ids.push(o.id);
    if (ids.length > 0) out.push({ t: 'cancel_orders', userId: user.id, orderIds: ids.sort((a, b) => a - b), reason: 'cancel_on_disconnect' });
  }
  return out;
}

/** The snapshot's part: account flags and marked open orders, both ascending (canonical). */
export function codToJson(ex: Exchange, orders: Iterable<Order>): { accounts: number[]; orders: number[] } {
  const marked: number[] = [];
  for (const o of orders) if (o.cod && o.state === 'open') marked.push(o.id);
  return { accounts: [...ex.codAccounts].sort((a, b) => a - b), orders: marked.sort((a, b) => a - b) };
}

/** Restores codToJson()'s part (absent in snapshots from before it: nothing marked). */
export function codRestore(ex: Exchange, json: unknown, orders: Map<number, Order>): void {
  if (json === undefined || json === null) return;
  const s = json as { accounts: number[]; orders: number[] };
  for (const id of s.accounts) ex.codAccounts.add(id);
  for (const id of s.orders) {
    const o = orders.get(id);
    if (o !== undefined) o.cod = true;
  }
}
