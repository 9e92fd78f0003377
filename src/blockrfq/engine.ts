// Block RFQs in the engine (issue 34; docs/api-notes.md "Block RFQ"): every change is one journaled
// command, time from the command, refusals before any change. The trade itself is in fill.ts.
import { ERR, isReject, reject, type Reject } from '../domain/errors.ts';
import { PRICE_SCALE, roundToTick } from '../domain/instrument.ts';
import type { Exchange } from '../engine/exchange.ts';
import { checkLegs, sideRefusal } from '../blocktrades/execute.ts';
import type { BlockLeg } from '../blocktrades/types.ts';
import { tryFill, closeRfq, hedgePartOf, quoteLegs, quoteLive, structurePrice, waitsForQuotes } from './fill.ts';
import { MAX_OPEN_RFQS, MAX_QUOTES_PER_RFQ, MAX_QUOTES_PER_SIDE } from './state.ts';
import type { Rfq, RfqCommand, RfqHedge, RfqQuote } from './types.ts';

type Cmd<T extends RfqCommand['t']> = Extract<RfqCommand, { t: T }>;

/** The largest ratio of a leg and legs of an RFQ. */
export const MAX_RATIO = 1000;
export const MAX_RFQ_LEGS = 20;
/** The makers an anonymous RFQ must reach (Deribit's rule for `disclosed: false`). */
export const MIN_ANONYMOUS_MAKERS = 5;

export function applyRfq(ex: Exchange, c: RfqCommand): unknown {
  switch (c.t) {
    case 'rfq_set_maker':
      return setMaker(ex, c);
    case 'rfq_create':
      return create(ex, c);
    case 'rfq_cancel':
      return cancel(ex, c);
    case 'rfq_quote':
      return quote(ex, c);
    case 'rfq_quote_cancel':
      return cancelQuotes(ex, c);
    case 'rfq_accept':
      return accept(ex, c);
    case 'rfq_trigger_cancel':
      return cancelTrigger(ex, c);
    case 'rfq_expire':
      return expireDue(ex);
  }
}

function setMaker(ex: Exchange, c: Cmd<'rfq_set_maker'>): boolean | Reject {
  if (ex.users.get(c.by)?.role !== 'admin') return reject(ERR.FORBIDDEN, 'admin_required');
  if (!ex.users.has(c.userId)) return reject(ERR.NOT_FOUND, 'user_not_found', 'user_id');
  if (c.maker) ex.blockRfqs.makers.add(c.userId);
  else ex.blockRfqs.makers.delete(c.userId);
  return c.maker;
}

