// Orders and user trades written straight to JSON text, for the answers of order entry (buy, sell,
// edit): the same text as JSON.stringify(renderOrder(o)) / JSON.stringify(renderUserTrade(t, u)),
// key for key, without building the objects first. Under the WebSocket orders bench, building
// those objects and stringifying them (renderPlaceResult + resultText) was ~12% of the engine
// thread, and most of its garbage; this writes one string per reply.
//
// Exactness is the contract: test/api/orderJson.test.ts compares this text with the generic
// rendering over orders of every shape (fills, fees, labels with quotes and non-ASCII text, client
// order ids, post-only, GTD, MMP, quotes, advanced, liquidations). Shapes written here field by
// field are only those of ordinary orders; an order placed by a trigger, and trigger orders, are
// rendered the generic way (renderOrder), so their fields live in one place only.
import type { CurrencyCode } from '../domain/currency.ts';
import { lotsToAmount, priceToNumber, type Instrument } from '../domain/instrument.ts';
import { BUY } from '../engine/orderBook.ts';
import type { Order, Trade } from '../engine/types.ts';
import { TriggerOrder } from '../engine/triggers.ts';
import { averagePrice, coin, money, orderId, renderOrder, renderUserTrade, tradeIdOf, tradeIv, tradeLiquidation } from './render.ts';
import { RenderedJson } from './reads/rendered.ts';

/** A number as JSON.stringify writes it (NaN and infinities are null). */
function num(x: number): string {
  return Number.isFinite(x) ? `${x}` : 'null';
}

/** A string as JSON.stringify writes it: text a client chose (labels, ids) may need escapes. */
const str = JSON.stringify as (s: string) => string;

/** An instrument's name as a JSON string, computed once per instrument (names are plain ASCII, but
 *  this does not rely on it). */
const nameJson = new WeakMap<Instrument, string>();
function instName(inst: Instrument): string {
  let s = nameJson.get(inst);
  if (s === undefined) nameJson.set(inst, (s = str(inst.name)));
  return s;
}

function moneyOf(minor: number, currency: CurrencyCode): string {
  return num(money(minor, currency));
}

/** JSON.stringify(renderOrder(o)). */
export function orderJson(o: Order | TriggerOrder): string {
  if (o instanceof TriggerOrder || o.origin !== null) return JSON.stringify(renderOrder(o));
  const inst = o.inst;
  const type = o.type === 'liquidation' ? 'limit' : o.type;
  const amount = lotsToAmount(inst, o.amount);
  const avg = averagePrice(o);
  let s =
    `{"order_id":"${orderId(o)}","order_state":"${o.state}","order_type":"${type}","time_in_force":"${o.tif}",` +
    `"instrument_name":${instName(inst)},"direction":"${o.side === BUY ? 'buy' : 'sell'}","price":${num(o.type === 'market' ? avg : priceToNumber(o.price))},` +
    `"amount":${num(amount)},"contracts":${num(amount / inst.contractSize)},"filled_amount":${num(lotsToAmount(inst, o.filled))},"average_price":${num(avg)},` +
    `"commission":${moneyOf(o.commission, inst.currency)},"label":${str(o.label)},"creation_timestamp":${num(o.created)},"last_update_timestamp":${num(o.lastUpdate)},` +
    `"post_only":${o.postOnly},"reduce_only":${o.reduceOnly},"api":true,"web":false,"mobile":false,"is_liquidation":${o.isLiquidation},` +
    `"replaced":false,"risk_reducing":false,"mmp":${o.mmp !== null},"profit_loss":0`;
  if (o.type === 'market') s += ',"original_order_type":"market"';
  if (o.postOnly) s += `,"reject_post_only":${o.rejectPostOnly}`;
  if (o.cancelReason !== null) s += `,"cancel_reason":"${o.cancelReason}"`;
  if (o.advanced !== null) s += `,"advanced":"${o.advanced}"`;
  if (o.clientOrderId !== null) s += `,"client_order_id":${str(o.clientOrderId)}`;
  if (o.expiresAt > 0) s += `,"expiration_timestamp":${num(o.expiresAt)}`;
  const m = o.mmp;
  if (m !== null) {
    s += `,"mmp_cancelled":${o.cancelReason === 'mmp_trigger'}`;
    if (m.quoteId !== null) {
      s += `,"quote":true,"quote_id":${str(m.quoteId)},"mmp_group":${m.group === null ? 'null' : str(m.group)}`;
      if (m.quoteSetId !== null) s += `,"quote_set_id":${str(m.quoteSetId)}`;
    }
  }
  return `${s}}`;
}

