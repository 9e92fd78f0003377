// The events of one durable batch as messages for an external stream (NATS JetStream, read by the
// gateways of src/gateway/): rendered once per batch, whatever the number of subscribers anywhere.
//
// Subjects (`<p>` is the prefix, `strikebook` by default; docs/operations.md lists them):
//   <p>.public.book.<instrument>    the book's raw `change` (Deribit `book.X.raw` data), chained by
//                                   prev_change_id; one per batch that moved the book
//   <p>.public.trades.<instrument>  the batch's public trades in that instrument (array)
//   <p>.public.index.<currency>     `deribit_price_index` data, when an index command committed
//   <p>.public.chart.<instrument>   {resolution: [candles]}: each `chart.trades.*` candle the
//                                   batch's trades touched, in its state after the batch
//   <p>.public.markprice.<currency> `markprice.options.*` data, when an index/vol command committed
//   <p>.public.expiration.<currency> `estimated_expiration_price.*` data, likewise
//   <p>.public.instrument_state.<currency>  [`instrument.state.*` data]: created/started/settled
//   <p>.public.platform_state       [`platform_state` data]: indices locked or unlocked by the batch
//   <p>.public.vol_index.<currency> `deribit_volatility_index.*` data, when an index/vol command committed
//   <p>.public.announcements        [`announcements` data]: the announcements the batch published
//   <p>.public.block_rfq_trades     [{currency, data}]: `block_rfq.trades.*` data, each RFQ trade of the batch
//   <p>.public.book.<combo>, <p>.public.trades.<combo>, <p>.public.combos: a combo's book changes,
//                                   its combo trades, the combos created (src/api/ws/comboStreamEvents.ts)
//   <p>.private.<user id>           { orders, trades, positions, mmp } of one user in the batch: the
//                                   order objects at the end of the batch, the user's trades, the
//                                   positions in the instruments they traded (user.changes), MMP
//                                   triggers, `access_log` (user.access_log: the batch's logins) and
//                                   `lock` (user.lock: currencies locked or unlocked), `block_trade_confirmations`,
//                                   `block_rfq_maker` / `block_rfq_taker` / `block_rfq_quotes` ([{currency,
//                                   data}]: what the user's block_rfq.maker.any / .taker.any /
//                                   .maker.quotes.any get from the batch), `combo_trades` (the user's
//                                   side of its combo trades: user.combo_trades.*); also sent (maybe empty) when the user's money moved,
//                                   which is what makes a gateway refresh user.portfolio
//   <p>.control.accounts            {}: a command that may move any account (settlement, ...)
//                                   committed: gateways refresh every user.portfolio
// Public data is exactly what the hub sends on the matching channel, so a gateway only frames it.
import type { BlockTradeRequest } from '../../blocktrades/types.ts';
import { renderBlockRequest } from '../methods/blockApprovals.ts';
import type { CurrencyCode } from '../../domain/currency.ts';
import { priceToNumber, type Instrument } from '../../domain/instrument.ts';
import type { Exchange } from '../../engine/exchange.ts';
import { BUY, SELL } from '../../engine/orderBook.ts';
import type { TriggerOrder } from '../../engine/triggers.ts';
import type { Order, Trade } from '../../engine/types.ts';
import type { MmpTriggerEvent } from '../../engine/mmp.ts';
import { renderPosition } from '../methods/account.ts';
import { expirationEstimate, lockedIndices } from '../methods/market.ts';
import { RESOLUTIONS, candleAt, foldTradeInto, type Candle } from '../methods/candles.ts';
import { coin } from '../render.ts';
import { volatilityIndex } from '../../market/volIndex.ts';
import { renderAnnouncement } from '../methods/announcements.ts';
import { renderAccess } from '../methods/accessLog.ts';
import { rfqStreamEvents, type RfqUserEvents } from '../../blockrfq/channels.ts';
import { CURRENCY_CODES } from '../../domain/currency.ts';
import { renderOrder, renderPublicTrade, renderUserTrade } from '../render.ts';
import { ComboStreamEvents } from './comboStreamEvents.ts';

