// Self-trade prevention (Deribit private/set_self_trading_config, issue 31). An order never trades
// with an order of the same account. `reject_taker`, the default, refuses the incoming order
// (trading.ts: 11030 self_trade). `cancel_maker` first cancels the account's own resting orders
// that the incoming order would reach (cancel_reason `self_trade_prevention`), so it goes on to
// trade with the others. Applied inside the place, edit, fired-trigger and mass-quote commands,
// before the order matches: the same command replays the same cancels.
import type { Exchange } from './exchange.ts';
import type { Side } from './orderBook.ts';

export type SelfTradingMode = 'reject_taker' | 'cancel_maker';

export interface SelfTradingConfig {
  mode: SelfTradingMode;
  /** Deribit's `extended_to_subaccounts`: kept and shown; subaccounts arrive with issue 32 */
  extendedToSubaccounts: boolean;
}

export function setSelfTradingConfig(ex: Exchange, c: { userId: number; mode: SelfTradingMode; extendedToSubaccounts: boolean }): 'ok' {
  // the default is not stored, so an account that never changed it adds nothing to the state
  if (c.mode === 'reject_taker' && !c.extendedToSubaccounts) ex.selfTrading.delete(c.userId);
  else ex.selfTrading.set(c.userId, { mode: c.mode, extendedToSubaccounts: c.extendedToSubaccounts });
  return 'ok';
}

export function selfTradingOf(ex: Exchange, userId: number): SelfTradingConfig {
  return ex.selfTrading.get(userId) ?? { mode: 'reject_taker', extendedToSubaccounts: false };
}

/**
 * In `cancel_maker` mode, cancels the user's own resting orders that an order of `side` at `limit`
 * (NaN: a market order) for `amountScaled` (the command's amount, 10^AMOUNT_SCALE) would reach: the
 * book is walked in priority order, others' liquidity counting toward it, own orders met before it
 * is filled cancelled.
 */
export function cancelOwnMakers(ex: Exchange, userId: number, instrument: string, side: Side, limit: number, amountScaled: number): void {
  if (ex.selfTrading.get(userId)?.mode !== 'cancel_maker') return;
  const inst = ex.instruments.get(instrument);
  const book = inst === undefined ? undefined : ex.books.get(inst.id);
  const lots = inst === undefined ? 0 : amountScaled / inst.lotScaled;
  if (book === undefined || !(lots > 0)) return;
  const own: number[] = [];
  let others = 0;
  book.walk(side, limit, (maker) => {
    if (maker.userId === userId) own.push(maker.id);
    else others += maker.remaining;
    return others < lots;
  });
  if (own.length > 0) ex.trading.cancelOrders(userId, own, 'self_trade_prevention');
}

/** The same for an edit of a resting order: its new price and what would remain of its new amount. */
export function cancelOwnMakersForEdit(ex: Exchange, c: { userId: number; orderId: number; lots: number; price: number | null; postOnly: boolean | null }): void {
  if (ex.selfTrading.get(c.userId)?.mode !== 'cancel_maker') return;
  const o = ex.users.get(c.userId)?.orders.get(c.orderId);
  if (o === undefined || o.state !== 'open' || (c.postOnly ?? o.postOnly)) return;
  cancelOwnMakers(ex, c.userId, o.inst.name, o.side, c.price ?? o.price, c.lots - o.filled * o.inst.lotScaled);
}
