// Block RFQ depth (issue 34): an acceptance filled by several makers' quotes (best price first,
// all-or-none quotes only whole, all of it or nothing across makers and legs), the hedge leg (its own
// amount and price, traded with the legs, inside the block band, in every margin check), and
// Deribit's RFQ error codes (13905-13907, 13910).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ERR, isReject, reject, type Reject } from '../../src/domain/errors.ts';
import { errorBody } from '../../src/api/rpc/errors.ts';
import { roundToTick } from '../../src/domain/instrument.ts';
import type { Command } from '../../src/engine/commands.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { Rfq, RfqFill, RfqHedge, RfqQuote } from '../../src/blockrfq/types.ts';
import { EXP_MAR, Harness, amt, spec } from '../helpers/engine.ts';

const CALL = spec('BTC', EXP_MAR, 100000, 'call');
const PUT = spec('BTC', EXP_MAR, 90000, 'put');
/** the hedge leg's instrument: this venue lists options only, so an option stands in for a future */
const HEDGE = spec('BTC', EXP_MAR, 110000, 'call');
const RULES = { bandPct: 50, minAmount: {} };
/** the price step of these options (0.0005 coin: their marks are above 0.005 coin) */
const STEP = 5;
type QuoteCmd = Extract<Command, { t: 'rfq_quote' }>;
type AcceptResult = { rfq: Rfq; fill: RfqFill | null; fills: RfqFill[] };

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

const lotsIn = (h: Harness, name: string, n: string) => amt(n) / h.inst(name).lotScaled;

function setup(o: { makerCoin?: string[]; takerCoin?: string; hedge?: Omit<RfqHedge, 'price'> & { price?: number } } = {}) {
  const h = Harness.market([CALL, PUT, HEDGE]);
  const admin = (h.apply({ t: 'create_user', email: 'admin@test.io', passwordHash: 'x', role: 'admin', inviteCode: null, by: null }) as { id: number }).id;
  const taker = h.user(o.takerCoin ?? '10');
  const makers = (o.makerCoin ?? ['10', '10', '10']).map((c) => h.user(c));
  for (const m of makers) assert.equal(h.apply({ t: 'rfq_set_maker', by: admin, userId: m, maker: true }), true);
  const hedge = o.hedge === undefined ? null : { ...o.hedge, price: o.hedge.price ?? mark(h, HEDGE.name) };
  // buy 2 calls, sell 1 put; amount 0.2
  const rfq = h.apply({ t: 'rfq_create', userId: taker, legs: [{ instrument: CALL.name, side: 0, ratio: 2 }, { instrument: PUT.name, side: 1, ratio: 1 }], lots: amt('0.2'), makers: null, disclosed: true, label: '', ttlMs: 300_000, hedge, rules: RULES }) as Rfq;
  assert.ok(!isReject(rfq), JSON.stringify(rfq));
  const prices = [mark(h, CALL.name), mark(h, PUT.name)];
  const base = 2 * prices[0]! - prices[1]!;
  /** an ask of `maker` (index) for `amount`, `up` ticks of the call above the mark */
  const ask = (maker: number, amount: string, up = 0, x: Partial<QuoteCmd> = {}) =>
    h.apply({ t: 'rfq_quote', userId: makers[maker]!, rfqId: rfq.id, quoteId: null, side: 1, lots: amt(amount), legPrices: [prices[0]! + up * STEP, prices[1]!], aon: false, expiresAt: null, label: '', rules: RULES, ...x }) as RfqQuote | Reject;
  const accept = (amount = '0.2', x: Partial<Extract<Command, { t: 'rfq_accept' }>> = {}) =>
    h.apply({ t: 'rfq_accept', userId: taker, rfqId: rfq.id, side: 0, lots: amt(amount), price: base + 1000, gtc: false, rules: RULES, ...x }) as AcceptResult | Reject;
  return { h, admin, taker, makers, rfq, prices, base, ask, accept };
}

function conserved(h: Harness): void {
  for (const [c, v] of Object.entries(h.ex.conservation())) assert.equal(v.balances, v.expected, `conservation of ${c}`);
}

