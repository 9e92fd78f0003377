// Channel names of API.md section 6 (Deribit reference 8.1) parsed into what the stream hub needs.
// A name that does not parse, names an unknown instrument or an unsupported variant yields null; the
// subscribe request is then refused with an error naming it (never a silent empty result).
import { CURRENCY_CODES, type CurrencyCode } from '../../domain/currency.ts';
import { RESOLUTIONS } from '../methods/candles.ts';
import { BOOK_GROUPS, parseParityChannel, type ParitySpec } from './parityChannels.ts';
import { parseRfqChannel, type RfqSpec } from '../../blockrfq/channels.ts';

export type Interval = 'raw' | '100ms' | 'agg2';
/** `raw` channels publish after every durable batch; `100ms` and `agg2` are conflated on the tick. */
export type Cadence = 'raw' | 'agg';

/** Which instruments a channel selects: one by name, or all options of a currency (null = any). */
export interface Selector {
  instrument: string | null;
  currency: CurrencyCode | null;
  /** user.orders' Deribit kind: `option` leaves combo orders out, `option_combo` selects only them (absent: both) */
  kind?: 'option' | 'option_combo';
  /** trades of combos (a combo's name, or kind `option_combo`): the combo trades, not leg trades */
  combo?: true;
}

/** Whether a name is a combo's (src/combos/combos.ts names them `<currency>-CS|PS|STRD|COMBO-...`). */
export function isComboName(name: string): boolean {
  return /^[A-Z]+-(?:CS|PS|STRD|COMBO)-/.test(name);
}

export type ChannelSpec =
  | { k: 'book'; instrument: string; cadence: Cadence }
  /** `group`: price buckets of that many base ticks, 0 for `none` (parityChannels.ts groupLevels) */
  | { k: 'book_depth'; instrument: string; depth: number; cadence: Cadence; group: number }
  | { k: 'trades'; sel: Selector; cadence: Cadence }
  | { k: 'ticker'; instrument: string; cadence: Cadence }
  | { k: 'quote'; instrument: string }
  | { k: 'chart'; instrument: string; resolution: string; widthMs: number }
  | { k: 'index'; currency: CurrencyCode; indexName: string }
  | { k: 'markprice'; currency: CurrencyCode; indexName: string }
  | { k: 'expiration_price'; currency: CurrencyCode; indexName: string }
  /** instrument.state.{kind}.{currency}: kind `option` or `any`, currency null = any */
  | { k: 'instrument_state'; currency: CurrencyCode | null }
  | { k: 'platform_state' }
  | { k: 'user.orders'; sel: Selector; cadence: Cadence }
  | { k: 'user.trades'; sel: Selector; cadence: Cadence }
  /**
   * user.combo_trades.*: the caller's combo trades (a combo's name, a leg's name, or kind
   * option_combo/any); `leg`: the trades of every combo with that instrument as a leg
   */
  | { k: 'user.combo_trades'; sel: Selector; cadence: Cadence; leg?: string }
  | { k: 'user.changes'; sel: Selector; cadence: Cadence }
  | { k: 'user.portfolio'; currency: CurrencyCode | null }
  /** user.mmp_trigger.{index_name}: the caller's MMP triggers of that index (any group) */
  | { k: 'user.mmp_trigger'; currency: CurrencyCode; indexName: string }
  /** block_trade_confirmations[.{currency}]: the caller's block trade requests as they change (currency null: any) */
  | { k: 'user.block_trade_confirmations'; currency: CurrencyCode | null }
  /** `user.portfolio.{currency}` of a Deribit currency Strikebook keeps no accounts in: accepted,
   *  never notified (ccxt's watchBalance subscribes BTC, ETH, SOL and USDC in one request) */
  | { k: 'user.portfolio.none'; currency: string }
  | ParitySpec
  /** block_rfq.* (src/blockrfq/channels.ts): the leader's hub and the stream gateway */
  | RfqSpec;

/**
 * What a private channel needs of its credential's scopes (as a call reading the same data): the
 * leader's subscribe and credential sweep and the gateway's subscribe and recheck all judge by it.
 */
export function channelScope(spec: ChannelSpec): 'account:read' | 'trade:read' {
  return spec.k.startsWith('user.portfolio') || spec.k === 'user.access_log' || spec.k === 'user.lock' ? 'account:read' : 'trade:read';
}

export function isPrivate(spec: ChannelSpec): boolean {
  return spec.k.startsWith('user.');
}

