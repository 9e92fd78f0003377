// P&L over time from the account log (private/get_transaction_log), for the portfolio's chart
// (web/src/screens/portfolioLogs.tsx). Pure: unit-tested under node.

export interface LogEntry {
  id: number;
  timestamp: number;
  type: string;
  currency: string;
  change: number;
  balance: number;
  commission: number;
  instrument_name: string | null;
  side?: string;
  amount?: number;
  price?: number;
  position?: number;
}

/** Money moved in or out, not earned: left out of the P&L. */
const FUNDING = new Set(['deposit', 'withdrawal', 'transfer']);
/** Exact sums of decimal amounts: the log's numbers in minor units (8 decimals covers every currency). */
const minor = (x: number) => Math.round(x * 1e8);

/**
 * P&L over time from the account log, oldest first: after each entry, the running sum of every
 * change but money moved in or out (deposits, withdrawals, transfers): premiums, fees,
 * deliveries. Buying an option shows as a loss until it is sold or delivered, so the last point,
 * now, adds the positions at mark: equity less the money moved in (`equityNow` - `fundingTotal`).
 */
export function pnlSeries(entries: LogEntry[], now: { t: number; equity: number } | null): { t: number; pnl: number }[] {
  const oldest = [...entries].sort((a, b) => a.timestamp - b.timestamp || a.id - b.id);
  const out: { t: number; pnl: number }[] = [];
  let sum = 0;
  let funding = 0;
  let start = 0;
  for (const e of oldest) {
    if (out.length === 0) start = minor(e.balance) - minor(e.change); // the balance before the oldest entry kept
    if (FUNDING.has(e.type)) funding += minor(e.change);
    else sum += minor(e.change);
    out.push({ t: e.timestamp, pnl: sum / 1e8 });
  }
  if (now !== null && out.length > 0) out.push({ t: now.t, pnl: (minor(now.equity) - start - funding) / 1e8 });
  return out;
}

