// Block trade approvals in the engine (issue 34): an account that requires approval holds its block
// trades as requests; both sides accepted executes it once with every check made again (expiry, once
// only, margin); a rejected request never executes; approval by the wrong party, after the
// signature's expiry or after a rejection is refused; replay and restore give the same state hash.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject, type Reject } from '../../src/domain/errors.ts';
import { roundToTick } from '../../src/domain/instrument.ts';
import type { BlockTradeRecord, BlockTradeRequest } from '../../src/blocktrades/types.ts';
import type { Command } from '../../src/engine/commands.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { EXP_MAR, Harness, spec } from '../helpers/engine.ts';
import { blockCmd, leg } from './helpers.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');

function refused(r: unknown, code: number, reason: string): asserts r is Reject {
  assert.ok(isReject(r), `expected a refusal (${reason}), got ${JSON.stringify(r)?.slice(0, 200)}`);
  assert.equal(r.code, code, JSON.stringify(r));
  assert.equal(r.reason, reason);
}

function setup() {
  const h = Harness.market([CALL]);
  const applied: Command[] = [];
  const run = (c: Command, ts?: number) => {
    applied.push({ ...c, ...(ts !== undefined ? { ts } : {}) } as Command);
    return h.apply(c, ts);
  };
  const a = h.user('10', '10');
  const b = h.user('10', '10');
  const c3 = h.user('10', '10');
  const inst = h.inst(CALL.name);
  const price = roundToTick(inst, h.ex.markets.get(inst.id)!.markCoin * 1e4, 'nearest');
  const deal = (nonce: string, o: { expiry?: number } = {}) => blockCmd(h, a, b, [leg(CALL.name, 'sell', price, '1')], { nonce, ...o });
  return { h, a, b, c3, run, applied, deal };
}

const sizeOf = (h: Harness, u: number) => h.ex.users.get(u)!.positions.get(h.inst(CALL.name).id)?.size ?? 0;

