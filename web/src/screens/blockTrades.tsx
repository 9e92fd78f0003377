// The portfolio's block trades (issue 34): the account's executed block trades
// (private/get_block_trades), one row per leg from its own side, and the requests that wait for an
// approval or were answered (private/get_block_trade_requests). Beside portfolio.tsx.
import * as fmt from '../lib/format.ts';
import { priv, useLoad } from '../lib/live.ts';
import { useStackLabels } from '../lib/stack.ts';

interface BlockLeg {
  trade_id: string;
  instrument_name: string;
  direction: 'buy' | 'sell';
  amount: number;
  price: number;
  fee: number;
  fee_currency: string;
}

interface BlockTrade {
  id: string;
  timestamp: number;
  trades: BlockLeg[];
}

interface BlockRequest {
  nonce: string;
  timestamp: number;
  role: string;
  username: string;
  state: { value: string };
  counterparty_state: { value: string };
  trades: { instrument_name: string; direction: string; amount: number; price: number }[];
}

export function BlockTrades({ n }: { n: number }) {
  const stackRef = useStackLabels();
  const reqRef = useStackLabels();
  const { data } = useLoad(async () => {
    const [btc, eth, requests] = await Promise.all([
      priv<BlockTrade[]>('private/get_block_trades', { currency: 'BTC', count: 20 }),
      priv<BlockTrade[]>('private/get_block_trades', { currency: 'ETH', count: 20 }),
      priv<BlockRequest[]>('private/get_block_trade_requests', {}),
    ]);
    return { trades: [...btc, ...eth].sort((a, b) => b.timestamp - a.timestamp), requests };
  }, [n]);
  return (
    <div class="panel grow">
      <h2>Block trades</h2>
      <table class="stack" aria-label="Block trades" ref={stackRef}>
        <thead>
          <tr>
            <th class="l">Time (UTC)</th>
            <th class="l">Block</th>
            <th class="l">Instrument</th>
            <th>Side</th>
            <th>Amount</th>
            <th>Price</th>
            <th>Fee</th>
          </tr>
        </thead>
        <tbody>
          {(data?.trades ?? []).flatMap((b) =>
            b.trades.map((t) => (
              <tr key={t.trade_id} data-block-id={b.id}>
                <td class="l muted">{fmt.utc(b.timestamp)}</td>
                <td class="l">#{b.id}</td>
                <td class="l">{t.instrument_name}</td>
                <td class={t.direction === 'buy' ? 'bid' : 'ask'}>{t.direction}</td>
                <td>{fmt.amount(t.amount)}</td>
                <td>{fmt.price(t.price)}</td>
                <td>{fmt.coin(t.fee, 8)}</td>
              </tr>
            )),
          )}
        </tbody>
      </table>
      {data && data.trades.length === 0 && <p class="muted">No block trades yet.</p>}
      {data && data.requests.length > 0 && (
        <>
          <h3>Requests</h3>
          <table class="stack" aria-label="Block trade requests" ref={reqRef}>
            <thead>
              <tr>
                <th class="l">Time (UTC)</th>
                <th class="l">Nonce</th>
                <th class="l">Counterparty</th>
                <th class="l">Role</th>
                <th class="l">Legs</th>
                <th class="l">Yours</th>
                <th class="l">Theirs</th>
              </tr>
            </thead>
            <tbody>
              {data.requests.map((r) => (
                <tr key={`${r.timestamp} ${r.nonce}`} data-nonce={r.nonce}>
                  <td class="l muted">{fmt.utc(r.timestamp)}</td>
                  <td class="l">{r.nonce}</td>
                  <td class="l">{r.username}</td>
                  <td class="l">{r.role}</td>
                  <td class="l">{r.trades.map((t) => `${t.direction} ${fmt.amount(t.amount)} ${t.instrument_name} @ ${fmt.price(t.price)}`).join(', ')}</td>
                  <td class="l">{r.state.value}</td>
                  <td class="l">{r.counterparty_state.value}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}
