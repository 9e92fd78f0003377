// What a resting combo order holds of its account (issues 34 and 35; docs/api-notes.md "Combo
// orders and margin"). A combo order rests in its combo's book, not in the legs' exposures, so the
// ordinary open-order margin (src/risk/accountRisk.ts exposureIM) never sees it; without this an
// account could rest any number of combo orders it could not carry. Each open combo order holds,
// for its remaining amount at its own price:
//   - free cash: the net premium plus fees the fill would pay (the debit), set aside as an ordinary
//     buy's premium is (freeCash), never below zero;
//   - standard margin (`im`): the larger of that debit (an ordinary resting buy holds its premium and
//     fee in the initial margin too) and what its fill would take from the funds available, counted
//     as if the legs opened new positions (the net premium paid less the legs' value at mark, the
//     short legs' initial margin, the taker fee of every leg): the margin of the resulting leg
//     positions, so a spread holds less than its legs alone. Counted from flat legs, not against the
//     account's positions: an order may outlive the position it would close, and two orders selling
//     one long cannot both be covered by it (conservative);
//   - portfolio margin (`pmIm`): what the fill would take from equity at once (the net premium paid
//     less the legs' value at mark, plus fees), never below zero. The legs' risk is not here: the
//     scenario engine counts the account's combo orders as if filled, the worse of each combo's bid
//     and ask side (src/risk/portfolio/pmRisk.ts), so a combo order that hedges the book holds little.
// Cheap on purpose (bench: combo orders): each order's figures are computed once per mark epoch and
// remaining amount (the placement's computation is reused when the order rests), and each account's
// totals per currency move by the difference when an order rests, fills or closes.
import type { CurrencyCode } from '../domain/currency.ts';
import { premiumOf, tradeFee } from '../domain/instrument.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { Order, Position, User } from '../engine/types.ts';
import type { ComboRecord } from './combos.ts';

export interface ComboHold {
  /** standard margin's initial margin held, minor units (NaN: a leg has no mark) */
  im: number;
  /** portfolio margin's part outside the scenario engine: the fill's loss at mark and fees, minor units */
  pmIm: number;
  /** cash set aside from free cash, minor units */
  cash: number;
}

const ZERO: ComboHold = Object.freeze({ im: 0, pmIm: 0, cash: 0 });
const UNKNOWN: ComboHold = Object.freeze({ im: NaN, pmIm: NaN, cash: NaN });

/** A price high enough that no leg's fee cap applies: the commission-only fee, an upper bound of any fee. */
const UNCAPPED = 1e9;

/** One scratch position (valuation reads only inst and size): no allocation per leg. */
const scratch: Position = { inst: null as unknown as Position['inst'], size: 0, openCost: 0, realizedPnl: 0 };

/**
 * The hold of `lots` combo lots of `o` (its side and price) now. Reads only. The cash it sets aside
 * moves with no mark: a resting order fills at its own price (the net premium of the legs' split is
 * exactly the combo price, whatever the split), and its fee is at most the commission-only fee of
 * its legs, the cheaper direction free (a leg's fee cap at 12.5% of its price only lowers it). So
 * no index move can take free cash below zero (an ordinary resting buy's reservation is fixed too).
 */
export function comboHold(ex: Exchange, r: ComboRecord, o: Pick<Order, 'side' | 'price'>, lots: number): ComboHold {
  if (lots <= 0) return ZERO;
  const insts = ex.comboBooks.legInsts(r);
  const risk = ex.trading.risk;
  let value = 0;
  let shortIM = 0;
  let bought = 0;
  let sold = 0;
  for (let i = 0; i < insts.length; i++) {
    const inst = insts[i]!;
    const ratio = r.legs[i]!.ratio;
    const buys = (ratio > 0) === (o.side === 0);
    const legLots = Math.abs(ratio) * lots;
    const fee = tradeFee(inst, UNCAPPED, legLots, inst.takerCommission);
    if (buys) bought += fee;
    else sold += fee;
    scratch.inst = inst;
    scratch.size = buys ? legLots : -legLots;
    value += risk.positionValue(scratch);
    shortIM += risk.positionIM(scratch);
  }
  // the net premium: sum(ratio x leg price) = the combo price, and premiums are linear in the price
  const premium = premiumOf(insts[0]!, o.price, lots);
  const cash = (o.side === 0 ? -premium : premium) - (bought > 0 && sold > 0 ? Math.max(bought, sold) : bought + sold);
  if (!Number.isFinite(cash + value + shortIM)) return UNKNOWN;
  const debit = Math.max(0, -cash);
  return { im: Math.max(debit, shortIM - cash - value), pmIm: Math.max(0, -(cash + value)), cash: debit };
}

/** Per order: the hold computed at one margin version and remaining amount (marks move it). */
interface Entry extends ComboHold {
  version: number;
  remaining: number;
}

/** Per account and currency: the sum of its open combo orders' entries, valid at one margin version. */
interface Total extends ComboHold {
  version: number;
}

/**
 * The holds of the open combo orders, each cached until marks move or it fills, and their sums per
 * account and currency kept by the difference (ComboBooks calls rested/reduced/gone).
 */
export class ComboHolds {
  private readonly entries = new Map<Order, Entry>();
  private readonly totals = new Map<number, Map<CurrencyCode, Total>>();

  constructor(private readonly ex: Exchange) {}

  /** The order's hold now (cached per margin version and remaining amount). */
  of(o: Order): ComboHold {
    const c = this.entries.get(o);
    if (c !== undefined && c.version === this.ex.marginVersion && c.remaining === o.remaining) return c;
    return this.store(o, comboHold(this.ex, this.ex.combos.byId.get(o.inst.name)!, o, o.remaining));
  }

