// Block RFQs in the engine (issue 34): a quote cannot fill beyond its maker's margin, after its
// expiry or its cancel; an acceptance is all legs or none; replay and snapshots reproduce the state.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import { roundToTick } from '../../src/domain/instrument.ts';
import type { Command } from '../../src/engine/commands.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { Rfq, RfqQuote } from '../../src/blockrfq/types.ts';
import { EXP_MAR, Harness, amt, spec } from '../helpers/engine.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');
const PUT = spec('BTC', EXP_MAR, 90000, 'put');
const RULES = { bandPct: 50, minAmount: {} };

function mark(h: Harness, name: string): number {
  const inst = h.inst(name);
  return roundToTick(inst, h.ex.markets.get(inst.id)!.markCoin * 1e4, 'nearest');
}

/** The state without the clock and sequence number, which every applied command moves. */
function stateOf(h: Harness): string {
  const j = JSON.parse(serialize(h.ex));
  delete j.now;
  delete j.seq;
  return JSON.stringify(j);
}

function setup(makerCoin = '10') {
  const h = Harness.market([CALL, PUT]);
  const admin = (h.apply({ t: 'create_user', email: 'admin@test.io', passwordHash: 'x', role: 'admin', inviteCode: null, by: null }) as { id: number }).id;
  const taker = h.user('10');
  const maker = h.user(makerCoin);
  assert.equal(h.apply({ t: 'rfq_set_maker', by: admin, userId: maker, maker: true }), true);
  // a call spread: buy 2 calls, sell 1 put, amount 0.1
  const rfq = h.apply({ t: 'rfq_create', userId: taker, legs: [{ instrument: CALL.name, side: 0, ratio: 2 }, { instrument: PUT.name, side: 1, ratio: 1 }], lots: amt('0.1'), makers: null, disclosed: false, label: '', ttlMs: 300_000 }) as Rfq;
  assert.ok(!isReject(rfq));
  const prices = [mark(h, CALL.name), mark(h, PUT.name)];
  const quote = (o: Partial<Extract<Command, { t: 'rfq_quote' }>> = {}) => h.apply({ t: 'rfq_quote', userId: maker, rfqId: rfq.id, quoteId: null, side: 1, lots: amt('0.1'), legPrices: prices, aon: true, expiresAt: null, label: '', rules: RULES, ...o }) as RfqQuote;
  const accept = (o: Partial<Extract<Command, { t: 'rfq_accept' }>> = {}) => h.apply({ t: 'rfq_accept', userId: taker, rfqId: rfq.id, side: 0, lots: amt('0.1'), price: 100_000, gtc: false, rules: RULES, ...o });
  return { h, admin, taker, maker, rfq, prices, quote, accept };
}

describe('block RFQs in the engine', () => {
  it('a non-maker cannot quote; an operator alone marks makers', () => {
    const { h, taker, rfq, prices } = setup();
    const other = h.user('10');
    const r = h.apply({ t: 'rfq_quote', userId: other, rfqId: rfq.id, quoteId: null, side: 1, lots: amt('0.1'), legPrices: prices, aon: true, expiresAt: null, label: '', rules: RULES });
    assert.ok(isReject(r) && r.reason === 'not_a_block_rfq_maker');
    assert.ok(isReject(h.apply({ t: 'rfq_set_maker', by: taker, userId: other, maker: true })));
  });

  it('a quote cannot fill beyond its maker\'s margin: passed over, nothing changes', () => {
    const { h, maker, quote, accept } = setup('1');
    assert.ok(!isReject(quote()));
    // the maker's cash leaves: its quote no longer has margin behind it
    const left = h.ex.trading.risk.account(h.u(maker), 'BTC').availableWithdrawal;
    assert.ok(!isReject(h.apply({ t: 'withdraw', userId: maker, currency: 'BTC', amount: left })));
    const before = stateOf(h);
    const r = accept();
    assert.ok(isReject(r), 'refused');
    assert.equal(r.reason, 'no_matching_quote');
    assert.equal(stateOf(h), before, 'no leg, no money moved');
  });

  it('a quote cannot fill after its expiry or after its cancel', () => {
    const { h, maker, quote, accept } = setup();
    const q = quote({ expiresAt: h.ts + 1000 });
    h.ts += 1000;
    assert.ok(isReject(accept()), 'expired (before the tick)');
    h.apply({ t: 'rfq_expire' });
    assert.equal(q.state, 'expired');
    const q2 = quote();
    h.apply({ t: 'rfq_quote_cancel', userId: maker, quoteId: q2.id, rfqId: null, label: null, all: false });
    assert.ok(isReject(accept()), 'cancelled');
    assert.equal(h.position(maker, CALL.name)?.size ?? 0, 0);
  });

  it('an acceptance is all legs or none: one leg out of the band now refuses the whole structure', () => {
    const { h, admin, taker, maker, quote, accept } = setup();
    quote();
    // the smile moves: the put's quoted price falls out of the block band, the call's stays in
    h.apply({ t: 'set_vol', currency: 'BTC', atmVol: 3, skew: 0, curvature: 0, by: admin });
    const before = stateOf(h);
    const r = accept();
    assert.ok(isReject(r), 'refused');
    assert.equal(stateOf(h), before);
    assert.equal(h.position(taker, CALL.name)?.size ?? 0, 0);
    assert.equal(h.position(maker, PUT.name)?.size ?? 0, 0);
  });

  it('fills every leg at once at the quoted leg prices; replay and snapshot give the same state hash', () => {
    const { h, taker, maker, rfq, prices, quote, accept } = setup();
    quote();
    const r = accept() as { rfq: Rfq };
    assert.ok(!isReject(r));
    assert.equal(rfq.state, 'filled');
    // 2 x 0.1 calls bought, 0.1 put sold by the taker; the maker the opposite
    const lotsOf = (name: string, n: string) => amt(n) / h.inst(name).lotScaled;
    assert.equal(h.position(taker, CALL.name)!.size, lotsOf(CALL.name, '0.2'));
    assert.equal(h.position(taker, PUT.name)!.size, -lotsOf(PUT.name, '0.1'));
    assert.equal(h.position(maker, CALL.name)!.size, -lotsOf(CALL.name, '0.2'));
    for (const [c, v] of Object.entries(h.ex.conservation())) assert.equal(v.balances, v.expected, c);
    assert.equal(rfq.fills[0]!.price, 2 * prices[0]! - prices[1]!);
    const copy = restore(serialize(h.ex));
    assert.equal(stateHash(copy), stateHash(h.ex));
  });
});