function create(ex: Exchange, c: Cmd<'rfq_create'>): Rfq | Reject {
  const st = ex.blockRfqs;
  const user = ex.users.get(c.userId);
  if (!user) return reject(ERR.UNAUTHORIZED);
  if (c.legs.length === 0 || c.legs.length > MAX_RFQ_LEGS) return reject(ERR.INVALID_ARGUMENTS, 'invalid_legs', 'legs');
  for (const l of c.legs) if (!(Number.isSafeInteger(l.ratio) && l.ratio > 0 && l.ratio <= MAX_RATIO)) return reject(ERR.INVALID_ARGUMENTS, 'invalid_ratio', 'legs');
  if (!(Number.isSafeInteger(c.lots) && c.lots > 0)) return reject(ERR.INVALID_AMOUNT, 'amount_not_positive', 'amount');
  // the structure must be tradeable now (instruments open, one currency, amounts on the lot grid);
  // prices are the quotes' business: the mark stands in for the band check
  const probe: BlockLeg[] = c.legs.map((l) => ({ instrument: l.instrument, side: l.side, price: markPrice(ex, l.instrument), lots: l.ratio * c.lots }));
  const hedge = c.hedge ?? null;
  // the hedge leg: another instrument of the same currency, its amount on its lot grid, its reference
  // price on its tick grid and inside the block band (checked with the legs: no instrument twice)
  if (hedge !== null) {
    if (!(Number.isSafeInteger(hedge.lots) && hedge.lots > 0)) return reject(ERR.INVALID_AMOUNT, 'amount_not_positive', 'hedge');
    probe.push({ instrument: hedge.instrument, side: hedge.side, price: hedge.price, lots: hedge.lots });
  }
  const checked = checkLegs(ex, probe, { bandPct: 100, minAmount: {} });
  if (isReject(checked)) return checked;
  if (hedge !== null) {
    const band = checkLegs(ex, [probe[probe.length - 1]!], c.rules ?? { bandPct: 100, minAmount: {} });
    if (isReject(band)) return band;
  }
  if (st.openOf(c.userId) >= MAX_OPEN_RFQS) return reject(ERR.BLOCK_RFQ_NOT_FULLY_FILLED, 'too_many_open_block_rfqs');
  if (c.makers !== null) {
    if (c.makers.length === 0) return reject(ERR.INVALID_ARGUMENTS, 'no_makers', 'makers');
    for (const m of c.makers) if (!st.makers.has(m) || m === c.userId) return reject(ERR.INVALID_ARGUMENTS, 'not_a_block_rfq_maker', 'makers');
  }
  // anonymity needs a crowd (Deribit: disclosed false only with at least 5 makers): the makers it
  // reaches, each counted once (a list naming one maker five times reaches one), every maker but
  // the taker when none are named
  if (!c.disclosed && c.minAnonymousMakers !== undefined) {
    const reach = c.makers !== null ? new Set(c.makers).size : [...st.makers].filter((m) => m !== c.userId).length;
    if (reach < c.minAnonymousMakers) return reject(ERR.INVALID_ARGUMENTS, 'too_few_makers_for_anonymous_block_rfq', 'disclosed');
  }
  if (!(Number.isSafeInteger(c.ttlMs) && c.ttlMs > 0)) return reject(ERR.INVALID_ARGUMENTS, 'invalid_ttl');
  const r: Rfq = {
    id: st.nextRfqId++,
    taker: c.userId,
    currency: checked.currency,
    legs: c.legs,
    lots: c.lots,
    created: ex.now,
    expires: ex.now + c.ttlMs,
    makers: c.makers,
    disclosed: c.disclosed,
    label: c.label,
    state: 'open',
    quoted: false,
    trigger: null,
    fills: [],
    rating: st.rating(c.userId),
    updated: ex.now,
  };
  if (hedge !== null) r.hedge = { ...hedge } satisfies RfqHedge;
  st.rfqs.set(r.id, r);
  st.event(r.id);
  return r;
}

/** The mark of an instrument on its tick grid (price units), or 1 when it has none yet. */
function markPrice(ex: Exchange, name: string): number {
  const inst = ex.instruments.get(name);
  if (inst === undefined) return 1;
  const m = ex.markets.get(inst.id)!.markCoin;
  if (!(m >= 0)) return 1;
  return Math.max(inst.tick, roundToTick(inst, m * 10 ** PRICE_SCALE, 'down'));
}

/** The RFQ if it is open (an RFQ past its time is expired here, before the tick comes). */
function openRfq(ex: Exchange, id: number): Rfq | Reject {
  const r = ex.blockRfqs.rfqs.get(id);
  if (r === undefined) return reject(ERR.NOT_FOUND, 'block_rfq_not_found', 'block_rfq_id');
  if (r.state === 'open' && r.expires <= ex.now) closeRfq(ex, r, 'expired');
  if (r.state !== 'open') return reject(ERR.INVALID_ARGUMENTS, `block_rfq_${r.state}`, 'block_rfq_id');
  return r;
}

/** Whether a maker may see an RFQ (it was sent to it, and it is not its own). */
export function visibleTo(ex: Exchange, r: Rfq, userId: number): boolean {
  if (r.taker === userId) return true;
  return ex.blockRfqs.makers.has(userId) && (r.makers === null || r.makers.includes(userId));
}

function cancel(ex: Exchange, c: Cmd<'rfq_cancel'>): Rfq | Reject {
  const r = ex.blockRfqs.rfqs.get(c.rfqId);
  if (r === undefined || r.taker !== c.userId) return reject(ERR.NOT_FOUND, 'block_rfq_not_found', 'block_rfq_id');
  const open = openRfq(ex, c.rfqId);
  if (isReject(open)) return open;
  closeRfq(ex, r, 'cancelled');
  return r;
}