const INTERVALS = new Set<string>(['raw', '100ms', 'agg2']);
/** Deribit's other currencies: their portfolio channels are served, and stay silent. */
const FOREIGN_CURRENCIES = new Set<string>(['SOL', 'USDT', 'EURR', 'XRP', 'BNB', 'PAXG', 'MATIC']);
const BOOK_DEPTHS = new Set([1, 10, 20]);
const SETTLEMENT_CURRENCIES = new Set<string>(['BTC', 'ETH']);

function cadenceOf(interval: string): Cadence | null {
  if (!INTERVALS.has(interval)) return null;
  return interval === 'raw' ? 'raw' : 'agg';
}

function currencyOf(s: string): CurrencyCode | null | undefined {
  if (s === 'any') return null;
  return (CURRENCY_CODES as readonly string[]).includes(s) ? (s as CurrencyCode) : undefined;
}

function indexCurrency(indexName: string): CurrencyCode | null {
  const m = /^([a-z]+)_usd$/.exec(indexName);
  if (!m) return null;
  const c = m[1].toUpperCase();
  return SETTLEMENT_CURRENCIES.has(c) ? (c as CurrencyCode) : null;
}

/**
 * `{instrument}.{interval}` or `{kind}.{currency}.{interval}` (kind `option` or `any`); with `combo`
 * (the public trades channels) also a combo's name and kind `option_combo`, selecting combo trades.
 * `orders` (user.orders): a combo's name is an instrument too (its combo orders), and kind
 * `option_combo`/`combo` selects combo orders, `option` the others (Selector.kind).
 */
function selector(parts: string[], known: (name: string) => boolean, combo?: (name: string) => boolean, orders = false): { sel: Selector; cadence: Cadence } | null {
  if (parts.length === 2) {
    const cadence = cadenceOf(parts[1]);
    if (!cadence) return null;
    if (known(parts[0]) || (orders && isComboName(parts[0]))) return { sel: { instrument: parts[0], currency: null }, cadence };
    return combo?.(parts[0]) ? { sel: { instrument: parts[0], currency: null, combo: true }, cadence } : null;
  }
  if (parts.length === 3) {
    const cadence = cadenceOf(parts[2]);
    const currency = currencyOf(parts[1]);
    if (!cadence || currency === undefined) return null;
    if (orders) {
      const comboKind = parts[0] === 'option_combo' || parts[0] === 'combo';
      if (parts[0] !== 'option' && parts[0] !== 'any' && !comboKind) return null;
      return { sel: { instrument: null, currency, ...(parts[0] === 'any' ? {} : { kind: comboKind ? ('option_combo' as const) : ('option' as const) }) }, cadence };
    }
    if (parts[0] === 'option_combo' && combo !== undefined) return { sel: { instrument: null, currency, combo: true }, cadence };
    if (parts[0] !== 'option' && parts[0] !== 'any') return null;
    return { sel: { instrument: null, currency }, cadence };
  }
  return null;
}

/**
 * Parses a channel name; `known` says whether an instrument name exists. `parity` adds the channels of
 * issue 31 (parityChannels.ts: grouped books, volatility index, incremental ticker, public-methods
 * state), which the leader's hub serves; a reader that cannot serve them leaves it off. `combo` says
 * whether a name is a combo (issue 34): its `book.*`, `ticker.*`, `trades.*` and `user.combo_trades.*`
 * channels and `trades.option_combo.{currency}.*`; a reader without it refuses them (the leader's
 * hub and the stream gateways both pass it).
 */