/** JSON.stringify(renderUserTrade(t, userId)). */
export function userTradeJson(t: Trade, userId: number): string {
  const isMaker = t.makerOrder.userId === userId;
  const order = isMaker ? t.makerOrder : t.takerOrder;
  if (order.origin !== null || t.block !== undefined || t.combo !== undefined) return JSON.stringify(renderUserTrade(t, userId));
  const inst = t.inst;
  const amount = lotsToAmount(inst, t.lots);
  const mark = coin(t.markPrice);
  const iv = tradeIv(t);
  const liq = tradeLiquidation(t);
  let s =
    `{"trade_id":"${tradeIdOf(inst.currency, t.id)}","trade_seq":${num(t.seq)},"instrument_name":${instName(inst)},"timestamp":${num(t.ts)},"direction":"${order.side === BUY ? 'buy' : 'sell'}",` +
    `"tick_direction":${num(t.tickDirection)},"price":${num(priceToNumber(t.price))},"amount":${num(amount)},"contracts":${num(amount / inst.contractSize)},` +
    `"index_price":${num(t.indexPrice)},"mark_price":${mark === null ? 'null' : num(mark)},"iv":${iv === null ? 'null' : num(iv)},${liq === null ? '' : `"liquidation":"${liq}",`}"order_id":"${orderId(order)}",` +
    `"order_type":"${order.type}","liquidity":"${isMaker ? 'M' : 'T'}","fee":${moneyOf(isMaker ? t.makerFee : t.takerFee, inst.currency)},` +
    `"fee_currency":"${inst.currency}","state":"${isMaker ? t.makerState : t.takerState}","label":${str(order.label)},"post_only":${order.postOnly},` +
    `"reduce_only":${order.reduceOnly},"underlying_price":${num(t.indexPrice)},"api":true,"mmp":${order.mmp !== null}`;
  const m = order.mmp;
  if (m !== null && m.quoteId !== null) {
    s += `,"quote_id":${str(m.quoteId)}`;
    if (m.quoteSetId !== null) s += `,"quote_set_id":${str(m.quoteSetId)}`;
  }
  s += `,"risk_reducing":false,"matching_id":null,"self_trade":false,"profit_loss":0`;
  return `${s}}`;
}

/**
 * The answer of buy, sell and edit (`{order, trades}`) as JSON text, with the placed order's id and
 * state beside it for the WebSocket's cancel-on-disconnect, which records the orders a connection
 * left open (src/api/ws/server.ts `track`).
 */
export class PlacedJson extends RenderedJson {
  constructor(
    text: string,
    readonly orderId: number,
    readonly orderState: string,
  ) {
    super(text);
  }
}

export function placedJson(order: Order | TriggerOrder, trades: readonly Trade[], userId: number): PlacedJson {
  let s = `{"order":${orderJson(order)},"trades":[`;
  for (let i = 0; i < trades.length; i++) s += (i === 0 ? '' : ',') + userTradeJson(trades[i]!, userId);
  const placed = new PlacedJson(`${s}]}`, order.id, order.state);
  // Counting the bytes now flattens the text: built by concatenation it is a rope of ~100 small
  // strings (4-5x the flat size), and it stays alive until its batch is durable, so every
  // scavenge meanwhile copied all of them (scavenges were ~30% of the engine thread under the
  // WebSocket orders bench). The send flattened it anyway, later.
  void placed.bytes;
  return placed;
}
