// The accounts part of the conservation stream (issue 32): subaccounts created and removed, transfers
// inside a family (allowed or not, with and without nonces), transfers to other users (held for a
// while, confirmed or cancelled), position moves between the accounts of a family (at the mark, inside
// or outside the band, more than held), and orders of subaccounts. Chosen from the live engine so that
// most are meaningful; the refused ones must change nothing (the invariants say so).
import { roundToTick } from '../../src/domain/instrument.ts';
import type { Command } from '../../src/engine/commands.ts';
import type { Exchange } from '../../src/engine/exchange.ts';
import type { CurrencyCode } from '../../src/domain/currency.ts';

export interface Rand {
  r(): number;
  int(n: number): number;
  pick<T>(a: readonly T[]): T;
  chance(p: number): boolean;
}

/** The accounts of main account `m`: itself and its live subaccounts. */
function family(ex: Exchange, m: number): number[] {
  return [m, ...ex.subaccounts.childrenOf(m)];
}

/** An amount around what `id` may withdraw (up to 20% above it, so some are refused). */
function amountFor(ex: Exchange, g: Rand, id: number, currency: CurrencyCode): number {
  const u = ex.users.get(id);
  const avail = u === undefined ? 0 : ex.trading.risk.account(u, currency).availableWithdrawal;
  return 1 + Math.floor(avail * 1.2 * g.r());
}

export function accountsCommand(ex: Exchange, g: Rand, mains: number, currencies: readonly CurrencyCode[], order: (userId: number) => Command): Command {
  const m = 1 + g.int(mains);
  const fam = family(ex, m);
  const y = g.r();
  if (y < 0.12) return { t: 'create_subaccount', mainId: m, max: 3 };
  if (y < 0.16) return { t: 'remove_subaccount', mainId: m, subId: fam.length > 1 ? g.pick(fam.slice(1)) : 999 };
  if (y < 0.38) {
    const from = g.pick(fam);
    // now and then an account of another family, or the same account twice
    const to = g.chance(0.05) ? 1 + g.int(mains) : g.pick(fam);
    const by = g.chance(0.8) ? m : from;
    const currency = g.pick(currencies);
    return { t: 'transfer', by, from, to, currency, amount: amountFor(ex, g, from, currency), nonce: g.chance(0.3) ? `t${g.int(20)}` : null };
  }
  if (y < 0.5) {
    const by = g.chance(0.9) ? m : g.pick(fam);
    const currency = g.pick(currencies);
    return { t: 'user_transfer', by, destination: `p${1 + g.int(mains)}@prop.io`, currency, amount: amountFor(ex, g, by, currency), nonce: g.chance(0.3) ? `u${g.int(20)}` : null, holdMs: g.pick([0, 5_000, 60_000]) };
  }
  if (y < 0.56) return { t: 'cancel_transfer', by: m, id: Math.max(1, ex.subaccounts.nextTransferId - 1 - g.int(8)), currency: g.pick(currencies) };
  if (y < 0.64) return { t: 'confirm_transfers' };
  if (y < 0.92) {
    // mostly from the main account (it trades; its subaccounts hold what was moved to them)
    const from = g.chance(0.7) ? m : g.pick(fam);
    let to = g.pick(fam);
    if (to === from && fam.length > 1) to = fam[(fam.indexOf(from) + 1) % fam.length]!;
    const held = [...(ex.users.get(from)?.positions.values() ?? [])].filter((p) => p.size !== 0 && p.inst.state === 'open');
    if (held.length === 0) return { t: 'move_positions', by: m, from, to, legs: [{ instrument: 'BTC-1JAN30-1-C', lots: 1e7, price: null }] };
    const legs = [];
    for (let i = 1 + g.int(3); i > 0; i--) {
      const p = g.pick(held);
      const market = ex.markets.get(p.inst.id)!;
      let price: number | null = null;
      if (g.chance(0.5) && Number.isFinite(market.markCoin)) {
        price = roundToTick(p.inst, market.minPrice + g.r() * (market.maxPrice - market.minPrice), 'nearest');
        if (g.chance(0.05)) price = market.maxPrice + 5;
      }
      const most = Math.abs(p.size);
      // small moves mostly (a subaccount has little money for premium or margin), now and then all or more
      const lots = g.chance(0.05) ? most + 1 : g.chance(0.1) ? most : 1 + g.int(Math.min(most, 3));
      legs.push({ instrument: p.inst.name, lots: lots * p.inst.lotScaled, price });
    }
    return { t: 'move_positions', by: g.chance(0.95) ? m : from, from, to, legs };
  }
  // a subaccount trades
  return order(fam.length > 1 ? g.pick(fam.slice(1)) : m);
}
