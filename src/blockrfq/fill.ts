// The trade of a block RFQ (issue 34): the taker's acceptance is filled by the live quotes at its
// limit or better, best price first (all-or-none quotes before any-part-of ones at one price, then
// the oldest), as many makers as it takes, and every leg of every part (the hedge leg too) executes
// at once through the block-trade execution (src/blocktrades/execute.ts: the same band, the same
// margin check of each side after all its legs together, the same postings). Every check is made
// before the first change: the whole amount across all makers and legs, or nothing.
import { ERR, isReject, reject, type Reject } from '../domain/errors.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { User } from '../engine/types.ts';
import { applyLeg, checkLegs, sideRefusal, type CheckedLegs } from '../blocktrades/execute.ts';
import type { BlockLeg, BlockRules, BlockTradeRecord } from '../blocktrades/types.ts';
import type { Rfq, RfqFill, RfqHedge, RfqQuote, RfqState } from './types.ts';

/** The structure price of leg prices: ratio x price, bought legs added, sold legs taken off. */
export function structurePrice(r: Rfq, legPrices: readonly number[]): number {
  let p = 0;
  r.legs.forEach((l, i) => (p += (l.side === 0 ? 1 : -1) * l.ratio * legPrices[i]!));
  return p;
}

/** The hedge leg's amount in a trade of `lots` of the RFQ: pro rata, down to its lot grid (0: none). */
export function hedgeLotsOf(ex: Exchange, r: Rfq, lots: number): number {
  const h = r.hedge;
  if (h === undefined) return 0;
  const lot = BigInt(ex.instruments.get(h.instrument)?.lotScaled ?? 1);
  // exact: the product of two amounts can pass 2^53
  const share = (BigInt(h.lots) * BigInt(lots)) / BigInt(r.lots);
  return Number((share / lot) * lot);
}

/** The hedge leg of a part: `lots` of the hedge at `price` (the quote's, else the RFQ's). */
export interface HedgePart {
  lots: number;
  price: number;
}

export function hedgePartOf(ex: Exchange, r: Rfq, q: { hedgePrice?: number } | null, lots: number): HedgePart | null {
  if (r.hedge === undefined) return null;
  const hl = hedgeLotsOf(ex, r, lots);
  return hl === 0 ? null : { lots: hl, price: q?.hedgePrice ?? r.hedge.price };
}

const flip = (s: 0 | 1): 0 | 1 => (s === 0 ? 1 : 0);

/**
 * The block legs of `lots` of the structure traded by a maker on `makerSide` of it, at `legPrices`,
 * and the hedge leg after them when there is one (its direction turns with the structure's).
 */
export function quoteLegs(r: Rfq, makerSide: 0 | 1, legPrices: readonly number[], lots: number, hedge: HedgePart | null = null): BlockLeg[] {
  const legs = r.legs.map((l, i) => ({ instrument: l.instrument, side: makerSide === 0 ? l.side : flip(l.side), price: legPrices[i]!, lots: l.ratio * lots }));
  if (hedge !== null && r.hedge !== undefined) legs.push(hedgeLeg(r.hedge, makerSide, hedge));
  return legs;
}

function hedgeLeg(h: RfqHedge, makerSide: 0 | 1, part: HedgePart): BlockLeg {
  return { instrument: h.instrument, side: makerSide === 0 ? h.side : flip(h.side), price: part.price, lots: part.lots };
}

/** Whether a quote can be traded now (open, not past its expiry). */
export function quoteLive(ex: Exchange, q: RfqQuote): boolean {
  return q.state === 'open' && (q.expiresAt === null || q.expiresAt > ex.now);
}

/**
 * The quotes a taker on `side` at `limit` could trade, in the order they fill: best price first;
 * at one price all-or-none before any-part-of (Deribit's priority), then the oldest.
 */
export function candidates(ex: Exchange, r: Rfq, side: 0 | 1, limit: number): RfqQuote[] {
  const out = ex.blockRfqs.quotesOf(r.id).filter((q) => {
    if (!quoteLive(ex, q) || q.side === side || q.lots - q.filled <= 0) return false;
    return side === 0 ? q.price <= limit : q.price >= limit;
  });
  return out.sort((a, b) => (side === 0 ? a.price - b.price : b.price - a.price) || Number(b.aon) - Number(a.aon) || a.id - b.id);
}

/** One quote's part of an acceptance: its amount, and its legs (the hedge's too) checked. */
interface Part {
  q: RfqQuote;
  maker: User;
  lots: number;
  hedge: HedgePart | null;
  legs: BlockLeg[];
  checked: CheckedLegs;
}

/** Legs of several parts of one account, judged together (an instrument may repeat). */
interface Combined {
  legs: BlockLeg[];
  checked: CheckedLegs;
}

function combine(a: Combined | undefined, legs: BlockLeg[], checked: CheckedLegs): Combined {
  if (a === undefined) return { legs, checked };
  return { legs: [...a.legs, ...legs], checked: { currency: checked.currency, insts: [...a.checked.insts, ...checked.insts] } };
}

/**
 * Chooses the parts that fill `lots` for the taker, or why none can: quotes in fill order, an
 * all-or-none quote only whole, an any-part-of quote as much as is left; a quote whose legs break
 * the block rules now, or whose maker's margin does not carry it with its other parts, is passed over.
 */
