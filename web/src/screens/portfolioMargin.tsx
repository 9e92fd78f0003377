// Portfolio margin in the portfolio (issue 35): the account's margin model, the scenario table of
// private/pme/simulate as a heat map (price moves across, vol scenarios down, the worst cell marked)
// and a what-if simulator (hypothetical positions added through private/simulate_portfolio, with
// the change of initial and maintenance margin). Reads only: nothing here changes the account.
import { useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { priv, useLoad } from '../lib/live.ts';
import { errorText } from '../lib/rpc.ts';
import { useStackLabels } from '../lib/stack.ts';

interface Scenario {
  table: 'standard' | 'extended';
  price_move: number;
  vol_move: 'up' | 'same' | 'down';
  pnl: number;
  counted_loss: number;
}

interface PmeSimulation {
  currency: string;
  margin_model: string;
  initial_margin: number;
  maintenance_margin: number;
  worst_loss: number;
  worst_scenario: Scenario;
  contingencies: { total: number };
  scenarios: Scenario[];
  cross_initial_margin?: number;
  cross_maintenance_margin?: number;
}

interface Summary {
  margin_model: string;
  portfolio_margining_enabled: boolean;
  cross_collateral_enabled: boolean;
  initial_margin: number;
  maintenance_margin: number;
  projected_initial_margin: number;
  projected_maintenance_margin: number;
}

const CURRENCIES = ['BTC', 'ETH'] as const;
const VOLS = ['up', 'same', 'down'] as const;
const MODEL_NAMES: Record<string, string> = {
  segregated_sm: 'Standard margin, per currency',
  cross_sm: 'Standard margin, cross collateral',
  segregated_pm: 'Portfolio margin, per currency',
  cross_pm: 'Portfolio margin, cross currency',
};

/** The heat class of a P&L against the largest move of the table: 5 shades of loss and of gain. */
function heat(pnl: number, scale: number): string {
  if (pnl === 0 || scale === 0) return 'heat-0';
  const step = Math.min(5, Math.max(1, Math.ceil((Math.abs(pnl) / scale) * 5)));
  return pnl < 0 ? `heat-l${step}` : `heat-g${step}`;
}

const pct = (m: number) => `${m > 0 ? '+' : ''}${Math.round(m * 1000) / 10}%`;

export function MarginModel({ n }: { n: number }) {
  const { data } = useLoad(() => priv<Summary>('private/get_account_summary', { currency: 'BTC' }), [n]);
  return (
    <p class="margin-model" data-model={data?.margin_model ?? ''}>
      <span class="muted">Margin model </span>
      <strong>{data ? (MODEL_NAMES[data.margin_model] ?? data.margin_model) : '–'}</strong>
      {data && <span class="muted"> ({data.margin_model})</span>}
    </p>
  );
}

export function ScenarioHeatMap({ n }: { n: number }) {
  const [currency, setCurrency] = useState<string>('BTC');
  const loaded = useLoad(() => priv<PmeSimulation>('private/pme/simulate', { currency }), [n, currency]);
  const error = loaded.error;
  // the previous currency's table stays loaded until the new one answers: never shown under this one's tab
  const data = loaded.data?.currency === currency ? loaded.data : undefined;
  const standard = (data?.scenarios ?? []).filter((s) => s.table === 'standard');
  const moves = [...new Set(standard.map((s) => s.price_move))];
  const scale = Math.max(0, ...standard.map((s) => Math.abs(s.pnl)));
  const worst = data?.worst_scenario;
  const isWorst = (s: Scenario) => worst !== undefined && s.table === worst.table && s.price_move === worst.price_move && s.vol_move === worst.vol_move && worst.counted_loss > 0;
  const d = currency === 'USDC' ? 6 : 4;
  return (
    <div class="panel">
      <h2>Portfolio margin scenarios</h2>
      <div class="tabs" role="tablist" aria-label="Scenario currency">
        {CURRENCIES.map((c) => (
          <button key={c} type="button" role="tab" aria-selected={c === currency} onClick={() => setCurrency(c)}>
            {c}
          </button>
        ))}
      </div>
      {error && <p class="error">{error}</p>}
      <div class="heat-scroll">
        <table class="heatmap" aria-label={`Scenario P&L (${currency})`}>
          <thead>
            <tr>
              <th class="l">Vol / move</th>
              {moves.map((m) => (
                <th key={m}>{pct(m)}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {VOLS.map((v) => (
              <tr key={v}>
                <th class="l">vol {v}</th>
                {moves.map((m) => {
                  const s = standard.find((x) => x.price_move === m && x.vol_move === v);
                  if (!s) return <td key={m} />;
                  const w = isWorst(s);
                  return (
                    <td key={m} class={`${heat(s.pnl, scale)}${w ? ' worst' : ''}`} data-move={m} data-vol={v} data-pnl={s.pnl} title={`${pct(m)}, vol ${v}: ${s.pnl} ${currency}`}>
                      {fmt.coin(s.pnl, d)}
                      {w && <span class="worst-mark" aria-label="worst scenario"> ◆</span>}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {data && (
        <p class="muted heat-legend" data-field="pm-figures">
          Worst loss <span data-field="worst_loss">{fmt.coin(data.worst_loss, 8)}</span> ({worst?.table === 'extended' ? 'extended table, ' : ''}
          {worst ? `${pct(worst.price_move)}, vol ${worst.vol_move}` : '–'}) + contingencies {fmt.coin(data.contingencies.total, 8)} = MM{' '}
          <span data-field="pm_mm">{fmt.coin(data.maintenance_margin, 8)}</span>, IM <span data-field="pm_im">{fmt.coin(data.initial_margin, 8)}</span> {currency}
        </p>
      )}
      {data?.cross_maintenance_margin !== undefined && (
        // the cross models (cross_pm, cross_sm) pool every currency: the requirement in this currency
        // with the others' collateral and requirements at index, each currency under portfolio margin
        <p class="muted heat-legend" data-field="cross-figures">
          Pooled across currencies{data.margin_model === 'cross_sm' ? ', as on portfolio margin' : ''}: MM{' '}
          <span data-field="cross_mm">{fmt.coin(data.cross_maintenance_margin, 8)}</span>, IM <span data-field="cross_im">{fmt.coin(data.cross_initial_margin ?? 0, 8)}</span> {currency}
        </p>
      )}
    </div>
  );
}

interface WhatIfRow {
  instrument: string;
  amount: string;
}

export function WhatIf() {
  const stackRef = useStackLabels();
  const [rows, setRows] = useState<WhatIfRow[]>([]);
  const [instrument, setInstrument] = useState('');
  const [amount, setAmount] = useState('');
  const [result, setResult] = useState<{ currency: string; now: Summary; sim: Summary } | null>(null);
  const [msg, setMsg] = useState<string | null>(null);
  const add = () => {
    const a = fmt.parseInput(amount);
    if (instrument.trim() === '' || a === null || a === 0) {
      setMsg('Give an instrument and a non-zero amount (negative: short)');
      return;
    }
    setMsg(null);
    setRows([...rows, { instrument: instrument.trim(), amount: String(a) }]);
    setInstrument('');
    setAmount('');
  };
  const simulate = async () => {
    setMsg(null);
    setResult(null);
    if (rows.length === 0) return;
    const currency = rows[0].instrument.split('-')[0];
    const positions: Record<string, number> = {};
    for (const r of rows) {
      if (r.instrument.split('-')[0] !== currency) {
        setMsg('One currency at a time');
        return;
      }
      positions[r.instrument] = (positions[r.instrument] ?? 0) + Number(r.amount);
    }
    try {
      const [now, sim] = await Promise.all([
        priv<Summary>('private/simulate_portfolio', { currency, add_positions: true }),
        priv<Summary>('private/simulate_portfolio', { currency, add_positions: true, simulated_positions: positions }),
      ]);
      setResult({ currency, now, sim });
    } catch (e) {
      setMsg(errorText(e));
    }
  };
  const line = (label: string, field: 'projected_initial_margin' | 'projected_maintenance_margin') => {
    if (!result) return null;
    const a = result.now[field];
    const b = result.sim[field];
    return (
      <tr data-field={field}>
        <td class="l muted">{label}</td>
        <td>{fmt.coin(a, 8)}</td>
        <td>{fmt.coin(b, 8)}</td>
        <td class={b > a ? 'ask' : b < a ? 'bid' : ''} data-field="change">
          {b - a > 0 ? '+' : ''}
          {fmt.coin(Math.round((b - a) * 1e8) / 1e8, 8)}
        </td>
      </tr>
    );
  };
  return (
    <div class="panel">
      <h2>What if</h2>
      <form class="inline" aria-label="What-if position" onSubmit={(e) => (e.preventDefault(), add())}>
        <input aria-label="What-if instrument" placeholder="BTC-27MAR26-100000-C" size={22} value={instrument} onInput={(e) => setInstrument(e.currentTarget.value)} />
        <input aria-label="What-if amount" placeholder="-1" size={6} value={amount} onInput={(e) => setAmount(e.currentTarget.value)} />
        <button type="submit">Add</button>
        <button type="button" class="primary" disabled={rows.length === 0} onClick={() => void simulate()}>
          Simulate
        </button>
        <button type="button" disabled={rows.length === 0} onClick={() => (setRows([]), setResult(null))}>
          Clear
        </button>
      </form>
      {rows.length > 0 && (
        <ul class="whatif-rows" aria-label="What-if positions">
          {rows.map((r, i) => (
            <li key={i}>
              {r.instrument} <span class={Number(r.amount) > 0 ? 'bid' : 'ask'}>{fmt.amount(Number(r.amount))}</span>
            </li>
          ))}
        </ul>
      )}
      {msg && (
        <p class="error" role="alert">
          {msg}
        </p>
      )}
      {result && (
        <table aria-label="What-if margins" class="stack whatif" ref={stackRef}>
          <thead>
            <tr>
              <th class="l">{result.currency}, portfolio margin</th>
              <th>Now</th>
              <th>With these</th>
              <th>Change</th>
            </tr>
          </thead>
          <tbody>
            {line('Initial margin', 'projected_initial_margin')}
            {line('Maintenance margin', 'projected_maintenance_margin')}
          </tbody>
        </table>
      )}
    </div>
  );
}
