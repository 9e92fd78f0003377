// Expiry and settlement (API.md 7.3), and the index history the delivery price is computed from.
//
// The delivery price is the time-weighted average of the index over the 30 minutes before expiry.
// The engine keeps the index points itself (they arrive as journaled `index` commands), so a
// `settle` command computes the same price live and in replay, and a crash at any point before
// the command is journaled simply settles again from the same history after restart. The whole
// expiry (cancels, cash, fees, states, delivery record) is one command: it happens exactly once.
import { CURRENCIES, type CurrencyCode } from '../domain/currency.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Instrument } from '../domain/instrument.ts';
import { intrinsicCoin } from '../domain/pricing.ts';
import type { Exchange } from './exchange.ts';
import { post, resolveDeficit, socializeShortfall } from './defaults.ts';
import { BUY } from './orderBook.ts';
import type { Order, User } from './types.ts';
import { pow10 } from '../domain/decimal.ts';

export const TWAP_WINDOW_MS = 30 * 60_000;
/** Delivery fee per contract: min(DELIVERY_FEE_COIN, DELIVERY_FEE_CAP x intrinsic), on ITM exercise. */
export const DELIVERY_FEE_COIN = 0.00015;
export const DELIVERY_FEE_CAP = 0.125;
/** Prune the index history only every so many points (pruning scans the instruments). */
const PRUNE_EVERY = 64;

/** [timestamp ms, index price] in time order. */
export type IndexPoint = [number, number];

export interface DeliveryRecord {
  currency: CurrencyCode;
  expiry: number;
  price: number;
}

export interface SettleResult {
  currency: CurrencyCode;
  expiry: number;
  deliveryPrice: number;
  instruments: string[];
  positionsSettled: number;
}

/** Appends an index point and drops points no pending settlement can need. */
export function recordIndex(ex: Exchange, currency: CurrencyCode, ts: number, price: number): void {
  const hist = (ex.indexHistory[currency] ??= []);
  hist.push([ts, price]);
  if (hist.length % PRUNE_EVERY !== 0) return;
  // the earliest expiry still to settle bounds what must be kept; the last point before the
  // horizon stays too, since it is the index in force when the window opens
  let earliest = ts;
  for (const inst of ex.instruments.values()) {
    if (inst.currency === currency && inst.state !== 'delivered' && inst.expiry < earliest) earliest = inst.expiry;
  }
  const horizon = earliest - TWAP_WINDOW_MS;
  let keepFrom = 0;
  while (keepFrom + 1 < hist.length && hist[keepFrom + 1][0] <= horizon) keepFrom++;
  if (keepFrom > 0) hist.splice(0, keepFrom);
}

/**
 * Time-weighted average of a step function (each point holds until the next) over [from, to].
 * Before the first point there is no index: the average covers only the time with one. NaN when
 * no point lies at or before `to`.
 */
export function twap(points: readonly IndexPoint[], from: number, to: number): number {
  let sum = 0;
  let covered = 0;
  for (let i = 0; i < points.length; i++) {
    const [ts, price] = points[i];
    if (ts > to) break;
    const next = i + 1 < points.length ? Math.min(points[i + 1][0], to) : to;
    const start = Math.max(ts, from);
    if (next > start) {
      sum += price * (next - start);
      covered += next - start;
    }
  }
  if (covered > 0) return sum / covered;
  // a point exactly at `to` (or a zero-length window): the index in force at `to`
  let last = NaN;
  for (const [ts, price] of points) if (ts <= to) last = price;
  return last;
}

/** The delivery price of an expiry from the engine's index history, rounded to the cent. */
export function deliveryPriceOf(ex: Exchange, currency: CurrencyCode, expiry: number): number {
  const raw = twap(ex.indexHistory[currency] ?? [], expiry - TWAP_WINDOW_MS, expiry);
  return Number.isFinite(raw) ? Math.round(raw * 100) / 100 : NaN;
}

/** Payout of a long position, minor units: payouts round down (the exchange never pays a fraction). */
export function payoutMinor(contractsScaled: number, payoffCoin: number, decimals: number): number {
  // contractsScaled = contracts x 10^8; 1e-6 absorbs float noise below a millionth of a minor unit
  return Math.floor((contractsScaled * payoffCoin * pow10(decimals)) / 1e8 + 1e-6);
}

/** Debit of a short position, minor units: liabilities round up. */
export function liabilityMinor(contractsScaled: number, payoffCoin: number, decimals: number): number {
  return Math.ceil((contractsScaled * payoffCoin * pow10(decimals)) / 1e8 - 1e-6);
}

/** Delivery fee of an exercised long, minor units: fees round up, never above the payout. */
export function deliveryFeeMinor(contractsScaled: number, payoffCoin: number, decimals: number, payout: number): number {
  if (!(payoffCoin > 0)) return 0;
  const perContract = Math.min(DELIVERY_FEE_COIN, DELIVERY_FEE_CAP * payoffCoin);
  return Math.min(payout, Math.ceil((contractsScaled * perContract * pow10(decimals)) / 1e8 - 1e-6));
}

