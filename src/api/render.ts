// Domain objects -> Deribit wire shapes (reference/deribit-v2.md section 6). Money leaves the
// service here, as decimal numbers rounded exactly from integer minor units.
import { CURRENCIES, type CurrencyCode } from '../domain/currency.ts';
import { toDecimalNumber } from '../domain/decimal.ts';
import { PRICE_SCALE, lotsToAmount, mintOf, priceToNumber, type Instrument } from '../domain/instrument.ts';
import { LIQUIDATION_FEE_E4 } from '../engine/liquidation.ts';
import { yearFraction } from '../domain/pricing.ts';
import { ivFromCoinPrice } from '../market/smile.ts';
import { BUY } from '../engine/orderBook.ts';
import type { Order, Trade, TradedOrder } from '../engine/types.ts';
import { TriggerOrder } from '../engine/triggers.ts';

export function money(minor: number, currency: CurrencyCode): number {
  return toDecimalNumber(minor, CURRENCIES[currency].decimals);
}

/** Coin amount with the currency's precision (model outputs such as mark prices). */
export function coin(x: number, decimals = 8): number | null {
  if (!Number.isFinite(x)) return null;
  return Number(x.toFixed(decimals));
}

/**
 * An order or trade id as Deribit writes it: BTC's are plain decimal numbers, every other
 * currency's carry the currency first (`ETH-584864807`, reference/deribit-v2.md "order_id"). The
 * number is the venue's one counter either way; `parseOrderId` reads both forms.
 */
export function idOf(currency: CurrencyCode, id: number): string {
  return currency === 'BTC' ? String(id) : `${currency}-${id}`;
}

export const orderIdOf = idOf;
export const tradeIdOf = idOf;

/** The currency of an instrument name (its first part: `ETH-6JUL25-1500-P`). */
export function currencyOfName(name: string): CurrencyCode {
  return name.slice(0, name.indexOf('-')) as CurrencyCode;
}

export function orderId(o: TradedOrder | TriggerOrder): string {
  return idOf(o.inst.currency, o.id);
}

export function parseOrderId(s: string): number | null {
  const m = /^(?:[A-Z]+-)?(\d{1,15})$/.exec(s);
  return m ? Number(m[1]) : null;
}

export function averagePrice(o: Order): number {
  if (o.filled === 0) return 0;
  // fills at one price (most orders): that price, exactly, without the decimal text of toFixed
  // (which was 1.5% of the engine thread under the WebSocket orders bench): the same number
  if (o.filledNotional % o.filled === 0) return priceToNumber(o.filledNotional / o.filled);
  // average of integer prices; shown with the price scale's precision plus 4 digits
  return Number((o.filledNotional / o.filled / 10 ** PRICE_SCALE).toFixed(PRICE_SCALE + 4));
}

export function renderOrder(o: Order | TriggerOrder): Record<string, unknown> {
  if (o instanceof TriggerOrder) return renderTriggerOrder(o);
  const amount = lotsToAmount(o.inst, o.amount);
  const out: Record<string, unknown> = {
    order_id: orderId(o),
    order_state: o.state,
    order_type: o.type === 'liquidation' ? 'limit' : o.type,
    time_in_force: o.tif,
    instrument_name: o.inst.name,
    direction: o.side === BUY ? 'buy' : 'sell',
    price: o.type === 'market' ? averagePrice(o) : priceToNumber(o.price),
    amount,
    contracts: amount / o.inst.contractSize,
    filled_amount: lotsToAmount(o.inst, o.filled),
    average_price: averagePrice(o),
    commission: money(o.commission, o.inst.currency),
    label: o.label,
    creation_timestamp: o.created,
    last_update_timestamp: o.lastUpdate,
    post_only: o.postOnly,
    reduce_only: o.reduceOnly,
    api: true,
    web: false,
    mobile: false,
    is_liquidation: o.isLiquidation,
    replaced: false,
    risk_reducing: false,
    mmp: false,
    profit_loss: 0,
  };
  // Deribit sends original_order_type (market | market_limit) only on market orders
  if (o.type === 'market') out.original_order_type = 'market';
  if (o.postOnly) out.reject_post_only = o.rejectPostOnly;
  if (o.cancelReason !== null) out.cancel_reason = o.cancelReason;
  if (o.advanced !== null) out.advanced = o.advanced;
  if (o.clientOrderId !== null) out.client_order_id = o.clientOrderId;
  if (o.expiresAt > 0) out.expiration_timestamp = o.expiresAt;
  if (o.mmp !== null) {
    out.mmp = true;
    out.mmp_cancelled = o.cancelReason === 'mmp_trigger';
    if (o.mmp.quoteId !== null) {
      out.quote = true;
      out.quote_id = o.mmp.quoteId;
      out.mmp_group = o.mmp.group;
      if (o.mmp.quoteSetId !== null) out.quote_set_id = o.mmp.quoteSetId;
    }
  }
  if (o.origin !== null) {
    // placed by a trigger order: Deribit keeps the trigger's type and fields on the order it became
    out.order_type = o.origin.type;
    delete out.original_order_type;
    Object.assign(out, triggerFields(o.origin));
    out.triggered = true;
    out.trigger_order_id = orderId(o.origin);
  }
  return out;
}