describe('block trade approvals in the engine', () => {
  it('holds a block trade of an account that requires approval until it approves, then executes it once', () => {
    const { h, a, b, run, deal } = setup();
    assert.equal(run({ t: 'block_approval', userId: b, required: true }), true);
    const held = run(deal('n1'));
    assert.ok(!isReject(held) && 'request' in (held as object), JSON.stringify(held));
    const req = (held as { request: BlockTradeRequest }).request;
    assert.deepEqual([req.maker.value, req.taker.value], ['accepted', 'initial']);
    assert.equal(sizeOf(h, a), 0, 'nothing executed before the approval');
    // the same agreement executed again while it waits: refused, never a second request
    refused(run(deal('n1')), 11029, 'block_trade_already_requested');
    // the party that needs no approval cannot approve for the other, nor in the other's role
    refused(run({ t: 'block_approve', userId: a, timestamp: req.timestamp, nonce: 'n1', role: 'maker' }), 11029, 'block_trade_request_not_waiting');
    refused(run({ t: 'block_approve', userId: a, timestamp: req.timestamp, nonce: 'n1', role: 'taker' }), 13020, 'block_trade_request_not_found');
    refused(run({ t: 'block_approve', userId: b, timestamp: req.timestamp, nonce: 'n1', role: 'maker' }), 13020, 'block_trade_request_not_found');
    assert.equal(sizeOf(h, a), 0);
    const ok = run({ t: 'block_approve', userId: b, timestamp: req.timestamp, nonce: 'n1', role: 'taker' }) as BlockTradeRequest;
    assert.ok(!isReject(ok), JSON.stringify(ok));
    assert.deepEqual([ok.maker.value, ok.taker.value], ['executed', 'executed']);
    assert.equal(sizeOf(h, a), -10);
    assert.equal(sizeOf(h, b), 10);
    assert.equal(h.ex.blockTrades.byId.size, 1);
    // once: approving again, or executing the agreement again, does nothing
    refused(run({ t: 'block_approve', userId: b, timestamp: req.timestamp, nonce: 'n1', role: 'taker' }), 11029, 'block_trade_already_executed');
    refused(run(deal('n1')), 11029, 'block_trade_already_requested');
    assert.equal(sizeOf(h, b), 10);
  });

  it('needs both approvals when both accounts require them', () => {
    const { h, a, b, run, deal } = setup();
    run({ t: 'block_approval', userId: a, required: true });
    run({ t: 'block_approval', userId: b, required: true });
    const req = (run(deal('n2')) as { request: BlockTradeRequest }).request;
    assert.deepEqual([req.maker.value, req.taker.value], ['initial', 'initial']);
    const first = run({ t: 'block_approve', userId: a, timestamp: req.timestamp, nonce: 'n2', role: 'maker' }) as BlockTradeRequest;
    assert.deepEqual([first.maker.value, first.taker.value], ['accepted', 'initial']);
    assert.equal(sizeOf(h, a), 0);
    run({ t: 'block_approve', userId: b, timestamp: req.timestamp, nonce: 'n2', role: 'taker' });
    assert.equal(sizeOf(h, a), -10);
  });

  it('never executes a rejected request: approve after reject is refused', () => {
    const { h, a, b, run, deal } = setup();
    run({ t: 'block_approval', userId: b, required: true });
    const req = (run(deal('n3')) as { request: BlockTradeRequest }).request;
    const rej = run({ t: 'block_reject', userId: b, timestamp: req.timestamp, nonce: 'n3', role: 'taker' }) as BlockTradeRequest;
    assert.equal(rej.taker.value, 'rejected');
    refused(run({ t: 'block_approve', userId: b, timestamp: req.timestamp, nonce: 'n3', role: 'taker' }), 11029, 'block_trade_request_rejected');
    refused(run({ t: 'block_reject', userId: a, timestamp: req.timestamp, nonce: 'n3', role: 'maker' }), 11029, 'block_trade_request_rejected');
    // not even with the approval setting turned off: the agreement was rejected
    run({ t: 'block_approval', userId: b, required: false });
    refused(run(deal('n3')), 11029, 'block_trade_already_requested');
    assert.equal(sizeOf(h, a), 0);
    assert.equal(h.ex.blockTrades.byId.size, 0);
  });

  it("refuses an approval after the signature's expiry, and a third account's answer", () => {
    const { h, a, b, c3, run, deal } = setup();
    run({ t: 'block_approval', userId: b, required: true });
    const req = (run(deal('n4', { expiry: h.ts + 60_000 })) as { request: BlockTradeRequest }).request;
    refused(run({ t: 'block_approve', userId: c3, timestamp: req.timestamp, nonce: 'n4', role: 'taker' }), 13020, 'block_trade_request_not_found');
    refused(run({ t: 'block_reject', userId: c3, timestamp: req.timestamp, nonce: 'n4', role: 'maker' }), 13020, 'block_trade_request_not_found');
    refused(run({ t: 'block_approve', userId: b, timestamp: req.timestamp, nonce: 'n4', role: 'taker' }, h.ts + 60_001), 11029, 'block_trade_signature_expired');
    assert.equal(sizeOf(h, a), 0);
    assert.equal(h.ex.blockTrades.requests.get(req.key)!.taker.value, 'initial');
  });

  it('re-checks the signature at approval: invalidated meanwhile, it executes nothing', () => {
    const { h, a, b, run, deal } = setup();
    run({ t: 'block_approval', userId: b, required: true });
    const cmd = deal('n5');
    const req = (run(cmd) as { request: BlockTradeRequest }).request;
    run({ t: 'block_invalidate', userId: b, sig: cmd.sig, expiry: cmd.expiry });
    refused(run({ t: 'block_approve', userId: b, timestamp: req.timestamp, nonce: 'n5', role: 'taker' }), 11029, 'block_trade_signature_invalidated');
    assert.equal(sizeOf(h, a), 0);
  });

  it('replays and restores to the same state hash', () => {
    const { h, a, b, run, applied, deal } = setup();
    run({ t: 'block_approval', userId: b, required: true });
    const r1 = (run(deal('r1')) as { request: BlockTradeRequest }).request;
    run(deal('r2'));
    run({ t: 'block_approve', userId: b, timestamp: r1.timestamp, nonce: 'r1', role: 'taker' });
    run({ t: 'block_reject', userId: a, timestamp: r1.timestamp, nonce: 'r2', role: 'maker' });
    run(deal('r3'));
    const replay = Harness.market([CALL]);
    for (let i = 0; i < 3; i++) replay.user('10', '10');
    for (const c of applied) replay.apply(c, (c as { ts?: number }).ts);
    assert.equal(stateHash(replay.ex), stateHash(h.ex));
    const restored = restore(serialize(h.ex));
    assert.equal(stateHash(restored), stateHash(h.ex));
    assert.equal(restored.blockTrades.requests.size, 3);
    assert.ok(restored.blockTrades.approvalRequired.has(b));
    // the restored engine still holds r3 waiting and refuses the rejected r2
    const ok = restored.apply({ t: 'block_approve', userId: b, timestamp: r1.timestamp, nonce: 'r3', role: 'taker', ts: h.ts, seq: 999 }) as BlockTradeRequest;
    assert.equal(ok.taker.value, 'executed');
    refused(restored.apply({ t: 'block_approve', userId: b, timestamp: r1.timestamp, nonce: 'r2', role: 'taker', ts: h.ts, seq: 1000 }), 11029, 'block_trade_request_rejected');
    assert.ok(!isReject(ok as unknown as BlockTradeRecord));
  });
});