export function parseChannel(name: string, known: (instrument: string) => boolean, opts: { parity?: boolean; rfq?: boolean; combo?: (name: string) => boolean } = {}): ChannelSpec | null {
  if (typeof name !== 'string' || name.length > 128) return null;
  const p = name.split('.');
  const market = opts.combo === undefined ? known : (n: string) => known(n) || opts.combo!(n);
  if (opts.parity) {
    const extra = parseParityChannel(p, known);
    if (extra) return extra;
  }
  if (opts.rfq) {
    const rfq = parseRfqChannel(p);
    if (rfq) return rfq;
  }
  switch (p[0]) {
    case 'book': {
      if (p.length === 3) {
        const cadence = cadenceOf(p[2]);
        return cadence && market(p[1]) ? { k: 'book', instrument: p[1], cadence } : null;
      }
      if (p.length === 5) {
        const cadence = cadenceOf(p[4]);
        const depth = Number(p[3]);
        const group = BOOK_GROUPS.get(p[2]);
        if (!cadence || group === undefined || (group !== 0 && !opts.parity) || !BOOK_DEPTHS.has(depth) || !market(p[1])) return null;
        return { k: 'book_depth', instrument: p[1], depth, cadence, group };
      }
      return null;
    }
    case 'trades': {
      const s = selector(p.slice(1), known, opts.combo);
      return s ? { k: 'trades', ...s } : null;
    }
    case 'ticker': {
      const cadence = p.length === 3 ? cadenceOf(p[2]) : null;
      return cadence && market(p[1]) ? { k: 'ticker', instrument: p[1], cadence } : null;
    }
    case 'quote':
      return p.length === 2 && known(p[1]) ? { k: 'quote', instrument: p[1] } : null;
    case 'chart': {
      // chart.trades.{instrument}.{resolution}
      const minutes = p.length === 4 && p[1] === 'trades' && Object.hasOwn(RESOLUTIONS, p[3]) ? RESOLUTIONS[p[3]] : undefined;
      return minutes !== undefined && known(p[2]) ? { k: 'chart', instrument: p[2], resolution: p[3], widthMs: minutes * 60_000 } : null;
    }
    case 'deribit_price_index': {
      const c = p.length === 2 ? indexCurrency(p[1]) : null;
      return c ? { k: 'index', currency: c, indexName: p[1] } : null;
    }
    case 'estimated_expiration_price': {
      const c = p.length === 2 ? indexCurrency(p[1]) : null;
      return c ? { k: 'expiration_price', currency: c, indexName: p[1] } : null;
    }
    case 'instrument': {
      if (p.length !== 4 || p[1] !== 'state' || (p[2] !== 'option' && p[2] !== 'any')) return null;
      const c = currencyOf(p[3]);
      return c === undefined || (c !== null && !SETTLEMENT_CURRENCIES.has(c)) ? null : { k: 'instrument_state', currency: c };
    }
    case 'platform_state':
      return p.length === 1 ? { k: 'platform_state' } : null;
    case 'markprice': {
      const c = p.length === 3 && p[1] === 'options' ? indexCurrency(p[2]) : null;
      return c ? { k: 'markprice', currency: c, indexName: p[2] } : null;
    }
    case 'block_trade_confirmations': {
      if (p.length === 1) return { k: 'user.block_trade_confirmations', currency: null };
      const c = p.length === 2 ? currencyOf(p[1].toLowerCase() === 'any' ? 'any' : p[1].toUpperCase()) : undefined;
      return c === undefined || (c !== null && !SETTLEMENT_CURRENCIES.has(c)) ? null : { k: 'user.block_trade_confirmations', currency: c };
    }
    case 'user': {
      if (p[1] === 'portfolio') {
        const c = p.length === 3 ? currencyOf(p[2].toUpperCase() === 'ANY' ? 'any' : p[2].toUpperCase()) : undefined;
        if (c === undefined && p.length === 3 && FOREIGN_CURRENCIES.has(p[2].toUpperCase())) return { k: 'user.portfolio.none', currency: p[2].toUpperCase() };
        return c === undefined ? null : { k: 'user.portfolio', currency: c };
      }
      if (p[1] === 'mmp_trigger') {
        const c = p.length === 3 ? indexCurrency(p[2]) : null;
        return c ? { k: 'user.mmp_trigger', currency: c, indexName: p[2] } : null;
      }
      if (p[1] === 'combo_trades') return opts.combo === undefined ? null : comboTradesChannel(p.slice(2), known, opts.combo);
      if (p[1] !== 'orders' && p[1] !== 'trades' && p[1] !== 'changes') return null;
      const s = selector(p.slice(2), known, undefined, p[1] === 'orders');
      return s ? { k: `user.${p[1]}`, ...s } : null;
    }
    default:
      return null;
  }
}

/**
 * `user.combo_trades.{instrument_name}.{interval}` or `user.combo_trades.{kind}.{currency}.{interval}`.
 * The instrument is a combo (its trades) or, as in Deribit's own example (`user.combo_trades.BTC-PERPETUAL.100ms`
 * brings a trade of `BTC-FS-2SEP22_PERP`), a listed instrument: the trades of every combo it is a leg
 * of. Kind `option_combo` or `any` (Strikebook has no future combos, so both select every combo of the currency).
 */
function comboTradesChannel(parts: string[], known: (name: string) => boolean, combo: (name: string) => boolean): ChannelSpec | null {
  if (parts.length === 2) {
    const cadence = cadenceOf(parts[1]);
    if (!cadence) return null;
    if (combo(parts[0])) return { k: 'user.combo_trades', sel: { instrument: parts[0], currency: null, combo: true }, cadence };
    return known(parts[0]) ? { k: 'user.combo_trades', sel: { instrument: null, currency: null, combo: true }, cadence, leg: parts[0] } : null;
  }
  if (parts.length !== 3 || (parts[0] !== 'option_combo' && parts[0] !== 'any')) return null;
  const cadence = cadenceOf(parts[2]);
  const currency = currencyOf(parts[1]);
  return cadence && currency !== undefined ? { k: 'user.combo_trades', sel: { instrument: null, currency, combo: true }, cadence } : null;
}

