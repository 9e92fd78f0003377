// The conservation stream's invariants, checked after every batch of commands: money conserved per
// currency, running risk totals equal to their full sums, positions summing to zero, books and open
// orders in agreement.
import assert from 'node:assert/strict';
import { premiumOf, tradeFee, type Instrument } from '../../../src/domain/instrument.ts';
import type { Exchange } from '../../../src/engine/exchange.ts';
import { BUY, SELL } from '../../../src/engine/orderBook.ts';
import type { Order } from '../../../src/engine/types.ts';
import { comboHold } from '../../../src/combos/orderMargin.ts';
import { CURRENCIES } from './streamParams.ts';

function safe(n: number, what: string): void {
  if (!Number.isSafeInteger(n)) assert.fail(`${what} is not a safe integer: ${n}`);
}

function maxFee(inst: Instrument, price: number, lots: number): number {
  return tradeFee(inst, price, lots, Math.max(inst.makerCommission, inst.takerCommission));
}

export function checkInvariants(ex: Exchange, where: string): void {
  // money: conservation per currency, safe integers everywhere, fees all in the fee account
  const cons = ex.conservation();
  for (const c of CURRENCIES) {
    assert.equal(cons[c].balances, cons[c].expected, `${where}: ${c} balances ${cons[c].balances} != deposits - withdrawals ${cons[c].expected}`);
    safe(ex.system.fees[c].balance, `${where} fee account ${c}`);
    safe(ex.system.insurance[c].balance, `${where} insurance ${c}`);
    let fees = 0;
    for (const u of ex.users.values()) {
      const a = u.accounts[c];
      safe(a.balance, `${where} user ${u.id} ${c} balance`);
      safe(a.fees, `${where} user ${u.id} ${c} fees`);
      safe(a.deposited, `${where} user ${u.id} ${c} deposited`);
      safe(a.withdrawn, `${where} user ${u.id} ${c} withdrawn`);
      assert.ok(a.fees >= 0);
      fees += a.fees;
    }
    // the fee account also keeps the settlement rounding residue (shorts' debits round up,
    // longs' payouts down), which is never negative
    assert.ok(ex.system.fees[c].balance >= fees, `${where}: ${c} fee account ${ex.system.fees[c].balance} below the fees charged ${fees}`);
  }

  // the running totals of RiskEngine (margin open orders hold; positions' value and margins) equal
  // the full sums
  for (const u of ex.users.values()) {
    for (const c of CURRENCIES) {
      assert.equal(ex.trading.risk.ordersIM(u, c), ex.trading.risk.sumOrdersIM(u, c), `${where}: user ${u.id} ${c} orders margin drifted from its full sum`);
      let reserved = 0;
      for (const e of u.exposures.values()) if (e.inst.currency === c) reserved += e.buyReserved;
      // and the debit resting combo orders set aside (src/combos/orderMargin.ts), computed afresh
      for (const o of ex.comboBooks.openOf(u.id)) if (o.inst.currency === c) reserved += comboHold(ex, ex.combos.byId.get(o.inst.name)!, o, o.remaining).cash;
      assert.equal(ex.trading.risk.freeCash(u, c), u.accounts[c].balance - reserved, `${where}: user ${u.id} ${c} free cash drifted from its full sum`);
      const { value, initialMargin, maintenanceMargin } = ex.trading.risk.positions(u, c);
      assert.deepEqual({ value, initialMargin, maintenanceMargin }, ex.trading.risk.sumPositions(u, c), `${where}: user ${u.id} ${c} position totals drifted from their full sum`);
    }
  }

  // positions sum to zero per instrument
  const posSum = new Map<number, number>();
  for (const u of ex.users.values()) {
    for (const p of u.positions.values()) {
      safe(p.openCost, `${where} openCost`);
      safe(p.realizedPnl, `${where} realizedPnl`);
      if (p.size === 0) assert.equal(p.openCost, 0, `${where}: a flat position has open cost`);
      else assert.equal(Math.sign(p.openCost), Math.sign(p.size), `${where}: open cost sign`);
      posSum.set(p.inst.id, (posSum.get(p.inst.id) ?? 0) + p.size);
    }
  }
  // positions the insurance account took over count too
  for (const p of ex.insurance.positions.values()) {
    assert.notEqual(p.size, 0, `${where}: the insurance account keeps a flat position`);
    posSum.set(p.inst.id, (posSum.get(p.inst.id) ?? 0) + p.size);
  }
  for (const [id, s] of posSum) assert.equal(s, 0, `${where}: positions in instrument ${id} sum to ${s}`);

  // books: not crossed, level totals right, resting orders == users' open orders
  const resting = new Set<Order>();
  for (const [instId, book] of ex.books) {
    const bid = book.bestBid();
    const ask = book.bestAsk();
    if (!Number.isNaN(bid) && !Number.isNaN(ask)) assert.ok(bid < ask, `${where}: book ${instId} crossed ${bid} >= ${ask}`);
    const levelTotals = new Map<string, number>();
    let n = 0;
    for (const o of book.orders()) {
      n++;
      assert.equal(o.state, 'open', `${where}: a resting order is ${o.state}`);
      assert.ok(o.remaining > 0 && o.remaining + o.filled === o.amount, `${where}: order ${o.id} remaining ${o.remaining} filled ${o.filled} amount ${o.amount}`);
      assert.equal(o.inst.id, instId);
      assert.equal(o.type, 'limit');
      assert.ok(o.tif === 'good_til_cancelled' || o.tif === 'good_til_day');
      const key = `${o.side}:${o.price}`;
      levelTotals.set(key, (levelTotals.get(key) ?? 0) + o.remaining);
      resting.add(o);
    }
    assert.equal(n, book.orderCount());
    for (const side of [BUY, SELL] as const) {
      for (const [price, total] of book.depth(side, 1e9)) assert.equal(total, levelTotals.get(`${side}:${price}`), `${where}: level ${price} total`);
    }
  }
  let open = 0;
  const gtd = new Set<Order>();
  for (const u of ex.users.values()) {
    let count = 0;
    for (const e of u.exposures.values()) {
      let buyLots = 0, sellLots = 0, reserved = 0, ro = 0, roBuy = 0, roSell = 0;
      for (const o of e.openOrders) {
        assert.ok(resting.has(o), `${where}: open order ${o.id} of user ${u.id} is not in its book`);
        assert.equal(o.userId, u.id);
        assert.equal(u.orders.get(o.id), o, `${where}: open order ${o.id} missing from the user's orders`);
        if (o.side === BUY) {
          buyLots += o.remaining;
          assert.equal(o.reserved, premiumOf(o.inst, o.price, o.remaining) + maxFee(o.inst, o.price, o.remaining), `${where}: order ${o.id} reservation`);
          reserved += o.reserved;
        } else {
          sellLots += o.remaining;
          assert.equal(o.reserved, 0);
        }
        if (o.reduceOnly) {
          ro++;
          if (o.side === BUY) roBuy += o.remaining;
          else roSell += o.remaining;
        }
        if (o.expiresAt > 0) gtd.add(o);
      }
      assert.equal(e.buyOpenLots, buyLots, `${where}: user ${u.id} buyOpenLots`);
      assert.equal(e.sellOpenLots, sellLots, `${where}: user ${u.id} sellOpenLots`);
      assert.equal(e.buyReserved, reserved, `${where}: user ${u.id} buyReserved`);
      assert.equal(e.reduceOnlyOpen, ro, `${where}: user ${u.id} reduceOnlyOpen`);
      // reduce-only orders never offer more than the position they reduce
      const pos = u.positions.get(e.inst.id)?.size ?? 0;
      assert.ok(roSell <= Math.max(0, pos) && roBuy <= Math.max(0, -pos), `${where}: user ${u.id} reduce-only ${roBuy}/${roSell} vs position ${pos}`);
      count += e.openOrders.size;
    }
    assert.equal(u.openOrderCount, count, `${where}: user ${u.id} openOrderCount`);
    open += count;
  }
  assert.equal(open, resting.size, `${where}: ${resting.size} resting orders but ${open} open orders`);
  assert.deepEqual([...ex.trading.gtdOrders].sort((a, b) => a.id - b.id), [...gtd].sort((a, b) => a.id - b.id), `${where}: GTD set`);
}
