// Block RFQ state (issue 34): RFQs, quotes, the accounts marked as makers, the public trade tape and
// the taker history ratings are computed from. Deterministic engine state, changed only by journaled
// commands (src/blockrfq/engine.ts), snapshotted (absent while empty, so older states hash as before).
import type { Rfq, RfqPublicTrade, RfqQuote } from './types.ts';

/** Open RFQs one taker may have at once. */
export const MAX_OPEN_RFQS = 10;
/** Open quotes on one RFQ (all makers), and of one maker on one side of an RFQ. */
export const MAX_QUOTES_PER_RFQ = 100;
export const MAX_QUOTES_PER_SIDE = 5;
/** Closed RFQs kept (older ones leave memory and snapshots); public trades kept. */
export const CLOSED_KEPT = 2000;
export const PUBLIC_TRADES_KEPT = 1000;
/** Closed RFQs a taker rating is computed over (the newest ones that got a quote). */
export const RATING_WINDOW = 100;

/** What a channel round needs to know: which RFQs and quotes changed (derived, not state). */
export interface RfqEvent {
  seq: number;
  rfqId: number;
  quoteId: number | null;
  /** a public trade was recorded (its id) */
  tradeId: number | null;
}
const EVENTS_KEPT = 4096;

export class BlockRfqs {
  nextRfqId = 1;
  nextQuoteId = 1;
  readonly rfqs = new Map<number, Rfq>();
  readonly quotes = new Map<number, RfqQuote>();
  readonly makers = new Set<number>();
  readonly trades: RfqPublicTrade[] = [];
  /** per taker: its newest closed RFQs that got a quote, true when traded (oldest first) */
  readonly history = new Map<number, boolean[]>();
  /** derived, not snapshotted: the changes channel rounds render (src/blockrfq/channels.ts) */
  readonly events: RfqEvent[] = [];
  eventSeq = 0;

  event(rfqId: number, quoteId: number | null = null, tradeId: number | null = null): void {
    this.events.push({ seq: ++this.eventSeq, rfqId, quoteId, tradeId });
    if (this.events.length > 2 * EVENTS_KEPT) this.events.splice(0, this.events.length - EVENTS_KEPT);
  }

  openOf(taker: number): number {
    let n = 0;
    for (const r of this.rfqs.values()) if (r.taker === taker && r.state === 'open') n++;
    return n;
  }

  quotesOf(rfqId: number): RfqQuote[] {
    const out: RfqQuote[] = [];
    for (const q of this.quotes.values()) if (q.rfqId === rfqId) out.push(q);
    return out;
  }

  /** The taker's rating in percent: traded / quoted over its last RATING_WINDOW quoted RFQs. */
  rating(taker: number): number | null {
    const h = this.history.get(taker);
    if (h === undefined || h.length === 0) return null;
    return Math.round((100 * h.filter(Boolean).length) / h.length);
  }

  /** An RFQ closed: its taker's history, and the memory bound on closed RFQs and their quotes. */
  closed(r: Rfq): void {
    if (r.quoted) {
      let h = this.history.get(r.taker);
      if (h === undefined) this.history.set(r.taker, (h = []));
      h.push(r.state === 'filled');
      if (h.length > RATING_WINDOW) h.splice(0, h.length - RATING_WINDOW);
    }
    let closedCount = 0;
    for (const x of this.rfqs.values()) if (x.state !== 'open') closedCount++;
    if (closedCount <= 2 * CLOSED_KEPT) return;
    let drop = closedCount - CLOSED_KEPT;
    for (const x of [...this.rfqs.values()]) {
      if (drop === 0) break;
      if (x.state === 'open') continue;
      this.rfqs.delete(x.id);
      for (const q of this.quotesOf(x.id)) this.quotes.delete(q.id);
      drop--;
    }
  }

  isEmpty(): boolean {
    return this.nextRfqId === 1 && this.makers.size === 0;
  }

  toJson(): unknown {
    return {
      next: [this.nextRfqId, this.nextQuoteId],
      rfqs: [...this.rfqs.values()],
      quotes: [...this.quotes.values()],
      makers: [...this.makers].sort((a, b) => a - b),
      trades: this.trades,
      history: [...this.history],
    };
  }

  restore(j: unknown): void {
    if (j === undefined || j === null) return;
    const s = j as { next: [number, number]; rfqs: Rfq[]; quotes: RfqQuote[]; makers: number[]; trades: RfqPublicTrade[]; history: [number, boolean[]][] };
    [this.nextRfqId, this.nextQuoteId] = s.next;
    for (const r of s.rfqs) this.rfqs.set(r.id, r);
    for (const q of s.quotes) this.quotes.set(q.id, q);
    for (const m of s.makers) this.makers.add(m);
    this.trades.push(...s.trades);
    for (const [u, h] of s.history) this.history.set(u, h);
  }
}