/** What one durable batch touched (collected by the hub's engine observer). */
export interface BatchTouched {
  trades: readonly Trade[];
  orders: ReadonlySet<Order | TriggerOrder>;
  /** currencies whose index moved */
  currencies: ReadonlySet<CurrencyCode>;
  /** users whose money moved without an order event (deposits, withdrawals) */
  users?: ReadonlySet<number>;
  /** a command that may move any account committed */
  everyone?: boolean;
  /** instrument life-cycle events, in order */
  states?: ReadonlyArray<{ inst: Instrument; state: string; ts: number }>;
  mmp?: readonly MmpTriggerEvent[];
  /** block trade requests as each change left them */
  blocks?: readonly BlockTradeRequest[];
}

export interface EventMessage {
  subject: string;
  data: string;
}

interface L2 {
  changeId: number;
  bids: Map<number, number>;
  asks: Map<number, number>;
}

const INDEX_NAMES: Record<string, string> = { BTC: 'btc_usd', ETH: 'eth_usd' };
const PRICE_INDICES = ['btc_usd', 'eth_usd'];
/** Candles read by candleAt in the current batch (they hold its trades already). */
const fresh = new Set<Candle>();
const WIDTHS = Object.values(RESOLUTIONS).map((minutes) => minutes * 60_000);

function lotsAmount(inst: Instrument, lots: number): number {
  return Number(((lots * inst.lotScaled) / 1e8).toFixed(8));
}

export class StreamEvents {
  /** The L2 book last published per instrument id: the next change is diffed against it. */
  private readonly books = new Map<number, L2>();
  /** Latest candle per instrument id and bucket width: a batch's trades are folded into it (a
   *  candleAt per batch would scan the whole bucket: a day of trades for `1D`). */
  private readonly candles = new Map<number, Map<number, Candle>>();
  /** platform_state: the locked indices after the last batch, as text */
  private lockedLast: string;
  /** The newest announcement and access-log entry published so far (later ones are the batch's). */
  private announcedLast: number;
  private accessLast: number;
  /** user.lock: the `user:currency` keys in liquidation after the last batch. */
  private lockedAccounts: Set<string>;
  /** The newest block RFQ change published (BlockRfqs.eventSeq). */
  private rfqSeen: number;
  /** Combo books, combo trades and new combos (issue 34). */
  private readonly combos: ComboStreamEvents;

  constructor(
    private readonly ex: Exchange,
    readonly prefix: string,
  ) {
    for (const m of ex.markets.values()) this.books.set(m.inst.id, this.levelsOf(m.inst, m.changeId));
    this.lockedLast = lockedIndices(ex).join(',');
    this.announcedLast = ex.announcements.nextId - 1;
    this.accessLast = ex.nextAccessId - 1;
    this.lockedAccounts = new Set(ex.liquidating);
    this.rfqSeen = ex.blockRfqs.eventSeq;
    this.combos = new ComboStreamEvents(ex, prefix);
  }

  private levelsOf(inst: Instrument, changeId: number): L2 {
    const book = this.ex.books.get(inst.id)!;
    return { changeId, bids: new Map(book.depth(BUY, Number.MAX_SAFE_INTEGER)), asks: new Map(book.depth(SELL, Number.MAX_SAFE_INTEGER)) };
  }

