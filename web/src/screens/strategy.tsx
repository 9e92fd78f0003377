// The strategy builder on the option chain (issue 34): while it is open, a click on a chain ask buys
// a leg and a click on a bid sells one (lib/strategy.ts keeps the legs). It shows the legs, the net
// premium from the legs' best prices (and at their marks), the greeks summed over the legs, and
// "Create combo" (`private/create_combo`); the combo's book, ticket, orders and fills follow
// (comboMarket.tsx). The chain header's switch (StrategyToggle) opens it; it sits under the chain,
// sticky at the bottom of the screen, and redraws on its own: the chain's rows are not drawn again
// for it (their clicks read the store when clicked).
import { useEffect, useRef, useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { live, priv } from '../lib/live.ts';
import { call, errorText } from '../lib/rpc.ts';
import { clearLegs, changeRatio, comboSide, type ComboRecord, comboTrades, fromTicks, GREEKS, legPrice, markPrice, netTicks, setStrategyActive, strategyName, sumGreeks, useStrategy, type Leg } from '../lib/strategy.ts';
import type { TicketFill } from '../lib/ticketStore.ts';
import type { Ticker } from '../lib/types.ts';
import { useFrameRedraw } from './chain.tsx';
import { ComboMarket } from './comboMarket.tsx';

const GREEK_LABEL = { delta: 'Delta', gamma: 'Gamma', vega: 'Vega', theta: 'Theta' } as const;
const GREEK_DIGITS = { delta: 3, gamma: 5, vega: 2, theta: 2 } as const;

/** The legs' tickers, live: the builder's own subscriptions (the chain's handlers are untouched). */
function useLegTickers(legs: Leg[], clicked: Map<string, Ticker>): Map<string, Ticker> {
  const tickers = useRef(new Map<string, Ticker>());
  const [, redraw] = useFrameRedraw();
  const names = legs.map((l) => l.instrument).join(',');
  // a new leg starts from the ticker of its click, in this very draw (a leg taken away and clicked
  // again starts from that click, not from the ticker kept)
  for (const k of [...tickers.current.keys()]) if (!legs.some((l) => l.instrument === k)) tickers.current.delete(k);
  for (const [k, t] of clicked) if (!tickers.current.has(k) && legs.some((l) => l.instrument === k)) tickers.current.set(k, t);
  useEffect(() => {
    // a leg clicked before its row had a ticker: asked once (the channel's first message went to the chain)
    for (const l of legs) {
      if (!tickers.current.has(l.instrument)) {
        void call<Ticker>('public/ticker', { instrument_name: l.instrument }).then((t) => {
          if (!tickers.current.has(l.instrument)) tickers.current.set(l.instrument, t);
          redraw();
        }, () => undefined);
      }
    }
    const unsubs = legs.map((l) =>
      live.subscribe(`ticker.${l.instrument}.100ms`, (d) => {
        tickers.current.set(l.instrument, d as Ticker);
        redraw();
      }),
    );
    return () => {
      for (const u of unsubs) u();
    };
  }, [names]);
  return tickers.current;
}

/** A net premium per unit: the amount and whether it is paid (debit) or received (credit). */
function netText(ticks: number | null): string {
  if (ticks === null) return '–';
  if (ticks === 0) return '0.0000';
  return `${fmt.fixed(Math.abs(fromTicks(ticks)), 4)} ${ticks > 0 ? 'debit' : 'credit'}`;
}

function legLabel(l: Leg): string {
  return `${fmt.expiryCode(l.expiry)} ${fmt.strike(l.strike)} ${l.optionType === 'call' ? 'C' : 'P'}`;
}

/** The chain header's switch: its own component, so the chain is not drawn again when it flips. */
export function StrategyToggle() {
  const s = useStrategy();
  return (
    <button type="button" class={s.active ? 'primary' : ''} aria-pressed={s.active} title="Click asks to buy legs and bids to sell them, then trade the strategy as one combo" onClick={() => setStrategyActive(!s.active)}>
      Strategy builder
    </button>
  );
}

export function StrategyBuilder({ currency }: { currency: string }) {
  const s = useStrategy();
  const tickers = useLegTickers(s.legs, s.clicked);
  // the combo and the ticket's first values (side, net price, amount), set when it is created
  const [combo, setCombo] = useState<{ record: ComboRecord; initial: TicketFill } | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // a leg of another currency (the chain switched): the builder starts again
  useEffect(() => {
    if (s.legs.some((l) => !l.instrument.startsWith(`${currency}-`))) clearLegs();
  }, [currency]);
  useEffect(() => setError(null), [s.version]);

  // a combo created before every leg had its price: the ticket gets the net premium once there is one
  const netNow = netTicks(s.legs, tickers);
  useEffect(() => {
    if (!combo || combo.initial.price !== null || netNow === null) return;
    const sd = comboSide(s.legs, combo.record);
    if (sd) setCombo({ ...combo, initial: { ...combo.initial, price: fromTicks(Math.round((sd.side === 'buy' ? netNow : -netNow) / sd.units)) } });
  }, [combo, netNow]);

  if (!s.active) return null;

  const legs = s.legs;
  const net = netNow;
  const mark = netTicks(legs, tickers, markPrice);
  const greeks = sumGreeks(legs, tickers);
  const side = combo ? comboSide(legs, combo.record) : null;
  const minTrade = legs.length ? Math.max(...legs.map((l) => l.minTrade)) : 0;

  const create = async () => {
    setBusy(true);
    setError(null);
    try {
      const record = await priv<ComboRecord>('private/create_combo', { trades: comboTrades(legs) });
      const sd = comboSide(legs, record) ?? { side: 'buy' as const, units: 1 };
      // the strategy's net price per combo unit is the combo's price (a sell's sign turned)
      const price = net === null ? null : fromTicks(Math.round((sd.side === 'buy' ? net : -net) / sd.units));
      setCombo({ record, initial: { instrument: record.id, side: sd.side, price, amount: Math.round(minTrade * sd.units * 1e8) / 1e8 } });
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="panel strategy" aria-label="Strategy builder">
      <div class="row strategy-head">
        <h2 class="grow">
          Strategy builder <span class="muted" data-strategy-name>{strategyName(legs)}</span>
        </h2>
        <button type="button" onClick={clearLegs} disabled={legs.length === 0}>
          Clear
        </button>
        <button type="button" onClick={() => setStrategyActive(false)}>
          Close
        </button>
      </div>
      {legs.length === 0 && <p class="muted">Click an ask on the chain to buy a leg, a bid to sell one; again to add to it.</p>}
      {s.notice && (
        <p class="warn" role="status">
          {s.notice}
        </p>
      )}
      {legs.length > 0 && (
        <table class="strategy-legs" aria-label="Strategy legs">
          <thead>
            <tr>
              <th class="l">Leg</th>
              <th>Ratio</th>
              <th>Price</th>
              <th>Δ</th>
            </tr>
          </thead>
          <tbody>
            {legs.map((l) => {
              const t = tickers.get(l.instrument);
              return (
                <tr key={l.instrument} data-leg={l.instrument} data-ratio={l.ratio}>
                  <td class="l" title={l.instrument}>
                    <b class={l.ratio > 0 ? 'bid' : 'ask'}>{l.ratio > 0 ? 'Buy' : 'Sell'}</b> {legLabel(l)}
                  </td>
                  <td class="ratio">
                    <button type="button" class="link" aria-label={`Less ${l.instrument}`} onClick={() => changeRatio(l.instrument, l.ratio - 1)}>
                      −
                    </button>
                    <span class="num">{l.ratio > 0 ? `+${l.ratio}` : l.ratio}</span>
                    <button type="button" class="link" aria-label={`More ${l.instrument}`} onClick={() => changeRatio(l.instrument, l.ratio + 1)}>
                      +
                    </button>
                  </td>
                  <td data-cell="leg-price">{fmt.price(legPrice(l, t))}</td>
                  <td>{fmt.greek(t?.greeks.delta, 2)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {legs.length > 0 && (
        <dl class="strategy-sum" aria-label="Strategy summary">
          <dt>Net premium</dt>
          <dd data-net={net ?? ''}>{netText(net)}</dd>
          <dt>At mark</dt>
          <dd data-net-mark={mark ?? ''}>{netText(mark)}</dd>
          {GREEKS.map((k) => [
            <dt key={`t${k}`}>{GREEK_LABEL[k]}</dt>,
            <dd key={`d${k}`} data-greek={k}>
              {greeks ? fmt.greek(greeks[k], GREEK_DIGITS[k], true) : '–'}
            </dd>,
          ])}
        </dl>
      )}
      {legs.length > 0 && (
        <div class="row">
          <button type="button" class="primary" disabled={busy || legs.length < 2} onClick={() => void create()}>
            Create combo
          </button>
          {legs.length < 2 && <span class="muted">A combo has at least 2 legs.</span>}
        </div>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {combo && side && (
        <>
          <p data-combo-id={combo.record.id}>
            Combo <b class="num">{combo.record.id}</b>
            <span class="muted">
              {' '}
              ({combo.record.state}): your strategy is {side.units > 1 ? `${side.units} x ` : ''}the <b>{side.side}</b> side
            </span>
          </p>
          <ComboMarket combo={combo.record} currency={currency} minTrade={minTrade} initial={combo.initial} />
        </>
      )}
      {combo && !side && <p class="muted">The legs changed since the combo was created: create the combo again.</p>}
    </section>
  );
}
