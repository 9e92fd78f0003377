// The order ticket: buy/sell, limit/market, amount, price (coin, with the USD equivalent), post-only,
// reduce-only, time in force, label. Before sending it shows what the order would cost and the
// margin it would hold, from `private/get_margins`. Keyboard: the fields in reading order, Enter
// sends (a form submit), Esc clears the ticket (and closes the drawer). Errors show the API's code.
import { useEffect, useRef, useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { priv, useEpoch } from '../lib/live.ts';
import { call, errorText, RpcError } from '../lib/rpc.ts';
import { amountProblem, premiumText, premiumWarning, priceProblem } from '../lib/ticketCheck.ts';
import { closeTicket, useTicket, type TicketFill } from '../lib/ticketStore.ts';
import type { Instrument, Order } from '../lib/types.ts';
import { useIndex } from './chain.tsx';

interface Margins {
  buy: number;
  sell: number;
  min_price: number;
  max_price: number;
}

type Tif = 'good_til_cancelled' | 'good_til_day' | 'fill_or_kill' | 'immediate_or_cancel';

/**
 * A combo (screens/strategy.tsx) is traded through this ticket too, with what differs: it is no
 * instrument of `get_instrument` or `get_margins` (its margin is its legs', checked when the order is
 * placed and at each fill), its price is a net premium (zero or negative allowed), and reduce-only
 * is refused for combos.
 */
export interface ComboTicket {
  currency: string;
  minTrade: number;
}

export function OrderTicket({ instrument, fill, version, onDone, combo }: { instrument: string; fill: TicketFill | null; version: number; onDone?: (order?: Order) => void; combo?: ComboTicket }) {
  const [inst, setInst] = useState<Instrument | null>(null);
  const [side, setSide] = useState<'buy' | 'sell'>('buy');
  const [type, setType] = useState<'limit' | 'market'>('limit');
  const [amount, setAmount] = useState('');
  const [price, setPrice] = useState('');
  const [postOnly, setPostOnly] = useState(false);
  const [reduceOnly, setReduceOnly] = useState(false);
  const [tif, setTif] = useState<Tif>('good_til_cancelled');
  const [label, setLabel] = useState('');
  const [margins, setMargins] = useState<Margins | null>(null);
  const [marginError, setMarginError] = useState<string | null>(null);
  const [result, setResult] = useState<{ ok: boolean; text: string; network?: boolean } | null>(null);
  const [available, setAvailable] = useState<number | null>(null);
  const epoch = useEpoch();
  const [busy, setBusy] = useState(false);
  const amountRef = useRef<HTMLInputElement>(null);
  const index = useIndex(inst?.base_currency ?? instrument.split('-')[0]);

  useEffect(() => {
    if (combo) return setInst(null);
    void call<Instrument>('public/get_instrument', { instrument_name: instrument }).then(setInst, () => setInst(null));
  }, [instrument]);

  // a click on a chain cell or a book level fills the ticket in
  useEffect(() => {
    if (!fill || fill.instrument !== instrument) return;
    setSide(fill.side);
    setType('limit');
    if (fill.price !== null) setPrice(String(fill.price));
    if (fill.amount !== undefined) setAmount(String(fill.amount));
    setResult(null);
    amountRef.current?.focus();
  }, [version]);

  // the funds a buy's premium is weighed against (a warning, not a refusal: the API decides)
  const currency = inst?.base_currency ?? combo?.currency ?? instrument.split('-')[0];
  useEffect(() => {
    void priv<{ available_funds: number }>('private/get_account_summary', { currency }).then((a) => setAvailable(a.available_funds), () => setAvailable(null));
  }, [currency, epoch]);

  // a "cannot reach the server" result means nothing once the socket is back: it is cleared
  useEffect(() => setResult((r) => (r?.network ? null : r)), [epoch]);

  const amountError = amountProblem(amount, inst?.min_trade_amount ?? combo?.minTrade ?? null);
  const priceError = type === 'limit' ? priceProblem(price, combo !== undefined) : null;
  const amountNum = amountError === null ? fmt.parseInput(amount) : null;
  const priceNum = priceError === null ? fmt.parseInput(price) : null;

  // the cost and margin preview, from the API (debounced while typing)
  useEffect(() => {
    setMargins(null);
    setMarginError(null);
    // a market order's price is the book's: the preview needs a limit price
    if (combo || amountNum === null || amountNum <= 0 || type !== 'limit' || priceNum === null || priceNum <= 0) return;
    const timer = setTimeout(() => {
      void priv<Margins>('private/get_margins', { instrument_name: instrument, amount: amountNum, price: priceNum }).then(setMargins, (e) => setMarginError(errorText(e)));
    }, 150);
    return () => clearTimeout(timer);
  }, [instrument, amountNum, priceNum, type]);

  const reset = () => {
    setAmount('');
    setPrice('');
    setPostOnly(false);
    setReduceOnly(false);
    setLabel('');
    setTif('good_til_cancelled');
    setResult(null);
  };

  const send = async () => {
    setBusy(true);
    setResult(null);
    try {
      const params: Record<string, unknown> = { instrument_name: instrument, amount: amountNum, type, time_in_force: tif, post_only: postOnly, reduce_only: reduceOnly };
      if (type === 'limit') params.price = priceNum;
      if (label) params.label = label;
      const r = await priv<{ order: Order; trades: unknown[] }>(`private/${side}`, params);
      const o = r.order;
      setResult({ ok: true, text: `Order ${o.order_id} ${o.order_state}: ${o.direction} ${fmt.amount(o.amount)} at ${fmt.price(o.price)}${r.trades.length ? `, ${r.trades.length} trade(s)` : ''}` });
      onDone?.(o);
    } catch (e) {
      setResult({ ok: false, text: errorText(e), network: e instanceof RpcError && e.code === 0 });
    } finally {
      setBusy(false);
    }
  };

  const usdEach = priceNum !== null && index !== null ? priceNum * index : null;
  const premium = type === 'limit' ? premiumText(price, amount) : null;
  const warning = type === 'limit' ? premiumWarning(side, price, amount, available) : null;

  return (
    <form
      class="ticket panel"
      aria-label="Order ticket"
      onSubmit={(e) => {
        e.preventDefault();
        if (!busy) void send();
      }}
      onKeyDown={(e) => {
        if (e.key === 'Escape') {
          e.preventDefault();
          reset();
          if (onDone === undefined) closeTicket();
        }
      }}
    >
      <h2>Order ticket</h2>
      <p class="num" data-ticket-instrument={instrument}>
        <b>{instrument}</b>
      </p>
      <div class="sides" role="group" aria-label="Side">
        <button type="button" class="buy" aria-pressed={side === 'buy'} onClick={() => setSide('buy')}>
          Buy
        </button>
        <button type="button" class="sell" aria-pressed={side === 'sell'} onClick={() => setSide('sell')}>
          Sell
        </button>
      </div>
      <div class="grid" style="margin-top:8px">
        <label>
          Order type
          <select value={type} onChange={(e) => setType(e.currentTarget.value as 'limit' | 'market')}>
            <option value="limit">Limit</option>
            <option value="market">Market</option>
          </select>
        </label>
        <label>
          Time in force
          <select value={tif} onChange={(e) => setTif(e.currentTarget.value as Tif)}>
            <option value="good_til_cancelled">Good till cancelled</option>
            <option value="good_til_day">Good till day</option>
            <option value="immediate_or_cancel">Immediate or cancel</option>
            <option value="fill_or_kill">Fill or kill</option>
          </select>
        </label>
        <label>
          Amount ({inst?.base_currency ?? combo?.currency ?? 'contracts'})
          <input ref={amountRef} inputMode="decimal" value={amount} onInput={(e) => setAmount(e.currentTarget.value)} aria-invalid={amountError !== null} />
        </label>
        <label>
          Price ({inst?.base_currency ?? combo?.currency ?? 'coin'}{combo ? ', net' : ''})
          <input inputMode="decimal" value={type === 'market' ? '' : price} disabled={type === 'market'} onInput={(e) => setPrice(e.currentTarget.value)} aria-invalid={priceError !== null} />
        </label>
      </div>
      {amountError && (
        <p class="error" data-field-error="amount">
          {amountError}
        </p>
      )}
      {priceError && (
        <p class="error" data-field-error="price">
          {priceError}
        </p>
      )}
      <p class="muted num" aria-label="USD equivalent">
        {type === 'limit' && usdEach !== null ? `≈ ${fmt.usd(usdEach)} per contract` : '\u00a0'}
      </p>
      <div class="grid">
        <label class="check">
          <input type="checkbox" checked={postOnly} onChange={(e) => setPostOnly(e.currentTarget.checked)} /> Post-only
        </label>
        {!combo && (
          <label class="check">
            <input type="checkbox" checked={reduceOnly} onChange={(e) => setReduceOnly(e.currentTarget.checked)} /> Reduce-only
          </label>
        )}
      </div>
      <label style="margin-top:8px">
        Label
        <input maxLength={64} value={label} onInput={(e) => setLabel(e.currentTarget.value)} />
      </label>
      {combo ? (
        <p class="muted" data-preview="combo">
          Margin is the legs' together, checked when the order is placed and at each fill.
        </p>
      ) : (
      <dl aria-label="Before sending">
        <dt>Premium</dt>
        <dd data-preview="premium">{premium ?? '–'}</dd>
        <dt>{side === 'buy' ? 'Cost with fee' : 'Margin held'}</dt>
        <dd data-preview={side}>{margins ? fmt.coin(side === 'buy' ? margins.buy : margins.sell) : '–'}</dd>
        <dt>Price band</dt>
        <dd>{margins ? `${fmt.price(margins.min_price)} – ${fmt.price(margins.max_price)}` : '–'}</dd>
      </dl>
      )}
      {warning && (
        <p class="warn" data-warning>
          {warning}
        </p>
      )}
      {marginError && <p class="error">{marginError}</p>}
      <div class="row">
        <button type="submit" class={side} disabled={busy || amountNum === null || (type === 'limit' && priceNum === null)}>
          Place {side} order (Enter)
        </button>
        <button type="button" onClick={() => {
            reset();
            if (onDone === undefined) closeTicket();
          }}>
          Clear (Esc)
        </button>
      </div>
      {result && (
        <p class={result.ok ? 'ok' : 'error'} role={result.ok ? 'status' : 'alert'} aria-label="Order result">
          {result.text}
        </p>
      )}
    </form>
  );
}

/** The ticket as a drawer over any screen (opened by a click on a chain cell). */
export function TicketDrawer() {
  const t = useTicket();
  // the drawer belongs to the chain: elsewhere it covered Deposit, Close and Cancel (issue 33)
  if (!t.open || !t.fill || !location.pathname.startsWith('/chain')) return null;
  return (
    <div class="drawer">
      <OrderTicket instrument={t.fill.instrument} fill={t.fill} version={t.version} />
    </div>
  );
}
