// Cheap checks on one command's result in the conservation stream: fills of orders and combo
// orders, client_order_id reuse, buys within their funds, the cash rules, block trades' margin.
import assert from 'node:assert/strict';
import type { ComboPlaceResult } from '../../../src/combos/book.ts';
import type { CurrencyCode } from '../../../src/domain/currency.ts';
import { isReject } from '../../../src/domain/errors.ts';
import { premiumOf } from '../../../src/domain/instrument.ts';
import type { Sequenced } from '../../../src/engine/commands.ts';
import { DEFAULT_LIMITS, type Exchange } from '../../../src/engine/exchange.ts';
import { BUY } from '../../../src/engine/orderBook.ts';
import type { PlaceResult } from '../../../src/engine/trading.ts';
import { CURRENCIES } from './streamParams.ts';

/** A combo order's fills: every leg, leg prices summing to the combo price, each inside its leg band. */
function checkComboFills(ex: Exchange, res: ComboPlaceResult, where: string): void {
  const r = ex.combos.byId.get(res.order.inst.name)!;
  for (const ct of res.comboTrades) {
    assert.equal(ct.legs.length, r.legs.length, `${where}: a combo fill without every leg`);
    assert.notEqual(ct.makerOrder.userId, ct.takerOrder.userId, `${where}: combo self-trade`);
    let net = 0;
    ct.legs.forEach((t, i) => {
      net += r.legs[i]!.ratio * t.price;
      const m = ex.markets.get(t.inst.id)!;
      assert.ok(t.price >= m.minPrice && t.price <= m.maxPrice, `${where}: leg ${t.inst.name} at ${t.price} outside its band`);
      assert.equal(t.lots, Math.abs(r.legs[i]!.ratio) * ct.lots, `${where}: leg size`);
    });
    assert.equal(net, ct.price, `${where}: leg prices do not sum to the combo price`);
  }
}

/** The price of every order resting in the book of a place command's instrument, before it runs: a
 *  filled maker may be forgotten by its account's order map in the same command (its trades then
 *  hold a stub without the price, src/engine/types.ts TradedOrder). */
export function restingPrices(ex: Exchange, cmd: Sequenced): Map<number, number> | null {
  if (cmd.t !== 'place') return null;
  const inst = ex.instruments.get(cmd.instrument);
  const book = inst === undefined ? undefined : ex.books.get(inst.id);
  if (book === undefined) return null;
  const prices = new Map<number, number>();
  for (const o of book.orders()) prices.set(o.id, o.price);
  return prices;
}

/** Cheap checks on one command's result. */
export function checkResult(ex: Exchange, cmd: Sequenced, res: unknown, firstNewOrderId: number, cids: Map<string, number>, makerPrices: Map<number, number> | null, where: string): void {
  if (cmd.t !== 'place' || isReject(res)) return;
  if (ex.combos.byId.has(cmd.instrument)) return checkComboFills(ex, res as ComboPlaceResult, where);
  const { order, trades } = res as PlaceResult;
  if (cmd.clientOrderId !== null) {
    const key = `${cmd.userId}:${cmd.clientOrderId}`;
    if (order.id < firstNewOrderId) {
      // an idempotent retry returns the user's order with that id
      assert.equal(order.userId, cmd.userId, `${where}: a retry returned another user's order`);
      assert.equal(order.clientOrderId, cmd.clientOrderId);
      return;
    }
    // a second order with the same id only after the first one's 24 h
    const prev = cids.get(key);
    assert.ok(prev === undefined || prev < cmd.ts - DEFAULT_LIMITS.clientOrderIdTtlMs, `${where}: a second order for client_order_id ${key}`);
    cids.set(key, cmd.ts);
  }
  assert.ok(order.id >= firstNewOrderId, `${where}: an old order returned without a client_order_id`);
  for (const t of trades) {
    assert.notEqual(t.makerOrder.userId, t.takerOrder.userId, `${where}: self-trade`);
    assert.equal(t.price, makerPrices?.get(t.makerOrder.id), `${where}: trade not at the maker's resting price`);
    if (order.type === 'limit') assert.ok(order.side === BUY ? t.price <= order.price : t.price >= order.price, `${where}: trade beyond the limit`);
    assert.equal(t.takerOrder, order);
  }
  if (order.postOnly) assert.equal(trades.length, 0, `${where}: post-only order took liquidity`);
  if (order.tif === 'fill_or_kill') {
    assert.ok((order.state === 'filled' && order.filled === order.amount) || (order.state === 'cancelled' && trades.length === 0), `${where}: FOK ${order.state} filled ${order.filled}/${order.amount}`);
  }
  if (order.type === 'market' || order.tif === 'immediate_or_cancel' || order.tif === 'fill_or_kill') {
    assert.notEqual(order.state, 'open', `${where}: ${order.type}/${order.tif} order rests`);
  }
  assert.equal(trades.reduce((s, t) => s + t.lots, 0), order.filled, `${where}: fills`);
  // A reduce-only maker's fill may shrink its owner's position to zero but never past it, even
  // when the same sweep filled the owner's other orders first. Replayed fill by fill from the
  // position before the command (the taker never meets its own orders, so only makers move).
  const running = new Map<number, number>();
  for (const t of trades) {
    const userId = t.makerOrder.userId;
    if (!running.has(userId)) {
      const after = ex.users.get(userId)!.positions.get(order.inst.id)?.size ?? 0;
      const moved = trades.reduce((s, x) => (x.makerOrder.userId === userId ? s + (x.makerOrder.side === BUY ? x.lots : -x.lots) : s), 0);
      running.set(userId, after - moved);
    }
    const pos = running.get(userId)!;
    const delta = t.makerOrder.side === BUY ? t.lots : -t.lots;
    if (t.makerOrder.reduceOnly) {
      assert.ok(Math.sign(delta) === -Math.sign(pos) && Math.abs(delta) <= Math.abs(pos), `${where}: reduce-only order ${t.makerOrder.id} filled ${delta} against a position of ${pos}`);
    }
    running.set(userId, pos + delta);
  }
}

