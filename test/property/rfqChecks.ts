// The block RFQ checks of the conservation stream (issue 34): what every RFQ fill must be (checked
// at each command), the counts of what the stream's RFQs did, and the floors those counts must reach
// in a full-length run (rfqSteps.ts makes the commands).
import assert from 'node:assert/strict';
import { ERR, isReject } from '../../src/domain/errors.ts';
import type { Sequenced } from '../../src/engine/commands.ts';
import type { Exchange } from '../../src/engine/exchange.ts';

/** What the stream's block RFQs did (rfqSteps.ts tells them; coverage() sets floors on them). */
export interface RfqStats {
  rfqFills: number;
  /** acceptances filled by several quotes, with a hedge leg, by all-or-none and any-part-of quotes together */
  rfqMultiFills: number;
  rfqHedgeFills: number;
  rfqMixedFills: number;
  /** good-til-cancelled acceptances a quote filled; anonymous RFQs filled */
  rfqTriggerFills: number;
  rfqAnonymousFills: number;
  /** fills that passed over a live quote priced better than a part they traded (its maker's margin, its size, the rules) */
  rfqPassedOver: number;
  /** quotes and acceptances refused for margin; acceptances of an RFQ already closed; quotes and RFQs expired by the tick */
  rfqMarginRefusals: number;
  rfqLateAccepts: number;
  rfqExpiries: number;
  /** anonymous RFQs refused for reaching fewer than 5 makers */
  rfqAnonymousRefused: number;
}

/**
 * An RFQ fill (src/blockrfq/fill.ts): the acceptance's whole amount, every leg (and the hedge leg)
 * of every part, no party below initial margin; each part a quote that was live, priced at the limit
 * or better, in price order, an all-or-none quote only whole, its structure price the ratio-weighted
 * sum of its leg prices, made by a maker other than the taker.
 */
export function checkRfqFill(ex: Exchange, cmd: Sequenced, res: unknown, where: string, stats: RfqStats): void {
  if (cmd.t === 'rfq_expire' && !isReject(res)) stats.rfqExpiries += res as number;
  if (isReject(res)) {
    if ((cmd.t === 'rfq_quote' || cmd.t === 'rfq_accept') && res.code === ERR.NOT_ENOUGH_FUNDS) stats.rfqMarginRefusals++;
    if (cmd.t === 'rfq_accept' && /^block_rfq_(filled|cancelled|expired)$/.test(res.reason ?? '')) stats.rfqLateAccepts++;
    if (cmd.t === 'rfq_create' && res.reason === 'too_few_makers_for_anonymous_block_rfq') stats.rfqAnonymousRefused++;
    return;
  }
  if (cmd.t !== 'rfq_accept' && cmd.t !== 'rfq_quote') return;
  const r = ex.blockRfqs.rfqs.get(cmd.rfqId);
  if (r === undefined || r.state !== 'filled' || r.fills.length === 0 || r.fills[0]!.ts !== ex.now) return;
  stats.rfqFills++;
  if (r.fills.length > 1) stats.rfqMultiFills++;
  if (cmd.t === 'rfq_quote') stats.rfqTriggerFills++;
  if (!r.disclosed) stats.rfqAnonymousFills++;
  // the acceptance's whole amount traded, split over its makers' parts, each with every leg (and
  // the hedge leg when its share reached one lot)
  const accepted = cmd.t === 'rfq_accept' ? cmd : r.trigger!;
  assert.equal(r.fills.reduce((a, f) => a + f.lots, 0), accepted.lots, `${where}: an RFQ acceptance filled in full`);
  const better = (a: number, b: number) => (accepted.side === 0 ? a < b : a > b);
  let hedged = false;
  const aon = new Set<boolean>();
  r.fills.forEach((f, i) => {
    const q = ex.blockRfqs.quotes.get(f.quoteId)!;
    assert.ok(q.expiresAt === null || q.expiresAt > ex.now, `${where}: quote ${q.id} filled after its expiry`);
    assert.ok(q.side !== accepted.side && q.maker !== r.taker && q.maker === f.maker, `${where}: quote ${q.id} is the other side's, of a maker other than the taker`);
    assert.ok(!better(accepted.price, f.price), `${where}: part ${i} at ${f.price} beyond the limit ${accepted.price}`);
    if (i > 0) assert.ok(!better(f.price, r.fills[i - 1]!.price), `${where}: parts best price first`);
    assert.ok(f.lots <= q.lots && (!q.aon || f.lots === q.lots), `${where}: quote ${q.id} (${q.aon ? 'all-or-none' : 'any part'}) filled ${f.lots} of ${q.lots}`);
    let p = 0;
    r.legs.forEach((l, k) => (p += (l.side === 0 ? 1 : -1) * l.ratio * f.legPrices[k]!));
    assert.equal(f.price, p, `${where}: the structure price is the sum of the leg prices`);
    aon.add(q.aon);
    const rec = ex.blockTrades.byId.get(f.blockTradeId)!;
    const withHedge = (f.hedgeLots ?? 0) > 0;
    hedged ||= withHedge;
    assert.equal(rec.tradeIds.length, r.legs.length + (withHedge ? 1 : 0), `${where}: every leg of the RFQ traded`);
    for (const id of [rec.maker, rec.taker]) {
      const a = ex.trading.risk.account(ex.users.get(id)!, rec.currency);
      assert.ok(a.available >= 0, `${where}: an RFQ fill left account ${id} with equity ${a.equity} below initial margin ${a.initialMargin}`);
    }
  });
  if (hedged) stats.rfqHedgeFills++;
  if (aon.size === 2) stats.rfqMixedFills++;
  // a live quote left out though priced better than the worst part: passed over, never filled
  const worst = r.fills[r.fills.length - 1]!.price;
  const passed = ex.blockRfqs.quotesOf(r.id).some((q) => q.filled === 0 && q.side !== accepted.side && q.reason === 'block_rfq_filled' && q.updated === ex.now && (q.expiresAt === null || q.expiresAt > ex.now) && better(q.price, worst));
  if (passed) stats.rfqPassedOver++;
}

/** The counts at the start of a stream (spread into its stats object). */
export const RFQ_STATS: RfqStats = { rfqFills: 0, rfqMultiFills: 0, rfqHedgeFills: 0, rfqMixedFills: 0, rfqTriggerFills: 0, rfqAnonymousFills: 0, rfqPassedOver: 0, rfqMarginRefusals: 0, rfqLateAccepts: 0, rfqExpiries: 0, rfqAnonymousRefused: 0 };

/**
 * The floors of a full-length run: acceptances across several makers' quotes, all-or-none and
 * any-part-of together, with hedge legs, triggers, anonymous ones; quotes passed over, margin
 * refusals, acceptances too late, expiries, anonymous RFQs refused.
 */
export function rfqCoverage(stats: RfqStats): void {
  const rfq = Object.fromEntries(Object.entries(stats).filter(([k]) => k.startsWith('rfq')));
  const floors: [keyof RfqStats, number][] = [
    ['rfqFills', 100], ['rfqMultiFills', 20], ['rfqHedgeFills', 20], ['rfqMixedFills', 10], ['rfqTriggerFills', 10], ['rfqAnonymousFills', 10],
    ['rfqPassedOver', 10], ['rfqMarginRefusals', 20], ['rfqLateAccepts', 20], ['rfqExpiries', 50], ['rfqAnonymousRefused', 5],
  ];
  for (const [k, min] of floors) assert.ok(stats[k] >= min, `only ${stats[k]} ${k} (at least ${min}): ${JSON.stringify(rfq)}`);
}