  /** The messages of one durable batch, in a fixed order (books, trades, index, private). */
  render(batch: BatchTouched): EventMessage[] {
    const ex = this.ex;
    const out: EventMessage[] = [];
    // every market is checked, not only those the observer saw: settlement and listings move books
    // without an order event; a few hundred integer compares per batch
    for (const m of ex.markets.values()) {
      let st = this.books.get(m.inst.id);
      if (st === undefined) {
        // listed since: its book started empty at change id 0
        st = { changeId: 0, bids: new Map(), asks: new Map() };
        this.books.set(m.inst.id, st);
      }
      if (m.changeId === st.changeId) continue;
      const next = this.levelsOf(m.inst, m.changeId);
      const data = {
        type: 'change',
        timestamp: ex.now,
        instrument_name: m.inst.name,
        prev_change_id: st.changeId,
        change_id: m.changeId,
        bids: diff(m.inst, st.bids, next.bids, true),
        asks: diff(m.inst, st.asks, next.asks, false),
      };
      this.books.set(m.inst.id, next);
      out.push({ subject: `${this.prefix}.public.book.${m.inst.name}`, data: JSON.stringify(data) });
    }
    const tradesByInst = new Map<Instrument, Trade[]>();
    for (const t of batch.trades) {
      let a = tradesByInst.get(t.inst);
      if (!a) tradesByInst.set(t.inst, (a = []));
      a.push(t);
    }
    for (const [inst, ts] of tradesByInst) out.push({ subject: `${this.prefix}.public.trades.${inst.name}`, data: JSON.stringify(ts.map(renderPublicTrade)) });
    const comboTrades = this.combos.render(batch.trades, out);
    for (const c of batch.currencies) {
      const idx = ex.index[c];
      if (idx) out.push({ subject: `${this.prefix}.public.index.${c}`, data: JSON.stringify({ index_name: INDEX_NAMES[c], price: idx.price, timestamp: idx.ts }) });
    }
    this.renderMarket(batch, tradesByInst, out);
    // private: per user, orders (by id) and trades (each once, as the user's side)
    const perUser = new Map<number, { orders: Array<Order | TriggerOrder>; trades: Trade[] }>();
    const entry = (u: number) => {
      let e = perUser.get(u);
      if (!e) perUser.set(u, (e = { orders: [], trades: [] }));
      return e;
    };
    for (const o of batch.orders) entry(o.userId).orders.push(o);
    // money moved without an order (deposit, withdrawal): an empty event still refreshes portfolios
    for (const u of batch.users ?? []) entry(u);
    const mmpByUser = new Map<number, Array<Record<string, unknown>>>();
    for (const e of batch.mmp ?? []) {
      entry(e.userId);
      let a = mmpByUser.get(e.userId);
      if (!a) mmpByUser.set(e.userId, (a = []));
      a.push({ index_name: e.indexName, ...(e.group !== null ? { mmp_group: e.group } : {}), frozen_until: e.frozenUntil });
    }
    // block_trade_confirmations: each change as each party sees it, with its currency
    const blocksByUser = new Map<number, Array<Record<string, unknown>>>();
    for (const r of batch.blocks ?? []) {
      for (const uid of r.executor === r.signer ? [r.executor] : [r.executor, r.signer]) {
        entry(uid);
        let a = blocksByUser.get(uid);
        if (!a) blocksByUser.set(uid, (a = []));
        a.push({ currency: r.currency, data: renderBlockRequest(ex, r, uid) });
      }
    }
    // block RFQ channels: each change as each user's channels get it (src/blockrfq/channels.ts)
    const rfq = rfqStreamEvents(ex, this.rfqSeen);
    this.rfqSeen = ex.blockRfqs.eventSeq;
    for (const u of rfq.users.keys()) entry(u);
    for (const u of comboTrades.keys()) entry(u);
    if (rfq.trades.length > 0) out.push({ subject: `${this.prefix}.public.block_rfq_trades`, data: JSON.stringify(rfq.trades) });
    for (const t of batch.trades) {
      entry(t.makerOrder.userId).trades.push(t);
      if (t.takerOrder.userId !== t.makerOrder.userId) entry(t.takerOrder.userId).trades.push(t);
    }
    const access = this.accessOf(entry);
    const locks = this.locksOf(entry);
    for (const [uid, e] of perUser) {
      const user = ex.users.get(uid);
      if (!user) continue;
      e.orders.sort((a, b) => a.id - b.id);
      const traded = new Set<Instrument>();
      for (const t of e.trades) traded.add(t.inst);
      const data = {
        orders: e.orders.map(renderOrder),
        trades: e.trades.map((t) => renderUserTrade(t, uid)),
        positions: [...traded].map((inst) => renderPosition(ex, user, inst)),
        mmp: mmpByUser.get(uid) ?? [],
        ...(access.has(uid) ? { access_log: access.get(uid) } : {}),
        ...(locks.has(uid) ? { lock: locks.get(uid) } : {}),
        ...(blocksByUser.has(uid) ? { block_trade_confirmations: blocksByUser.get(uid) } : {}),
        ...rfqFields(rfq.users.get(uid)),
        ...(comboTrades.has(uid) ? { combo_trades: comboTrades.get(uid) } : {}),
      };
      out.push({ subject: `${this.prefix}.private.${uid}`, data: JSON.stringify(data) });
    }
    if (batch.everyone === true) out.push({ subject: `${this.prefix}.control.accounts`, data: '{}' });
    return out;
  }

