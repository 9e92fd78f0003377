// One publish round of the stream hub (src/api/ws/hub.ts): the messages each channel with
// subscribers gets for what changed (`Changes`) in the state as it is now, handed to `deliver`,
// which frames them once for all of the topic's subscribers.
import { renderBlockRequest } from '../methods/blockApprovals.ts';
import type { CurrencyCode } from '../../domain/currency.ts';
import type { Instrument } from '../../domain/instrument.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { Trade } from '../../engine/types.ts';
import { accountSummary, renderPosition } from '../methods/account.ts';
import { candleAt } from '../methods/candles.ts';
import { quoteOf, tickerOf } from '../methods/marketData.ts';
import { expirationEstimate } from '../methods/market.ts';
import { coin, renderOrder, renderPublicTrade, renderUserTrade } from '../render.ts';
import { PRICE_INDICES, depthView, quoteKey } from './bookViews.ts';
import { selects, selectsComboTrade, type Cadence } from './channels.ts';
import { comboTradesOf, isComboTradeOf, marketInstrument, renderComboTrade, renderUserComboTrade, tickerFor, type ComboTradeRow } from '../methods/comboMarketData.ts';
import { notification } from './frames.ts';
import type { AnyOrder, BookState, Changes, Topic } from './hubState.ts';
import { isParitySpec, parityRound, type ParityTopic } from './parityChannels.ts';
import { isRfqSpec, rfqRound, type RfqTopic } from '../../blockrfq/channels.ts';
import { pmWarmup } from '../../risk/portfolio/warmup.ts';

/**
 * Renders the round of `cadence` for every topic: `books` are the cadence's published books (their
 * `change` messages already in `bookChanges`, by instrument id); `lockedNow`/`lockedBefore` the
 * platform_state change of a raw round (null: none).
 */