describe('anonymous block RFQs (disclosed: false) need 5 makers, as on Deribit', () => {
  /** An admin, a taker and `n` makers; `create` sends an RFQ with the rule the API carries. */
  function crowd(n: number) {
    const h = Harness.market([CALL, PUT]);
    const admin = (h.apply({ t: 'create_user', email: 'admin@test.io', passwordHash: 'x', role: 'admin', inviteCode: null, by: null }) as { id: number }).id;
    const taker = h.user('10');
    const makers: number[] = [];
    for (let i = 0; i < n; i++) {
      makers.push(h.user('10'));
      assert.equal(h.apply({ t: 'rfq_set_maker', by: admin, userId: makers[i]!, maker: true }), true);
    }
    const create = (o: Partial<Extract<Command, { t: 'rfq_create' }>> = {}) =>
      h.apply({ t: 'rfq_create', userId: taker, legs: [{ instrument: CALL.name, side: 0, ratio: 1 }], lots: amt('0.1'), makers: null, disclosed: false, label: '', ttlMs: 300_000, minAnonymousMakers: 5, ...o });
    return { h, admin, taker, makers, create };
  }
  const refusedForCrowd = (r: unknown) => isReject(r) && r.code === 11029 && r.reason === 'too_few_makers_for_anonymous_block_rfq' && r.param === 'disclosed';

  it('refuses an anonymous RFQ to every maker while fewer than 5 exist, and to fewer than 5 named ones; nothing is created', () => {
    const { h, makers, create } = crowd(4);
    const before = stateOf(h);
    assert.ok(refusedForCrowd(create()), 'every maker, but only 4 of them');
    assert.ok(refusedForCrowd(create({ makers: makers.slice(0, 3) })), '3 named makers');
    assert.equal(stateOf(h), before, 'no RFQ, no id used');
    // disclosed, the same RFQs are fine
    assert.ok(!isReject(create({ disclosed: true })));
    assert.ok(!isReject(create({ disclosed: true, makers: [makers[0]!] })));
  });

  it('counts each maker once: one maker named five times is one maker (a naive length check passes it)', () => {
    const { create, makers } = crowd(5);
    const m = makers[0]!;
    assert.ok(refusedForCrowd(create({ makers: [m, m, m, m, m] })));
    assert.ok(!isReject(create({ makers })), 'five distinct makers');
  });

  it('does not count the taker among the makers of an RFQ to every maker', () => {
    const { h, admin, taker, create } = crowd(4);
    // the taker is a maker too: 5 makers exist, but the RFQ reaches only the 4 others
    assert.equal(h.apply({ t: 'rfq_set_maker', by: admin, userId: taker, maker: true }), true);
    assert.ok(refusedForCrowd(create()));
    const fifth = h.user('10');
    h.apply({ t: 'rfq_set_maker', by: admin, userId: fifth, maker: true });
    const r = create() as Rfq;
    assert.ok(!isReject(r), JSON.stringify(r));
    assert.equal(r.disclosed, false);
  });

  it('a command journaled before the rule (no minAnonymousMakers) replays as it ran', () => {
    const { create } = crowd(1);
    assert.ok(!isReject(create({ minAnonymousMakers: undefined })));
  });
});
