// Issue 32, the wallet: the deposit address (private/get_current_deposit_address, a new one with
// private/create_deposit_address), the address book of withdrawal and transfer addresses (private/get_address_book,
// add_to_address_book, remove_from_address_book), a withdrawal to one of its entries
// (private/withdraw, cancelled while pending with private/cancel_withdrawal) and the histories
// (private/get_withdrawals, private/get_deposits). Amounts are shown as the API sends them, on the
// currency's grid.
import { useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { useStackLabels } from '../lib/stack.ts';
import { priv, useLoad } from '../lib/live.ts';
import { CURRENCIES, Message, act, decimalsOf } from './accounts.tsx';
import { Field } from '../components/field.tsx';

type Msg = { ok: boolean; text: string } | null;
interface Entry {
  address: string;
  label: string;
  status: 'waiting' | 'confirmed';
}
interface Withdrawal {
  id: number;
  address: string;
  amount: number;
  currency: string;
  state: string;
  transaction_id: string | null;
  created_timestamp: number;
}
interface Deposit {
  address: string;
  amount: number;
  currency: string;
  state: string;
  transaction_id: string | null;
  received_timestamp: number;
}

const time = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
const PENDING = new Set(['unconfirmed', 'confirmed']);

export function WalletScreen() {
  const [currency, setCurrency] = useState('BTC');
  const [n, setN] = useState(0);
  const bump = () => setN((x) => x + 1);
  return (
    <>
      <div class="row" style="justify-content:space-between;align-items:center">
        <h1>Wallet</h1>
        <div class="tabs" role="tablist" aria-label="Wallet currency">
          {CURRENCIES.map((c) => (
            <button key={c} role="tab" type="button" aria-selected={c === currency} onClick={() => setCurrency(c)}>
              {c}
            </button>
          ))}
        </div>
      </div>
      <div class="row">
        <DepositAddress currency={currency} />
        <AddressBook currency={currency} n={n} onChange={bump} />
      </div>
      <Withdrawals currency={currency} n={n} onChange={bump} />
      <Deposits currency={currency} n={n} />
    </>
  );
}

function DepositAddress({ currency }: { currency: string }) {
  const [msg, setMsg] = useState<Msg>(null);
  const { data, reload } = useLoad(() => priv<{ address: string } | null>('private/get_current_deposit_address', { currency }), [currency]);
  return (
    <div class="panel grow">
      <h2>Deposit {currency}</h2>
      {data ? (
        <p>
          Send {currency} to <code class="addr" aria-label="Deposit address">{data.address}</code>
        </p>
      ) : (
        <p class="muted">No deposit address yet.</p>
      )}
      <button type="button" onClick={() => void act(setMsg, () => priv('private/create_deposit_address', { currency }).then(reload), 'New deposit address')}>
        New deposit address
      </button>
      <Message msg={msg} />
    </div>
  );
}

function AddressBook({ currency, n, onChange }: { currency: string; n: number; onChange: () => void }) {
  const stackRef = useStackLabels();
  const [address, setAddress] = useState('');
  const [label, setLabel] = useState('');
  // withdrawal addresses, and transfer addresses (another user's email or deposit address: Accounts, Transfer to another user)
  const [type, setType] = useState<'withdrawal' | 'transfer'>('withdrawal');
  const [msg, setMsg] = useState<Msg>(null);
  const { data, error } = useLoad(() => priv<Entry[]>('private/get_address_book', { currency, type }), [currency, type, n]);
  const add = () => act(setMsg, () => priv('private/add_to_address_book', { currency, type, address, label }).then(() => (setAddress(''), setLabel(''), onChange())), `${address} added`);
  const remove = (e: Entry) => act(setMsg, () => priv('private/remove_from_address_book', { currency, type, address: e.address }).then(onChange), `${e.address} removed`);
  return (
    <div class="panel grow">
      <div class="row" style="justify-content:space-between">
        <h2>Address book</h2>
        <select aria-label="Address type" value={type} onChange={(e) => setType(e.currentTarget.value as 'withdrawal' | 'transfer')}>
          <option value="withdrawal">withdrawal</option>
          <option value="transfer">transfer (to a user)</option>
        </select>
      </div>
      {error && <p class="error">{error}</p>}
      {data && data.length === 0 && <p class="muted">No {currency} {type} address yet.</p>}
      {data && data.length > 0 && (
        <table aria-label="Address book" class="stack" ref={stackRef}>
          <thead>
            <tr>
              <th class="l">Label</th>
              <th class="l">Address</th>
              <th class="l">Status</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {data.map((e) => (
              <tr key={e.address}>
                <td class="l">{e.label}</td>
                <td class="l addr">{e.address}</td>
                <td class="l">{e.status}</td>
                <td>
                  <button type="button" aria-label={`Remove ${e.address}`} onClick={() => void remove(e)}>
                    Remove
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form class="inline" aria-label="Add an address" style="margin-top:8px" onSubmit={(e) => (e.preventDefault(), void add())}>
        <Field caption="Address" size={24} value={address} trim onValue={setAddress} />
        <Field caption="Label" size={12} value={label} onValue={setLabel} />
        <button type="submit" disabled={address === ''}>
          Add address
        </button>
      </form>
      <Message msg={msg} />
    </div>
  );
}

function Withdrawals({ currency, n, onChange }: { currency: string; n: number; onChange: () => void }) {
  const stackRef = useStackLabels();
  const [to, setTo] = useState('');
  const [amount, setAmount] = useState('');
  const [msg, setMsg] = useState<Msg>(null);
  const book = useLoad(() => priv<Entry[]>('private/get_address_book', { currency, type: 'withdrawal' }), [currency, n]);
  const list = useLoad(() => priv<{ count: number; data: Withdrawal[] }>('private/get_withdrawals', { currency, count: 50 }), [currency, n]);
  const ready = (book.data ?? []).filter((e) => e.status === 'confirmed');
  const address = to || ready[0]?.address || '';
  const send = () => act(setMsg, () => priv('private/withdraw', { currency, address, amount: Number(amount) }).then(() => (setAmount(''), onChange())), `Withdrawal of ${amount} ${currency} requested`);
  const cancel = (w: Withdrawal) => act(setMsg, () => priv('private/cancel_withdrawal', { currency, id: w.id }).then(onChange), `Withdrawal ${w.id} cancelled`);
  return (
    <div class="panel">
      <h2>Withdraw {currency}</h2>
      <form class="inline" aria-label="Withdraw" onSubmit={(e) => (e.preventDefault(), void send())}>
        <label>
          To
          <select value={address} onChange={(e) => setTo(e.currentTarget.value)}>
            {ready.map((e) => (
              <option key={e.address} value={e.address}>
                {e.label ? `${e.label}: ${e.address}` : e.address}
              </option>
            ))}
          </select>
        </label>
        <Field caption="Amount" inputMode="decimal" size={10} value={amount} trim onValue={setAmount} />
        <button type="submit" disabled={address === '' || !(Number(amount) > 0)}>
          Withdraw
        </button>
      </form>
      {ready.length === 0 && <p class="muted">Withdrawals go to an address of the address book once its waiting period is over.</p>}
      <Message msg={msg} />
      {list.error && <p class="error">{list.error}</p>}
      {list.data && list.data.data.length > 0 && (
        <table aria-label="Withdrawals" class="stack" ref={stackRef}>
          <thead>
            <tr>
              <th>Id</th>
              <th class="l">Time</th>
              <th class="l">Address</th>
              <th>Amount</th>
              <th class="l">State</th>
              <th class="l">Transaction</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.data.data.map((w) => (
              <tr key={w.id} data-withdrawal-id={w.id}>
                <td>{w.id}</td>
                <td class="l">{time(w.created_timestamp)}</td>
                <td class="l addr">{w.address}</td>
                <td>{fmt.coin(w.amount, decimalsOf(w.currency))}</td>
                <td class="l">{w.state}</td>
                <td class="l">{w.transaction_id ?? ''}</td>
                <td>
                  {PENDING.has(w.state) && (
                    <button type="button" aria-label={`Cancel withdrawal ${w.id}`} onClick={() => void cancel(w)}>
                      Cancel
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function Deposits({ currency, n }: { currency: string; n: number }) {
  const stackRef = useStackLabels();
  const { data, error } = useLoad(() => priv<{ count: number; data: Deposit[] }>('private/get_deposits', { currency, count: 50 }), [currency, n]);
  return (
    <div class="panel">
      <h2>Deposits {currency}</h2>
      {error && <p class="error">{error}</p>}
      {data && data.data.length === 0 && <p class="muted">No {currency} deposits.</p>}
      {data && data.data.length > 0 && (
        <table aria-label="Deposits" class="stack" ref={stackRef}>
          <thead>
            <tr>
              <th class="l">Time</th>
              <th class="l">Address</th>
              <th>Amount</th>
              <th class="l">State</th>
              <th class="l">Transaction</th>
            </tr>
          </thead>
          <tbody>
            {data.data.map((d, i) => (
              <tr key={`${d.transaction_id ?? ''}${i}`}>
                <td class="l">{time(d.received_timestamp)}</td>
                <td class="l addr">{d.address}</td>
                <td>{fmt.coin(d.amount, decimalsOf(d.currency))}</td>
                <td class="l">{d.state}</td>
                <td class="l">{d.transaction_id ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