  /** user.access_log: the logins since the last batch, per user (`entry` marks the user's event). */
  private accessOf(entry: (u: number) => unknown): Map<number, unknown[]> {
    const out = new Map<number, unknown[]>();
    const ex = this.ex;
    if (ex.nextAccessId - 1 <= this.accessLast) return out;
    const seen = this.accessLast;
    this.accessLast = ex.nextAccessId - 1;
    for (const [uid, log] of ex.accessLog) {
      // the newest last: walk back to the first entry already published
      let i = log.length;
      while (i > 0 && log[i - 1]!.id > seen) i--;
      if (i === log.length) continue;
      entry(uid);
      out.set(uid, log.slice(i).map(renderAccess));
    }
    return out;
  }

  /** user.lock: per user, the currencies locked or unlocked since the last batch (as the hub's). */
  private locksOf(entry: (u: number) => unknown): Map<number, Array<{ currency: string; locked: boolean }>> {
    const out = new Map<number, Array<{ currency: string; locked: boolean }>>();
    const now = this.ex.liquidating;
    if (now.size === 0 && this.lockedAccounts.size === 0) return out;
    const changed = new Set<number>();
    for (const k of now) if (!this.lockedAccounts.has(k)) changed.add(Number(k.slice(0, k.indexOf(':'))));
    for (const k of this.lockedAccounts) if (!now.has(k)) changed.add(Number(k.slice(0, k.indexOf(':'))));
    for (const uid of [...changed].sort((a, b) => a - b)) {
      const list = CURRENCY_CODES.filter((c) => now.has(`${uid}:${c}`) !== this.lockedAccounts.has(`${uid}:${c}`)).map((c) => ({ currency: c, locked: now.has(`${uid}:${c}`) }));
      entry(uid);
      out.set(uid, list);
    }
    this.lockedAccounts = new Set(now);
    return out;
  }

