// Mass quotes (Deribit private/mass_quote) and their cancels (private/cancel_quotes).
//
// A mass quote is one command however many quotes it carries: one journal record, applied at once
// by the single writer, so no other order can slip in between its quotes. Each quote occupies a
// slot (user, MMP group, instrument, side); a new quote for a slot replaces the open one there.
// Each side goes through ordinary order entry (`Trading.place`, with the group's MMP tag), so it
// meets the same checks as an order: price band and tick, self-trade, the account's margin and
// cash. A side that is refused is reported in `errors` and the others go on. An MMP trigger caused
// by one side cancels the group's quotes at once, and the sides after it are refused.
import type { CurrencyCode } from '../domain/currency.ts';
import { ERR, isReject, reject, type Reject } from '../domain/errors.ts';
import type { Instrument } from '../domain/instrument.ts';
import { yearFraction } from '../domain/pricing.ts';
import { optionGreeksCoin } from '../market/smile.ts';
import type { CancelQuotesType, Command, QuoteSide } from './commands.ts';
import type { Exchange } from './exchange.ts';
import { BUY, SELL, type Side } from './orderBook.ts';
import { cancelOwnMakers } from './selfTrade.ts';
import type { Order, Trade, User } from './types.ts';

type MassQuoteCmd = Extract<Command, { t: 'mass_quote' }>;
type CancelQuotesCmd = Extract<Command, { t: 'cancel_quotes' }>;

/** Quotes (instruments) per mass_quote message; each may carry a bid and an ask. */
export const MAX_QUOTES_PER_MESSAGE = 100;

export interface QuoteError {
  instrument: string;
  side: 'bid' | 'ask';
  error: Reject;
}

export interface MassQuoteResult {
  orders: Order[];
  trades: Trade[];
  errors: QuoteError[];
}

/** The open mass quote of a slot, if any. */
function openQuote(user: User, inst: Instrument, group: string, side: Side): Order | undefined {
  const e = user.exposures.get(inst.id);
  if (e === undefined || e.openOrders.size === 0) return undefined;
  for (const o of e.openOrders) if (o.side === side && o.mmp !== null && o.mmp.quoteId !== null && o.mmp.group === group) return o;
  return undefined;
}

export function massQuote(ex: Exchange, c: MassQuoteCmd): MassQuoteResult | Reject {
  const user = ex.users.get(c.userId);
  if (user === undefined) return reject(ERR.UNAUTHORIZED);
  if (c.quotes.length === 0 || c.quotes.length > MAX_QUOTES_PER_MESSAGE) return reject(ERR.INVALID_PARAMS, `1 to ${MAX_QUOTES_PER_MESSAGE} quotes`, 'quotes');
  // the whole message is refused while a group it quotes in is frozen or not configured: the client
  // learns it once, and nothing of a message sent against a frozen group trades
  const seen = new Set<string>();
  const currencies = new Set<CurrencyCode>();
  for (const q of c.quotes) {
    if (seen.has(q.instrument)) return reject(ERR.INVALID_ARGUMENTS, 'duplicate_instrument', 'quotes');
    seen.add(q.instrument);
    const inst = ex.instruments.get(q.instrument);
    if (inst !== undefined) currencies.add(inst.currency);
  }
  for (const cur of currencies) {
    const refused = ex.mmp.refusal(user.id, cur, c.group);
    if (refused !== null) return refused;
  }
  const out: MassQuoteResult = { orders: [], trades: [], errors: [] };
  for (const q of c.quotes) {
    const inst = ex.instruments.get(q.instrument);
    for (const [side, s] of [[BUY, q.bid], [SELL, q.ask]] as [Side, QuoteSide | null][]) {
      if (s === null) continue;
      const sideName = side === BUY ? 'bid' : 'ask';
      if (inst === undefined) {
        out.errors.push({ instrument: q.instrument, side: sideName, error: reject(ERR.INVALID_INSTRUMENT, undefined, 'instrument_name') });
        continue;
      }
      // a trigger earlier in this message froze the group: the rest is refused
      const frozen = ex.mmp.refusal(user.id, inst.currency, c.group);
      if (frozen !== null) {
        out.errors.push({ instrument: q.instrument, side: sideName, error: frozen });
        continue;
      }
      const old = openQuote(user, inst, c.group, side);
      if (old !== undefined) {
        // the same price and size again keeps the quote and its time priority
        if (s.lots > 0 && old.price === s.price && old.remaining * inst.lotScaled === s.lots && old.filled === 0 && old.postOnly === s.postOnly) {
          out.orders.push(old);
          continue;
        }
        // the old price never outlives a new one: it goes first, even if the new quote is refused
        ex.trading.cancelOrders(user.id, [old.id], 'user_request');
      }
      if (s.lots === 0) continue;
      // `cancel_maker` self-trade prevention: the account's own resting orders this quote would meet
      // go first (a quote is an ordinary order; reject_taker is applied by Trading.place)
      if (!s.postOnly) cancelOwnMakers(ex, user.id, q.instrument, side, s.price, s.lots);
      const r = ex.trading.place(
        {
          t: 'place',
          userId: user.id,
          side,
          instrument: q.instrument,
          price: s.price,
          advanced: null,
          advPrice: null,
          lots: s.lots,
          type: 'limit',
          tif: 'good_til_cancelled',
          postOnly: s.postOnly,
          rejectPostOnly: s.rejectPostOnly,
          reduceOnly: false,
          label: '',
          clientOrderId: null,
        },
        { group: c.group, quoteId: c.quoteId, quoteSetId: q.quoteSetId },
      );
      if (isReject(r)) {
        out.errors.push({ instrument: q.instrument, side: sideName, error: r });
        continue;
      }
      out.orders.push(r.order);
      for (const t of r.trades) out.trades.push(t);
      ex.mmp.fire();
    }
  }
  return out;
}

function deltaOf(ex: Exchange, inst: Instrument): number {
  const m = ex.markets.get(inst.id)!;
  const F = ex.indexPrice(inst.currency);
  const T = yearFraction(ex.now, inst.expiry);
  if (!(F > 0) || !(T > 0) || !Number.isFinite(m.markIv)) return NaN;
  return optionGreeksCoin(inst.optionType, F, inst.strike, T, m.markIv).delta;
}

function selected(ex: Exchange, c: CancelQuotesCmd, o: Order, type: CancelQuotesType): boolean {
  switch (type) {
    case 'all':
    case 'kind':
      // every instrument listed here is an option
      return true;
    case 'instrument':
      return o.inst.name === c.instrument;
    case 'currency':
      return o.inst.currency === c.currency;
    case 'quote_set_id':
      return o.mmp!.quoteSetId === c.quoteSetId;
    case 'delta': {
      const d = deltaOf(ex, o.inst);
      return d >= (c.minDelta ?? -Infinity) && d <= (c.maxDelta ?? Infinity);
    }
  }
}

/** Cancels the user's open mass quotes selected by `cancelType`; another user's are never seen. */
export function cancelQuotes(ex: Exchange, c: CancelQuotesCmd): Order[] {
  const user = ex.users.get(c.userId);
  if (user === undefined) return [];
  const ids: number[] = [];
  for (const e of user.exposures.values()) {
    if (e.openOrders.size === 0) continue;
    for (const o of e.openOrders) if (o.mmp !== null && o.mmp.quoteId !== null && selected(ex, c, o, c.cancelType)) ids.push(o.id);
  }
  return ex.trading.cancelOrders(user.id, ids, 'user_request');
}