describe('block RFQ acceptances filled by several makers', () => {
  it('fills the whole amount from two makers, best price first, each at its own quote, every leg', () => {
    const { h, taker, makers, rfq, ask, accept } = setup();
    const dear = ask(0, '0.1', 4) as RfqQuote;
    const cheap = ask(1, '0.1', 0) as RfqQuote;
    const dearest = ask(2, '0.2', 8) as RfqQuote;
    const r = accept();
    assert.ok(!isReject(r), JSON.stringify(r));
    assert.deepEqual(r.fills.map((f) => f.quoteId), [cheap.id, dear.id], 'best price first; the dearest quote is not needed');
    assert.deepEqual(r.fills.map((f) => f.price), [cheap.price, dear.price]);
    assert.equal(rfq.state, 'filled');
    assert.equal(dearest.filled, 0);
    assert.equal(dearest.state, 'cancelled', 'the RFQ closed: its other quotes go with it');
    // the taker holds the whole structure; each maker the opposite of its own part
    assert.equal(h.position(taker, CALL.name).size, lotsIn(h, CALL.name, '0.4'));
    assert.equal(h.position(taker, PUT.name).size, -lotsIn(h, PUT.name, '0.2'));
    for (const m of [makers[0]!, makers[1]!]) {
      assert.equal(h.position(m, CALL.name).size, -lotsIn(h, CALL.name, '0.2'));
      assert.equal(h.position(m, PUT.name).size, lotsIn(h, PUT.name, '0.1'));
    }
    assert.equal(h.position(makers[2]!, CALL.name).size, 0);
    // one block trade per maker, each with both legs; one public trade listing both parts
    for (const f of r.fills) assert.equal(h.ex.blockTrades.byId.get(f.blockTradeId)!.tradeIds.length, 2);
    const pub = h.ex.blockRfqs.trades.at(-1)!;
    assert.deepEqual(pub.parts?.map((p) => p.lots), [amt('0.1'), amt('0.1')]);
    conserved(h);
    assert.equal(stateHash(restore(serialize(h.ex))), stateHash(h.ex));
  });

  it('an all-or-none quote fills only whole; at one price it comes before any-part-of quotes', () => {
    const { h, makers, ask, accept } = setup();
    // the best price is an all-or-none quote larger than what is left after the any-part-of one
    const aon = ask(0, '0.2', 0, { aon: true }) as RfqQuote;
    const apo = ask(1, '0.1', 2) as RfqQuote;
    const r = accept('0.1');
    assert.ok(!isReject(r));
    assert.deepEqual(r.fills.map((f) => f.quoteId), [apo.id], 'the AON quote of 0.2 is not cut to 0.1');
    assert.equal(aon.filled, 0);
    assert.equal(h.position(makers[0]!, CALL.name).size, 0);

    // at one price: AON (newer) before APO (older)
    const s = setup();
    const older = s.ask(0, '0.1', 0) as RfqQuote;
    const newerAon = s.ask(1, '0.1', 0, { aon: true }) as RfqQuote;
    const r2 = s.accept('0.1');
    assert.ok(!isReject(r2));
    assert.deepEqual(r2.fills.map((f) => f.quoteId), [newerAon.id]);
    assert.equal(older.filled, 0);
  });

  it('all or nothing across makers: one maker short of margin, and nothing fills (13907)', () => {
    const { h, makers, ask, accept } = setup({ makerCoin: ['10', '1', '10'] });
    assert.ok(!isReject(ask(0, '0.1', 0)));
    assert.ok(!isReject(ask(1, '0.1', 2)));
    // the second maker's cash leaves: its quote has no margin behind it any more
    const left = h.ex.trading.risk.account(h.u(makers[1]!), 'BTC').availableWithdrawal;
    assert.ok(!isReject(h.apply({ t: 'withdraw', userId: makers[1]!, currency: 'BTC', amount: left })));
    const before = stateOf(h);
    const r = accept('0.2');
    assert.ok(isReject(r));
    assert.equal(r.code, ERR.BLOCK_RFQ_NOT_FULLY_FILLED);
    assert.equal(r.reason, 'not_fully_filled');
    assert.equal(errorBody(r).message, 'not_fully_filled');
    assert.equal(stateOf(h), before, 'the first maker traded nothing either');
    // half the amount is the first maker's alone: that fills
    const half = accept('0.1');
    assert.ok(!isReject(half));
    assert.equal(half.fills.length, 1);
    assert.equal(half.fills[0]!.maker, makers[0]);
    conserved(h);
  });

  it('a maker with two quotes is judged on both parts together', () => {
    // a maker whose margin carries one part of 0.1 but not two of them
    let coin = '0.02';
    for (const c of ['0.02', '0.04', '0.06', '0.08', '0.1', '0.15', '0.2', '0.3']) {
      const probe = setup({ makerCoin: [c, '10', '10'] });
      if (!isReject(probe.ask(0, '0.1', 0)) && isReject(probe.ask(0, '0.2', 0))) {
        coin = c;
        break;
      }
    }
    const { h, makers, ask, accept } = setup({ makerCoin: [coin, '10', '10'] });
    const a = ask(0, '0.1', 0);
    const b = ask(0, '0.1', 1);
    assert.ok(!isReject(a) && !isReject(b), `maker with ${coin} BTC quotes 0.1 twice`);
    const before = stateOf(h);
    const r = accept('0.2');
    assert.ok(isReject(r), 'both parts together are beyond its margin');
    assert.equal(stateOf(h), before);
    assert.equal(h.position(makers[0]!, CALL.name).size, 0);
  });

  it('a quote cannot fill after its expiry or its cancel, in a multi-maker acceptance too', () => {
    const { h, makers, ask, accept } = setup();
    const q0 = ask(0, '0.1', 0, { expiresAt: h.ts + 1000 }) as RfqQuote;
    const q1 = ask(1, '0.1', 1) as RfqQuote;
    h.ts += 1000;
    const before = stateOf(h);
    const r = accept('0.2');
    assert.ok(isReject(r) && r.reason === 'not_fully_filled', 'the expired quote is not counted');
    assert.equal(stateOf(h), before);
    assert.ok(!isReject(ask(2, '0.1', 2)));
    h.apply({ t: 'rfq_quote_cancel', userId: makers[2]!, quoteId: null, rfqId: null, label: null, all: true });
    const r2 = accept('0.2');
    assert.ok(isReject(r2), 'cancelled');
    assert.equal(q0.filled + q1.filled, 0);
    assert.equal(h.position(makers[2]!, CALL.name).size, 0);
  });

  it('a good-til-cancelled acceptance waits until quotes fill all of it, then fills across makers', () => {
    const { h, taker, rfq, ask, accept } = setup();
    ask(0, '0.1', 0);
    const r = accept('0.2', { gtc: true });
    assert.ok(!isReject(r) && r.fills.length === 0 && rfq.trigger?.state === 'untriggered');
    assert.equal(h.position(taker, CALL.name).size, 0);
    ask(1, '0.1', 0);
    assert.equal(rfq.trigger?.state, 'triggered');
    assert.equal(rfq.fills.length, 2);
    assert.equal(h.position(taker, CALL.name).size, lotsIn(h, CALL.name, '0.4'));
  });
});