/** A trigger level as the client gave it: coin for mark/last price, USD for the index. */
function triggerLevel(x: number): number {
  return Number(x.toFixed(PRICE_SCALE + 4));
}

function triggerFields(t: TriggerOrder): Record<string, unknown> {
  // stop_price: Deribit's older name of the level, which ccxt reads as `triggerPrice`
  const out: Record<string, unknown> = { trigger: t.source, trigger_price: triggerLevel(t.level), stop_price: triggerLevel(t.level) };
  if (t.trailing) {
    out.trigger_offset = triggerLevel(t.offset);
    out.trigger_reference_price = triggerLevel(t.peak);
  }
  return out;
}

/**
 * A trigger order (Deribit shape): `untriggered` until its price is reached, then `triggered` (the
 * order it became is `trigger_order_id`'s child, listed under its own id) or `rejected` when that
 * order was refused (`reject_reason`, a Strikebook field), or `cancelled`. A market trigger's price
 * is the string "market_price", as on Deribit.
 */
export function renderTriggerOrder(t: TriggerOrder): Record<string, unknown> {
  const amount = lotsToAmount(t.inst, t.cmd.lots / t.inst.lotScaled);
  const out: Record<string, unknown> = {
    order_id: orderId(t),
    order_state: t.state,
    order_type: t.type,
    time_in_force: t.cmd.tif,
    instrument_name: t.inst.name,
    direction: t.side === BUY ? 'buy' : 'sell',
    price: t.cmd.type === 'limit' && t.cmd.price !== null ? priceToNumber(t.cmd.price) : 'market_price',
    amount,
    contracts: amount / t.inst.contractSize,
    filled_amount: 0,
    average_price: 0,
    commission: 0,
    label: t.cmd.label,
    creation_timestamp: t.created,
    last_update_timestamp: t.lastUpdate,
    post_only: t.cmd.postOnly,
    reduce_only: t.cmd.reduceOnly,
    api: true,
    web: false,
    mobile: false,
    is_liquidation: false,
    replaced: false,
    risk_reducing: false,
    mmp: false,
    profit_loss: 0,
    triggered: t.state === 'triggered',
    ...triggerFields(t),
  };
  if (t.cmd.postOnly) out.reject_post_only = t.cmd.rejectPostOnly;
  if (t.cancelReason !== null) out.cancel_reason = t.cancelReason;
  if (t.rejectReason !== null) out.reject_reason = t.rejectReason;
  if (t.firedOrderId !== null) out.triggered_order_id = idOf(t.inst.currency, t.firedOrderId);
  if (t.clientOrderId !== null) out.client_order_id = t.clientOrderId;
  if (t.expiresAt > 0) out.expiration_timestamp = t.expiresAt;
  return out;
}

/**
 * A trade's implied volatility in percent (Deribit's `iv`, two decimals): the Black-76 vol (r = 0)
 * at which the option is worth the trade price, with the index and the time to expiry at the trade
 * moment, both kept in the trade. Read from the trade alone, so a replay or a restart gives the same
 * value and the engine state does not change. Null where no vol prices it: below intrinsic value, at
 * or after expiry, or without an index.
 */
export function tradeIv(t: Trade): number | null {
  // worked out once per trade (a trade never changes; the inversion is a few dozen Black-76 prices)
  let v = t.iv;
  if (v === undefined) {
    const T = yearFraction(t.ts, t.inst.expiry);
    const F = t.indexPrice;
    const sigma = T > 0 && F > 0 ? ivFromCoinPrice(t.inst.optionType, priceToNumber(t.price), F, t.inst.strike, T) : null;
    v = sigma === null || !Number.isFinite(sigma) ? null : Number((sigma * 100).toFixed(2));
    t.iv = v;
  }
  return v;
}

