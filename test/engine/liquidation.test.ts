// Liquidation (API.md 5.3) at the engine level: an index move pushes a short-call account below
// maintenance margin; `liquidate` commands cancel its orders, refuse opening orders, buy the short
// back against the book with reduce-only IOC orders and pay the fee to the insurance account.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import { roundToTick } from '../../src/domain/instrument.ts';
import { liquidationCandidates, liquidationFee, type LiquidationResult } from '../../src/engine/liquidation.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { EXP_MAR, Harness, code, sat, spec } from '../helpers/engine.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');
const OTHER = spec('BTC', EXP_MAR, 120000, 'call');

/** A grid price (text) at the instrument's current mark. */
function atMark(h: Harness, name: string, ticksAbove = 0): string {
  const inst = h.inst(name);
  const m = h.ex.markets.get(inst.id)!;
  const units = roundToTick(inst, m.markCoin * 1e4, 'up') + ticksAbove * 5;
  return (units / 1e4).toFixed(4);
}

/** The lowest price (text) the band allows: a cheap resting bid. */
function bandLow(h: Harness, name: string): string {
  const inst = h.inst(name);
  return (roundToTick(inst, h.ex.markets.get(inst.id)!.minPrice, 'up') / 1e4).toFixed(4);
}

function setup() {
  const h = Harness.market([CALL, OTHER]);
  const writer = h.user('0.3');
  const buyer = h.user('10');
  const maker = h.user('10');
  // the writer sells 1 ATM call to the buyer and keeps a bid resting elsewhere
  h.ok(buyer, 'buy', CALL.name, atMark(h, CALL.name), '1');
  h.ok(writer, 'sell', CALL.name, atMark(h, CALL.name), '1');
  h.ok(writer, 'buy', OTHER.name, bandLow(h, OTHER.name), '0.5');
  return { h, writer, buyer, maker };
}

function risk(h: Harness, userId: number) {
  return h.ex.trading.risk.account(h.u(userId), 'BTC');
}

function conserved(h: Harness): void {
  const c = h.ex.conservation().BTC;
  assert.equal(c.balances, c.expected);
  let sum = 0;
  for (const u of h.ex.users.values()) sum += u.positions.get(h.inst(CALL.name).id)?.size ?? 0;
  assert.equal(sum, 0);
}