/**
 * Whether a `user.combo_trades.*` channel selects a combo trade: by the combo's name or currency, or
 * in the leg form by one of the combo's legs (`legs`: their instrument names).
 */
export function selectsComboTrade(spec: Extract<ChannelSpec, { k: 'user.combo_trades' }>, combo: string, currency: CurrencyCode, legs: readonly string[]): boolean {
  return spec.leg !== undefined ? legs.includes(spec.leg) : selects(spec.sel, combo, currency);
}

export function selects(sel: Selector, instrument: string, currency: CurrencyCode): boolean {
  if (sel.instrument !== null) return sel.instrument === instrument;
  if (sel.kind !== undefined && (sel.kind === 'option_combo') !== isComboName(instrument)) return false;
  return sel.currency === null || sel.currency === currency;
}

/** One channel family as `public/get_channels`, the OpenAPI document and /docs list it. */
export interface ChannelInfo {
  channel: string;
  access: 'public' | 'private';
  /** the values each `{parameter}` of the name takes (instrument names: those listed) */
  params: Record<string, string[]>;
  data: string;
}

const IV = ['raw', '100ms', 'agg2'];
const KIND = ['option', 'any'];
const CCY = ['BTC', 'ETH', 'any'];
const IDX = ['btc_usd', 'eth_usd'];
const INST = ['(instrument_name)'];

const COMBO = ['(combo_name)'];

/**
 * Every channel the WebSocket serves (API.md 6 and issue 17); a test subscribes one of each, on the
 * leader and through a gateway. The combos' channels (issue 34, docs/api-notes.md "Combo market
 * data") are listed with a `{combo_name}` (a combo id, public/get_combo_ids), where Deribit writes
 * `{instrument_name}` for every kind: a client can tell from the list which families take a combo.
 */