describe('the hedge leg of a block RFQ', () => {
  // the taker buys the structure and sells 1 of the hedge instrument (for the whole 0.2)
  const HEDGE_LEG = { instrument: HEDGE.name, side: 1 as const, lots: amt('1') };

  it('trades with the option legs in one block trade at the quote\'s hedge price, pro rata to each part', () => {
    const { h, taker, makers, ask, accept } = setup({ hedge: HEDGE_LEG });
    const hp = mark(h, HEDGE.name) + STEP;
    const q0 = ask(0, '0.1', 0, { hedgePrice: hp }) as RfqQuote;
    const q1 = ask(1, '0.1', 1) as RfqQuote;
    assert.ok(!isReject(q0) && !isReject(q1));
    const r = accept();
    assert.ok(!isReject(r), JSON.stringify(r));
    // each part: both legs and half the hedge; the first at the maker's hedge price, the second at the RFQ's
    assert.deepEqual(r.fills.map((f) => f.hedgeLots), [amt('0.5'), amt('0.5')]);
    assert.deepEqual(r.fills.map((f) => f.hedgePrice), [hp, mark(h, HEDGE.name)]);
    for (const f of r.fills) {
      const rec = h.ex.blockTrades.byId.get(f.blockTradeId)!;
      assert.equal(rec.tradeIds.length, 3, 'two legs and the hedge');
      const hedgeTrade = h.u(taker).trades.find((t) => rec.tradeIds.includes(t.id) && t.inst.name === HEDGE.name)!;
      assert.equal(hedgeTrade.price, f.hedgePrice);
    }
    assert.equal(h.position(taker, HEDGE.name).size, -lotsIn(h, HEDGE.name, '1'));
    assert.equal(h.position(makers[0]!, HEDGE.name).size, lotsIn(h, HEDGE.name, '0.5'));
    conserved(h);
    assert.equal(stateHash(restore(serialize(h.ex))), stateHash(h.ex));
  });

  it('the hedge price must be inside the block band, at creation and in a quote', () => {
    const s = setup();
    const far = 10 * mark(s.h, HEDGE.name);
    const r = s.h.apply({ t: 'rfq_create', userId: s.taker, legs: [{ instrument: CALL.name, side: 0, ratio: 1 }], lots: amt('0.1'), makers: null, disclosed: true, label: '', ttlMs: 300_000, hedge: { ...HEDGE_LEG, price: far }, rules: RULES });
    assert.ok(isReject(r) && r.reason === 'outside_block_trade_band', JSON.stringify(r));
    const { ask } = setup({ hedge: HEDGE_LEG });
    const q = ask(0, '0.1', 0, { hedgePrice: far });
    assert.ok(isReject(q) && q.reason === 'outside_block_trade_band');
  });

  it('the hedge is in the maker\'s margin check: a quote its margin carries without the hedge is refused with it', () => {
    // the maker sells the hedge call when the taker buys it: a big hedge on a small structure
    const big = { instrument: HEDGE.name, side: 0 as const, lots: amt('20') };
    let found = false;
    for (const c of ['0.05', '0.1', '0.2', '0.5', '1']) {
      const plain = setup({ makerCoin: [c, '10', '10'] });
      if (isReject(plain.ask(0, '0.2', 0))) continue;
      const hedged = setup({ makerCoin: [c, '10', '10'], hedge: big });
      const q = hedged.ask(0, '0.2', 0);
      assert.ok(isReject(q), `maker with ${c} BTC: the structure alone is quotable, with 20 hedge calls sold it is not`);
      assert.equal(q.code, ERR.NOT_ENOUGH_FUNDS);
      found = true;
      break;
    }
    assert.ok(found, 'some balance carries the structure alone');
  });

  it("the hedge is in the taker's margin check at acceptance: nothing trades when it is not carried", () => {
    // the taker buys 20 of the hedge call: the smallest balance that trades the structure alone
    // does not pay for them
    const big = { instrument: HEDGE.name, side: 0 as const, lots: amt('20') };
    let found = false;
    for (const coin of ['0.05', '0.1', '0.2', '0.3', '0.5', '1']) {
      const plain = setup({ takerCoin: coin });
      plain.ask(0, '0.2', 0);
      if (isReject(plain.accept())) continue;
      const { h, taker, ask, accept } = setup({ takerCoin: coin, hedge: big });
      assert.ok(!isReject(ask(0, '0.2', 0)));
      const before = stateOf(h);
      const r = accept();
      assert.ok(isReject(r) && r.code === ERR.NOT_ENOUGH_FUNDS, `taker with ${coin} BTC: ${JSON.stringify(r)}`);
      assert.equal(stateOf(h), before);
      assert.equal(h.position(taker, CALL.name).size, 0);
      found = true;
      break;
    }
    assert.ok(found, 'some balance carries the structure alone');
  });
});

