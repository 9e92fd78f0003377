// Position moves between the accounts of one main account (src/accounts/movePositions.ts), at the
// engine: the premium at the given price changes hands, both logs, every leg or none, both accounts
// checked against zero and maintenance margin after the move, the band, and who may move.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import { premiumOf, roundToTick } from '../../src/domain/instrument.ts';
import type { MoveLeg, MovedLeg } from '../../src/accounts/types.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { EXP_JAN, EXP_MAR, Harness, amt, sat, spec } from '../helpers/engine.ts';
import { conserved, refused, sub, transfer } from './helpers.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');
const PUT = spec('BTC', EXP_MAR, 90000, 'put');
const JAN_CALL = spec('BTC', EXP_JAN, 110000, 'call');

function markUnits(h: Harness, name: string): number {
  const inst = h.inst(name);
  return roundToTick(inst, h.ex.markets.get(inst.id)!.markCoin * 1e4, 'nearest');
}

function atMark(h: Harness, name: string): string {
  return (markUnits(h, name) / 1e4).toFixed(4);
}

/** The state without its last seq (a refused command is still sequenced). */
function unsequenced(h: Harness): string {
  const j = JSON.parse(serialize(h.ex)) as Record<string, unknown>;
  delete j.seq;
  return JSON.stringify(j);
}

function move(h: Harness, by: number, from: number, to: number, legs: MoveLeg[]): MovedLeg[] {
  return h.apply({ t: 'move_positions', by, from, to, legs }) as MovedLeg[];
}

/** A main account with `btc`, a long and a short, and an empty funded subaccount. */
function desk(btc = '5') {
  const h = Harness.market([CALL, PUT, JAN_CALL]);
  const other = h.user('100');
  const main = h.user(btc);
  const s = sub(h, main);
  h.ok(other, 'sell', CALL.name, atMark(h, CALL.name), '2');
  h.ok(main, 'buy', CALL.name, atMark(h, CALL.name), '2');
  h.ok(other, 'buy', PUT.name, atMark(h, PUT.name), '1');
  h.ok(main, 'sell', PUT.name, atMark(h, PUT.name), '1');
  return { h, other, main, s };
}

