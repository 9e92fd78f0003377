// The pre-trade risk check of a new order (API.md 5.3; src/engine/trading.ts `place` calls it):
// whether the account can carry the order, on its own currency's funds, portfolio margin or the
// cross standard margin pool.
import { CURRENCIES } from '../domain/currency.ts';
import { premiumOf, type Instrument } from '../domain/instrument.ts';
import { contractsOf, shortOpeningLots } from '../risk/accountRisk.ts';
import { toMinorUp } from '../risk/margin.ts';
import { BUY, type Side } from './orderBook.ts';
import type { Trading } from './trading.ts';
import type { OrderExposure, User } from './types.ts';

/**
 * The account must carry the order as if it all rested (buys: premium + fee; sells: the initial
 * margin of the short it would open, API.md 5.3). No fee for sells: a sell's fee is at most 12.5%
 * of the premium it receives, and requiring it would refuse an order whose reservation fits
 * exactly. `fillCost` is what a market buy would pay (the pre-trade walk), `pos` the position.
 */
export function coversNewOrder(
  t: Trading,
  user: User,
  inst: Instrument,
  side: Side,
  type: 'limit' | 'market',
  price: number,
  lots: number,
  fillCost: number,
  exposure: OrderExposure,
  pos: number,
): boolean {
  const available = t.risk.available(user, inst.currency);
  let required: number;
  if (side === BUY) {
    required = type === 'market' ? fillCost : premiumOf(inst, price, lots) + t.maxFee(inst, price, lots);
  } else {
    const shortBefore = shortOpeningLots(exposure.sellOpenLots, pos);
    const shortAfter = shortOpeningLots(exposure.sellOpenLots + lots, pos);
    const extra = shortAfter - shortBefore;
    required = extra > 0 ? toMinorUp(t.risk.imPerContract(inst) * contractsOf(inst, extra), CURRENCIES[inst.currency].decimals) : 0;
  }
  // a buy's premium must also be covered by free cash (see RiskEngine.freeCash)
  const funds = side === BUY ? Math.min(available, t.risk.freeCash(user, inst.currency)) : available;
  // portfolio margin (issue 35): a buy's premium against the free cash, and what the order adds to
  // the scenario requirement (as if filled) against the funds available, each on its own
  const pmIM = t.risk.pmOrderIM(user, inst, side === BUY ? lots : 0, side === BUY ? 0 : lots);
  // cross standard margin: the same requirement, against the pool of every currency's collateral
  return pmIM !== null
    ? t.risk.pmCovers(user, inst.currency, side === BUY ? required : 0, pmIM)
    : t.risk.isCross(user)
      ? t.risk.crossSmCovers(user, inst.currency, required, side === BUY ? required : 0)
      : Number.isFinite(required) && funds - required >= 0;
}
