// Reduce-only orders cut back after fills (src/engine/trading.ts delegates here): a fill that moved
// a position leaves its owner's open reduce-only orders no larger than what is left to reduce.
import type { Instrument } from '../domain/instrument.ts';
import type { Exchange } from './exchange.ts';
import { BUY, SELL } from './orderBook.ts';
import { reduceOnlyOpenLots, reducibleBy } from './orderRules.ts';
import type { Trading } from './trading.ts';
import type { User } from './types.ts';

/**
 * Fills move positions, and a reduce-only order may only shrink a position: after a match, the
 * open reduce-only orders of every user whose position moved are cut (newest first) to what is
 * left to reduce, and cancelled when nothing is. Otherwise an ordinary order that closed the
 * position would leave a reduce-only order behind that opens the opposite one.
 */
export function trimAfterFills(t: Trading, ex: Exchange, taker: User, inst: Instrument): void {
  const users = t.touched;
  if (!users.includes(taker)) users.push(taker);
  for (const u of users) trimUserReduceOnly(t, ex, u, inst);
  users.length = 0;
}

/** Cuts one user's open reduce-only orders in `inst` (newest first) to what is left to reduce. */
export function trimUserReduceOnly(t: Trading, ex: Exchange, u: User, inst: Instrument): void {
  const e = u.exposures.get(inst.id);
  if (e === undefined || e.reduceOnlyOpen === 0) return;
  const pos = u.positions.get(inst.id)?.size ?? 0;
  let excessBuy = reduceOnlyOpenLots(e, BUY) - reducibleBy(BUY, pos);
  let excessSell = reduceOnlyOpenLots(e, SELL) - reducibleBy(SELL, pos);
  if (excessBuy <= 0 && excessSell <= 0) return;
  const newestFirst = [...e.openOrders].filter((o) => o.reduceOnly).sort((a, b) => b.id - a.id);
  for (const o of newestFirst) {
    const excess = o.side === BUY ? excessBuy : excessSell;
    if (excess <= 0) continue;
    const cut = Math.min(excess, o.remaining);
    if (o.side === BUY) excessBuy -= cut;
    else excessSell -= cut;
    if (cut === o.remaining) {
      t.closeResting(u, o, 'cancelled', 'reduce_only', true);
      continue;
    }
    // a size decrease keeps time priority (as an edit would)
    t.releaseExposure(u, o, cut);
    ex.books.get(inst.id)!.reduce(o, cut);
    o.amount -= cut;
    o.lastUpdate = ex.now;
    ex.observer?.order(o);
    ex.markets.get(inst.id)!.changeId++;
  }
}
