// Trading products an account may not trade (Deribit private/set_disabled_trading_products, issue
// 31). This venue lists options only, so `options` is the one that refuses anything: a disabled
// account places no option order that adds risk (orders, trigger orders, mass quotes); reduce-only
// orders still close positions, and resting orders stay until cancelled. State changed only by the
// `set_disabled_trading_products` command; in the snapshot.
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Exchange } from './exchange.ts';

export const TRADING_PRODUCTS = ['perpetual', 'futures', 'options', 'future_combos', 'option_combos', 'spots'] as const;
export type TradingProduct = (typeof TRADING_PRODUCTS)[number];

export function setDisabledProducts(ex: Exchange, c: { userId: number; products: TradingProduct[] }): 'ok' | Reject {
  if (!ex.users.has(c.userId)) return reject(ERR.NOT_FOUND, 'user_not_found', 'user_id');
  // in the order of TRADING_PRODUCTS, each once: the same set is the same state
  const products = TRADING_PRODUCTS.filter((p) => c.products.includes(p));
  if (products.length === 0) ex.disabledProducts.delete(c.userId);
  else ex.disabledProducts.set(c.userId, products);
  return 'ok';
}

/** The refusal of an option order that adds risk for an account with options disabled, else null. */
export function optionsRefusal(ex: Exchange, userId: number, reduceOnly: boolean): Reject | null {
  if (reduceOnly || ex.disabledProducts.size === 0) return null;
  return ex.disabledProducts.get(userId)?.includes('options') === true ? reject(ERR.INVALID_ARGUMENTS, 'trading_product_disabled') : null;
}
