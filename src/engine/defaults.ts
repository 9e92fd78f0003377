// Defaults: what happens when an account cannot pay (API.md 5.3, docs/api-notes.md "Defaults").
//
// No user balance stays below zero after a liquidation or settlement step. A deficit in currency C
// is met, inside the command that made it, in this order:
//   0. the account's own assets in C: its long positions, taken over at mark by the insurance
//      account (only as many as the deficit needs when the account is otherwise solvent; all of its
//      positions, shorts included, when its equity in C is below zero);
//   1. the account's other currencies: what it could withdraw of each is exchanged at index with
//      the insurance account, which pays C;
//   2. the insurance account, which takes over what is left; its balance in C may go below zero;
//   3. at the next settlement in C, a shortfall of the insurance account (its balance plus the
//      value at mark of the positions it holds, below zero) is shared by cutting that settlement's
//      net payouts pro rata (socialized loss; a user paid less than its shorts there paid is not
//      cut); each cut payout receives the insurance account's other
//      currencies at index, in proportion to its cut, up to the value cut.
// Every movement is logged on both sides (src/engine/ledger.ts). Integer money throughout;
// conversions at index are exact rational arithmetic, rounded in the exchange's favour.
import { CURRENCIES, CURRENCY_CODES, type CurrencyCode } from '../domain/currency.ts';
import type { Instrument } from '../domain/instrument.ts';
import { contractsOf } from '../risk/accountRisk.ts';
import { toMinorDown, toMinorUp } from '../risk/margin.ts';
import type { Exchange } from './exchange.ts';
import { appendEntry, type Ledger, type LedgerType } from './ledger.ts';
import type { Account, Position, User } from './types.ts';

/** Whoever holds balances and keeps a log: a user, or the insurance account. */
export interface Holder {
  accounts: Record<CurrencyCode, Account>;
  log: Ledger;
}

/** The insurance account: balances per currency, the positions it took over, and its log. */
export interface InsuranceFund extends Holder {
  positions: Map<number, Position>;
}

/** Changes a holder's balance by `amount` (signed minor units) and logs it. */
export function post(ex: Exchange, h: Holder, currency: CurrencyCode, amount: number, type: LedgerType, inst: Instrument | null, userId: number | null, size: number | null = null, fee = 0): void {
  const acct = h.accounts[currency];
  acct.balance += amount;
  // a user's equity after it (Deribit's `equity`); the insurance account's is not valued here. The
  // full sum, not the running totals: a takeover or a delivery posts before it moves the position
  // and resets the totals after, and a read of them here would keep them from that moment
  const equity = isUser(h) ? acct.balance + ex.trading.risk.sumPositions(h, currency).value : null;
  const mark = inst === null ? null : (ex.markets.get(inst.id)?.markCoin ?? null);
  appendEntry(h.log, { id: ex.nextLogId++, ts: ex.now, type, currency, amount, balance: acct.balance, instrument: inst?.name ?? null, userId, size, price: null, fee, ref: null, index: ex.indexPrice(currency), mark, equity });
}

function isUser(h: Holder): h is User {
  return (h as Partial<User>).id !== undefined;
}

/** Moves `amount` from one holder to the other in one currency, logged on both sides. */
function transfer(ex: Exchange, from: Holder, to: Holder, currency: CurrencyCode, amount: number, type: LedgerType, inst: Instrument | null, fromId: number | null, toId: number | null): void {
  if (amount === 0) return;
  post(ex, from, currency, -amount, type, inst, toId);
  post(ex, to, currency, amount, type, inst, fromId);
}

// ---- conversions at index --------------------------------------------------------------------

/** USD per coin as an exact integer of 10^-8 USD (USDC is worth 1 USD); null without an index. */
function usdE8(ex: Exchange, c: CurrencyCode): bigint | null {
  const p = c === 'USDC' ? 1 : ex.indexPrice(c);
  if (!(p > 0) || !Number.isFinite(p)) return null;
  return BigInt(Math.round(p * 1e8));
}