/** Deribit's `liquidation` of a trade: which side was under forced liquidation (M, T or MT); null
 *  when neither was, and then the field is left out, as Deribit does. */
export function tradeLiquidation(t: Trade): 'M' | 'T' | 'MT' | null {
  const m = t.makerOrder.isLiquidation;
  const k = t.takerOrder.isLiquidation;
  return m ? (k ? 'MT' : 'M') : k ? 'T' : null;
}

export function renderPublicTrade(t: Trade): Record<string, unknown> {
  const amount = lotsToAmount(t.inst, t.lots);
  const out: Record<string, unknown> = {
    trade_id: tradeIdOf(t.inst.currency, t.id),
    trade_seq: t.seq,
    instrument_name: t.inst.name,
    timestamp: t.ts,
    direction: t.takerSide === BUY ? 'buy' : 'sell',
    tick_direction: t.tickDirection,
    price: priceToNumber(t.price),
    amount,
    contracts: amount / t.inst.contractSize,
    index_price: t.indexPrice,
    mark_price: coin(t.markPrice),
    iv: tradeIv(t),
  };
  // a block trade's leg, as Deribit marks it (src/blocktrades/); absent on book trades
  if (t.block !== undefined) {
    out.block_trade_id = String(t.block.id);
    out.block_trade_leg_count = t.block.legs;
  }
  // a combo fill's leg (src/combos/), as Deribit marks it
  if (t.combo !== undefined) {
    out.combo_id = t.combo.id;
    out.combo_trade_id = t.combo.tradeId;
  }
  const liq = tradeLiquidation(t);
  if (liq !== null) out.liquidation = liq;
  return out;
}

/** A trade as seen by one of its two users. */
export function renderUserTrade(t: Trade, userId: number): Record<string, unknown> {
  const isMaker = t.makerOrder.userId === userId;
  const order = isMaker ? t.makerOrder : t.takerOrder;
  const out = renderPublicTrade(t);
  out.direction = order.side === BUY ? 'buy' : 'sell';
  out.order_id = orderId(order);
  out.order_type = order.type === 'liquidation' ? 'liquidation' : order.type;
  out.liquidity = isMaker ? 'M' : 'T';
  out.fee = money(isMaker ? t.makerFee : t.takerFee, t.inst.currency);
  out.fee_currency = t.inst.currency;
  out.state = isMaker ? t.makerState : t.takerState;
  out.label = order.label;
  out.post_only = order.postOnly;
  out.reduce_only = order.reduceOnly;
  out.underlying_price = t.indexPrice;
  out.api = true;
  out.mmp = order.mmp !== null;
  if (order.mmp !== null && order.mmp.quoteId !== null) {
    out.quote_id = order.mmp.quoteId;
    if (order.mmp.quoteSetId !== null) out.quote_set_id = order.mmp.quoteSetId;
  }
  out.risk_reducing = false;
  out.matching_id = null;
  out.self_trade = false;
  out.profit_loss = 0;
  return out;
}

export function renderInstrument(i: Instrument): Record<string, unknown> {
  return {
    instrument_name: i.name,
    instrument_id: i.id,
    kind: 'option',
    base_currency: i.currency,
    quote_currency: i.currency,
    counter_currency: 'USD',
    settlement_currency: i.currency,
    option_type: i.optionType,
    strike: i.strike,
    expiration_timestamp: i.expiry,
    creation_timestamp: i.created,
    settlement_period: i.settlementPeriod,
    contract_size: i.contractSize,
    tick_size: priceToNumber(i.tick),
    tick_size_steps: i.tickSteps.map((s) => ({ above_price: priceToNumber(s.abovePrice), tick_size: priceToNumber(s.tick) })),
    min_trade_amount: lotsToAmount(i, 1),
    maker_commission: money(i.makerCommission, i.currency),
    taker_commission: money(i.takerCommission, i.currency),
    block_trade_commission: money(i.takerCommission / 2, i.currency),
    // the liquidation fee per contract (src/engine/liquidation.ts), in the coin
    max_liquidation_commission: toDecimalNumber(LIQUIDATION_FEE_E4, 4),
    // an option is bought for its premium paid in full: no leverage
    max_leverage: 1,
    block_trade_min_trade_amount: i.currency === 'BTC' ? 25 : 250,
    block_trade_tick_size: priceToNumber(i.tick),
    is_active: i.state === 'open',
    state: i.state,
    price_index: `${i.currency.toLowerCase()}_usd`,
    instrument_type: 'reversed',
    rfq: false,
    mint: mintOf(i.name),
  };
}
