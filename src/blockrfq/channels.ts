// The block RFQ channels (issue 34): `block_rfq.maker.{currency}` (RFQs sent to the subscribed
// maker, as it may see them), `block_rfq.taker.{currency}` (the subscriber's own RFQs with their live
// bids and asks), `block_rfq.maker.quotes.{currency}` (the subscribed maker's quotes) and the public
// `block_rfq.trades.{currency}`. The engine notes which RFQ, quote or trade each command changed
// (BlockRfqs.events, not state); each raw round sends a topic what changed since it last looked,
// rendered as the RFQ is after the durable batch. The leader's hub serves them (src/api/ws/hub.ts);
// the stream gateway serves them from the batch's events, rendered here once per batch for every
// user they concern (rfqStreamEvents, src/api/ws/streamEvents.ts): the same data, by the same rules.
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

/** One RFQ channel message of a batch, with the currency its RFQ is in. */
export interface RfqMessage {
  currency: CurrencyCode;
  data: unknown;
}

/** What the RFQ channels of one user get from a batch (as rfqRound renders them for its topics). */
export interface RfqUserEvents {
  maker: RfqMessage[];
  taker: RfqMessage[];
  quotes: RfqMessage[];
}

/**
 * The RFQ channel messages of the changes after `seen` (an eventSeq), for the stream (one message per
 * user and batch, src/api/ws/streamEvents.ts): per user, what each of its private RFQ channels of
 * currency `any` would get from rfqRound, in that order, and the public trades. A maker gets an RFQ
 * only when it may see it (visibleTo, as now), rendered as it sees it; the taker its own RFQs.
 */
export function rfqStreamEvents(ex: Exchange, seen: number): { users: Map<number, RfqUserEvents>; trades: RfqMessage[] } {
  const st = ex.blockRfqs;
  const users = new Map<number, RfqUserEvents>();
  const trades: RfqMessage[] = [];
  if (st.eventSeq <= seen) return { users, trades };
  const of = (u: number): RfqUserEvents => {
    let e = users.get(u);
    if (!e) users.set(u, (e = { maker: [], taker: [], quotes: [] }));
    return e;
  };
  const takerDone = new Set<number>();
  const makerDone = new Set<string>();
  const quoteDone = new Set<number>();
  const makers = [...st.makers].sort((a, b) => a - b);
  for (const e of st.events) {
    if (e.seq <= seen) continue;
    const r = st.rfqs.get(e.rfqId);
    if (r === undefined) continue;
    if (!takerDone.has(r.id)) {
      takerDone.add(r.id);
      of(r.taker).taker.push({ currency: r.currency, data: renderRfq(ex, r, r.taker) });
    }
    if (e.quoteId === null) {
      for (const m of makers) {
        const key = `${m}:${r.id}`;
        if (m === r.taker || makerDone.has(key) || !visibleTo(ex, r, m)) continue;
        makerDone.add(key);
        of(m).maker.push({ currency: r.currency, data: renderRfq(ex, r, m) });
      }
    } else if (!quoteDone.has(e.quoteId)) {
      const q = st.quotes.get(e.quoteId);
      if (q !== undefined) {
        quoteDone.add(q.id);
        of(q.maker).quotes.push({ currency: r.currency, data: renderQuote(ex, q) });
      }
    }
    if (e.tradeId !== null) {
      const tr = st.trades.find((x) => x.id === e.tradeId);
      if (tr !== undefined) trades.push({ currency: r.currency, data: renderPublicTrade(tr) });
    }
  }
  return { users, trades };
}
