// `private/get_margins` (Deribit, scope trade:read): what a buy or a sell of `amount` at `price`
// would hold, before it is sent. The figures are the ones the engine's pre-trade check requires
// (src/engine/orderFunds.ts): a buy holds its premium plus the largest fee it can pay; a sell holds
// the initial margin of the short it would open beyond the caller's long position and open sells.
// The web app's order ticket shows them (issue 15), so the screen never computes margin itself.
import { Type } from '@sinclair/typebox';
import { CURRENCIES } from '../../domain/currency.ts';
import { parseScaled } from '../../domain/decimal.ts';
import { ERR, reject } from '../../domain/errors.ts';
import { AMOUNT_SCALE, PRICE_SCALE, premiumOf, priceToNumber, tradeFee } from '../../domain/instrument.ts';
import { contractsOf, shortOpeningLots } from '../../risk/accountRisk.ts';
import { toMinorUp } from '../../risk/margin.ts';
import { money } from '../render.ts';
import { defineMethod } from '../rpc/registry.ts';
import { InstrumentName, caller, readMargins } from './common.ts';

export const marginMethods = [
  defineMethod({
    name: 'private/get_margins',
    scope: 'trade:read',
    summary: 'The margin a buy and a sell of `amount` at `price` would hold in the settlement currency ({buy, sell, min_price, max_price}), as the pre-trade check computes it: a buy holds premium plus fee, a sell the initial margin of the short it opens; for an account on portfolio margin, each side adds what it adds to the scenario initial margin (never below 0).',
    params: Type.Object({
      instrument_name: InstrumentName,
      amount: Type.Number(),
      price: Type.Number(),
    }),
    handler(ctx, p) {
      const ex = ctx.services.ex;
      const userId = caller(ctx).userId;
      const scaled = parseScaled(p.amount, AMOUNT_SCALE);
      if (scaled === null || scaled <= 0) throw reject(ERR.INVALID_AMOUNT, 'invalid_amount', 'amount');
      const price = p.price > 0 ? parseScaled(p.price, PRICE_SCALE) : null;
      if (price === null) throw reject(p.price > 0 ? ERR.PRICE_WRONG_TICK : ERR.INVALID_PRICE, undefined, 'price');
      return readMargins(ctx, () => {
        const inst = ex.instruments.get(p.instrument_name);
        if (!inst) throw reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name');
        if (scaled % inst.lotScaled !== 0) throw reject(ERR.INVALID_AMOUNT, 'invalid_amount', 'amount');
        const lots = scaled / inst.lotScaled;
        const user = ex.users.get(userId);
        if (!user) throw reject(ERR.UNAUTHORIZED);
        const risk = ex.trading.risk;
        let buy = premiumOf(inst, price, lots) + tradeFee(inst, price, lots, Math.max(inst.makerCommission, inst.takerCommission));
        const pos = user.positions.get(inst.id)?.size ?? 0;
        const sellOpen = user.exposures.get(inst.id)?.sellOpenLots ?? 0;
        const extra = shortOpeningLots(sellOpen + lots, pos) - shortOpeningLots(sellOpen, pos);
        let sell = extra > 0 ? toMinorUp(risk.imPerContract(inst) * contractsOf(inst, extra), CURRENCIES[inst.currency].decimals) : 0;
        // portfolio margin (issue 35): what each side adds to the scenario IM, as the order check
        // counts it (a buy also holds its premium and fee in cash); negative for a hedge, shown as 0
        const pmBuy = risk.pmOrderIM(user, inst, lots, 0);
        if (pmBuy !== null) {
          buy += Math.max(0, pmBuy);
          sell = Math.max(0, risk.pmOrderIM(user, inst, 0, lots)!);
        }
        const m = ex.markets.get(inst.id)!;
        return { buy: money(buy, inst.currency), sell: money(sell, inst.currency), min_price: priceToNumber(m.minPrice), max_price: priceToNumber(m.maxPrice) };
      });
    },
  }),
];