describe("Deribit's block RFQ error codes", () => {
  it('13905/13906 quotes per RFQ and side, 13907 open RFQs, 13910 a crossed quote', () => {
    const { h, taker, ask } = setup();
    for (let i = 0; i < 5; i++) assert.ok(!isReject(ask(0, '0.1', i)));
    const sixth = ask(0, '0.1', 6) as Reject;
    assert.equal(sixth.code, ERR.TOO_MANY_QUOTES_PER_BLOCK_RFQ_SIDE);
    assert.equal(errorBody(sixth).message, 'too_many_quotes_per_block_rfq_side');
    // the maker's bid above its own best ask crosses it; at it or below it is fine
    const own = h.ex.blockRfqs.quotes.get(1)!;
    const bid = (callPrice: number) => h.apply({ t: 'rfq_quote', userId: own.maker, rfqId: own.rfqId, quoteId: null, side: 0, lots: amt('0.1'), legPrices: [callPrice, own.legPrices[1]!], aon: false, expiresAt: null, label: '', rules: RULES });
    const crossed = bid(own.legPrices[0]! + STEP) as Reject;
    assert.equal(crossed.code, ERR.QUOTE_CROSSED);
    assert.equal(errorBody(crossed).message, 'quote_crossed');
    assert.ok(!isReject(bid(own.legPrices[0]!)));
    // open RFQs of one taker: 10, the 11th answers 13907 too_many_open_block_rfqs
    let last: unknown = null;
    for (let i = 0; i < 10; i++) last = h.apply({ t: 'rfq_create', userId: taker, legs: [{ instrument: CALL.name, side: 0, ratio: 1 }], lots: amt('0.1'), makers: null, disclosed: true, label: '', ttlMs: 300_000 });
    assert.ok(isReject(last));
    assert.equal((last as Reject).code, ERR.BLOCK_RFQ_NOT_FULLY_FILLED);
    assert.equal(errorBody(last as Reject).message, 'too_many_open_block_rfqs');
    assert.equal(errorBody(reject(ERR.TOO_MANY_QUOTES_PER_BLOCK_RFQ, 'too_many_quotes_per_block_rfq')).message, 'too_many_quotes_per_block_rfq');
  });
});
