// Block trades in the engine (issue 34): one command applies every leg to both accounts, or nothing;
// an agreement executes once; a signature past its expiry or invalidated executes nothing; margin is
// checked for each side after all legs together; prices stay in the block band, legs above the minimum.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject, type Reject } from '../../src/domain/errors.ts';
import { roundToTick, tradeFee, premiumOf } from '../../src/domain/instrument.ts';
import { blockBand } from '../../src/blocktrades/execute.ts';
import type { BlockTradeRecord } from '../../src/blocktrades/types.ts';
import type { Command } from '../../src/engine/commands.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { EXP_MAR, Harness, amt, spec } from '../helpers/engine.ts';
import { RULES, blockCmd, leg } from './helpers.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');
const PUT = spec('BTC', EXP_MAR, 90000, 'put');
const ETH_CALL = spec('ETH', EXP_MAR, 4000, 'call');

/** The mark of an instrument on its grid, price units. */
function mark(h: Harness, name: string): number {
  const inst = h.inst(name);
  return roundToTick(inst, h.ex.markets.get(inst.id)!.markCoin * 1e4, 'nearest');
}

function refused(r: unknown, code: number, reason: string): asserts r is Reject {
  assert.ok(isReject(r), `expected a refusal (${reason}), got ${JSON.stringify(r)?.slice(0, 200)}`);
  assert.equal(r.code, code, JSON.stringify(r));
  assert.equal(r.reason, reason);
}

/** The state hash without the clock and sequence number, which every applied command moves. */
function stateOf(h: Harness): string {
  const j = JSON.parse(serialize(h.ex));
  delete j.now;
  delete j.seq;
  return JSON.stringify(j);
}

