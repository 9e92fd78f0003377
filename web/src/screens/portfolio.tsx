// The portfolio: account summary per currency, positions (with a close button), open orders (edit
// price/amount inline, cancel, cancel all), order history and trades (paged), and sandbox deposits
// and withdrawals. Everything reloads when `user.changes` says something moved.
import { useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { priv, useLiveOrders, useLoad, useReloadOn } from '../lib/live.ts';
import { errorText } from '../lib/rpc.ts';
import { linkClick } from '../lib/router.ts';
import { useStackLabels } from '../lib/stack.ts';
import { AccountLog, Settlements } from './portfolioLogs.tsx';
import { MarginModel, ScenarioHeatMap, WhatIf } from './portfolioMargin.tsx';
import { BlockTrades } from './blockTrades.tsx';
import type { AccountSummary, Order, Position, UserTrade } from '../lib/types.ts';

const CURRENCIES = ['BTC', 'ETH', 'USDC'] as const;
const DECIMALS: Record<string, number> = { BTC: 8, ETH: 8, USDC: 6 };
const PAGE = 10;

/** Reload trigger for every table here: fires (debounced) on any private change. */
function useChanges(): number {
  return useReloadOn(['user.changes.any.any.100ms', 'user.portfolio.any']);
}

function Summaries({ n }: { n: number }) {
  const stackRef = useStackLabels();
  const { data } = useLoad(() => Promise.all(CURRENCIES.map((c) => priv<AccountSummary>('private/get_account_summary', { currency: c }))), [n]);
  const rows: [string, keyof AccountSummary][] = [
    ['Balance', 'balance'],
    ['Equity', 'equity'],
    ['Initial margin', 'initial_margin'],
    ['Maintenance margin', 'maintenance_margin'],
    ['Available funds', 'available_funds'],
    ['Available to withdraw', 'available_withdrawal_funds'],
    ['PnL (total)', 'total_pl'],
    ['Delta', 'options_delta'],
  ];
  return (
    <div class="panel">
      <h2>Accounts</h2>
      <table class="stack" aria-label="Account summary" ref={stackRef}>
        <thead>
          <tr>
            <th class="l" />
            {CURRENCIES.map((c) => (
              <th key={c}>{c}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map(([label, key]) => (
            <tr key={key} data-field={key}>
              <td class="l muted">{label}</td>
              {CURRENCIES.map((c, k) => (
                <td key={c} data-currency={c}>
                  {data ? fmt.coin(data[k][key] as number, key === 'options_delta' ? 4 : DECIMALS[c]) : '–'}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Positions({ n }: { n: number }) {
  const stackRef = useStackLabels();
  const { data, reload } = useLoad(() => priv<Position[]>('private/get_positions', { currency: 'any' }), [n]);
  const [msg, setMsg] = useState<string | null>(null);
  /** The position whose Close waits for a confirmation: a market order is not taken back. */
  const [confirming, setConfirming] = useState<string | null>(null);
  const close = async (p: Position) => {
    setMsg(null);
    setConfirming(null);
    try {
      await priv(p.size > 0 ? 'private/sell' : 'private/buy', { instrument_name: p.instrument_name, amount: Math.abs(p.size), type: 'market', reduce_only: true });
      reload();
    } catch (e) {
      setMsg(errorText(e));
    }
  };
  return (
    <div class="panel">
      <h2>Positions</h2>
      <table class="stack" aria-label="Positions" ref={stackRef}>
        <thead>
          <tr>
            <th class="l">Instrument</th>
            <th>Size</th>
            <th>Avg price</th>
            <th>Mark</th>
            <th>Floating PnL</th>
            <th>Realized PnL</th>
            <th>Δ</th>
            <th>Γ</th>
            <th>Vega</th>
            <th>Θ</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(data ?? []).map((p) => (
            <tr key={p.instrument_name} data-instrument={p.instrument_name}>
              <td class="l">
                <a href={`/instrument/${p.instrument_name}`} onClick={(e) => linkClick(e, `/instrument/${p.instrument_name}`)}>
                  {p.instrument_name}
                </a>
              </td>
              <td data-field="size" class={p.size > 0 ? 'bid' : 'ask'}>
                {fmt.amount(p.size)}
              </td>
              <td data-field="average_price">{fmt.price(p.average_price)}</td>
              <td data-field="mark_price">{fmt.price(p.mark_price)}</td>
              <td data-field="floating_profit_loss">{fmt.coin(p.floating_profit_loss)}</td>
              <td data-field="realized_profit_loss">{fmt.coin(p.realized_profit_loss)}</td>
              <td>{fmt.greek(p.delta, 4)}</td>
              <td>{fmt.greek(p.gamma, 6)}</td>
              <td>{fmt.greek(p.vega, 2)}</td>
              <td>{fmt.greek(p.theta, 2)}</td>
              <td>
                {confirming === p.instrument_name ? (
                  <span class="confirm" role="group" aria-label={`Confirm closing ${p.instrument_name}`}>
                    {p.size > 0 ? 'Sell' : 'Buy'} {fmt.amount(Math.abs(p.size))} at market?{' '}
                    <button type="button" class="sell" onClick={() => void close(p)}>
                      Confirm close
                    </button>{' '}
                    <button type="button" onClick={() => setConfirming(null)}>
                      Keep
                    </button>
                  </span>
                ) : (
                  <button type="button" onClick={() => setConfirming(p.instrument_name)} aria-label={`Close ${p.instrument_name}`}>
                    Close
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {data?.length === 0 && <p class="muted">No positions.</p>}
      {data && data.length > 0 && <GreekTotals positions={data} />}
      {msg && <p class="error" role="alert">{msg}</p>}
    </div>
  );
}

function OpenOrderRow({ o, onChanged, onError }: { o: Order; onChanged: () => void; onError: (m: string) => void }) {
  const [price, setPrice] = useState(String(o.price));
  const [amount, setAmount] = useState(String(o.amount));
  const edit = async () => {
    try {
      await priv('private/edit', { order_id: o.order_id, price: fmt.parseInput(price), amount: fmt.parseInput(amount) });
      onChanged();
    } catch (e) {
      onError(errorText(e));
    }
  };
  const cancel = async () => {
    try {
      await priv('private/cancel', { order_id: o.order_id });
      onChanged();
    } catch (e) {
      onError(errorText(e));
    }
  };
  return (
    <tr data-order-id={o.order_id}>
      <td class="l">{o.instrument_name}</td>
      <td class={o.direction === 'buy' ? 'bid' : 'ask'}>{o.direction}</td>
      <td>
        <input
          aria-label={`Price of order ${o.order_id}`}
          size={8}
          value={price}
          onInput={(e) => setPrice(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter') void edit();
            if (e.key === 'Escape') setPrice(String(o.price));
          }}
        />
      </td>
      <td>
        <input
          aria-label={`Amount of order ${o.order_id}`}
          size={6}
          value={amount}
          onInput={(e) => setAmount(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter') void edit();
            if (e.key === 'Escape') setAmount(String(o.amount));
          }}
        />
      </td>
      <td>{fmt.amount(o.filled_amount)}</td>
      <td class="l">{o.label}</td>
      <td>
        <button type="button" onClick={() => void edit()} aria-label={`Save order ${o.order_id}`}>
          Save
        </button>{' '}
        <button type="button" onClick={() => void cancel()} aria-label={`Cancel order ${o.order_id}`}>
          Cancel
        </button>
      </td>
    </tr>
  );
}

function OpenOrders({ n }: { n: number }) {
  const stackRef = useStackLabels();
  const { data: loaded, reload } = useLoad(() => Promise.all(['BTC', 'ETH'].map((c) => priv<Order[]>('private/get_open_orders_by_currency', { currency: c }))).then((x) => x.flat()), [n]);
  // an order shows as soon as user.changes tells of it, before the reload it triggers
  const data = useLiveOrders('user.changes.any.any.100ms', loaded);
  const [msg, setMsg] = useState<string | null>(null);
  const cancelAll = async () => {
    try {
      await priv('private/cancel_all');
      reload();
    } catch (e) {
      setMsg(errorText(e));
    }
  };
  return (
    <div class="panel">
      <div class="row" style="justify-content:space-between">
        <h2>Open orders</h2>
        <button type="button" onClick={() => void cancelAll()} disabled={!data?.length}>
          Cancel all
        </button>
      </div>
      <table class="stack" aria-label="Open orders" ref={stackRef}>
        <thead>
          <tr>
            <th class="l">Instrument</th>
            <th>Side</th>
            <th>Price</th>
            <th>Amount</th>
            <th>Filled</th>
            <th class="l">Label</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(data ?? []).map((o) => (
            <OpenOrderRow key={`${o.order_id}-${o.last_update_timestamp}-${o.price}-${o.amount}`} o={o} onChanged={reload} onError={setMsg} />
          ))}
        </tbody>
      </table>
      {data?.length === 0 && <p class="muted">No open orders.</p>}
      {msg && <p class="error" role="alert">{msg}</p>}
    </div>
  );
}

function History({ n }: { n: number }) {
  const stackRef = useStackLabels();
  const [page, setPage] = useState(0);
  const { data } = useLoad(() => Promise.all(['BTC', 'ETH'].map((c) => priv<Order[]>('private/get_order_history_by_currency', { currency: c, count: PAGE, offset: page * PAGE, include_unfilled: true }))).then((x) => x.flat().sort((a, b) => b.last_update_timestamp - a.last_update_timestamp)), [n, page]);
  return (
    <div class="panel grow">
      <h2>Order history</h2>
      <table class="stack" aria-label="Order history" ref={stackRef}>
        <thead>
          <tr>
            <th class="l">Time (UTC)</th>
            <th class="l">Instrument</th>
            <th>Side</th>
            <th>Price</th>
            <th>Amount</th>
            <th class="l">State</th>
          </tr>
        </thead>
        <tbody>
          {(data ?? []).map((o) => (
            <tr key={o.order_id} data-order-id={o.order_id}>
              <td class="l muted">{fmt.utc(o.last_update_timestamp)}</td>
              <td class="l">{o.instrument_name}</td>
              <td class={o.direction === 'buy' ? 'bid' : 'ask'}>{o.direction}</td>
              <td>{fmt.price(o.price)}</td>
              <td>{fmt.amount(o.amount)}</td>
              <td class="l">{o.order_state}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <div class="pager">
        <button type="button" disabled={page === 0} onClick={() => setPage(page - 1)}>
          Newer
        </button>
        <span class="muted">page {page + 1}</span>
        <button type="button" disabled={(data?.length ?? 0) < PAGE} onClick={() => setPage(page + 1)}>
          Older
        </button>
      </div>
    </div>
  );
}

function Trades({ n }: { n: number }) {
  const stackRef = useStackLabels();
  // paged by trade sequence: each older page ends below the oldest trade shown
  const [ends, setEnds] = useState<number[]>([]);
  const end = ends.at(-1);
  const { data } = useLoad(
    () => Promise.all(['BTC', 'ETH'].map((c) => priv<{ trades: (UserTrade & { trade_seq?: number; timestamp: number })[]; has_more: boolean }>('private/get_user_trades_by_currency', { currency: c, count: PAGE, sorting: 'desc', ...(end !== undefined ? { end_timestamp: end, start_timestamp: 0 } : {}) }))),
    [n, end],
  );
  const trades = (data ?? []).flatMap((d) => d.trades).sort((a, b) => b.timestamp - a.timestamp);
  const more = (data ?? []).some((d) => d.has_more);
  return (
    <div class="panel grow">
      <h2>Trades</h2>
      <table class="stack" aria-label="Your trades" ref={stackRef}>
        <thead>
          <tr>
            <th class="l">Time (UTC)</th>
            <th class="l">Instrument</th>
            <th>Side</th>
            <th>Price</th>
            <th>Amount</th>
            <th>Fee</th>
          </tr>
        </thead>
        <tbody>
          {trades.map((t) => (
            <tr key={t.trade_id} data-trade-id={t.trade_id}>
              <td class="l muted">{fmt.utc(t.timestamp)}</td>
              <td class="l">{t.instrument_name}</td>
              <td class={t.direction === 'buy' ? 'bid' : 'ask'}>{t.direction}</td>
              <td>{fmt.price(t.price)}</td>
              <td>{fmt.amount(t.amount)}</td>
              <td>{fmt.coin(t.fee)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <div class="pager">
        <button type="button" disabled={ends.length === 0} onClick={() => setEnds(ends.slice(0, -1))}>
          Newer
        </button>
        <button type="button" disabled={!more || trades.length === 0} onClick={() => setEnds([...ends, trades[trades.length - 1].timestamp - 1])}>
          Older
        </button>
      </div>
    </div>
  );
}

function Funds({ onDone }: { onDone: () => void }) {
  const [currency, setCurrency] = useState('BTC');
  const [amount, setAmount] = useState('');
  const [msg, setMsg] = useState<{ ok: boolean; text: string } | null>(null);
  const run = async (method: string) => {
    setMsg(null);
    try {
      await priv(method, { currency, amount: fmt.parseInput(amount) });
      setMsg({ ok: true, text: `${method === 'private/deposit_collateral' ? 'Deposited' : 'Withdrew'} ${amount} ${currency}` });
      onDone();
    } catch (e) {
      setMsg({ ok: false, text: errorText(e) });
    }
  };
  return (
    <div class="panel">
      <h2>Deposit and withdraw (sandbox)</h2>
      <form class="inline" onSubmit={(e) => (e.preventDefault(), void run('private/deposit_collateral'))}>
        <label>
          Currency
          <select value={currency} onChange={(e) => setCurrency(e.currentTarget.value)}>
            {CURRENCIES.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </label>
        <label>
          Amount
          <input inputMode="decimal" value={amount} onInput={(e) => setAmount(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary">
          Deposit
        </button>
        <button type="button" onClick={() => void run('private/withdraw_collateral')}>
          Withdraw
        </button>
      </form>
      {msg && (
        <p class={msg.ok ? 'ok' : 'error'} role={msg.ok ? 'status' : 'alert'}>
          {msg.text}
        </p>
      )}
    </div>
  );
}

export function PortfolioScreen() {
  const n = useChanges();
  const [local, setLocal] = useState(0);
  const k = n + local;
  return (
    <>
      <h1>Portfolio</h1>
      <MarginModel n={k} />
      <div class="row">
        <div class="grow">
          <Summaries n={k} />
        </div>
        <Funds onDone={() => setLocal((x) => x + 1)} />
      </div>
      <Positions n={k} />
      <ScenarioHeatMap n={k} />
      <WhatIf />
      <OpenOrders n={k} />
      <div class="row">
        <History n={k} />
        <Trades n={k} />
      </div>
      <AccountLog n={k} />
      <Settlements n={k} />
      <BlockTrades n={k} />
    </>
  );
}

/** The book's greeks per currency: the sum over its positions (per contract x size, as the API gives them). */
function GreekTotals({ positions }: { positions: Position[] }) {
  const by = new Map<string, { delta: number; gamma: number; vega: number; theta: number; index: number }>();
  for (const p of positions) {
    const c = p.instrument_name.split('-')[0];
    const t = by.get(c) ?? { delta: 0, gamma: 0, vega: 0, theta: 0, index: p.index_price };
    t.delta += p.delta;
    t.gamma += p.gamma;
    t.vega += p.vega;
    t.theta += p.theta;
    by.set(c, t);
  }
  const stackRef = useStackLabels();
  return (
    <table aria-label="Portfolio greeks" class="stack greek-totals" ref={stackRef}>
      <thead>
        <tr>
          <th class="l">Total</th>
          <th>Δ (coin)</th>
          <th>Δ (USD)</th>
          <th>Γ (per USD)</th>
          <th>Vega (USD per 1%)</th>
          <th>Θ (USD per day)</th>
          <th>Θ (coin per day)</th>
        </tr>
      </thead>
      <tbody>
        {[...by].map(([c, t]) => (
          <tr key={c} data-currency={c}>
            <td class="l">{c}</td>
            <td data-field="delta">{fmt.greek(t.delta, 4)}</td>
            <td>{fmt.usd(t.delta * t.index)}</td>
            <td>{fmt.greek(t.gamma, 6)}</td>
            <td data-field="vega">{fmt.greek(t.vega, 2)}</td>
            <td data-field="theta">{fmt.greek(t.theta, 2)}</td>
            <td>{fmt.greek(t.index > 0 ? t.theta / t.index : null, 6)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