/** `amount` minor units of `from` valued in minor units of `to` at index, rounded down (null: no index). */
export function valueDown(ex: Exchange, amount: number, from: CurrencyCode, to: CurrencyCode): number | null {
  const pf = usdE8(ex, from);
  const pt = usdE8(ex, to);
  if (pf === null || pt === null) return null;
  const num = BigInt(amount) * pf * 10n ** BigInt(CURRENCIES[to].decimals);
  const den = pt * 10n ** BigInt(CURRENCIES[from].decimals);
  return Number(num / den);
}

/** Minor units of `from` worth at least `target` minor units of `to` at index, rounded up. */
function amountUp(ex: Exchange, target: number, to: CurrencyCode, from: CurrencyCode): number | null {
  const pf = usdE8(ex, from);
  const pt = usdE8(ex, to);
  if (pf === null || pt === null) return null;
  const num = BigInt(target) * pt * 10n ** BigInt(CURRENCIES[from].decimals);
  const den = pf * 10n ** BigInt(CURRENCIES[to].decimals);
  return Number((num + den - 1n) / den);
}

/** Splits `total` in proportion to `weights` exactly: floors, then the remainder to the largest fractions (ties: earlier first). */
export function splitProRata(total: number, weights: readonly number[]): number[] {
  const sum = weights.reduce((s, w) => s + BigInt(w), 0n);
  if (sum === 0n || total === 0) return weights.map(() => 0);
  const T = BigInt(total);
  const shares = weights.map((w) => (T * BigInt(w)) / sum);
  const rests = weights.map((w, i) => ({ i, rest: (T * BigInt(w)) % sum }));
  let left = total - shares.reduce((s, x) => s + Number(x), 0);
  rests.sort((a, b) => (a.rest === b.rest ? a.i - b.i : a.rest > b.rest ? -1 : 1));
  const out = shares.map(Number);
  for (const r of rests) {
    if (left === 0) break;
    out[r.i]++;
    left--;
  }
  return out;
}

// ---- takeover at mark ---------------------------------------------------------------------------

/** The value at mark of `lots` of a position: longs rounded down, shorts' liability up (negative). */
function valueAtMark(ex: Exchange, inst: Instrument, lots: number): number {
  const m = ex.markets.get(inst.id)!;
  const d = CURRENCIES[inst.currency].decimals;
  const coin = (m.markCoin > 0 ? m.markCoin : 0) * contractsOf(inst, Math.abs(lots));
  return lots > 0 ? toMinorDown(coin, d) : -toMinorUp(coin, d);
}

/** Adds `lots` bought or sold for `cost` (premium paid: >0 for longs, <0 for shorts) to a position. */
function mergeInto(p: Position, lots: number, cost: number): void {
  const s = p.size;
  if (s === 0 || Math.sign(s) === Math.sign(lots)) {
    p.size = s + lots;
    p.openCost += cost;
    return;
  }
  const closing = Math.min(Math.abs(lots), Math.abs(s));
  const removed = Number((BigInt(p.openCost) * BigInt(closing)) / BigInt(Math.abs(s)));
  const costClosing = Number((BigInt(cost) * BigInt(closing)) / BigInt(Math.abs(lots)));
  p.realizedPnl += -(removed + costClosing);
  p.openCost -= removed;
  p.size = s + lots;
  if (Math.abs(lots) > closing) p.openCost = cost - costClosing;
  if (p.size === 0) p.openCost = 0;
}

/**
 * The insurance account takes over `lots` (signed, of the position's sign) of a user's position at
 * mark: it pays the user the value of a long and is paid the liability of a short.
 */
