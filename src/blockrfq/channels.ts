// The block RFQ channels (issue 34): `block_rfq.maker.{currency}` (RFQs sent to the subscribed
// maker, as it may see them), `block_rfq.taker.{currency}` (the subscriber's own RFQs with their live
// bids and asks), `block_rfq.maker.quotes.{currency}` (the subscribed maker's quotes) and the public
// `block_rfq.trades.{currency}`. The engine notes which RFQ, quote or trade each command changed
// (BlockRfqs.events, not state); each raw round sends a topic what changed since it last looked,
// rendered as the RFQ is after the durable batch. The leader's hub serves them (src/api/ws/hub.ts);
// the stream gateway does not parse them, so it leaves them out of its subscribe answers.
import { CURRENCY_CODES, type CurrencyCode } from '../domain/currency.ts';
import type { Exchange } from '../engine/exchange.ts';
import { visibleTo } from './engine.ts';
import { renderPublicTrade, renderQuote, renderRfq } from './render.ts';

export type RfqSpec =
  | { k: 'user.block_rfq_maker'; currency: CurrencyCode | null }
  | { k: 'user.block_rfq_taker'; currency: CurrencyCode | null }
  | { k: 'user.block_rfq_quotes'; currency: CurrencyCode | null }
  | { k: 'block_rfq_trades'; currency: CurrencyCode | null };

const KINDS = new Set<string>(['user.block_rfq_maker', 'user.block_rfq_taker', 'user.block_rfq_quotes', 'block_rfq_trades']);

export function isRfqSpec(spec: { k: string }): spec is RfqSpec {
  return KINDS.has(spec.k);
}

function currency(s: string | undefined): CurrencyCode | null | undefined {
  if (s === 'any') return null;
  return s !== undefined && (CURRENCY_CODES as readonly string[]).includes(s) ? (s as CurrencyCode) : undefined;
}

/** The RFQ channel a name (split at dots) is, or null. */
export function parseRfqChannel(p: string[]): RfqSpec | null {
  if (p[0] !== 'block_rfq') return null;
  if (p.length === 3) {
    const c = currency(p[2]);
    if (c === undefined) return null;
    if (p[1] === 'maker') return { k: 'user.block_rfq_maker', currency: c };
    if (p[1] === 'taker') return { k: 'user.block_rfq_taker', currency: c };
    if (p[1] === 'trades') return { k: 'block_rfq_trades', currency: c };
  }
  if (p.length === 4 && p[1] === 'maker' && p[2] === 'quotes') {
    const c = currency(p[3]);
    return c === undefined ? null : { k: 'user.block_rfq_quotes', currency: c };
  }
  return null;
}

export interface RfqTopic {
  spec: RfqSpec;
  userId: number | null;
  last?: string;
}

/** Nothing at once: the topic starts from the newest change now. */
export function rfqInitial(ex: Exchange, t: RfqTopic): string[] {
  t.last ??= String(ex.blockRfqs.eventSeq);
  return [];
}

/** The messages (data JSON) of one raw round for a topic. */
export function rfqRound(ex: Exchange, t: RfqTopic, cadence: 'raw' | 'agg'): string[] {
  if (cadence !== 'raw') return [];
  const st = ex.blockRfqs;
  const seen = Number(t.last ?? 0);
  if (st.eventSeq <= seen) return [];
  t.last = String(st.eventSeq);
  const spec = t.spec;
  const out: string[] = [];
  const done = new Set<number>();
  for (const e of st.events) {
    if (e.seq <= seen) continue;
    const r = st.rfqs.get(e.rfqId);
    if (r === undefined || (spec.currency !== null && r.currency !== spec.currency)) continue;
    switch (spec.k) {
      case 'user.block_rfq_taker':
        if (r.taker !== t.userId || done.has(r.id)) break;
        done.add(r.id);
        out.push(JSON.stringify(renderRfq(ex, r, r.taker)));
        break;
      case 'user.block_rfq_maker':
        // quote changes are the quotes channel's; an RFQ's own changes go to the makers it was sent to
        if (e.quoteId !== null || r.taker === t.userId || !visibleTo(ex, r, t.userId!) || done.has(r.id)) break;
        done.add(r.id);
        out.push(JSON.stringify(renderRfq(ex, r, t.userId!)));
        break;
      case 'user.block_rfq_quotes': {
        const q = e.quoteId === null ? undefined : st.quotes.get(e.quoteId);
        if (q === undefined || q.maker !== t.userId || done.has(q.id)) break;
        done.add(q.id);
        out.push(JSON.stringify(renderQuote(ex, q)));
        break;
      }
      case 'block_rfq_trades': {
        if (e.tradeId === null) break;
        const tr = st.trades.find((x) => x.id === e.tradeId);
        if (tr !== undefined) out.push(JSON.stringify(renderPublicTrade(tr)));
        break;
      }
    }
  }
  return out;
}
