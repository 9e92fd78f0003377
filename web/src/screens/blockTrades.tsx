// The portfolio's block trades (issue 34): the account's executed block trades
// (private/get_block_trades), one row per leg from its own side, and the requests that wait for an
// approval or were answered (private/get_block_trade_requests), with Approve and Reject on the
// caller's own side while it waits (private/approve_block_trade, reject_block_trade: the approval that
// completes a request executes the trade). Live: block_trade_confirmations sends each change of a
// request to both parties, which reloads both lists. On the portfolio and on the RFQ screen (rfq.tsx).
import { useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { priv, useLoad, useReloadOn } from '../lib/live.ts';
import { useStackLabels } from '../lib/stack.ts';
import { Message, act } from './accounts.tsx';

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

type Msg = { ok: boolean; text: string } | null;

export function BlockTrades({ n }: { n: number }) {
  const stackRef = useStackLabels();
  const reqRef = useStackLabels();
  const [acted, setActed] = useState(0);
  const own = useReloadOn(['block_trade_confirmations'], 0) + acted;
  const [msg, setMsg] = useState<Msg>(null);
  const { data } = useLoad(async () => {
    const [btc, eth, requests] = await Promise.all([
      priv<BlockTrade[]>('private/get_block_trades', { currency: 'BTC', count: 20 }),
      priv<BlockTrade[]>('private/get_block_trades', { currency: 'ETH', count: 20 }),
      priv<BlockRequest[]>('private/get_block_trade_requests', {}),
    ]);
    return { trades: [...btc, ...eth].sort((a, b) => b.timestamp - a.timestamp), requests };
  }, [n, own]);
  const waiting = (data?.requests ?? []).filter((r) => r.state.value === 'initial' && r.counterparty_state.value !== 'rejected').length;
  const answer = (r: BlockRequest, how: 'approve' | 'reject') =>
    act(
      setMsg,
      () => priv(`private/${how}_block_trade`, { timestamp: r.timestamp, nonce: r.nonce, role: r.role }).then(() => setActed((x) => x + 1)),
      how === 'approve' ? `Block trade ${r.nonce} approved` : `Block trade ${r.nonce} rejected`,
    );
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
      <Message msg={msg} />
      {data && data.requests.length > 0 && (
        <>
          <h3>Requests</h3>
          {waiting > 0 && (
            <p class="warn" role="status">
              {waiting === 1 ? '1 block trade waits' : `${waiting} block trades wait`} for your approval
            </p>
          )}
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
                <th />
              </tr>
            </thead>
            <tbody>
              {data.requests.map((r) => (
                <tr key={`${r.timestamp} ${r.nonce}`} data-nonce={r.nonce}>
                  <td class="l muted">{fmt.utc(r.timestamp)}</td>
                  <td class="l">{r.nonce}</td>
                  <td class="l">{r.username}</td>
                  <td class="l">{r.role}</td>
                  <td class="l wrap">{r.trades.map((t) => `${t.direction} ${fmt.amount(t.amount)} ${t.instrument_name} @ ${fmt.price(t.price)}`).join(', ')}</td>
                  <td class="l">{r.state.value}</td>
                  <td class="l">{r.counterparty_state.value}</td>
                  <td class="actions">
                    {r.state.value === 'initial' && r.counterparty_state.value !== 'rejected' && (
                      <>
                        <button type="button" class="buy" aria-label={`Approve block trade ${r.nonce}`} onClick={() => void answer(r, 'approve')}>
                          Approve
                        </button>
                        <button type="button" aria-label={`Reject block trade ${r.nonce}`} onClick={() => void answer(r, 'reject')}>
                          Reject
                        </button>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}