export function renderRound(
  ex: Exchange,
  cadence: Cadence,
  ch: Changes,
  topics: Iterable<Topic>,
  books: Map<number, BookState>,
  bookChanges: Map<number, string>,
  lockedNow: Set<string> | null,
  lockedBefore: Set<string>,
  deliver: (topic: Topic, data: Buffer) => void,
): void {
  // per-round groupings
  const touchedInst = new Set<Instrument>();
  for (const t of ch.trades) touchedInst.add(t.inst);
  for (const o of ch.orders) touchedInst.add(o.inst);
  const ordersByUser = new Map<number, AnyOrder[]>();
  for (const o of ch.orders) {
    let a = ordersByUser.get(o.userId);
    if (!a) ordersByUser.set(o.userId, (a = []));
    a.push(o);
  }
  for (const a of ordersByUser.values()) a.sort((x, y) => x.id - y.id);
  const tradesByUser = new Map<number, Trade[]>();
  const addTrade = (u: number, t: Trade) => {
    let a = tradesByUser.get(u);
    if (!a) tradesByUser.set(u, (a = []));
    if (a[a.length - 1] !== t) a.push(t);
  };
  for (const t of ch.trades) {
    addTrade(t.makerOrder.userId, t);
    addTrade(t.takerOrder.userId, t);
  }
  const orderJson = new Map<AnyOrder, Record<string, unknown>>();
  const rendered = (o: AnyOrder) => {
    let r = orderJson.get(o);
    if (!r) orderJson.set(o, (r = renderOrder(o)));
    return r;
  };
  let comboRows: ComboTradeRow[] | undefined;
  const comboJson = new Map<number, Record<string, unknown>>();
  const comboTradeJson = (row: ComboTradeRow) => {
    let r = comboJson.get(row.id);
    if (!r) comboJson.set(row.id, (r = renderComboTrade(ex, row)));
    return r;
  };
  const publicTrades = new Map<Trade, Record<string, unknown>>();
  const pubTrade = (t: Trade) => {
    let r = publicTrades.get(t);
    if (!r) publicTrades.set(t, (r = renderPublicTrade(t)));
    return r;
  };

  for (const topic of topics) {
    const spec = topic.spec;
    switch (spec.k) {
      case 'book': {
        if (spec.cadence !== cadence) break;
        const data = bookChanges.get(marketInstrument(ex, spec.instrument)!.id);
        if (data !== undefined) deliver(topic, notification(topic.channel, data));
        break;
      }
      case 'book_depth': {
        if (spec.cadence !== cadence) break;
        const id = marketInstrument(ex, spec.instrument)!.id;
        if (bookChanges.has(id)) deliver(topic, notification(topic.channel, JSON.stringify(depthView(ex, books.get(id)!, spec.depth, spec.group))));
        break;
      }
      case 'trades': {
        if (spec.cadence !== cadence) break;
        if (spec.sel.combo) {
          // combo trades (found from their leg trades), rendered once per round
          comboRows ??= comboTradesOf(ex, ch.trades);
          const mine = comboRows.filter((row) => selects(spec.sel, row.r.id, ex.combos.currencyOf(row.r) as CurrencyCode));
          if (mine.length > 0) deliver(topic, notification(topic.channel, JSON.stringify(mine.map((row) => comboTradeJson(row)))));
          break;
        }
        const sel = ch.trades.filter((t) => selects(spec.sel, t.inst.name, t.inst.currency));
        if (sel.length > 0) deliver(topic, notification(topic.channel, JSON.stringify(sel.map(pubTrade))));
        break;
      }
      case 'ticker': {
        if (spec.cadence !== cadence) break;
        const inst = marketInstrument(ex, spec.instrument)!;
        if (!touchedInst.has(inst) && !ch.currencies.has(inst.currency) && topic.last !== undefined) break;
        const data = JSON.stringify(tickerFor(ex, inst, tickerOf));
        if (data === topic.last) break;
        topic.last = data;
        deliver(topic, notification(topic.channel, data));
        break;
      }
      case 'quote': {
        // sent after each durable batch that moved the best bid or ask (price or amount)
        if (cadence !== 'raw') break;
        const inst = ex.instruments.get(spec.instrument)!;
        if (!touchedInst.has(inst)) break;
        const q = quoteOf(ex, inst);
        const key = quoteKey(q);
        if (key === topic.last) break;
        topic.last = key;
        deliver(topic, notification(topic.channel, JSON.stringify(q)));
        break;
      }
      case 'chart': {
        // conflated: each candle the window's trades touched, oldest first, in its state now
        if (cadence !== 'agg') break;
        const ticks = new Set<number>();
        for (const t of ch.trades) if (t.inst.name === spec.instrument) ticks.add(Math.floor(t.ts / spec.widthMs) * spec.widthMs);
        if (ticks.size === 0) break;
        const inst = ex.instruments.get(spec.instrument)!;
        for (const tick of [...ticks].sort((a, b) => a - b)) {
          const candle = candleAt(ex, inst, tick, spec.widthMs);
          if (candle) deliver(topic, notification(topic.channel, JSON.stringify(candle)));
        }
        break;
      }
      case 'expiration_price': {
        if (cadence !== 'raw' || !ch.currencies.has(spec.currency)) break;
        const est = expirationEstimate(ex, spec.currency);
        if (est) deliver(topic, notification(topic.channel, JSON.stringify(est)));
        break;
      }
      case 'instrument_state': {
        if (cadence !== 'raw') break;
        for (const e of ch.states) {
          if (spec.currency !== null && e.inst.currency !== spec.currency) continue;
          deliver(topic, notification(topic.channel, JSON.stringify({ timestamp: e.ts, state: e.state, instrument_name: e.inst.name })));
        }
        break;
      }
      case 'platform_state': {
        if (cadence !== 'raw' || lockedNow === null) break;
        for (const n of PRICE_INDICES) {
          if (lockedBefore.has(n) !== lockedNow.has(n)) deliver(topic, notification(topic.channel, JSON.stringify({ price_index: n, locked: lockedNow.has(n) })));
        }
        break;
      }
      case 'index': {
        if (cadence !== 'raw' || !ch.currencies.has(spec.currency)) break;
        const idx = ex.index[spec.currency];
        if (idx) deliver(topic, notification(topic.channel, JSON.stringify({ index_name: spec.indexName, price: idx.price, timestamp: idx.ts })));
        break;
      }
      case 'markprice': {
        if (cadence !== 'raw' || !ch.currencies.has(spec.currency)) break;
        const marks: unknown[] = [];
        for (const m of ex.markets.values()) {
          if (m.inst.currency !== spec.currency || m.inst.state !== 'open') continue;
          marks.push({ instrument_name: m.inst.name, mark_price: coin(m.markCoin), iv: Number.isFinite(m.markIv) ? Number(m.markIv.toFixed(4)) : null, timestamp: ex.now });
        }
        deliver(topic, notification(topic.channel, JSON.stringify(marks)));
        break;
      }
      case 'user.orders': {
        if (spec.cadence !== cadence) break;
        const mine = (ordersByUser.get(topic.userId!) ?? []).filter((o) => selects(spec.sel, o.inst.name, o.inst.currency));
        if (mine.length === 0) break;
        // raw: one order object per notification; conflated: an array (Deribit)
        if (cadence === 'raw') for (const o of mine) deliver(topic, notification(topic.channel, JSON.stringify(rendered(o))));
        else deliver(topic, notification(topic.channel, JSON.stringify(mine.map(rendered))));
        break;
      }
      case 'user.trades': {
        if (spec.cadence !== cadence) break;
        const uid = topic.userId!;
        const mine = (tradesByUser.get(uid) ?? []).filter((t) => selects(spec.sel, t.inst.name, t.inst.currency));
        if (mine.length > 0) deliver(topic, notification(topic.channel, JSON.stringify(mine.map((t) => renderUserTrade(t, uid)))));
        break;
      }
      case 'user.combo_trades': {
        // the caller's side of each combo trade of the batch (found from the leg trades, as trades.{combo})
        if (spec.cadence !== cadence) break;
        const uid = topic.userId!;
        comboRows ??= comboTradesOf(ex, ch.trades);
        const mine = comboRows.filter((row) => isComboTradeOf(row, uid) && selectsComboTrade(spec, row.r.id, ex.combos.currencyOf(row.r) as CurrencyCode, row.r.legs.map((l) => l.instrument)));
        if (mine.length > 0) deliver(topic, notification(topic.channel, JSON.stringify(mine.map((row) => renderUserComboTrade(ex, row, uid)))));
        break;
      }
      case 'user.changes': {
        if (spec.cadence !== cadence) break;
        const uid = topic.userId!;
        const user = ex.users.get(uid);
        if (!user) break;
        const byInst = new Map<Instrument, { orders: AnyOrder[]; trades: Trade[] }>();
        const entry = (i: Instrument) => {
          let e = byInst.get(i);
          if (!e) byInst.set(i, (e = { orders: [], trades: [] }));
          return e;
        };
        for (const o of ordersByUser.get(uid) ?? []) if (selects(spec.sel, o.inst.name, o.inst.currency)) entry(o.inst).orders.push(o);
        for (const t of tradesByUser.get(uid) ?? []) if (selects(spec.sel, t.inst.name, t.inst.currency)) entry(t.inst).trades.push(t);
        for (const [inst, e] of byInst) {
          const data = {
            instrument_name: inst.name,
            orders: e.orders.map(rendered),
            trades: e.trades.map((t) => renderUserTrade(t, uid)),
            positions: e.trades.length > 0 ? [renderPosition(ex, user, inst)] : [],
          };
          deliver(topic, notification(topic.channel, JSON.stringify(data)));
        }
        break;
      }
      case 'user.mmp_trigger': {
        if (cadence !== 'raw') break;
        for (const e of ch.mmp) {
          if (e.userId !== topic.userId || e.indexName !== spec.indexName) continue;
          const data = { index_name: e.indexName, ...(e.group !== null ? { mmp_group: e.group } : {}), frozen_until: e.frozenUntil };
          deliver(topic, notification(topic.channel, JSON.stringify(data)));
        }
        break;
      }
      case 'user.block_trade_confirmations': {
        if (cadence !== 'raw') break;
        for (const r of ch.blocks) {
          if (r.executor !== topic.userId && r.signer !== topic.userId) continue;
          if (spec.currency !== null && r.currency !== spec.currency) continue;
          deliver(topic, notification(topic.channel, JSON.stringify(renderBlockRequest(ex, r, topic.userId))));
        }
        break;
      }
      case 'user.portfolio': {
        // conflated: at most one summary per tick, when the user's money, orders or marks moved
        if (cadence !== 'agg') break;
        const uid = topic.userId!;
        const user = ex.users.get(uid);
        if (!user) break;
        // a PM account the scan has not refreshed since a tick: its summary would rebuild the whole
        // account in this round; it goes out in a later round, the sums rebuilt in slices meanwhile
        // (src/risk/portfolio/warmup.ts)
        if (ex.pm.models.size > 0 && pmWarmup(ex).needs(uid)) {
          topic.owed = true;
          pmWarmup(ex).ready(uid).catch(() => undefined); // a failure shows in the call that next reads them
          break;
        }
        const owed = topic.owed === true;
        topic.owed = false;
        const currencies = spec.currency === null ? (['BTC', 'ETH'] as CurrencyCode[]) : [spec.currency];
        for (const c of currencies) {
          if (!owed && !ch.everyone && !ch.users.has(uid) && !ch.currencies.has(c) && topic.last !== undefined) continue;
          const data = JSON.stringify(accountSummary(ex, user, c, false));
          if (spec.currency !== null) {
            if (data === topic.last) continue;
            topic.last = data;
          }
          deliver(topic, notification(topic.channel, data));
        }
        if (spec.currency === null) topic.last = '';
        break;
      }
      default:
        if (isParitySpec(spec)) for (const d of parityRound(ex, topic as ParityTopic, { cadence, currencies: ch.currencies, touched: touchedInst })) deliver(topic, notification(topic.channel, d));
        else if (isRfqSpec(spec)) for (const d of rfqRound(ex, topic as RfqTopic, cadence)) deliver(topic, notification(topic.channel, d));
    }
  }
}