/** Cancels a user's open buys in `currency`, newest first, until the cash they promise fits the balance. */
function cancelUnfundedBuys(ex: Exchange, user: User, currency: CurrencyCode): void {
  if ((user.openOrderCount === 0 && ex.comboBooks.openOf(user.id).length === 0) || ex.trading.risk.freeCash(user, currency) >= 0) return;
  const buys: Order[] = [];
  for (const e of user.exposures.values()) {
    if (e.inst.currency !== currency || e.buyReserved === 0) continue;
    for (const o of e.openOrders) if (o.side === BUY && o.reserved > 0) buys.push(o);
  }
  buys.sort((a, b) => b.id - a.id);
  for (const o of buys) {
    if (ex.trading.risk.freeCash(user, currency) >= 0) break;
    ex.trading.cancelOrders(user.id, [o.id], 'risk_mitigation');
  }
  // resting combo orders set their debit aside too (src/combos/orderMargin.ts): newest first as well
  if (ex.trading.risk.freeCash(user, currency) < 0) ex.comboBooks.cancelUnfunded(user.id, currency);
}

/** Settles every instrument of `currency` expiring at `expiry`. One command, all or nothing. */
export function settleExpiry(ex: Exchange, currency: CurrencyCode, expiry: number): SettleResult | Reject {
  if (ex.now < expiry) return reject(ERR.INVALID_ARGUMENTS, 'not_expired', 'expiry');
  const series: Instrument[] = [];
  for (const inst of ex.instruments.values()) {
    if (inst.currency === currency && inst.expiry === expiry && inst.state !== 'delivered') series.push(inst);
  }
  if (series.length === 0) return reject(ERR.INVALID_ARGUMENTS, 'nothing_to_settle', 'expiry');
  let S = deliveryPriceOf(ex, currency, expiry);
  if (!(S > 0)) S = ex.indexPrice(currency);
  // no index ever: nothing can be valued; refused before anything changes (retried next tick)
  if (!(S > 0)) return reject(ERR.INVALID_ARGUMENTS, 'no_index_price', 'expiry');
  const decimals = CURRENCIES[currency].decimals;
  const fees = ex.system.fees[currency];
  const fund = ex.insurance;
  let positionsSettled = 0;
  /** What this settlement paid (+) or took (-) per user, over every series of the expiry. */
  const net = new Map<User, number>();
  for (const inst of series) {
    inst.state = 'settlement';
    ex.trading.cancelInstrument(inst, 'settlement');
    const payoff = intrinsicCoin(inst.optionType, S, inst.strike);
    for (const user of ex.users.values()) {
      const pos = user.positions.get(inst.id);
      if (!pos) continue;
      if (pos.size !== 0) {
        const contractsScaled = Math.abs(pos.size) * inst.lotScaled * inst.contractSize;
        if (pos.size > 0) {
          const payout = payoutMinor(contractsScaled, payoff, decimals);
          const fee = deliveryFeeMinor(contractsScaled, payoff, decimals, payout);
          if (payout - fee !== 0) post(ex, user, currency, payout - fee, 'delivery', inst, null, pos.size, fee);
          if (payout - fee !== 0) net.set(user, (net.get(user) ?? 0) + payout - fee);
          user.accounts[currency].fees += fee;
          fees.balance += fee - payout;
        } else {
          const debit = liabilityMinor(contractsScaled, payoff, decimals);
          if (debit !== 0) post(ex, user, currency, -debit, 'delivery', inst, null, pos.size);
          if (debit !== 0) net.set(user, (net.get(user) ?? 0) - debit);
          fees.balance += debit;
        }
        positionsSettled++;
      }
      user.positions.delete(inst.id);
      ex.trading.risk.accountChanged(user);
    }
    // positions the insurance account took over settle like any other (no delivery fee: it is the
    // exchange's own account)
    const held = fund.positions.get(inst.id);
    if (held) {
      const contractsScaled = Math.abs(held.size) * inst.lotScaled * inst.contractSize;
      const amount = held.size > 0 ? payoutMinor(contractsScaled, payoff, decimals) : -liabilityMinor(contractsScaled, payoff, decimals);
      if (amount !== 0) post(ex, fund, currency, amount, 'delivery', inst, null, held.size);
      fees.balance -= amount;
      fund.positions.delete(inst.id);
      positionsSettled++;
    }
    inst.state = 'delivered';
    inst.deliveryPrice = S;
    const m = ex.markets.get(inst.id);
    if (m) m.changeId++;
  }
  // a short that cost more than its account held: the account's other assets, then the waterfall
  // (src/engine/defaults.ts); no user balance is left below zero
  for (const user of ex.users.values()) if (user.accounts[currency].balance < 0) resolveDeficit(ex, user, currency);
  // what the insurance account could not cover is shared by this settlement's net payouts: a user
  // paid on one series and debited more on another received nothing net, and a cut of its gross
  // payout would take money it no longer has (the balance went below zero after its deficit was
  // covered; the conservation stream found it with portfolio-margin accounts)
  const payouts = new Map<User, number>();
  for (const [user, amount] of net) if (amount > 0) payouts.set(user, amount);
  socializeShortfall(ex, currency, payouts);
  // a delivery debit (or a shared shortfall) may have taken cash that open buys were accepted
  // against; their fills pay without a further check, so those bids go, newest first
  for (const user of ex.users.values()) cancelUnfundedBuys(ex, user, currency);
  // longs' payouts are paid from the shorts' debits through the fee account, which keeps the
  // rounding residue (debits round up, payouts down): every minor unit stays accounted for
  ex.deliveries.push({ currency, expiry, price: S });
  return { currency, expiry, deliveryPrice: S, instruments: series.map((i) => i.name), positionsSettled };
}