function takeOverLots(ex: Exchange, user: User, p: Position, lots: number): void {
  const inst = p.inst;
  const value = valueAtMark(ex, inst, lots);
  const fund = ex.insurance;
  transfer(ex, fund, user, inst.currency, value, 'takeover', inst, null, user.id);
  // the user's side: the part handed over leaves the position at its share of the open cost
  const removed = Number((BigInt(p.openCost) * BigInt(Math.abs(lots))) / BigInt(Math.abs(p.size)));
  p.realizedPnl += value - removed;
  p.openCost -= removed;
  p.size -= lots;
  if (p.size === 0) {
    p.openCost = 0;
    user.positions.delete(inst.id);
  }
  let held = fund.positions.get(inst.id);
  if (held === undefined) {
    held = { inst, size: 0, openCost: 0, realizedPnl: 0 };
    fund.positions.set(inst.id, held);
  }
  mergeInto(held, lots, value);
  if (held.size === 0) fund.positions.delete(inst.id);
  ex.markets.get(inst.id)!.changeId++;
}

/** What the insurance account's positions in one currency are worth at mark (longs down, shorts' liability up). */
export function insuranceHeldValue(ex: Exchange, currency: CurrencyCode): number {
  let value = 0;
  for (const p of ex.insurance.positions.values()) if (p.inst.currency === currency) value += valueAtMark(ex, p.inst, p.size);
  return value;
}

/** Positions of a user in one currency, in a fixed order (instrument id). */
function positionsIn(user: User, currency: CurrencyCode): Position[] {
  return [...user.positions.values()].filter((p) => p.size !== 0 && p.inst.currency === currency).sort((a, b) => a.inst.id - b.inst.id);
}

/** Takes over every position of a user in one currency (its equity there is below zero). */
export function takeOverAll(ex: Exchange, user: User, currency: CurrencyCode): number {
  const all = positionsIn(user, currency);
  for (const p of all) takeOverLots(ex, user, p, p.size);
  ex.trading.risk.accountChanged(user);
  return all.length;
}

/**
 * Takes over just enough of a user's long positions in one currency, most valuable first, to bring
 * its balance there back to zero. Returns how many positions it took (in part or whole).
 */
export function takeOverLongsForCash(ex: Exchange, user: User, currency: CurrencyCode): number {
  const longs = positionsIn(user, currency)
    .filter((p) => p.size > 0 && valueAtMark(ex, p.inst, 1) > 0)
    .map((p) => ({ p, perLot: valueAtMark(ex, p.inst, 1) }))
    .sort((a, b) => b.perLot * b.p.size - a.perLot * a.p.size || a.p.inst.id - b.p.inst.id);
  let taken = 0;
  for (const { p, perLot } of longs) {
    const deficit = -user.accounts[currency].balance;
    if (deficit <= 0) break;
    let lots = Math.min(p.size, Math.ceil(deficit / perLot));
    // rounding per lot vs per position: one more lot when the rounded value falls just short
    if (lots < p.size && valueAtMark(ex, p.inst, lots) < deficit) lots++;
    takeOverLots(ex, user, p, lots);
    taken++;
  }
  ex.trading.risk.accountChanged(user);
  return taken;
}

// ---- the waterfall ------------------------------------------------------------------------------

/**
 * What a user could withdraw of a currency, ignoring the block a negative balance elsewhere puts on it.
 * A cross account (cross_pm, cross_sm) gives what the currency holds above its own requirement (its
 * segregated figures): the pooled figure would charge the very deficit being covered at 1 + haircut
 * against the collateral that covers it, and leave the insurance account to pay what the account
 * still has (moving value at index from a surplus currency to a short one never lowers the pool).
 */
function freeToTake(ex: Exchange, user: User, c: CurrencyCode): number {
  const risk = ex.trading.risk;
  const r = risk.isCross(user) ? risk.asIf(user, risk.isPm(user) ? 'segregated_pm' : 'segregated_sm', () => risk.account(user, c)) : risk.account(user, c);
  return Math.max(0, Math.min(risk.freeCash(user, c), r.available));
}