describe('move_positions', () => {
  it('moves a long and a short at the given prices: the premium changes hands, both logs, no fee', () => {
    const { h, main, s } = desk();
    assert.ok(!isReject(transfer(h, main, main, s, sat('1'))));
    const fees = h.feeBalance();
    const before = [h.balance(main), h.balance(s)];
    const pc = markUnits(h, CALL.name);
    const pp = markUnits(h, PUT.name);
    const r = move(h, main, main, s, [
      { instrument: CALL.name, lots: amt('1.5'), price: pc },
      { instrument: PUT.name, lots: amt('1'), price: null },
    ]);
    assert.ok(!isReject(r), JSON.stringify(r));
    assert.deepEqual(r.map((m) => [m.instrument, m.side, m.price]), [[CALL.name, 'sell', pc], [PUT.name, 'buy', pp]]);
    const call = h.inst(CALL.name);
    const put = h.inst(PUT.name);
    assert.equal(h.position(main, CALL.name).size, amt('0.5') / call.lotScaled);
    assert.equal(h.position(s, CALL.name).size, amt('1.5') / call.lotScaled);
    assert.equal(h.position(main, PUT.name).size, 0);
    assert.equal(h.position(s, PUT.name).size, -amt('1') / put.lotScaled);
    // the long sold to the subaccount brings its premium; the short handed over costs its premium
    const cash = premiumOf(call, pc, amt('1.5') / call.lotScaled) - premiumOf(put, pp, amt('1') / put.lotScaled);
    assert.equal(h.balance(main), before[0]! + cash);
    assert.equal(h.balance(s), before[1]! - cash);
    assert.equal(h.feeBalance(), fees, 'no fee');
    const mainLog = h.u(main).log.entries().filter((e) => e.type === 'position_move');
    const subLog = h.u(s).log.entries().filter((e) => e.type === 'position_move');
    assert.deepEqual(mainLog.map((e) => [e.instrument, e.userId]), [[CALL.name, s], [PUT.name, s]]);
    assert.deepEqual(subLog.map((e) => e.amount), mainLog.map((e) => -e.amount));
    assert.equal(subLog.at(-1)!.balance, h.balance(s), "the last entry's balance is the balance");
    conserved(h);
    for (const inst of [call, put]) {
      let sum = 0;
      for (const u of h.ex.users.values()) sum += u.positions.get(inst.id)?.size ?? 0;
      assert.equal(sum, 0, `positions in ${inst.name} sum to zero`);
    }
  });

  it('moves no leg when one leg is refused, whichever it is', () => {
    const { h, main, s } = desk();
    const snap = unsequenced(h);
    refused(move(h, main, main, s, [
      { instrument: CALL.name, lots: amt('1'), price: null },
      { instrument: PUT.name, lots: amt('2'), price: null },
    ]), 10021, 'amount_exceeds_position');
    refused(move(h, main, main, s, [
      { instrument: CALL.name, lots: amt('1'), price: null },
      { instrument: CALL.name, lots: amt('1.5'), price: null },
    ]), 10021, 'amount_exceeds_position');
    const call = h.ex.markets.get(h.inst(CALL.name).id)!;
    const high = move(h, main, main, s, [
      { instrument: PUT.name, lots: amt('1'), price: null },
      { instrument: CALL.name, lots: amt('1'), price: roundToTick(h.inst(CALL.name), call.maxPrice + 100, 'up') },
    ]);
    assert.ok(isReject(high) && high.code === 10007, 'above the band');
    assert.equal(h.position(s, CALL.name).size, 0);
    assert.equal(h.position(s, PUT.name).size, 0);
    assert.equal(h.position(main, PUT.name).size, -amt('1') / h.inst(PUT.name).lotScaled);
    // nothing of the refused moves is left: the state is the state before them
    assert.equal(h.u(s).log.length, 0);
    assert.equal(unsequenced(h), snap);
    conserved(h);
  });

  it("refuses a move that would leave the target below maintenance margin or the source's cash negative", () => {
    const { h, main, s } = desk();
    // the empty subaccount cannot carry the short put: it has no money for its margin
    refused(move(h, main, main, s, [{ instrument: PUT.name, lots: amt('1'), price: null }]), 10009, 'account_below_maintenance');
    // a long moved at a price the subaccount cannot pay leaves it below zero
    refused(move(h, main, main, s, [{ instrument: CALL.name, lots: amt('1'), price: null }]), 10009, 'negative_balance');
    assert.equal(h.position(s, CALL.name).size, 0);
    assert.equal(h.balance(s), 0);
    conserved(h);
  });

  it("refuses a move that leaves the source under maintenance (it keeps its short, hands over the long that paid for it)", () => {
    const h = Harness.market([JAN_CALL, CALL]);
    const other = h.user('100');
    const main = h.user('0.2');
    const s = sub(h, main);
    h.deposit(s, 'BTC', sat('1'));
    h.ok(other, 'sell', CALL.name, atMark(h, CALL.name), '1');
    h.ok(main, 'buy', CALL.name, atMark(h, CALL.name), '1');
    h.ok(other, 'buy', JAN_CALL.name, atMark(h, JAN_CALL.name), '1');
    h.ok(main, 'sell', JAN_CALL.name, atMark(h, JAN_CALL.name), '1');
    h.apply({ t: 'index', currency: 'BTC', price: 115000, manual: true, by: null });
    assert.ok(!h.ex.trading.risk.inDistress(h.u(main)), 'the main account is above maintenance thanks to its long');
    // the long moves to the subaccount at the bottom of the band: the main account keeps its short
    const r = move(h, main, main, s, [{ instrument: CALL.name, lots: amt('1'), price: roundToTick(h.inst(CALL.name), h.ex.markets.get(h.inst(CALL.name).id)!.minPrice, 'up') }]);
    refused(r, 10009, 'account_below_maintenance');
    assert.equal((r as unknown as { param: string }).param, 'source_uid');
    // at the mark it is fine
    assert.ok(!isReject(move(h, main, main, s, [{ instrument: CALL.name, lots: amt('0.5'), price: null }])));
    assert.equal(h.position(main, CALL.name).size, amt('0.5') / h.inst(CALL.name).lotScaled);
    conserved(h);
  });

  it('lets only the main account move, and only within its family', () => {
    const { h, other, main, s } = desk();
    const s2 = sub(h, main);
    const theirs = sub(h, other);
    const leg = [{ instrument: CALL.name, lots: amt('0.1'), price: null }];
    refused(move(h, s, main, s2, leg), 13021, 'main_account_only');
    refused(move(h, main, main, theirs, leg), 13020, 'subaccount_not_found');
    refused(move(h, main, other, s, leg), 13020, 'subaccount_not_found');
    refused(move(h, other, main, theirs, leg), 13020, 'subaccount_not_found');
    refused(move(h, main, main, main, leg), 11029, 'same_source_and_target');
  });

  it('replays and restores a move to the same state hash', () => {
    const { h, main, s } = desk();
    assert.ok(!isReject(transfer(h, main, main, s, sat('1'))));
    assert.ok(!isReject(move(h, main, main, s, [{ instrument: CALL.name, lots: amt('1'), price: null }, { instrument: PUT.name, lots: amt('1'), price: null }])));
    assert.ok(!isReject(move(h, main, s, main, [{ instrument: PUT.name, lots: amt('0.5'), price: null }])));
    assert.equal(stateHash(restore(serialize(h.ex))), stateHash(h.ex));
  });
});
