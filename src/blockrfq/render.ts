// Deribit's shapes of block RFQs, quotes and RFQ trades (docs/api-notes.md "Block RFQ"). What a
// viewer sees depends on its role: a maker never sees an undisclosed taker's name, a taker sees
// the makers of a quote only when the RFQ is disclosed.
import { toDecimalNumber } from '../domain/decimal.ts';
import { AMOUNT_SCALE, PRICE_SCALE, priceToNumber } from '../domain/instrument.ts';
import type { Exchange } from '../engine/exchange.ts';
import { renderUserTrade } from '../api/render.ts';
import type { BlockTradeRecord } from '../blocktrades/types.ts';
import { quoteLive } from './fill.ts';
import type { Rfq, RfqHedge, RfqLeg, RfqPublicTrade, RfqQuote } from './types.ts';

export const ANONYMOUS = 'ANONYMOUS';
const dir = (s: 0 | 1): 'buy' | 'sell' => (s === 0 ? 'buy' : 'sell');
export const amountOf = (lots: number): number => toDecimalNumber(lots, AMOUNT_SCALE);

/** An account's name in block RFQs: a subaccount's name, else its email. */
export function identityOf(ex: Exchange, userId: number): string {
  const sub = ex.subaccounts.subs.get(userId);
  if (sub !== undefined) return sub.username;
  return ex.users.get(userId)?.email ?? '';
}

/** Deribit's taker rating text: the 10-point band of the percent, or "N/A" without history. */
export function ratingText(r: number | null): string {
  if (r === null) return 'N/A';
  const lo = Math.min(90, Math.floor(r / 10) * 10);
  return `${lo}-${lo + 10}`;
}

function legsOf(legs: readonly RfqLeg[], prices?: readonly number[]): Record<string, unknown>[] {
  return legs.map((l, i) => ({ ratio: l.ratio, instrument_name: l.instrument, direction: dir(l.side), ...(prices ? { price: priceToNumber(prices[i]!) } : {}) }));
}

/** Deribit's `hedge` object: the RFQ's hedge leg (its direction the taker's), at `price`. */
function hedgeOf(h: RfqHedge, price = h.price): Record<string, unknown> {
  return { amount: amountOf(h.lots), instrument_name: h.instrument, direction: dir(h.side), price: priceToNumber(price) };
}

/** The structure's mark now: ratio x mark of each leg, bought legs added (coin). */
function structureMark(ex: Exchange, legs: readonly RfqLeg[]): number {
  let m = 0;
  for (const l of legs) {
    const inst = ex.instruments.get(l.instrument);
    const mark = inst === undefined ? NaN : ex.markets.get(inst.id)!.markCoin;
    m += (l.side === 0 ? 1 : -1) * l.ratio * mark;
  }
  return Number.isFinite(m) ? Number(m.toFixed(PRICE_SCALE)) : 0;
}

function minTradeAmount(ex: Exchange, r: Rfq): number {
  let lot = 0;
  for (const l of r.legs) lot = Math.max(lot, ex.instruments.get(l.instrument)?.lotScaled ?? 0);
  return amountOf(lot);
}

/** The bids or asks of an RFQ as its taker sees them: live quotes grouped by price, best first. */
function levels(ex: Exchange, r: Rfq, side: 0 | 1): Record<string, unknown>[] {
  const by = new Map<number, RfqQuote[]>();
  for (const q of ex.blockRfqs.quotesOf(r.id)) {
    if (q.side !== side || !quoteLive(ex, q)) continue;
    const list = by.get(q.price) ?? [];
    list.push(q);
    by.set(q.price, list);
  }
  const prices = [...by.keys()].sort((a, b) => (side === 0 ? b - a : a - b));
  return prices.map((p) => {
    const qs = by.get(p)!;
    const expiries = qs.map((q) => q.expiresAt).filter((x): x is number => x !== null);
    return {
      makers: [...new Set(qs.map((q) => (r.disclosed ? identityOf(ex, q.maker) : ANONYMOUS)))],
      price: priceToNumber(p),
      last_update_timestamp: Math.max(...qs.map((q) => q.updated)),
      execution_instruction: qs.every((q) => q.aon) ? 'all_or_none' : 'any_part_of',
      amount: amountOf(qs.reduce((a, q) => a + q.lots - q.filled, 0)),
      expires_at: expiries.length === 0 ? r.expires : Math.min(...expiries),
    };
  });
}