/**
 * Steps 1 and 2 for a user whose balance in `currency` is below zero: its other currencies at
 * index, then the insurance account takes over the rest. The balance ends at exactly zero.
 */
export function coverDeficit(ex: Exchange, user: User, currency: CurrencyCode): void {
  const fund = ex.insurance;
  for (const x of CURRENCY_CODES) {
    const deficit = -user.accounts[currency].balance;
    if (deficit <= 0) return;
    if (x === currency) continue;
    const free = freeToTake(ex, user, x);
    if (free <= 0) continue;
    const needed = amountUp(ex, deficit, currency, x);
    if (needed === null) continue;
    const taken = Math.min(free, needed);
    const credited = Math.min(deficit, valueDown(ex, taken, x, currency) ?? 0);
    if (credited <= 0) continue;
    transfer(ex, user, fund, x, taken, 'conversion', null, user.id, null);
    transfer(ex, fund, user, currency, credited, 'conversion', null, null, user.id);
  }
  const rest = -user.accounts[currency].balance;
  if (rest > 0) transfer(ex, fund, user, currency, rest, 'insurance_cover', null, null, user.id);
}

/**
 * A user's balance in `currency` fell below zero (settlement, liquidation): its orders there are
 * cancelled, its longs there are taken over at mark as far as needed, then the waterfall covers the
 * rest. Afterwards every balance of the user is at or above zero.
 */
export function resolveDeficit(ex: Exchange, user: User, currency: CurrencyCode): void {
  if (user.accounts[currency].balance >= 0) return;
  ex.trading.cancelUserOrders(user, currency, 'autoliquidation');
  if (ex.comboBooks.hasOpen()) ex.comboBooks.cancelUser(user.id, currency, 'autoliquidation');
  const r = ex.trading.risk.account(user, currency);
  if (r.equity < 0) takeOverAll(ex, user, currency);
  else takeOverLongsForCash(ex, user, currency);
  coverDeficit(ex, user, currency);
}

/**
 * Step 3 at a settlement in `currency`, after every position of the expiry is settled and every
 * deficit covered: a shortfall of the insurance account is met by its other currencies and by
 * cutting the payouts of this settlement (`payouts`: net credits per user, > 0) pro rata; the cut
 * payouts receive the insurance account's other currencies at index, in proportion to their cut.
 */
export function socializeShortfall(ex: Exchange, currency: CurrencyCode, payouts: Map<User, number>): void {
  const fund = ex.insurance;
  // a balance below zero backed by positions worth as much (longs bought at mark from an account
  // short of cash) is no loss yet: only what the positions do not cover is shared
  const shortfall = -(fund.accounts[currency].balance + insuranceHeldValue(ex, currency));
  if (shortfall <= 0 || payouts.size === 0) return;
  const creditors = [...payouts.keys()].sort((a, b) => a.id - b.id);
  const weights = creditors.map((u) => payouts.get(u)!);
  const cutTotal = Math.min(shortfall, weights.reduce((s, w) => s + w, 0));
  const cuts = splitProRata(cutTotal, weights);
  creditors.forEach((u, i) => transfer(ex, u, fund, currency, cuts[i], 'socialized_loss', null, u.id, null));
  // what was cut is owed to them in value: paid in the insurance account's other currencies
  let owed = cutTotal;
  for (const x of CURRENCY_CODES) {
    if (x === currency || owed <= 0) continue;
    const available = fund.accounts[x].balance;
    if (available <= 0) continue;
    const worth = valueDown(ex, owed, currency, x);
    if (worth === null || worth <= 0) continue;
    const paid = Math.min(available, worth);
    const shares = splitProRata(paid, cuts);
    creditors.forEach((u, i) => transfer(ex, fund, u, x, shares[i], 'socialized_loss_compensation', null, null, u.id));
    owed -= paid === worth ? owed : (valueDown(ex, paid, x, currency) ?? owed);
  }
}