function quote(ex: Exchange, c: Cmd<'rfq_quote'>): RfqQuote | Reject {
  const st = ex.blockRfqs;
  const maker = ex.users.get(c.userId);
  if (!maker) return reject(ERR.UNAUTHORIZED);
  if (!st.makers.has(c.userId)) return reject(ERR.FORBIDDEN, 'not_a_block_rfq_maker');
  const known = st.rfqs.get(c.rfqId);
  if (known === undefined || known.taker === c.userId || !visibleTo(ex, known, c.userId)) return reject(ERR.NOT_FOUND, 'block_rfq_not_found', 'block_rfq_id');
  const r = openRfq(ex, c.rfqId);
  if (isReject(r)) return r;
  let q: RfqQuote | undefined;
  if (c.quoteId !== null) {
    q = st.quotes.get(c.quoteId);
    if (q === undefined || q.maker !== c.userId || q.rfqId !== r.id) return reject(ERR.NOT_FOUND, 'block_rfq_quote_not_found', 'block_rfq_quote_id');
    if (q.state !== 'open' || (q.expiresAt !== null && q.expiresAt <= ex.now)) return reject(ERR.INVALID_ARGUMENTS, 'block_rfq_quote_not_open', 'block_rfq_quote_id');
    if (q.side !== c.side) return reject(ERR.INVALID_ARGUMENTS, 'direction_mismatch', 'direction');
  }
  if (c.legPrices.length !== r.legs.length) return reject(ERR.INVALID_ARGUMENTS, 'legs_mismatch', 'legs');
  if (!(Number.isSafeInteger(c.lots) && c.lots > 0)) return reject(ERR.INVALID_AMOUNT, 'amount_not_positive', 'amount');
  if (c.lots > r.lots) return reject(ERR.INVALID_AMOUNT, 'amount_above_block_rfq_amount', 'amount');
  if (c.expiresAt !== null && c.expiresAt <= ex.now) return reject(ERR.INVALID_ARGUMENTS, 'expires_at_in_past', 'expires_at');
  if (q === undefined) {
    const open = st.quotesOf(r.id).filter((x) => x.state === 'open');
    if (open.length >= MAX_QUOTES_PER_RFQ) return reject(ERR.TOO_MANY_QUOTES_PER_BLOCK_RFQ, 'too_many_quotes_per_block_rfq');
    if (open.filter((x) => x.maker === c.userId && x.side === c.side).length >= MAX_QUOTES_PER_SIDE) return reject(ERR.TOO_MANY_QUOTES_PER_BLOCK_RFQ_SIDE, 'too_many_quotes_per_block_rfq_side');
  }
  const hedgePrice = c.hedgePrice ?? null;
  if (hedgePrice !== null && r.hedge === undefined) return reject(ERR.INVALID_ARGUMENTS, 'block_rfq_has_no_hedge', 'hedge');
  const price = structurePrice(r, c.legPrices);
  // Deribit's 13910: a maker's bid may not cross its own ask on the same RFQ (nor the reverse); a
  // bid equal to its ask is a two-way price at one level, not a cross
  for (const x of st.quotesOf(r.id)) {
    if (x.maker !== c.userId || x.side === c.side || x === q || !quoteLive(ex, x)) continue;
    if (c.side === 0 ? price > x.price : price < x.price) return reject(ERR.QUOTE_CROSSED, 'quote_crossed', 'price');
  }
  // the legs at these prices (the hedge leg's share of the amount too) must pass the block rules,
  // and the maker's margin must carry them all together
  const legs = quoteLegs(r, c.side, c.legPrices, c.lots, hedgePartOf(ex, r, hedgePrice === null ? null : { hedgePrice }, c.lots));
  const checked = checkLegs(ex, legs, c.rules);
  if (isReject(checked)) return checked;
  const refused = sideRefusal(ex, maker, 'maker', legs, checked);
  if (refused !== null) return refused;
  if (q === undefined) {
    q = { id: st.nextQuoteId++, rfqId: r.id, maker: c.userId, side: c.side, lots: c.lots, filled: 0, legPrices: c.legPrices, price, aon: c.aon, expiresAt: c.expiresAt, label: c.label, state: 'open', reason: null, created: ex.now, updated: ex.now, replaced: false };
    st.quotes.set(q.id, q);
  } else {
    Object.assign(q, { lots: c.lots, legPrices: c.legPrices, price, aon: c.aon, expiresAt: c.expiresAt, label: c.label, updated: ex.now, replaced: true });
  }
  if (hedgePrice !== null) q.hedgePrice = hedgePrice;
  else delete q.hedgePrice;
  r.quoted = true;
  r.updated = ex.now;
  st.event(r.id, q.id);
  // a waiting good-til-cancelled acceptance fills as soon as a quote reaches its price
  if (r.trigger !== null && r.trigger.state === 'untriggered') {
    const t = r.trigger;
    const done = tryFill(ex, r, t.side, t.lots, t.price, c.rules);
    if (!isReject(done)) t.state = 'triggered';
  }
  return q;
}