/** An RFQ as `viewer` sees it (its taker, or a maker it was sent to). */
export function renderRfq(ex: Exchange, r: Rfq, viewer: number): Record<string, unknown> {
  const taker = viewer === r.taker;
  const out: Record<string, unknown> = {
    creation_timestamp: r.created,
    expiration_timestamp: r.expires,
    block_rfq_id: r.id,
    role: taker ? 'taker' : 'maker',
    state: r.state,
    taker_rating: ratingText(r.rating),
    makers: taker ? (r.makers ?? []).map((m) => identityOf(ex, m)) : [],
    amount: amountOf(r.lots),
    min_trade_amount: minTradeAmount(ex, r),
    asks: taker ? levels(ex, r, 1) : [],
    bids: taker ? levels(ex, r, 0) : [],
    legs: legsOf(r.legs),
    combo_id: null,
    label: taker ? r.label : '',
    app_name: null,
    mark_price: structureMark(ex, r.legs),
    disclosed: r.disclosed,
    index_prices: r.fills.map((f) => f.indexPrice),
    included_in_taker_rating: r.quoted,
    // a maker sees the trades it made; the taker all of them
    trades: r.fills
      .filter((f) => taker || f.maker === viewer)
      .map((f) => ({ direction: dir(f.side), price: priceToNumber(f.price), amount: amountOf(f.lots), maker: r.disclosed || !taker ? identityOf(ex, f.maker) : ANONYMOUS, hedge_amount: amountOf(f.hedgeLots ?? 0) })),
    trade_allocations: [],
  };
  if (r.hedge !== undefined) out.hedge = hedgeOf(r.hedge);
  // the taker's name only to itself, or to makers when it disclosed it
  if (taker || r.disclosed) out.taker = identityOf(ex, r.taker);
  if (taker && r.trigger !== null) out.trade_trigger = { state: r.trigger.state, price: priceToNumber(r.trigger.price), direction: dir(r.trigger.side), ...(r.trigger.cancelReason !== null ? { cancel_reason: r.trigger.cancelReason } : {}) };
  return out;
}

export function renderQuote(ex: Exchange, q: RfqQuote): Record<string, unknown> {
  const r = ex.blockRfqs.rfqs.get(q.rfqId);
  const state = q.state === 'open' && !quoteLive(ex, q) ? 'expired' : q.state;
  return {
    creation_timestamp: q.created,
    last_update_timestamp: q.updated,
    block_rfq_id: q.rfqId,
    block_rfq_quote_id: q.id,
    quote_state: state,
    execution_instruction: q.aon ? 'all_or_none' : 'any_part_of',
    price: priceToNumber(q.price),
    amount: amountOf(q.lots),
    direction: dir(q.side),
    filled_amount: amountOf(q.filled),
    legs: r === undefined ? [] : legsOf(r.legs, q.legPrices),
    replaced: q.replaced,
    label: q.label,
    app_name: null,
    ...(r?.hedge !== undefined ? { hedge: hedgeOf(r.hedge, q.hedgePrice) } : {}),
    ...(q.expiresAt !== null ? { expires_at: q.expiresAt } : {}),
    ...(q.reason !== null ? { quote_state_reason: q.reason } : { quote_state_reason: null }),
  };
}

export function renderPublicTrade(t: RfqPublicTrade): Record<string, unknown> {
  return {
    id: t.id,
    timestamp: t.ts,
    direction: dir(t.side),
    amount: amountOf(t.lots),
    mark_price: priceToNumber(t.price),
    legs: legsOf(t.legs, t.legPrices),
    combo_id: null,
    index_prices: { [`${t.currency.toLowerCase()}_usd`]: t.indexPrice },
    // one entry per quote the acceptance traded (several makers: several entries, best price first)
    trades: (t.parts ?? [{ price: t.price, lots: t.lots, hedgeLots: 0, hedgePrice: 0 }]).map((x) => ({
      amount: amountOf(x.lots),
      direction: dir(t.side),
      price: priceToNumber(x.price),
      ...(t.hedge !== undefined ? { hedge_amount: amountOf(x.hedgeLots) } : {}),
    })),
    ...(t.hedge !== undefined ? { hedge: hedgeOf(t.hedge) } : {}),
  };
}

/** A block trade of an RFQ as one of its parties sees it (the legs it kept). */
export function renderRfqBlockTrade(ex: Exchange, rec: BlockTradeRecord, userId: number, rfqId: number, quoteId: number): Record<string, unknown> {
  const user = ex.users.get(userId);
  const ids = new Set(rec.tradeIds);
  const trades = user === undefined ? [] : user.trades.filter((t) => ids.has(t.id));
  return {
    id: String(rec.id),
    timestamp: rec.ts,
    trades: trades.map((t) => ({ ...renderUserTrade(t, userId), block_rfq_id: rfqId, block_rfq_quote_id: quoteId })),
    app_name: null,
    broker_code: null,
    broker_name: null,
  };
}