function conserved(h: Harness): void {
  for (const [c, v] of Object.entries(h.ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
}

function setup(takerCoin = '10') {
  const h = Harness.market([CALL, PUT, ETH_CALL]);
  const a = h.user('10', '10');
  const b = h.user(takerCoin, '10');
  return { h, a, b };
}

describe('block trades in the engine', () => {
  it('applies every leg to both accounts at the agreed prices, with block fees, in one command', () => {
    const { h, a, b } = setup();
    const call = mark(h, CALL.name);
    const put = mark(h, PUT.name);
    const before = { a: h.balance(a), b: h.balance(b), fees: h.feeBalance() };
    const r = h.apply(blockCmd(h, a, b, [leg(CALL.name, 'sell', call, '1'), leg(PUT.name, 'buy', put, '0.5')]));
    assert.ok(!isReject(r), JSON.stringify(r));
    const rec = r as BlockTradeRecord;
    assert.equal(rec.maker, a);
    assert.equal(rec.taker, b);
    assert.equal(rec.tradeIds.length, 2);
    // maker a sold 1 call and bought 0.5 put; taker b the opposite
    assert.equal(h.position(a, CALL.name).size, -10);
    assert.equal(h.position(b, CALL.name).size, 10);
    assert.equal(h.position(a, PUT.name).size, 5);
    assert.equal(h.position(b, PUT.name).size, -5);
    const ci = h.inst(CALL.name);
    const pi = h.inst(PUT.name);
    // the block fee is half the taker commission per contract, both sides
    const fees = tradeFee(ci, call, 10, 15_000) + tradeFee(pi, put, 5, 15_000);
    const net = premiumOf(ci, call, 10) - premiumOf(pi, put, 5);
    assert.equal(h.balance(a), before.a + net - fees);
    assert.equal(h.balance(b), before.b - net - fees);
    assert.equal(h.feeBalance(), before.fees + 2 * fees);
    const trades = h.u(a).trades.filter((t) => t.block?.id === rec.id);
    assert.deepEqual(trades.map((t) => [t.inst.name, t.price, t.lots, t.block!.legs]), [[CALL.name, call, 10, 2], [PUT.name, put, 5, 2]]);
    assert.deepEqual(h.u(b).trades.filter((t) => t.block?.id === rec.id).map((t) => t.id), rec.tradeIds);
    // off the book: the books and the last price are untouched
    assert.equal(h.ex.books.get(ci.id)!.bestBid(), NaN);
    assert.equal(h.ex.markets.get(ci.id)!.lastPrice, null);
    conserved(h);
  });

  it('executes an agreement once, whichever party\'s signature comes second', () => {
    const { h, a, b } = setup();
    const legs = [leg(CALL.name, 'sell', mark(h, CALL.name), '1')];
    assert.ok(!isReject(h.apply(blockCmd(h, a, b, legs, { nonce: 'once' }))));
    const hash = stateOf(h);
    // the same signature again, and the other party executing with the first party's signature
    refused(h.apply(blockCmd(h, a, b, legs, { nonce: 'once' })), 11029, 'block_trade_already_executed');
    refused(h.apply(blockCmd(h, b, a, legs, { nonce: 'once', role: 'taker', sig: 'another-mac' })), 11029, 'block_trade_already_executed');
    assert.equal(stateOf(h), hash, 'a refused block trade changes nothing');
    assert.equal(h.position(b, CALL.name).size, 10);
    // a new nonce is a new agreement
    assert.ok(!isReject(h.apply(blockCmd(h, a, b, legs, { nonce: 'twice' }))));
    assert.equal(h.position(b, CALL.name).size, 20);
  });

  it('refuses a signature past its expiry, and one its signer invalidated', () => {
    const { h, a, b } = setup();
    const legs = [leg(CALL.name, 'sell', mark(h, CALL.name), '1')];
    const t0 = h.ts;
    h.ts = t0 + 300_001;
    refused(h.apply(blockCmd(h, a, b, legs, { timestamp: t0, expiry: t0 + 300_000 })), 11029, 'block_trade_signature_expired');
    assert.ok(!isReject(h.apply({ t: 'block_invalidate', userId: b, sig: 'mac-x', expiry: h.ts + 300_000 })));
    refused(h.apply(blockCmd(h, a, b, legs, { sig: 'mac-x' })), 11029, 'block_trade_signature_invalidated');
    assert.equal(h.position(a, CALL.name).size, 0);
    refused(h.apply(blockCmd(h, a, a, legs)), 11029, 'block_trade_with_self');
  });

  it('refuses an execution that would leave either side below initial margin, with no leg applied', () => {
    // b can pay for a put but not carry the short calls of the second leg
    const { h, a, b } = setup('0.3');
    const legs = [leg(PUT.name, 'sell', mark(h, PUT.name), '0.1'), leg(CALL.name, 'buy', mark(h, CALL.name), '5')];
    // alone, the first leg is within b's means
    const alone = blockCmd(h, a, b, legs.slice(0, 1), { nonce: 'probe' });
    const hash = stateOf(h);
    // b signed as taker, a executes as maker: the counterparty's refusal is named as such
    refused(h.apply(blockCmd(h, a, b, legs)), 10009, 'counterparty_not_enough_funds');
    // b executes: its own refusal
    refused(h.apply(blockCmd(h, b, a, legs, { role: 'taker' })), 10009, 'not_enough_funds');
    assert.equal(stateOf(h), hash, 'no leg applied, nothing changed');
    assert.equal(h.position(b, PUT.name).size, 0);
    assert.equal(h.position(a, PUT.name).size, 0);
    // the first leg alone passes (the refusal came from the legs together)
    assert.ok(!isReject(h.apply(alone)));
    assert.equal(h.position(b, PUT.name).size, 1);
    const risk = h.ex.trading.risk.account(h.u(b), 'BTC');
    assert.ok(risk.available >= 0);
    conserved(h);
  });

  it('keeps prices in the block band, on the tick, legs above the minimum, in one currency', () => {
    const { h, a, b } = setup();
    const ci = h.inst(CALL.name);
    const band = blockBand(h.ex, ci, RULES.bandPct);
    assert.ok(band.min < mark(h, CALL.name) && mark(h, CALL.name) < band.max);
    // the block band is wider than the order band
    const m = h.ex.markets.get(ci.id)!;
    assert.ok(band.max > m.maxPrice && band.min <= m.minPrice);
    refused(h.apply(blockCmd(h, a, b, [leg(CALL.name, 'sell', band.max + 5, '1')])), 10007, 'outside_block_trade_band');
    refused(h.apply(blockCmd(h, a, b, [leg(CALL.name, 'sell', Math.max(5, band.min - 5), '1')])), 10005, 'outside_block_trade_band');
    assert.ok(band.max > 50, 'a price on the 0.0005 grid');
    refused(h.apply(blockCmd(h, a, b, [leg(CALL.name, 'sell', band.max - 1, '1')])), 10043, undefined as never);
    refused(h.apply(blockCmd(h, a, b, [leg(CALL.name, 'sell', mark(h, CALL.name), '0.1')], { rules: { bandPct: 50, minAmount: { BTC: amt('25') } } })), 10002, 'below_block_trade_min_trade_amount');
    refused(h.apply(blockCmd(h, a, b, [leg(CALL.name, 'sell', mark(h, CALL.name), '1'), leg(ETH_CALL.name, 'sell', mark(h, ETH_CALL.name), '1')])), 11029, 'mixed_currencies');
    refused(h.apply(blockCmd(h, a, b, [leg(CALL.name, 'sell', mark(h, CALL.name), '1'), leg(CALL.name, 'buy', mark(h, CALL.name), '1')])), 11029, 'instrument_repeated');
    refused(h.apply(blockCmd(h, a, b, [leg('BTC-1JAN20-1-C', 'sell', 100, '1')])), 10020, undefined as never);
    assert.equal(h.ex.blockTrades.nextId, 1, 'nothing executed');
  });

  it('replays and restores to the same state hash', () => {
    const { h, a, b } = setup();
    const applied: Command[] = [];
    const run = (c: Command) => {
      applied.push(c);
      return h.apply(c);
    };
    run(blockCmd(h, a, b, [leg(CALL.name, 'sell', mark(h, CALL.name), '1'), leg(PUT.name, 'buy', mark(h, PUT.name), '1')], { nonce: 'r1' }));
    run(blockCmd(h, b, a, [leg(CALL.name, 'buy', mark(h, CALL.name), '0.5')], { nonce: 'r2', role: 'taker' }));
    run({ t: 'block_invalidate', userId: a, sig: 'dead', expiry: h.ts + 1000 });
    run(blockCmd(h, a, b, [leg(CALL.name, 'sell', mark(h, CALL.name), '1')], { nonce: 'r1' }));
    const replay = Harness.market([CALL, PUT, ETH_CALL]);
    replay.user('10', '10');
    replay.user('10', '10');
    for (const c of applied) replay.apply(c);
    assert.equal(stateHash(replay.ex), stateHash(h.ex));
    const restored = restore(serialize(h.ex));
    assert.equal(stateHash(restored), stateHash(h.ex));
    assert.deepEqual(restored.users.get(a)!.trades.map((t) => t.block?.id), [1, 1, 2]);
    assert.equal(restored.blockTrades.byId.size, 2);
    // the restored engine still refuses the executed agreement
    const again = restored.apply({ ...blockCmd(h, a, b, [leg(CALL.name, 'sell', mark(h, CALL.name), '1')], { nonce: 'r1' }), ts: h.ts, seq: 999 });
    refused(again, 11029, 'block_trade_already_executed');
  });
});