function cancelQuotes(ex: Exchange, c: Cmd<'rfq_quote_cancel'>): RfqQuote[] | Reject {
  const st = ex.blockRfqs;
  const out: RfqQuote[] = [];
  for (const q of st.quotes.values()) {
    if (q.maker !== c.userId || q.state !== 'open') continue;
    if (c.quoteId !== null && q.id !== c.quoteId) continue;
    if (c.rfqId !== null && q.rfqId !== c.rfqId) continue;
    if (c.label !== null && q.label !== c.label) continue;
    out.push(q);
  }
  if (!c.all && out.length === 0) return reject(ERR.NOT_FOUND, 'block_rfq_quote_not_found', 'block_rfq_quote_id');
  for (const q of out) {
    q.state = 'cancelled';
    q.reason = 'user_request';
    q.updated = ex.now;
    st.event(q.rfqId, q.id);
  }
  return out;
}

function accept(ex: Exchange, c: Cmd<'rfq_accept'>): unknown {
  const known = ex.blockRfqs.rfqs.get(c.rfqId);
  if (known === undefined || known.taker !== c.userId) return reject(ERR.NOT_FOUND, 'block_rfq_not_found', 'block_rfq_id');
  const r = openRfq(ex, c.rfqId);
  if (isReject(r)) return r;
  if (!(Number.isSafeInteger(c.lots) && c.lots > 0)) return reject(ERR.INVALID_AMOUNT, 'amount_not_positive', 'amount');
  if (c.lots > r.lots) return reject(ERR.INVALID_AMOUNT, 'amount_above_block_rfq_amount', 'amount');
  if (!Number.isSafeInteger(c.price)) return reject(ERR.INVALID_PRICE, undefined, 'price');
  const done = tryFill(ex, r, c.side, c.lots, c.price, c.rules);
  if (!isReject(done)) {
    if (r.trigger !== null && r.trigger.state === 'untriggered') r.trigger = { ...r.trigger, state: 'cancelled', cancelReason: 'filled' };
    // `fill` (the best part) stays for readers of one fill; `fills` is every maker's part
    return { rfq: r, fill: done[0]!, fills: done };
  }
  if (!c.gtc) return done;
  // good til cancelled: waits for quotes that fill it at the price (a refusal of the rules or of
  // the taker's margin stays a refusal)
  if (!waitsForQuotes(done)) return done;
  r.trigger = { side: c.side, price: c.price, lots: c.lots, state: 'untriggered', cancelReason: null };
  r.updated = ex.now;
  ex.blockRfqs.event(r.id);
  return { rfq: r, fill: null, fills: [] };
}

function cancelTrigger(ex: Exchange, c: Cmd<'rfq_trigger_cancel'>): Rfq | Reject {
  const r = ex.blockRfqs.rfqs.get(c.rfqId);
  if (r === undefined || r.taker !== c.userId) return reject(ERR.NOT_FOUND, 'block_rfq_not_found', 'block_rfq_id');
  if (r.trigger === null || r.trigger.state !== 'untriggered') return reject(ERR.NOT_FOUND, 'block_rfq_trigger_not_found', 'block_rfq_id');
  r.trigger = { ...r.trigger, state: 'cancelled', cancelReason: 'user_request' };
  r.updated = ex.now;
  ex.blockRfqs.event(r.id);
  return r;
}

/** The earliest time an open RFQ or quote expires (Infinity: none); the clock tick compares it. */
export function nextRfqDue(ex: Exchange): number {
  let due = Infinity;
  for (const r of ex.blockRfqs.rfqs.values()) if (r.state === 'open' && r.expires < due) due = r.expires;
  for (const q of ex.blockRfqs.quotes.values()) if (q.state === 'open' && q.expiresAt !== null && q.expiresAt < due) due = q.expiresAt;
  return due;
}

function expireDue(ex: Exchange): number {
  let n = 0;
  for (const r of ex.blockRfqs.rfqs.values()) {
    if (r.state === 'open' && r.expires <= ex.now) {
      closeRfq(ex, r, 'expired');
      n++;
    }
  }
  for (const q of ex.blockRfqs.quotes.values()) {
    if (q.state === 'open' && q.expiresAt !== null && q.expiresAt <= ex.now) {
      q.state = 'expired';
      q.reason = 'expired';
      q.updated = ex.now;
      ex.blockRfqs.event(q.rfqId, q.id);
      n++;
    }
  }
  return n;
}
