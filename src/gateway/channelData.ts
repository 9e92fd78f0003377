// Data of the channels a gateway renders itself (src/gateway/streams.ts): notification frames,
// quotes of a mirrored book, the leader's wording for refused channels, and the private event shape
// of the stream (src/api/ws/streamEvents.ts).
import type { L2 } from './bookMirror.ts';
import { isComboName, selects, type Selector } from '../api/ws/channels.ts';

/** Channel kinds whose first message on subscribe comes from the leader (src/gateway/firstMessages.ts). */
export const FIRST_FROM_LEADER = new Set(['ticker', 'quote', 'chart', 'platform_state', 'expiration_price', 'vol_index', 'incremental_ticker', 'public_methods_state']);

export function notification(channel: string, dataJson: string): Buffer {
  return Buffer.from(`{"jsonrpc":"2.0","method":"subscription","params":{"channel":${JSON.stringify(channel)},"data":${dataJson}}}`);
}

export function currencyOf(instrument: string): string {
  return instrument.slice(0, instrument.indexOf('-'));
}

/** Whether a `trades.*` channel takes the stream's trades of `instrument`: a combo's trades go to
 *  combo channels only (`trades.<combo>`, `trades.option_combo.*`), leg trades to the others, as the
 *  leader's hub (roundRender.ts) sends them. */
export function takesTrades(sel: Selector, instrument: string): boolean {
  return (sel.combo === true) === isComboName(instrument) && selects(sel, instrument, currencyOf(instrument) as never);
}

/** `quote.*` data of a mirrored book (0 where a side is empty, as the leader's), and its key. */
export function quoteOf(book: L2, name: string, timestamp: number): { data: string; key: string } {
  let bid = 0;
  let ask = 0;
  for (const p of book.bids.keys()) if (p > bid) bid = p;
  for (const p of book.asks.keys()) if (ask === 0 || p < ask) ask = p;
  const q = { timestamp, instrument_name: name, best_bid_price: bid, best_bid_amount: book.bids.get(bid) ?? 0, best_ask_price: ask, best_ask_amount: book.asks.get(ask) ?? 0 };
  return { data: JSON.stringify(q), key: quoteKey(q) };
}
/** What a quote notification says apart from its timestamp (sent only when this changes), as the hub. */
export function quoteKey(q: Record<string, unknown>): string {
  return `${q.best_bid_price}/${q.best_bid_amount}/${q.best_ask_price}/${q.best_ask_amount}`;
}
/** The leader's wording for refused channels (src/api/ws/server.ts). */
export function unknownList(names: string[]): string {
  const shown = names.slice(0, 5).map((n) => (n.length > 128 ? `${n.slice(0, 128)}...` : n));
  return shown.join(', ') + (names.length > 5 ? ` (and ${names.length - 5} more)` : '');
}
export const PORTFOLIO_CURRENCIES = ['BTC', 'ETH'];

export interface PrivateEvent {
  orders: Array<Record<string, unknown> & { order_id: string; instrument_name: string }>;
  trades: Array<Record<string, unknown> & { instrument_name: string }>;
  positions: Array<Record<string, unknown> & { instrument_name: string }>;
  mmp?: Array<Record<string, unknown> & { index_name: string }>;
  /** user.access_log entries of the batch */
  access_log?: unknown[];
  /** user.lock changes of the batch */
  lock?: unknown[];
  /** block_trade_confirmations data of the batch, with the block trade's currency */
  block_trade_confirmations?: Array<{ currency: string; data: unknown }>;
  /** block_rfq.maker / .taker / .maker.quotes data of the batch for this user, with the RFQ's currency */
  block_rfq_maker?: Array<{ currency: string; data: unknown }>;
  block_rfq_taker?: Array<{ currency: string; data: unknown }>;
  block_rfq_quotes?: Array<{ currency: string; data: unknown }>;
  /** user.combo_trades data of the batch: the user's side of each of its combo trades */
  combo_trades?: Array<Record<string, unknown> & { instrument_name: string }>;
}

/** A volatility index message without its timestamp: a value equal to the last one is not sent (as the hub). */
export function volKey(data: string): string {
  return data.slice(0, data.lastIndexOf(',"timestamp"'));
}