export const CHANNELS: ChannelInfo[] = [
  { channel: 'book.{instrument_name}.{interval}', access: 'public', params: { instrument_name: INST, interval: IV }, data: 'snapshot, then changes [action, price, amount] chained by prev_change_id' },
  { channel: 'book.{instrument_name}.{group}.{depth}.{interval}', access: 'public', params: { instrument_name: INST, group: [...BOOK_GROUPS.keys()], depth: ['1', '10', '20'], interval: IV }, data: '{timestamp, instrument_name, change_id, bids, asks} truncated to depth; a group sums levels into buckets of that many base ticks (bids down, asks up)' },
  { channel: 'trades.{instrument_name}.{interval}', access: 'public', params: { instrument_name: INST, interval: IV }, data: 'array of public trades' },
  { channel: 'trades.{kind}.{currency}.{interval}', access: 'public', params: { kind: [...KIND, 'option_combo'], currency: CCY, interval: IV }, data: 'array of public trades (option_combo: the combo trades; option and any: the option trades, a combo fill\'s leg trades included)' },
  { channel: 'ticker.{instrument_name}.{interval}', access: 'public', params: { instrument_name: INST, interval: IV }, data: 'ticker object (public/ticker), when it changed' },
  { channel: 'book.{combo_name}.{interval}', access: 'public', params: { combo_name: COMBO, interval: IV }, data: 'the combo\'s own book: snapshot, then changes [action, net price, amount] chained by prev_change_id (change_id as public/get_order_book)' },
  { channel: 'book.{combo_name}.{group}.{depth}.{interval}', access: 'public', params: { combo_name: COMBO, group: [...BOOK_GROUPS.keys()], depth: ['1', '10', '20'], interval: IV }, data: '{timestamp, instrument_name, change_id, bids, asks} of the combo\'s book truncated to depth' },
  { channel: 'ticker.{combo_name}.{interval}', access: 'public', params: { combo_name: COMBO, interval: IV }, data: 'the combo\'s ticker (public/ticker: net mark and band of its legs), when it changed' },
  { channel: 'trades.{combo_name}.{interval}', access: 'public', params: { combo_name: COMBO, interval: IV }, data: 'array of the combo\'s trades (trade_id COMBO-n, net price, combo_id, combo_trade_id)' },
  { channel: 'quote.{instrument_name}', access: 'public', params: { instrument_name: INST }, data: '{timestamp, instrument_name, best_bid_price, best_bid_amount, best_ask_price, best_ask_amount}' },
  { channel: 'chart.trades.{instrument_name}.{resolution}', access: 'public', params: { instrument_name: INST, resolution: ['1', '3', '5', '10', '15', '30', '60', '120', '180', '360', '720', '1D'] }, data: '{tick, open, high, low, close, volume, cost}' },
  { channel: 'deribit_price_index.{index_name}', access: 'public', params: { index_name: IDX }, data: '{index_name, price, timestamp}' },
  { channel: 'markprice.options.{index_name}', access: 'public', params: { index_name: IDX }, data: '[{instrument_name, mark_price, iv, timestamp}] for every open option' },
  { channel: 'estimated_expiration_price.{index_name}', access: 'public', params: { index_name: IDX }, data: '{seconds, price, is_estimated}' },
  { channel: 'instrument.state.{kind}.{currency}', access: 'public', params: { kind: KIND, currency: CCY }, data: '{timestamp, state: created|started|settled, instrument_name}' },
  { channel: 'platform_state', access: 'public', params: {}, data: '{price_index, locked}' },
  { channel: 'platform_state.public_methods_state', access: 'public', params: {}, data: '{allow_unauthenticated_public_requests: true}, on subscribe' },
  { channel: 'deribit_volatility_index.{index_name}', access: 'public', params: { index_name: IDX }, data: '{index_name, volatility, timestamp} (public/get_volatility_index_data), on subscribe and when it moves' },
  { channel: 'user.lock', access: 'private', params: {}, data: '{currency, locked} when the account enters or leaves liquidation in a currency (private/get_user_locks)' },
  { channel: 'user.access_log', access: 'private', params: {}, data: '{id, ip, timestamp, country, city, log, data} (private/get_access_log) for each login of the account' },
  { channel: 'announcements', access: 'public', params: {}, data: '{action:"new", id, title, body, important, confirmation, publication_timestamp} as each is published' },
  { channel: 'incremental_ticker.{instrument_name}', access: 'public', params: { instrument_name: INST }, data: '{type:"snapshot", ...ticker} on subscribe, then {type:"change", timestamp, instrument_name, ...the fields that changed} (100 ms)' },
  { channel: 'user.orders.{instrument_name}.{interval}', access: 'private', params: { instrument_name: INST, interval: IV }, data: 'raw: one order; else an array of orders' },
  { channel: 'user.orders.{kind}.{currency}.{interval}', access: 'private', params: { kind: [...KIND, 'option_combo', 'combo'], currency: CCY, interval: IV }, data: 'raw: one order; else an array of orders' },
  { channel: 'user.trades.{instrument_name}.{interval}', access: 'private', params: { instrument_name: INST, interval: IV }, data: 'array of user trades' },
  { channel: 'user.trades.{kind}.{currency}.{interval}', access: 'private', params: { kind: KIND, currency: CCY, interval: IV }, data: 'array of user trades' },
  { channel: 'user.combo_trades.{combo_name}.{interval}', access: 'private', params: { combo_name: COMBO, interval: IV }, data: 'array of the caller\'s combo trades (its side, fee the sum of its leg fees, legs: its leg trades)' },
  { channel: 'user.combo_trades.{instrument_name}.{interval}', access: 'private', params: { instrument_name: INST, interval: IV }, data: 'array of the caller\'s trades of every combo with that instrument as a leg (Deribit\'s example subscribes a leg)' },
  { channel: 'user.combo_trades.{kind}.{currency}.{interval}', access: 'private', params: { kind: ['option_combo', 'any'], currency: CCY, interval: IV }, data: 'array of the caller\'s combo trades' },
  { channel: 'user.changes.{instrument_name}.{interval}', access: 'private', params: { instrument_name: INST, interval: IV }, data: '{instrument_name, orders, trades, positions}' },
  { channel: 'user.changes.{kind}.{currency}.{interval}', access: 'private', params: { kind: KIND, currency: CCY, interval: IV }, data: '{instrument_name, orders, trades, positions}' },
  { channel: 'user.portfolio.{currency}', access: 'private', params: { currency: ['BTC', 'ETH', 'USDC', 'any'] }, data: 'account summary (private/get_account_summary)' },
  { channel: 'block_trade_confirmations', access: 'private', params: {}, data: 'a block trade request of the account (private/get_block_trade_requests entry) each time it is made or changes state' },
  { channel: 'block_trade_confirmations.{currency}', access: 'private', params: { currency: ['BTC', 'ETH', 'any'] }, data: 'as block_trade_confirmations, for block trades in that currency' },
  { channel: 'user.mmp_trigger.{index_name}', access: 'private', params: { index_name: IDX }, data: '{index_name, mmp_group?, frozen_until} when market-maker protection triggers (frozen_until 0: until reset_mmp)' },
];