/** What a buy may spend, as order entry sees it: available funds and free cash, the smaller. */
export function fundsForBuy(ex: Exchange, cmd: Sequenced): number | null {
  if (cmd.t !== 'place' || cmd.side !== BUY) return null;
  const user = ex.users.get(cmd.userId);
  const inst = ex.instruments.get(cmd.instrument);
  if (!user || !inst) return null;
  // portfolio margin: the premium comes out of free cash; the scenario requirement is checked apart
  // (cross_sm likewise: the requirement is checked against the pool, src/risk/portfolio/cross.ts)
  if (ex.trading.risk.isPm(user) || ex.trading.risk.isCross(user)) return ex.trading.risk.freeCash(user, inst.currency);
  return Math.min(ex.trading.risk.account(user, inst.currency).available, ex.trading.risk.freeCash(user, inst.currency));
}

/** A new buy never pays more in premium and fees than the funds it was accepted against. */
export function checkBuyWithinFunds(res: PlaceResult, funds: number, firstNewOrderId: number, where: string): void {
  if (res.order.id < firstNewOrderId) return; // an idempotent retry: nothing new was bought
  let spent = 0;
  for (const t of res.trades) spent += premiumOf(t.inst, t.price, t.lots) + t.takerFee;
  assert.ok(spent <= funds, `${where}: a ${res.order.type} buy spent ${spent} with ${funds} available`);
}

/**
 * The cash rules after every command: no user balance is below zero (a liquidation or settlement
 * step that made one covers it at once), and an accepted withdrawal left the account's cash above
 * what its open buys promise and its equity above its initial margin.
 */
export function checkCashRules(ex: Exchange, cmd: Sequenced, res: unknown, where: string): void {
  for (const u of ex.users.values()) {
    for (const c of CURRENCIES) if (u.accounts[c].balance < 0) assert.fail(`${where}: user ${u.id} ${c} balance ${u.accounts[c].balance} after a ${cmd.t}`);
  }
  if ((cmd.t === 'withdraw' || cmd.t === 'wallet_withdraw') && !isReject(res)) {
    const u = ex.users.get(cmd.userId)!;
    const r = ex.trading.risk.account(u, cmd.currency);
    assert.ok(ex.trading.risk.freeCash(u, cmd.currency) >= 0, `${where}: a withdrawal took cash promised to open buys`);
    assert.ok(r.available >= 0, `${where}: a withdrawal left equity ${r.equity} below initial margin ${r.initialMargin}`);
  }
}

/** A block trade leaves neither party below initial margin (src/blocktrades/execute.ts). */
export function checkBlockTrade(ex: Exchange, cmd: Sequenced, res: unknown, where: string): void {
  if (isReject(res)) return;
  let rec: { maker: number; taker: number; currency: CurrencyCode; tradeIds: number[] };
  if (cmd.t === 'block_trade') {
    // held for an approval: nothing traded yet
    if ('request' in (res as object)) return;
    rec = res as typeof rec;
    assert.equal(rec.tradeIds.length, cmd.legs.length, `${where}: every leg traded`);
  } else if (cmd.t === 'block_approve') {
    // an approval that executed the request: every leg of it traded, once
    const req = res as { blockTradeId: number | null; legs: unknown[] };
    if (req.blockTradeId === null) return;
    rec = ex.blockTrades.byId.get(req.blockTradeId)! as typeof rec;
    assert.equal(rec.tradeIds.length, req.legs.length, `${where}: every leg of the approved request traded`);
  } else return;
  for (const id of [rec.maker, rec.taker]) {
    const r = ex.trading.risk.account(ex.users.get(id)!, rec.currency);
    assert.ok(r.available >= 0, `${where}: a block trade left account ${id} with equity ${r.equity} below initial margin ${r.initialMargin}`);
  }
}
