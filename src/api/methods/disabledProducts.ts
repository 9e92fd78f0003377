// private/set_disabled_trading_products (issue 31): the products an account may not trade, enforced
// by the engine (src/engine/disabledProducts.ts). Deribit lets a main account set it for its
// subaccounts; here an account sets its own and an administrator any account's.
import { Type } from '@sinclair/typebox';
import { TRADING_PRODUCTS, type TradingProduct } from '../../engine/disabledProducts.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { defineMethod } from '../rpc/registry.ts';
import { caller, unwrap } from './common.ts';

export const disabledProductMethods = [
  defineMethod({
    name: 'private/set_disabled_trading_products',
    scope: 'account:read_write',
    summary: "The products the account `user_id` may not trade (perpetual, futures, options, future_combos, option_combos, spots; [] enables all). Only `options` refuses anything here: no option order that adds risk (11029 trading_product_disabled). The caller's own account, or any account for an administrator.",
    params: Type.Object({
      user_id: Type.Integer({ minimum: 1, maximum: 2 ** 31 }),
      trading_products: Type.Array(Type.Union(TRADING_PRODUCTS.map((p) => Type.Literal(p))), { maxItems: TRADING_PRODUCTS.length }),
    }),
    handler(ctx, p) {
      const c = caller(ctx);
      if (p.user_id !== c.userId && !(c.role === 'admin' && c.scopes.has('admin'))) throw reject(ERR.FORBIDDEN, 'not_your_account', 'user_id');
      return ctx.services.seq.submit({ t: 'set_disabled_trading_products', userId: p.user_id, products: p.trading_products as TradingProduct[] }, (r) => unwrap(r));
    },
  }),
];