  private store(o: Order, h: ComboHold): Entry {
    const e: Entry = { im: h.im, pmIm: h.pmIm, cash: h.cash, version: this.ex.marginVersion, remaining: o.remaining };
    this.entries.set(o, e);
    return e;
  }

  /** What `qty` lots of `o` filling now release (its hold before less after), for the fill's check. */
  released(o: Order, qty: number): ComboHold {
    const before = this.of(o);
    if (qty >= o.remaining) return before;
    const after = comboHold(this.ex, this.ex.combos.byId.get(o.inst.name)!, o, o.remaining - qty);
    this.pending = { o, remaining: o.remaining - qty, version: this.ex.marginVersion, hold: after };
    return { im: before.im - after.im, pmIm: before.pmIm - after.pmIm, cash: before.cash - after.cash };
  }

  /** The after-fill hold `released` computed, kept for `reduced` when the fill goes through. */
  private pending: { o: Order; remaining: number; version: number; hold: ComboHold } | null = null;

  private totalOf(o: Order): Total | undefined {
    const t = this.totals.get(o.userId)?.get(o.inst.currency);
    return t !== undefined && t.version === this.ex.marginVersion ? t : undefined;
  }

  private forget(o: Order): void {
    this.totals.get(o.userId)?.delete(o.inst.currency);
  }

  /** Moves the account's total by `sign` x an entry; a NaN never stays in a running total. */
  private move(o: Order, e: ComboHold, sign: 1 | -1): void {
    const t = this.totalOf(o);
    if (t === undefined) return;
    if (!Number.isFinite(e.im + e.pmIm + e.cash)) {
      this.forget(o);
      return;
    }
    t.im += sign * e.im;
    t.pmIm += sign * e.pmIm;
    t.cash += sign * e.cash;
  }

  /** An order starts resting; `hold`: its hold now for its remaining amount when already computed (the placement's). */
  rested(o: Order, hold?: ComboHold): void {
    if (hold === undefined) {
      this.entries.delete(o);
      this.forget(o); // summed afresh when next read (a restore)
      return;
    }
    this.move(o, this.store(o, hold), 1);
  }

  /** A resting order's remaining amount went down (a partial fill). */
  reduced(o: Order): void {
    const old = this.entries.get(o);
    if (old === undefined || old.version !== this.ex.marginVersion) this.forget(o);
    else this.move(o, old, -1);
    const p = this.pending;
    this.pending = null;
    const h = p !== null && p.o === o && p.remaining === o.remaining && p.version === this.ex.marginVersion ? p.hold : comboHold(this.ex, this.ex.combos.byId.get(o.inst.name)!, o, o.remaining);
    this.move(o, this.store(o, h), 1);
  }

  /** An order stopped resting (filled, cancelled). */
  gone(o: Order): void {
    const old = this.entries.get(o);
    if (old === undefined || old.version !== this.ex.marginVersion) this.forget(o);
    else this.move(o, old, -1);
    this.entries.delete(o);
  }

  /** The holds of `orders` (an account's open combo orders) in one currency; `fresh`: computed anew, nothing cached touched (checks). */
  sum(userId: number, orders: Iterable<Order>, currency: CurrencyCode, fresh = false): ComboHold {
    if (!fresh) {
      const t = this.totals.get(userId)?.get(currency);
      if (t !== undefined && t.version === this.ex.marginVersion) return t;
    }
    let im = 0;
    let pmIm = 0;
    let cash = 0;
    for (const o of orders) {
      if (o.inst.currency !== currency) continue;
      const h = fresh ? comboHold(this.ex, this.ex.combos.byId.get(o.inst.name)!, o, o.remaining) : this.of(o);
      im += h.im;
      pmIm += h.pmIm;
      cash += h.cash;
    }
    const total: Total = { im, pmIm, cash, version: this.ex.marginVersion };
    if (!fresh && Number.isFinite(im + pmIm + cash)) {
      let byCurrency = this.totals.get(userId);
      if (byCurrency === undefined) this.totals.set(userId, (byCurrency = new Map()));
      byCurrency.set(currency, total);
    }
    return total;
  }
}

/**
 * Whether the account carries `lots` more of `side` resting in combo `r`, holding `hold`: its debit
 * out of the free cash, and what it adds to the initial margin out of the funds available. Standard
 * margin adds the hold's `im`; portfolio margin what the scenario engine's figure with the combo's
 * open lots raised adds, plus the hold's `pmIm` (RiskEngine.comboRestIM). Cross models recompute the
 * pool with the currency's requirement raised (a shortfall counts at 1 + haircut, so
 * `available - im` would be lenient there).
 */
export function restingFits(ex: Exchange, user: User, r: ComboRecord, side: 0 | 1, lots: number, hold: ComboHold): boolean {
  const risk = ex.trading.risk;
  const currency = ex.comboBooks.inst(r).currency;
  if (!Number.isFinite(hold.im + hold.pmIm + hold.cash)) return false;
  if (hold.cash > 0 && risk.freeCash(user, currency) < hold.cash) return false;
  const im = risk.comboRestIM(user, currency, r.id, side, lots, hold);
  if (risk.isCross(user)) return risk.crossInitialAfter(user, currency, 0, im) >= 0;
  // as an ordinary order on portfolio margin (pmCovers): one that adds nothing is carried
  return risk.available(user, currency) >= im || (im <= 0 && risk.isPm(user));
}
