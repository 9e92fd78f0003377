// The trade of a block RFQ (issue 34): the taker's acceptance meets the best quote that can fill
// it, and every leg executes at once between the two accounts through the block-trade execution
// (src/blocktrades/execute.ts: the same band, the same margin check of each side after all legs
// together, the same postings). Every check is made before the first change: all legs or none.
import { ERR, isReject, reject, type Reject } from '../domain/errors.ts';
import type { Exchange } from '../engine/exchange.ts';
import { applyLeg, checkLegs, sideRefusal } from '../blocktrades/execute.ts';
import type { BlockLeg, BlockRules, BlockTradeRecord } from '../blocktrades/types.ts';
import type { Rfq, RfqFill, RfqQuote, RfqState } from './types.ts';

/** The structure price of leg prices: ratio x price, bought legs added, sold legs taken off. */
export function structurePrice(r: Rfq, legPrices: readonly number[]): number {
  let p = 0;
  r.legs.forEach((l, i) => (p += (l.side === 0 ? 1 : -1) * l.ratio * legPrices[i]!));
  return p;
}

/** The block legs of `lots` of the structure traded by a maker on `makerSide` of it, at `legPrices`. */
export function quoteLegs(r: Rfq, makerSide: 0 | 1, legPrices: readonly number[], lots: number): BlockLeg[] {
  return r.legs.map((l, i) => ({ instrument: l.instrument, side: makerSide === 0 ? l.side : l.side === 0 ? 1 : 0, price: legPrices[i]!, lots: l.ratio * lots }));
}

/** Whether a quote can be traded now (open, not past its expiry). */
export function quoteLive(ex: Exchange, q: RfqQuote): boolean {
  return q.state === 'open' && (q.expiresAt === null || q.expiresAt > ex.now);
}

/** The quotes a taker on `side` at `limit` for `lots` could trade, best first (then oldest). */
export function candidates(ex: Exchange, r: Rfq, side: 0 | 1, lots: number, limit: number): RfqQuote[] {
  const out = ex.blockRfqs.quotesOf(r.id).filter((q) => {
    if (!quoteLive(ex, q) || q.side === side) return false;
    if (side === 0 ? q.price > limit : q.price < limit) return false;
    const left = q.lots - q.filled;
    return q.aon ? left === lots : left >= lots;
  });
  return out.sort((a, b) => (side === 0 ? a.price - b.price : b.price - a.price) || a.id - b.id);
}

/**
 * Trades `lots` of the RFQ for its taker on `side` against the best quote at `limit` or better that
 * both accounts' margin carries. A maker whose margin no longer carries its quote is passed over
 * (its quote cannot fill); nothing changes unless a quote trades.
 */
export function tryFill(ex: Exchange, r: Rfq, side: 0 | 1, lots: number, limit: number, rules: BlockRules): RfqFill | Reject {
  const taker = ex.users.get(r.taker);
  if (!taker) return reject(ERR.UNAUTHORIZED);
  let takerRefusal: Reject | null = null;
  let rulesRefusal: Reject | null = null;
  for (const q of candidates(ex, r, side, lots, limit)) {
    const maker = ex.users.get(q.maker);
    if (!maker || !ex.blockRfqs.makers.has(q.maker)) continue;
    const legs = quoteLegs(r, q.side, q.legPrices, lots);
    const checked = checkLegs(ex, legs, rules);
    if (isReject(checked)) {
      rulesRefusal ??= checked;
      continue;
    }
    if (sideRefusal(ex, maker, 'maker', legs, checked) !== null) continue;
    const t = sideRefusal(ex, taker, 'taker', legs, checked);
    if (t !== null) {
      takerRefusal ??= t;
      continue;
    }
    // every check passed: from here on nothing refuses
    const bt = ex.blockTrades;
    const rec: BlockTradeRecord = { id: bt.nextId++, ts: ex.now, currency: checked.currency, maker: maker.id, taker: taker.id, tradeIds: [], timestamp: ex.now, nonce: `rfq-${r.id}` };
    legs.forEach((leg, i) => rec.tradeIds.push(applyLeg(ex, rec, leg, checked.insts[i]!, maker, taker, legs.length).id));
    for (const inst of checked.insts) {
      ex.trading.trimReduceOnlyAfterFills(maker, inst);
      ex.trading.trimReduceOnlyAfterFills(taker, inst);
    }
    bt.record(rec);
    q.filled += lots;
    q.state = 'filled';
    q.reason = null;
    q.updated = ex.now;
    const fill: RfqFill = { side, price: q.price, lots, maker: maker.id, quoteId: q.id, blockTradeId: rec.id, legPrices: q.legPrices, indexPrice: ex.indexPrice(r.currency), ts: ex.now };
    r.fills.push(fill);
    const st = ex.blockRfqs;
    const tradeId = st.trades.length === 0 ? 1 : st.trades[st.trades.length - 1]!.id + 1;
    st.trades.push({ id: tradeId, ts: ex.now, currency: r.currency, side, price: q.price, lots, legs: r.legs, legPrices: q.legPrices, indexPrice: fill.indexPrice });
    if (st.trades.length > 2000) st.trades.splice(0, st.trades.length - 1000);
    st.event(r.id, q.id, tradeId);
    closeRfq(ex, r, 'filled');
    return fill;
  }
  return takerRefusal ?? rulesRefusal ?? reject(ERR.INVALID_ARGUMENTS, 'no_matching_quote', 'price');
}

/** Closes an RFQ: its open quotes and waiting trigger go with it; the taker's history counts it. */
export function closeRfq(ex: Exchange, r: Rfq, state: Exclude<RfqState, 'open'>): void {
  r.state = state;
  r.updated = ex.now;
  for (const q of ex.blockRfqs.quotesOf(r.id)) {
    if (q.state !== 'open') continue;
    q.state = 'cancelled';
    q.reason = `block_rfq_${state}`;
    q.updated = ex.now;
    ex.blockRfqs.event(r.id, q.id);
  }
  if (r.trigger !== null && r.trigger.state === 'untriggered' && state !== 'filled') r.trigger = { ...r.trigger, state: 'cancelled', cancelReason: `block_rfq_${state}` };
  ex.blockRfqs.event(r.id);
  ex.blockRfqs.closed(r);
}