  /** Candles, marks, expiration estimates, instrument and platform states of a batch: what the hub
   *  sends on those channels, rendered once whatever the subscribers. Tickers are not rendered here:
   *  an index print moves every instrument's (882 BTC options in the default catalog: ~85 ms of
   *  engine thread per print, measured), so gateways read the few that have subscribers
   *  (public/ticker) when the stream says they moved. */
  private renderMarket(batch: BatchTouched, tradesByInst: Map<Instrument, Trade[]>, out: EventMessage[]): void {
    const ex = this.ex;
    const p = this.prefix;
    for (const [inst, ts] of tradesByInst) {
      let byWidth = this.candles.get(inst.id);
      if (!byWidth) this.candles.set(inst.id, (byWidth = new Map()));
      const data: Record<string, Candle[]> = {};
      for (const [k, width] of WIDTHS.entries()) {
        const touched: Candle[] = [];
        let c = byWidth.get(width);
        for (const t of ts) {
          const tick = Math.floor(t.ts / width) * width;
          if (c !== undefined && c.tick === tick) {
            if (touched[touched.length - 1] !== c) {
              // the cached candle already holds this batch's trades only when it was read below
              touched.push(c);
            }
            if (!fresh.has(c)) foldTradeInto(inst, c, t);
            continue;
          }
          // a bucket this batch opens (or the first one seen): read from the trades, the batch's included
          const read = candleAt(ex, inst, tick, width);
          if (read === null) continue;
          fresh.add(read);
          byWidth.set(width, (c = read));
          touched.push(c);
        }
        if (touched.length > 0) data[Object.keys(RESOLUTIONS)[k]!] = touched.map((x) => ({ ...x }));
      }
      fresh.clear();
      out.push({ subject: `${p}.public.chart.${inst.name}`, data: JSON.stringify(data) });
    }
    for (const c of batch.currencies) {
      const marks: unknown[] = [];
      for (const m of ex.markets.values()) {
        if (m.inst.currency !== c || m.inst.state !== 'open') continue;
        marks.push({ instrument_name: m.inst.name, mark_price: coin(m.markCoin), iv: Number.isFinite(m.markIv) ? Number(m.markIv.toFixed(4)) : null, timestamp: ex.now });
      }
      out.push({ subject: `${p}.public.markprice.${c}`, data: JSON.stringify(marks) });
      const est = expirationEstimate(ex, c);
      if (est) out.push({ subject: `${p}.public.expiration.${c}`, data: JSON.stringify(est) });
      // as the hub renders it (parityChannels.ts); gateways drop a value equal to the last
      const v = volatilityIndex(ex, c);
      if (Number.isFinite(v)) out.push({ subject: `${p}.public.vol_index.${c}`, data: JSON.stringify({ index_name: INDEX_NAMES[c], volatility: Number(v.toFixed(2)), timestamp: ex.now }) });
    }
    if (ex.announcements.nextId - 1 > this.announcedLast) {
      const seen = this.announcedLast;
      this.announcedLast = ex.announcements.nextId - 1;
      const fresh = ex.announcements.list.filter((a) => a.id > seen).map((a) => ({ action: 'new', ...renderAnnouncement(a) }));
      if (fresh.length > 0) out.push({ subject: `${p}.public.announcements`, data: JSON.stringify(fresh) });
    }
    const states = new Map<CurrencyCode, unknown[]>();
    for (const e of batch.states ?? []) {
      let a = states.get(e.inst.currency);
      if (!a) states.set(e.inst.currency, (a = []));
      a.push({ timestamp: e.ts, state: e.state, instrument_name: e.inst.name });
    }
    for (const [c, a] of states) out.push({ subject: `${p}.public.instrument_state.${c}`, data: JSON.stringify(a) });
    const now = lockedIndices(ex);
    const key = now.join(',');
    if (key !== this.lockedLast) {
      const before = new Set(this.lockedLast === '' ? [] : this.lockedLast.split(','));
      const locked = new Set(now);
      this.lockedLast = key;
      const changed = PRICE_INDICES.filter((n) => before.has(n) !== locked.has(n)).map((n) => ({ price_index: n, locked: locked.has(n) }));
      out.push({ subject: `${p}.public.platform_state`, data: JSON.stringify(changed) });
    }
  }
}

/** The block_rfq_* fields of a user's private message: the non-empty lists only. */
function rfqFields(e: RfqUserEvents | undefined): Record<string, unknown> {
  if (e === undefined) return {};
  const out: Record<string, unknown> = {};
  if (e.maker.length > 0) out.block_rfq_maker = e.maker;
  if (e.taker.length > 0) out.block_rfq_taker = e.taker;
  if (e.quotes.length > 0) out.block_rfq_quotes = e.quotes;
  return out;
}

/** Deribit book change entries between two L2 states, best price first. */
function diff(inst: Instrument, before: Map<number, number>, after: Map<number, number>, desc: boolean): Array<[string, number, number]> {
  const out: Array<[string, number, number, number]> = [];
  for (const [p, q] of after) {
    const old = before.get(p);
    if (old === undefined) out.push(['new', priceToNumber(p), lotsAmount(inst, q), p]);
    else if (old !== q) out.push(['change', priceToNumber(p), lotsAmount(inst, q), p]);
  }
  for (const p of before.keys()) if (!after.has(p)) out.push(['delete', priceToNumber(p), 0, p]);
  out.sort((a, b) => (desc ? b[3] - a[3] : a[3] - b[3]));
  return out.map(([a, p, q]) => [a, p, q]);
}
