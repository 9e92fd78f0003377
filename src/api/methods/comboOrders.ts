// Combo orders in the account views (issue 34; docs/api-notes.md "Combo orders"). An order on a
// combo rests in its combo's book (src/combos/book.ts), not in the account's order map or exposures,
// so every read of "the caller's orders" asks it too, selected by Deribit's `kind`.
import type { Exchange } from '../../engine/exchange.ts';
import type { Order } from '../../engine/types.ts';

/** What a Deribit `kind` selects here: option orders, combo orders (`option_combo`, `combo`), both (`any`), or none. */
export function kindSelects(kind: string | undefined): { options: boolean; combos: boolean } {
  if (kind === undefined || kind === 'any') return { options: true, combos: true };
  return { options: kind === 'option', combos: kind === 'option_combo' || kind === 'combo' };
}

/** The cancel_all command's `kind` for a Deribit kind that selects something (absent: both). */
export function cancelKind(kind: string | undefined): { kind?: 'option' | 'option_combo' } {
  const k = kindSelects(kind);
  return k.options && k.combos ? {} : k.combos ? { kind: 'option_combo' } : { kind: 'option' };
}

/** The caller's open combo orders the filter selects, oldest first. */
export function openComboOrders(ex: Exchange, userId: number, filter: (o: Order) => boolean = () => true): Order[] {
  return ex.comboBooks.openOf(userId).filter(filter);
}

/** Every combo order of the caller still kept (open, and the recent closed ones). */
export function keptComboOrders(ex: Exchange, userId: number): Order[] {
  const out: Order[] = [];
  for (const o of ex.comboBooks.orders.values()) if (o.userId === userId) out.push(o);
  return out;
}

/** Two id-sorted lists merged, id order. */
export function byId(a: Order[], b: Order[]): Order[] {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  return [...a, ...b].sort((x, y) => x.id - y.id);
}
