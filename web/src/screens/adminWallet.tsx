// Issue 32, the operator's queue of pending withdrawals (private/get_pending_withdrawals, oldest
// first): complete one with its chain transaction id (private/complete_withdrawal) or reject it
// (private/reject_withdrawal, the amount goes back to its owner). Deposits: credit one to a user's
// deposit address with its chain transaction id (private/credit_deposit, once per id), and load
// addresses into the pool create_deposit_address hands out (private/add_deposit_addresses).
import { useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { useStackLabels } from '../lib/stack.ts';
import { priv, useLoad } from '../lib/live.ts';
import { CURRENCIES, Message, act, decimalsOf } from './accounts.tsx';

interface Pending {
  id: number;
  user_id: number;
  currency: string;
  amount: number;
  address: string;
  state: string;
  created_timestamp: number;
}

export function WithdrawalQueue() {
  const stackRef = useStackLabels();
  const [msg, setMsg] = useState<{ ok: boolean; text: string } | null>(null);
  const [txids, setTxids] = useState<Record<number, string>>({});
  const { data, error, reload } = useLoad(() => priv<Pending[]>('private/get_pending_withdrawals', { count: 200 }), []);
  const complete = (w: Pending) => act(setMsg, () => priv('private/complete_withdrawal', { id: w.id, transaction_id: txids[w.id] ?? '' }).then(reload), `Withdrawal ${w.id} completed`);
  const rejectIt = (w: Pending) => act(setMsg, () => priv('private/reject_withdrawal', { id: w.id }).then(reload), `Withdrawal ${w.id} rejected`);
  return (
    <div class="panel">
      <div class="row" style="justify-content:space-between">
        <h2>Pending withdrawals</h2>
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </div>
      {error && <p class="error">{error}</p>}
      {data && data.length === 0 && <p class="muted">No withdrawal is waiting.</p>}
      {data && data.length > 0 && (
        <table aria-label="Pending withdrawals" class="stack" ref={stackRef}>
          <thead>
            <tr>
              <th>Id</th>
              <th>User</th>
              <th class="l">Time</th>
              <th class="l">Currency</th>
              <th>Amount</th>
              <th class="l">Address</th>
              <th class="l">Transaction id</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {data.map((w) => (
              <tr key={w.id} data-withdrawal-id={w.id}>
                <td>{w.id}</td>
                <td>{w.user_id}</td>
                <td class="l">{new Date(w.created_timestamp).toISOString().slice(0, 19).replace('T', ' ')}</td>
                <td class="l">{w.currency}</td>
                <td>{fmt.coin(w.amount, decimalsOf(w.currency))}</td>
                <td class="l addr">{w.address}</td>
                <td class="l">
                  <input size={14} aria-label={`Transaction id of withdrawal ${w.id}`} value={txids[w.id] ?? ''} onInput={(e) => setTxids({ ...txids, [w.id]: e.currentTarget.value.trim() })} />
                </td>
                <td>
                  <button type="button" disabled={!txids[w.id]} aria-label={`Complete withdrawal ${w.id}`} onClick={() => void complete(w)}>
                    Complete
                  </button>{' '}
                  <button type="button" aria-label={`Reject withdrawal ${w.id}`} onClick={() => void rejectIt(w)}>
                    Reject
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Message msg={msg} />
    </div>
  );
}

/** Crediting a deposit seen on chain, and loading the deposit-address pool. */
export function DepositDesk() {
  const [currency, setCurrency] = useState('BTC');
  const [address, setAddress] = useState('');
  const [amount, setAmount] = useState('');
  const [txid, setTxid] = useState('');
  const [pool, setPool] = useState('');
  const [msg, setMsg] = useState<{ ok: boolean; text: string } | null>(null);
  const lines = pool.split(/\s+/).filter((a) => a !== '');
  const credit = () =>
    act(setMsg, () => priv('private/credit_deposit', { currency, address, amount: Number(amount), transaction_id: txid }).then(() => (setAmount(''), setTxid(''))), `Deposit ${txid} credited`);
  const load = () =>
    act(
      setMsg,
      () => priv<{ added: number; pool: number }>('private/add_deposit_addresses', { currency, addresses: lines }).then((r) => (setPool(''), r)),
      (r) => `${r.added} ${currency} addresses loaded; ${r.pool} in the pool`,
    );
  return (
    <div class="panel">
      <h2>Deposits</h2>
      <form class="inline" aria-label="Credit a deposit" onSubmit={(e) => (e.preventDefault(), void credit())}>
        <label>
          Currency
          <select aria-label="Deposit currency" value={currency} onChange={(e) => setCurrency(e.currentTarget.value)}>
            {CURRENCIES.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </label>
        <label>
          Deposit address
          <input size={24} value={address} onInput={(e) => setAddress(e.currentTarget.value.trim())} />
        </label>
        <label>
          Amount
          <input inputMode="decimal" size={10} value={amount} onInput={(e) => setAmount(e.currentTarget.value.trim())} />
        </label>
        <label>
          Transaction id
          <input size={16} value={txid} onInput={(e) => setTxid(e.currentTarget.value.trim())} />
        </label>
        <button type="submit" disabled={address === '' || txid === '' || !(Number(amount) > 0)}>
          Credit deposit
        </button>
      </form>
      <p class="muted">A transaction id is credited once: the same id again changes nothing. Addresses are loaded into the pool of the currency chosen above.</p>
      <form aria-label="Load deposit addresses" onSubmit={(e) => (e.preventDefault(), void load())}>
        <label>
          Addresses to load, one per line
          <textarea rows={3} style="display:block;width:100%;max-width:40em" value={pool} onInput={(e) => setPool(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={lines.length === 0}>
          Load addresses
        </button>
      </form>
      <Message msg={msg} />
    </div>
  );
}
