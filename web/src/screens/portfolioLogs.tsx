// The portfolio's account log (private/get_transaction_log), its P&L over time drawn from that log,
// and the settlement history (private/get_settlement_history_by_currency). Beside portfolio.tsx,
// which is long enough. One currency at a time (the log's figures are in that currency).
import { useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { serverNow, syncClock } from '../lib/clock.ts';
import { priv, useLoad } from '../lib/live.ts';
import { pnlSeries, type LogEntry } from '../lib/pnl.ts';
import { useStackLabels } from '../lib/stack.ts';


interface Settlement {
  type: string;
  timestamp: number;
  instrument_name: string;
  position: number;
  mark_price: number;
  index_price: number;
  profit_loss: number;
}

const LOG_CURRENCIES = ['BTC', 'ETH', 'USDC'] as const;
const DECIMALS: Record<string, number> = { BTC: 8, ETH: 8, USDC: 6 };
const PAGE = 10;

/** A line of P&L over time, drawn in SVG (a handful of points: no chart library needed). */
export function PnlChart({ points, currency }: { points: { t: number; pnl: number }[]; currency: string }) {
  const W = 600;
  const H = 160;
  const pad = 6;
  if (points.length < 2) return <p class="muted">Not enough history in {currency} for a chart yet.</p>;
  const t0 = points[0].t;
  const t1 = Math.max(points[points.length - 1].t, t0 + 1);
  const lo = Math.min(0, ...points.map((p) => p.pnl));
  const hi = Math.max(0, ...points.map((p) => p.pnl));
  const span = hi - lo || 1;
  const x = (t: number) => pad + ((t - t0) / (t1 - t0)) * (W - 2 * pad);
  const y = (v: number) => pad + ((hi - v) / span) * (H - 2 * pad);
  // a step line: the P&L holds until the next entry
  let d = `M${x(points[0].t).toFixed(1)},${y(points[0].pnl).toFixed(1)}`;
  for (let i = 1; i < points.length; i++) d += ` H${x(points[i].t).toFixed(1)} V${y(points[i].pnl).toFixed(1)}`;
  const last = points[points.length - 1].pnl;
  return (
    <figure class="pnl" aria-label={`P&L over time (${currency})`} data-points={points.map((p) => fmt.coin(p.pnl, DECIMALS[currency])).join(' ')}>
      <svg viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label={`P&L now ${fmt.coin(last, DECIMALS[currency])} ${currency}`}>
        <line class="zero" x1={pad} x2={W - pad} y1={y(0)} y2={y(0)} />
        <path class={last >= 0 ? 'up' : 'down'} d={d} />
      </svg>
      <figcaption class="muted">
        {fmt.utc(t0)} – {fmt.utc(points[points.length - 1].t)}: {fmt.coin(last, DECIMALS[currency])} {currency} (premiums, fees and deliveries; the last point adds the positions at mark)
      </figcaption>
    </figure>
  );
}

export function AccountLog({ n }: { n: number }) {
  const stackRef = useStackLabels();
  const [currency, setCurrency] = useState<string>('BTC');
  const [pages, setPages] = useState<(number | null)[]>([null]); // continuation of each page shown
  const cont = pages[pages.length - 1];
  const { data } = useLoad(async () => {
    await syncClock(); // the log's times are the exchange's (a test server's clock is pinned)
    const [page, all, summary] = await Promise.all([
      priv<{ logs: LogEntry[]; continuation: number | null }>('private/get_transaction_log', { currency, count: PAGE, ...(cont !== null ? { continuation: cont } : {}) }),
      // the chart: the whole log kept (1,000 to 2,000 entries an account)
      priv<{ logs: LogEntry[] }>('private/get_transaction_log', { currency, count: 1000 }),
      priv<{ equity: number }>('private/get_account_summary', { currency }),
    ]);
    return { page, points: pnlSeries(all.logs, { t: serverNow(), equity: summary.equity }) };
  }, [n, currency, cont]);
  return (
    <div class="panel grow">
      <div class="row" style="justify-content:space-between">
        <h2>P&amp;L and account log</h2>
        <label>
          Currency{' '}
          <select value={currency} onChange={(e) => (setCurrency(e.currentTarget.value), setPages([null]))}>
            {LOG_CURRENCIES.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </label>
      </div>
      {data && <PnlChart points={data.points} currency={currency} />}
      <table class="stack" aria-label="Account log" ref={stackRef}>
        <thead>
          <tr>
            <th class="l">Time (UTC)</th>
            <th class="l">Type</th>
            <th class="l">Instrument</th>
            <th>Side</th>
            <th>Amount</th>
            <th>Price</th>
            <th>Fee</th>
            <th>Change</th>
            <th>Balance</th>
          </tr>
        </thead>
        <tbody>
          {(data?.page.logs ?? []).map((e) => (
            <tr key={e.id} data-log-id={e.id}>
              <td class="l muted">{fmt.utc(e.timestamp)}</td>
              <td class="l">{e.type}</td>
              <td class="l">{e.instrument_name ?? ''}</td>
              <td class={e.side === 'buy' ? 'bid' : e.side === 'sell' ? 'ask' : ''}>{e.side ?? ''}</td>
              <td>{e.amount !== undefined ? fmt.amount(e.amount) : e.position !== undefined ? fmt.amount(e.position) : ''}</td>
              <td>{e.price !== undefined ? fmt.price(e.price) : ''}</td>
              <td>{e.commission ? fmt.coin(e.commission, DECIMALS[currency]) : ''}</td>
              <td class={e.change >= 0 ? 'bid' : 'ask'}>{fmt.coin(e.change, DECIMALS[currency])}</td>
              <td>{fmt.coin(e.balance, DECIMALS[currency])}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {data && data.page.logs.length === 0 && <p class="muted">No entries in {currency}.</p>}
      <div class="pager">
        <button type="button" disabled={pages.length === 1} onClick={() => setPages(pages.slice(0, -1))}>
          Newer
        </button>
        <span class="muted">page {pages.length}</span>
        <button type="button" disabled={!data?.page.continuation} onClick={() => data?.page.continuation && setPages([...pages, data.page.continuation])}>
          Older
        </button>
      </div>
    </div>
  );
}

export function Settlements({ n }: { n: number }) {
  const stackRef = useStackLabels();
  const { data } = useLoad(
    () => Promise.all(['BTC', 'ETH'].map((c) => priv<{ settlements: Settlement[] }>('private/get_settlement_history_by_currency', { currency: c, count: 20 }).then((r) => r.settlements.map((s) => ({ ...s, currency: c }))))).then((x) => x.flat().sort((a, b) => b.timestamp - a.timestamp)),
    [n],
  );
  return (
    <div class="panel grow">
      <h2>Settlements</h2>
      <table class="stack" aria-label="Settlements" ref={stackRef}>
        <thead>
          <tr>
            <th class="l">Time (UTC)</th>
            <th class="l">Instrument</th>
            <th>Position</th>
            <th>Delivery price</th>
            <th>Paid per contract</th>
            <th>P&amp;L</th>
          </tr>
        </thead>
        <tbody>
          {(data ?? []).map((s) => (
            <tr key={`${s.instrument_name} ${s.timestamp}`}>
              <td class="l muted">{fmt.utc(s.timestamp)}</td>
              <td class="l">{s.instrument_name}</td>
              <td>{fmt.amount(s.position)}</td>
              <td>{fmt.usd(s.index_price)}</td>
              <td>{fmt.price(s.mark_price)}</td>
              <td class={s.profit_loss >= 0 ? 'bid' : 'ask'}>{fmt.coin(s.profit_loss, DECIMALS[s.currency])}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {data && data.length === 0 && <p class="muted">No deliveries yet: options settle at expiry (08:00 UTC).</p>}
    </div>
  );
}