describe('liquidation', () => {
  it('leaves a healthy account alone: no flag, no cancel, and it is no candidate', () => {
    const { h, writer } = setup();
    assert.ok(risk(h, writer).equity >= risk(h, writer).maintenanceMargin);
    assert.deepEqual(liquidationCandidates(h.ex), []);
    const r = h.apply({ t: 'liquidate', userId: writer, currency: 'BTC' }) as LiquidationResult;
    assert.equal(r.inLiquidation, false);
    assert.equal(r.cancelled.length, 0);
    assert.equal(h.openOrders(writer).length, 1);
  });

  it('charges 0.0019 coin per contract, rounded up to the satoshi', () => {
    const h = Harness.market([CALL, spec('ETH', EXP_MAR, 4000, 'call')]);
    assert.equal(liquidationFee(h.inst(CALL.name), 7), sat('0.00133'));
    assert.equal(liquidationFee(h.inst(spec('ETH', EXP_MAR, 4000, 'call').name), 3), sat('0.0057'));
  });

  it('cancels, refuses opening orders and stays flagged without liquidity, then buys the short back against resting asks and pays the insurance account', () => {
    const { h, writer, maker } = setup();
    // the index rallies: the short call's mark and maintenance margin rise past the equity
    h.apply({ t: 'index', currency: 'BTC', price: 125000, manual: true, by: null });
    const before = risk(h, writer);
    assert.ok(before.equity < before.maintenanceMargin, `equity ${before.equity} >= mm ${before.maintenanceMargin}`);
    assert.deepEqual(liquidationCandidates(h.ex), [{ userId: writer, currency: 'BTC' }]);

    // no asks on the book: orders cancelled with autoliquidation, account flagged, nothing bought
    const r1 = h.apply({ t: 'liquidate', userId: writer, currency: 'BTC' }) as LiquidationResult;
    assert.equal(r1.inLiquidation, true);
    assert.equal(r1.trades.length, 0);
    assert.equal(r1.cancelled.length, 1);
    assert.equal(r1.cancelled[0].cancelReason, 'autoliquidation');
    assert.equal(r1.cancelled[0].state, 'cancelled');
    assert.equal(h.openOrders(writer).length, 0);
    assert.ok(h.ex.liquidating.has(`${writer}:BTC`));

    // opening (risk-increasing) orders are refused while flagged, a buy beyond the short too
    const sell = h.place(writer, 'sell', OTHER.name, atMark(h, OTHER.name), '0.1');
    assert.equal(code(sell), 10009);
    assert.equal(isReject(sell) && sell.reason, 'account_in_liquidation');
    const bigBuy = h.place(writer, 'buy', CALL.name, atMark(h, CALL.name), '1.1');
    assert.equal(isReject(bigBuy) && bigBuy.reason, 'account_in_liquidation');

    // retried: still flagged, still a candidate, never throws
    const r2 = h.apply({ t: 'liquidate', userId: writer, currency: 'BTC' }) as LiquidationResult;
    assert.equal(r2.inLiquidation, true);
    assert.deepEqual(liquidationCandidates(h.ex), [{ userId: writer, currency: 'BTC' }]);
    const snap = restore(serialize(h.ex));
    assert.equal(stateHash(snap), stateHash(h.ex));
    assert.ok(snap.liquidating.has(`${writer}:BTC`));

    // liquidity arrives: two ask levels near the mark
    h.ok(maker, 'sell', CALL.name, atMark(h, CALL.name), '0.3');
    h.ok(maker, 'sell', CALL.name, atMark(h, CALL.name, 1), '1');
    const insuranceBefore = h.ex.system.insurance.BTC.balance;
    const balanceBefore = h.balance(writer);
    const r3 = h.apply({ t: 'liquidate', userId: writer, currency: 'BTC' }) as LiquidationResult;
    assert.ok(r3.trades.length > 0);
    for (const o of r3.orders) {
      assert.equal(o.type, 'liquidation');
      assert.equal(o.isLiquidation, true);
      assert.equal(o.reduceOnly, true);
      assert.equal(o.tif, 'immediate_or_cancel');
      assert.notEqual(o.state, 'open');
    }
    for (const t of r3.trades) {
      assert.equal(t.takerOrder.userId, writer);
      assert.equal(t.makerOrder.userId, maker);
      assert.ok(t.takerOrder.isLiquidation);
    }
    const bought = r3.trades.reduce((s, t) => s + t.lots, 0);
    const pos = h.position(writer, CALL.name).size;
    assert.equal(pos, -10 + bought);
    assert.ok(pos <= 0, 'a liquidation never flips the position');
    // fee to the insurance account: 0.0019 coin per contract bought (0.1 BTC lots)
    assert.equal(r3.fee, liquidationFee(h.inst(CALL.name), bought));
    assert.equal(h.ex.system.insurance.BTC.balance - insuranceBefore, r3.fee);
    const premium = r3.trades.reduce((s, t) => s + t.price * t.lots * 1000, 0);
    const fees = r3.trades.reduce((s, t) => s + t.takerFee, 0);
    assert.equal(balanceBefore - h.balance(writer), premium + fees + r3.fee);

    // healthy afterwards and no longer flagged; money and positions conserved
    const after = risk(h, writer);
    assert.ok(after.equity >= after.maintenanceMargin, `equity ${after.equity} < mm ${after.maintenanceMargin}`);
    assert.equal(r3.inLiquidation, false);
    assert.equal(h.ex.liquidating.size, 0);
    assert.deepEqual(liquidationCandidates(h.ex), []);
    conserved(h);
    assert.equal(stateHash(restore(serialize(h.ex))), stateHash(h.ex));
    // no longer flagged: with fresh collateral it may open positions again
    h.deposit(writer, 'BTC', sat('1'));
    const again = h.place(writer, 'sell', OTHER.name, atMark(h, OTHER.name), '0.1');
    assert.ok(!isReject(again), `refused: ${isReject(again) ? again.reason : ''}`);
  });

  it('replays a liquidation to the same state', () => {
    const run = () => {
      const { h, maker } = setup();
      h.apply({ t: 'index', currency: 'BTC', price: 125000, manual: true, by: null });
      h.ok(maker, 'sell', CALL.name, atMark(h, CALL.name), '2');
      h.apply({ t: 'liquidate', userId: 1, currency: 'BTC' });
      return stateHash(h.ex);
    };
    assert.equal(run(), run());
  });
});
