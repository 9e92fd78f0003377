// What a resting combo order holds of its account (issue 34; docs/api-notes.md "Combo orders and
// margin"). A combo order rests in its combo's book, not in the legs' exposures, so the ordinary
// open-order margin (src/risk/accountRisk.ts exposureIM) never sees it; without this an account
// could rest any number of combo orders it could not carry. Each open combo order holds, for its
// remaining amount at its own price split into leg prices (legPrices.ts):
//   - free cash: the net premium plus fees the fill would pay (the debit), set aside as an ordinary
//     buy's premium is (freeCash), never below zero;
//   - initial margin: the larger of that debit (an ordinary resting buy holds its premium and fee in
//     the initial margin too) and what its fill would take from the funds available, counted as if
//     the legs opened new positions (the net premium paid less the legs' value at mark, the short
//     legs' initial margin, the taker fee of every leg): the margin of the resulting leg positions,
//     so a spread holds less than its legs alone.
// Counted from flat legs, not against the account's positions: an order may outlive the position it
// would close, and two orders selling one long cannot both be covered by it (conservative; a combo
// order that would close positions holds margin as if it opened them). Portfolio-margin accounts
// hold the same figure (see docs): the scenario engine's open-order lots are per instrument.
import { premiumOf, type Instrument } from '../domain/instrument.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { Order, Position } from '../engine/types.ts';
import type { ComboRecord } from './combos.ts';
import { legFees, legFills } from './fill.ts';
import { comboBand, legQuotes, splitPrice } from './legPrices.ts';

export interface ComboHold {
  /** initial margin held, minor units (NaN: a leg has no mark) */
  im: number;
  /** cash set aside from free cash, minor units */
  cash: number;
}

/** The hold of `lots` combo lots of `o` (its side and price) now. Reads only. */
export function comboHold(ex: Exchange, r: ComboRecord, o: Order, lots: number): ComboHold {
  if (lots <= 0) return { im: 0, cash: 0 };
  const quotes = legQuotes(ex, r.legs);
  if (quotes === null) return { im: NaN, cash: NaN };
  const insts: Instrument[] = r.legs.map((l) => ex.instruments.get(l.instrument)!);
  const ratios = r.legs.map((l) => l.ratio);
  // a price the band left behind (marks moved) cannot fill there: it is held at the band's edge
  const band = comboBand(quotes);
  const price = Math.min(band.max, Math.max(band.min, o.price));
  const prices = splitPrice(quotes, price) ?? quotes.map((q) => Math.min(q.max, Math.max(q.min, Math.round(q.mark))));
  const fills = legFills(insts, ratios, prices, o.side as 0 | 1, lots);
  const fees = legFees(fills, false);
  const risk = ex.trading.risk;
  let cash = 0;
  let change = 0;
  fills.forEach((f, i) => {
    const premium = premiumOf(f.inst, f.price, f.lots);
    cash += (f.side === 0 ? -premium : premium) - fees[i]!;
    const after: Position = { inst: f.inst, size: f.side === 0 ? f.lots : -f.lots, openCost: 0, realizedPnl: 0 };
    change += risk.positionValue(after) - risk.positionIM(after);
  });
  if (!Number.isFinite(cash + change)) return { im: NaN, cash: NaN };
  const debit = Math.max(0, -cash);
  return { im: Math.max(debit, -(cash + change)), cash: debit };
}

/** Per order: the hold computed at one margin version and remaining amount (marks move it). */
interface CachedHold extends ComboHold {
  version: number;
  remaining: number;
}

/** Sums the holds of a user's open combo orders in one currency, each cached until marks move or it fills. */
export class ComboHolds {
  private readonly cache = new WeakMap<Order, CachedHold>();

  constructor(private readonly ex: Exchange) {}

  of(o: Order): ComboHold {
    const c = this.cache.get(o);
    if (c !== undefined && c.version === this.ex.marginVersion && c.remaining === o.remaining) return c;
    const r = this.ex.combos.byId.get(o.inst.name)!;
    const h = comboHold(this.ex, r, o, o.remaining);
    this.cache.set(o, { ...h, version: this.ex.marginVersion, remaining: o.remaining });
    return h;
  }

  /** What `qty` lots of `o` filling now release (its hold before less after), for the fill's check. */
  released(o: Order, qty: number): ComboHold {
    const r = this.ex.combos.byId.get(o.inst.name)!;
    const before = this.of(o);
    const after = comboHold(this.ex, r, o, o.remaining - qty);
    return { im: before.im - after.im, cash: before.cash - after.cash };
  }

  /** `fresh`: computed anew, the cache untouched (for checks). */
  sum(orders: Iterable<Order>, currency: string, fresh = false): ComboHold {
    let im = 0;
    let cash = 0;
    for (const o of orders) {
      if (o.inst.currency !== currency) continue;
      const h = fresh ? comboHold(this.ex, this.ex.combos.byId.get(o.inst.name)!, o, o.remaining) : this.of(o);
      im += h.im;
      cash += h.cash;
    }
    return { im, cash };
  }
}

