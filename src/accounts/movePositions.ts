// private/move_positions: positions move between a main account and its subaccounts (or between two
// of its subaccounts) at a price inside the instrument's band, as trades between the two accounts
// without the book: the source gives up `lots` of its position, the target takes them on, and the
// premium changes hands at the price. One command moves every leg, so it applies whole or not at
// all, also across a crash: the legs are applied, then both accounts are checked (no balance below
// zero, no account below maintenance margin), and if either fails everything is put back exactly.
// Deribit charges no fee for a position move; nor does this.
import { PRICE_SCALE, isOnTick, premiumOf, roundToTick } from '../domain/instrument.ts';
import { ERR, reject, type Reject } from '../domain/errors.ts';
import type { Command } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';
import { appendEntry } from '../engine/ledger.ts';
import { applyFill } from '../engine/trading.ts';
import type { Position, User } from '../engine/types.ts';
import type { MovedLeg } from './types.ts';

/** Legs in one move at most (Deribit takes a list; this bounds one command's work). */
export const MAX_MOVE_LEGS = 100;

type MoveCmd = Extract<Command, { t: 'move_positions' }>;

interface Saved {
  user: User;
  p: Position;
  created: boolean;
  size: number;
  openCost: number;
  realizedPnl: number;
}

/** Who may move: the main account of both accounts (a subaccount may not; another family is not found). */
function authority(ex: Exchange, c: MoveCmd): Reject | null {
  const subs = ex.subaccounts;
  if (!ex.users.has(c.by)) return reject(ERR.UNAUTHORIZED);
  if (subs.isSubaccount(c.by)) return reject(ERR.FORBIDDEN, 'main_account_only');
  for (const [id, field] of [[c.from, 'source_uid'], [c.to, 'target_uid']] as const) {
    if (!ex.users.has(id) || subs.mainOf(id) !== c.by) return reject(ERR.NOT_FOUND, 'subaccount_not_found', field);
  }
  if (c.from === c.to) return reject(ERR.INVALID_ARGUMENTS, 'same_source_and_target', 'target_uid');
  return null;
}