function allocate(ex: Exchange, r: Rfq, side: 0 | 1, lots: number, limit: number, rules: BlockRules): Part[] | Reject {
  let left = lots;
  const parts: Part[] = [];
  const makers = new Map<number, Combined>();
  let rulesRefusal: Reject | null = null;
  for (const q of candidates(ex, r, side, limit)) {
    if (left === 0) break;
    const maker = ex.users.get(q.maker);
    if (!maker || !ex.blockRfqs.makers.has(q.maker)) continue;
    const remaining = q.lots - q.filled;
    const take = q.aon ? (remaining <= left ? remaining : 0) : Math.min(remaining, left);
    if (take === 0) continue;
    const hedge = hedgePartOf(ex, r, q, take);
    const legs = quoteLegs(r, q.side, q.legPrices, take, hedge);
    const checked = checkLegs(ex, legs, rules);
    if (isReject(checked)) {
      rulesRefusal ??= checked;
      continue;
    }
    const mine = combine(makers.get(maker.id), legs, checked);
    if (sideRefusal(ex, maker, 'maker', mine.legs, mine.checked) !== null) continue;
    makers.set(maker.id, mine);
    parts.push({ q, maker, lots: take, hedge, legs, checked });
    left -= take;
  }
  if (left === 0) return parts;
  if (rulesRefusal !== null) return rulesRefusal;
  // Deribit's 13907: the quotes that could trade do not fill the whole amount (a trigger waits for
  // more); the reason says whether any could trade at all
  return reject(ERR.BLOCK_RFQ_NOT_FULLY_FILLED, parts.length > 0 ? 'not_fully_filled' : 'no_matching_quote', 'amount');
}

/** Whether a refusal of tryFill means "not enough quotes now" (a good-til-cancelled acceptance waits). */
export function waitsForQuotes(r: Reject): boolean {
  return r.code === ERR.BLOCK_RFQ_NOT_FULLY_FILLED;
}

/**
 * Trades `lots` of the RFQ for its taker on `side` at `limit` or better against as many quotes as
 * it takes, all of them or none: each maker's margin carries its parts, the taker's all of them.
 * Nothing changes unless the whole amount trades.
 */
export function tryFill(ex: Exchange, r: Rfq, side: 0 | 1, lots: number, limit: number, rules: BlockRules): RfqFill[] | Reject {
  const taker = ex.users.get(r.taker);
  if (!taker) return reject(ERR.UNAUTHORIZED);
  const parts = allocate(ex, r, side, lots, limit, rules);
  if (isReject(parts)) return parts;
  let all: Combined | undefined;
  for (const p of parts) all = combine(all, p.legs, p.checked);
  const refused = sideRefusal(ex, taker, 'taker', all!.legs, all!.checked);
  if (refused !== null) return refused;
  // every check passed: from here on nothing refuses
  const st = ex.blockRfqs;
  const bt = ex.blockTrades;
  const fills: RfqFill[] = [];
  const indexPrice = ex.indexPrice(r.currency);
  const tradeId = st.trades.length === 0 ? 1 : st.trades[st.trades.length - 1]!.id + 1;
  for (const p of parts) {
    const rec: BlockTradeRecord = { id: bt.nextId++, ts: ex.now, currency: p.checked.currency, maker: p.maker.id, taker: taker.id, tradeIds: [], timestamp: ex.now, nonce: `rfq-${r.id}` };
    p.legs.forEach((leg, i) => rec.tradeIds.push(applyLeg(ex, rec, leg, p.checked.insts[i]!, p.maker, taker, p.legs.length).id));
    for (const inst of p.checked.insts) {
      ex.trading.trimReduceOnlyAfterFills(p.maker, inst);
      ex.trading.trimReduceOnlyAfterFills(taker, inst);
    }
    bt.record(rec);
    const q = p.q;
    q.filled += p.lots;
    q.state = 'filled';
    q.reason = null;
    q.updated = ex.now;
    const fill: RfqFill = { side, price: q.price, lots: p.lots, maker: p.maker.id, quoteId: q.id, blockTradeId: rec.id, legPrices: q.legPrices, indexPrice, ts: ex.now };
    if (p.hedge !== null) Object.assign(fill, { hedgeLots: p.hedge.lots, hedgePrice: p.hedge.price });
    r.fills.push(fill);
    fills.push(fill);
    st.event(r.id, q.id, fills.length === 1 ? tradeId : null);
  }
  const first = fills[0]!;
  st.trades.push({
    id: tradeId,
    ts: ex.now,
    currency: r.currency,
    side,
    price: first.price,
    lots,
    legs: r.legs,
    legPrices: first.legPrices,
    indexPrice,
    ...(fills.length > 1 || r.hedge !== undefined ? { parts: fills.map((f) => ({ price: f.price, lots: f.lots, hedgeLots: f.hedgeLots ?? 0, hedgePrice: f.hedgePrice ?? 0 })) } : {}),
    ...(r.hedge !== undefined ? { hedge: r.hedge } : {}),
  });
  if (st.trades.length > 2000) st.trades.splice(0, st.trades.length - 1000);
  closeRfq(ex, r, 'filled');
  return fills;
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