export function applyMovePositions(ex: Exchange, c: MoveCmd): MovedLeg[] | Reject {
  const denied = authority(ex, c);
  if (denied !== null) return denied;
  if (c.legs.length === 0 || c.legs.length > MAX_MOVE_LEGS) return reject(ERR.INVALID_PARAMS, 'trades_count', 'trades');
  const src = ex.users.get(c.from)!;
  const dst = ex.users.get(c.to)!;
  const saved: Saved[] = [];
  const balances = new Map<string, number>();
  const save = (user: User, instId: number, inst: Position['inst']): Position => {
    let p = user.positions.get(instId);
    const created = p === undefined;
    if (p === undefined) {
      p = { inst, size: 0, openCost: 0, realizedPnl: 0 };
      user.positions.set(instId, p);
    }
    if (!saved.some((s) => s.p === p)) saved.push({ user, p, created, size: p.size, openCost: p.openCost, realizedPnl: p.realizedPnl });
    return p;
  };
  const undo = (r: Reject): Reject => {
    for (let i = saved.length - 1; i >= 0; i--) {
      const s = saved[i]!;
      s.p.size = s.size;
      s.p.openCost = s.openCost;
      s.p.realizedPnl = s.realizedPnl;
      if (s.created) s.user.positions.delete(s.p.inst.id);
    }
    for (const [k, v] of balances) {
      const [who, cur] = k.split(':') as ['s' | 'd', keyof User['accounts']];
      (who === 's' ? src : dst).accounts[cur].balance = v;
    }
    ex.trading.risk.accountChanged(src);
    ex.trading.risk.accountChanged(dst);
    return r;
  };
  const moved: MovedLeg[] = [];
  for (let i = 0; i < c.legs.length; i++) {
    const leg = c.legs[i]!;
    const inst = ex.instruments.get(leg.instrument);
    if (!inst || inst.state === 'delivered') return undo(reject(ERR.INVALID_INSTRUMENT, undefined, `trades[${i}].instrument_name`));
    if (inst.state !== 'open' || inst.halted || inst.expiry <= ex.now) return undo(reject(ERR.BOOK_CLOSED, inst.halted ? 'instrument_halted' : 'instrument_not_open'));
    const market = ex.markets.get(inst.id)!;
    if (!(market.markCoin >= 0)) return undo(reject(ERR.BOOK_CLOSED, 'no_mark_price'));
    if (!(leg.lots > 0) || leg.lots % inst.lotScaled !== 0) return undo(reject(ERR.INVALID_AMOUNT, 'not_multiple_of_min_trade_amount', `trades[${i}].amount`));
    const lots = leg.lots / inst.lotScaled;
    let price = leg.price;
    if (price === null) {
      // the mark on the tick grid, kept inside the band
      price = Math.min(market.maxPrice, Math.max(market.minPrice, roundToTick(inst, Math.round(market.markCoin * 10 ** PRICE_SCALE), 'nearest')));
    } else {
      if (!(price > 0) || !isOnTick(inst, price)) return undo(reject(ERR.PRICE_WRONG_TICK, undefined, `trades[${i}].price`));
      if (price < market.minPrice) return undo(reject(ERR.PRICE_TOO_LOW, undefined, `trades[${i}].price`));
      if (price > market.maxPrice) return undo(reject(ERR.PRICE_TOO_HIGH, undefined, `trades[${i}].price`));
    }
    const have = src.positions.get(inst.id)?.size ?? 0;
    if (Math.abs(have) < lots) return undo(reject(ERR.INVALID_AMOUNT, 'amount_exceeds_position', `trades[${i}].amount`));
    const sign = Math.sign(have);
    const cur = inst.currency;
    for (const [who, u] of [['s', src], ['d', dst]] as const) if (!balances.has(`${who}:${cur}`)) balances.set(`${who}:${cur}`, u.accounts[cur].balance);
    const ps = save(src, inst.id, inst);
    const pd = save(dst, inst.id, inst);
    const premium = premiumOf(inst, price, lots);
    // a long moves as the source selling to the target; a short as the source buying back from it
    applyFill(ps, inst, -sign * lots, price);
    applyFill(pd, inst, sign * lots, price);
    src.accounts[cur].balance += sign * premium;
    dst.accounts[cur].balance -= sign * premium;
    moved.push({ instrument: inst.name, side: sign > 0 ? 'sell' : 'buy', lots, price });
  }
  const risk = ex.trading.risk;
  risk.accountChanged(src);
  risk.accountChanged(dst);
  for (const [u, field] of [[src, 'source_uid'], [dst, 'target_uid']] as const) {
    if (risk.hasNegativeBalance(u)) return undo(reject(ERR.NOT_ENOUGH_FUNDS, 'negative_balance', field));
    if (risk.inDistress(u)) return undo(reject(ERR.NOT_ENOUGH_FUNDS, 'account_below_maintenance', field));
  }
  // applied: both logs
  // each entry's balance is the balance after it: counted up from the balances before the move
  const running = new Map<string, number>(balances);
  for (const m of moved) {
    const inst = ex.instruments.get(m.instrument)!;
    const premium = premiumOf(inst, m.price, m.lots);
    const srcSize = m.side === 'sell' ? -m.lots : m.lots;
    for (const [who, u, size, other] of [['s', src, srcSize, dst.id], ['d', dst, -srcSize, src.id]] as const) {
      const cash = size > 0 ? -premium : premium;
      const key = `${who}:${inst.currency}`;
      const balance = running.get(key)! + cash;
      running.set(key, balance);
      appendEntry(u.log, { id: ex.nextLogId++, ts: ex.now, type: 'position_move', currency: inst.currency, amount: cash, balance, instrument: inst.name, userId: other, size, price: m.price, fee: 0, ref: null });
    }
  }
  for (const s of saved) ex.markets.get(s.p.inst.id)!.changeId++;
  // reduce-only orders either account no longer covers are cut (the target's may face a smaller position too)
  for (const m of moved) for (const u of [src, dst]) ex.trading.trimReduceOnlyAfterFills(u, ex.instruments.get(m.instrument)!);
  risk.accountChanged(src);
  risk.accountChanged(dst);
  return moved;
}
