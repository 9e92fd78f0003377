// Issue 32, the desk's accounts: the main account's subaccounts (private/get_subaccounts, with their
// balances) with a switch into one (public/exchange_token: lib/session.ts switchAccount) and back,
// Create subaccount; transfers between the accounts of the family
// (private/submit_transfer_to_subaccount / submit_transfer_between_subaccounts) and to another user
// (private/submit_transfer_to_user, cancelled while prepared with private/cancel_transfer_by_id);
// the transfers history (private/get_transfers).
import { useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { useStackLabels } from '../lib/stack.ts';
import { priv, useLoad, useSession } from '../lib/live.ts';
import { errorText } from '../lib/rpc.ts';
import { switchAccount } from '../lib/session.ts';

export const CURRENCIES = ['BTC', 'ETH', 'USDC'] as const;
export const decimalsOf = (c: string) => (c === 'USDC' ? 6 : 8);

interface Account {
  id: number;
  username: string;
  type: 'main' | 'subaccount';
  login_enabled: boolean;
  portfolio?: Record<string, { balance: number; equity: number; available_withdrawal_funds: number }>;
}
interface Transfer {
  id: number;
  created_timestamp: number;
  type: 'subaccount' | 'user';
  currency: string;
  amount: number;
  other_side: string;
  direction: 'payment' | 'income';
  state: string;
}

type Msg = { ok: boolean; text: string } | null;

export function Message({ msg }: { msg: Msg }) {
  if (!msg) return null;
  return (
    <p class={msg.ok ? 'ok' : 'error'} role={msg.ok ? 'status' : 'alert'}>
      {msg.text}
    </p>
  );
}

/** Runs an action, then reports it (`done`, or made from its result) or its refusal, in words, in `setMsg`. */
export async function act<T>(setMsg: (m: Msg) => void, fn: () => Promise<T>, done: string | ((r: T) => string)): Promise<boolean> {
  setMsg(null);
  try {
    const r = await fn();
    setMsg({ ok: true, text: typeof done === 'string' ? done : done(r) });
    return true;
  } catch (e) {
    setMsg({ ok: false, text: errorText(e) });
    return false;
  }
}

export function AccountsScreen() {
  const s = useSession();
  const [n, setN] = useState(0);
  const bump = () => setN((x) => x + 1);
  const sub = Boolean(s?.main);
  const accounts = useLoad(() => (sub ? Promise.resolve(null) : priv<Account[]>('private/get_subaccounts', { with_portfolio: true })), [n, sub]);
  return (
    <>
      <h1>Accounts and transfers</h1>
      <div class="row">
        <div class="panel grow">
          {sub ? <SubaccountNote /> : <Family accounts={accounts.data ?? []} error={accounts.error} onChange={bump} />}
        </div>
      </div>
      {!sub && accounts.data && accounts.data.length > 1 && (
        <div class="row">
          <ManageSubaccount accounts={accounts.data} onChange={bump} />
          <MoveForm accounts={accounts.data} onDone={bump} />
        </div>
      )}
      <div class="row">
        <TransferForm accounts={accounts.data ?? null} onDone={bump} />
        {!sub && <UserTransferForm onDone={bump} />}
      </div>
      <TransferHistory n={n} onChange={bump} />
    </>
  );
}

function SubaccountNote() {
  const s = useSession();
  const [msg, setMsg] = useState<Msg>(null);
  return (
    <>
      <h2>Subaccount</h2>
      <p>
        Signed in to the subaccount <b data-account={s?.email}>{s?.email}</b> of {s?.main?.email}.
      </p>
      <button type="button" onClick={() => void act(setMsg, () => switchAccount(null), 'Back to the main account')}>
        Back to the main account
      </button>
      <Message msg={msg} />
    </>
  );
}

function Family({ accounts, error, onChange }: { accounts: Account[]; error: string | null; onChange: () => void }) {
  const stackRef = useStackLabels();
  const [msg, setMsg] = useState<Msg>(null);
  const main = accounts.find((a) => a.type === 'main');
  const create = () => act(setMsg, () => priv<Account>('private/create_subaccount').then((a) => (onChange(), a)), 'Subaccount created');
  return (
    <>
      <div class="row" style="justify-content:space-between">
        <h2>Main account and subaccounts</h2>
        <button type="button" onClick={() => void create()}>
          Create subaccount
        </button>
      </div>
      {error && <p class="error">{error}</p>}
      <table aria-label="Accounts" class="stack" ref={stackRef}>
        <thead>
          <tr>
            <th>Id</th>
            <th class="l">Username</th>
            <th class="l">Type</th>
            {CURRENCIES.map((c) => (
              <th key={c}>{c}</th>
            ))}
            <th />
          </tr>
        </thead>
        <tbody>
          {accounts.map((a) => (
            <tr key={a.id} data-account-id={a.id}>
              <td>{a.id}</td>
              <td class="l">{a.username}</td>
              <td class="l">{a.type}</td>
              {CURRENCIES.map((c) => (
                <td key={c}>{fmt.coin(a.portfolio?.[c.toLowerCase()]?.balance, decimalsOf(c))}</td>
              ))}
              <td>
                {a.type === 'subaccount' && (
                  <button type="button" aria-label={`Switch to ${a.username}`} onClick={() => void act(setMsg, () => switchAccount({ id: a.id, username: a.username }, main?.id), `Switched to ${a.username}`)}>
                    Switch
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Message msg={msg} />
    </>
  );
}

function TransferForm({ accounts, onDone }: { accounts: Account[] | null; onDone: () => void }) {
  const s = useSession();
  const [currency, setCurrency] = useState('BTC');
  const [amount, setAmount] = useState('');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [msg, setMsg] = useState<Msg>(null);
  // a subaccount sends only its own funds, only to its main account
  const mainId = s?.main?.id;
  const family = accounts ?? [];
  const me = family.find((a) => a.type === 'main')?.id;
  const source = accounts ? Number(from || me) : null;
  const dest = accounts ? Number(to || family.find((a) => a.id !== source)?.id) : mainId;
  const send = () => {
    const params: Record<string, unknown> = { currency, amount: Number(amount), destination: dest };
    const between = source !== null && source !== me;
    if (between) params.source = source;
    return act(setMsg, () => priv(between ? 'private/submit_transfer_between_subaccounts' : 'private/submit_transfer_to_subaccount', params).then(onDone), `Sent ${amount} ${currency}`);
  };
  return (
    <div class="panel grow">
      <h2>Transfer between accounts</h2>
      <form class="inline" aria-label="Transfer between accounts" onSubmit={(e) => (e.preventDefault(), void send())}>
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
          <input inputMode="decimal" size={10} value={amount} onInput={(e) => setAmount(e.currentTarget.value.trim())} />
        </label>
        {accounts ? (
          <>
            <label>
              From
              <select value={String(source)} onChange={(e) => setFrom(e.currentTarget.value)}>
                {family.map((a) => (
                  <option key={a.id} value={String(a.id)}>
                    {a.username}
                  </option>
                ))}
              </select>
            </label>
            <label>
              To
              <select value={String(dest)} onChange={(e) => setTo(e.currentTarget.value)}>
                {family.map((a) => (
                  <option key={a.id} value={String(a.id)}>
                    {a.username}
                  </option>
                ))}
              </select>
            </label>
          </>
        ) : (
          <span class="muted">to the main account {s?.main?.email}</span>
        )}
        <button type="submit" disabled={!(Number(amount) > 0) || !dest || dest === source}>
          Transfer
        </button>
      </form>
      <Message msg={msg} />
    </div>
  );
}

function UserTransferForm({ onDone }: { onDone: () => void }) {
  const [currency, setCurrency] = useState('BTC');
  const [amount, setAmount] = useState('');
  const [to, setTo] = useState('');
  const [msg, setMsg] = useState<Msg>(null);
  // Deribit's rule: the destination is an entry of the sender's address book of type `transfer`
  const book = useLoad(() => priv<{ address: string; label: string; status: string }[]>('private/get_address_book', { currency, type: 'transfer' }), [currency]);
  const ready = (book.data ?? []).filter((e) => e.status === 'confirmed');
  const dest = to || ready[0]?.address || '';
  const send = () => act(setMsg, () => priv('private/submit_transfer_to_user', { currency, amount: Number(amount), destination: dest }).then(onDone), `Transfer of ${amount} ${currency} to ${dest} prepared`);
  return (
    <div class="panel grow">
      <h2>Transfer to another user</h2>
      <form class="inline" aria-label="Transfer to another user" onSubmit={(e) => (e.preventDefault(), void send())}>
        <label>
          Currency
          <select value={currency} onChange={(e) => (setCurrency(e.currentTarget.value), setTo(''))}>
            {CURRENCIES.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </label>
        <label>
          Amount
          <input inputMode="decimal" size={10} value={amount} onInput={(e) => setAmount(e.currentTarget.value.trim())} />
        </label>
        <label>
          To
          <select value={dest} onChange={(e) => setTo(e.currentTarget.value)}>
            {ready.map((e) => (
              <option key={e.address} value={e.address}>
                {e.label ? `${e.label}: ${e.address}` : e.address}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" disabled={!(Number(amount) > 0) || dest === ''}>
          Send
        </button>
      </form>
      <p class="muted">
        To a transfer address of your address book (Wallet, type transfer: the user&apos;s email or deposit address) once its waiting period is over. The amount leaves at once; the
        transfer can be cancelled in the history while it is prepared.
      </p>
      <Message msg={msg} />
    </div>
  );
}

/** Rename, login on or off, and remove (only when it holds nothing) one subaccount. */
function ManageSubaccount({ accounts, onChange }: { accounts: Account[]; onChange: () => void }) {
  const subs = accounts.filter((a) => a.type === 'subaccount');
  const [sid, setSid] = useState('');
  const [name, setName] = useState('');
  const [msg, setMsg] = useState<Msg>(null);
  const sub = subs.find((a) => String(a.id) === sid) ?? subs[0];
  if (!sub) return null;
  const run = (method: string, params: Record<string, unknown>, done: string) => act(setMsg, () => priv(method, params).then(onChange), done);
  return (
    <div class="panel grow">
      <h2>Manage a subaccount</h2>
      <form class="inline" aria-label="Manage a subaccount" onSubmit={(e) => (e.preventDefault(), void run('private/change_subaccount_name', { sid: sub.id, name }, `Renamed to ${name}`).then((ok) => ok && setName('')))}>
        <label>
          Subaccount
          <select value={String(sub.id)} onChange={(e) => setSid(e.currentTarget.value)}>
            {subs.map((a) => (
              <option key={a.id} value={String(a.id)}>
                {a.username}
              </option>
            ))}
          </select>
        </label>
        <label>
          New name
          <input size={14} value={name} onInput={(e) => setName(e.currentTarget.value.trim())} />
        </label>
        <button type="submit" disabled={name === ''}>
          Rename
        </button>
        <button type="button" onClick={() => void run('private/toggle_subaccount_login', { sid: sub.id, state: sub.login_enabled ? 'disable' : 'enable' }, `Login ${sub.login_enabled ? 'disabled' : 'enabled'} for ${sub.username}`)}>
          {sub.login_enabled ? 'Disable login' : 'Enable login'}
        </button>
        <button type="button" onClick={() => void run('private/remove_subaccount', { subaccount_id: sub.id }, `${sub.username} removed`).then((ok) => ok && setSid(''))}>
          Remove
        </button>
      </form>
      <p class="muted">Login {sub.login_enabled ? 'enabled' : 'disabled'}. A subaccount is removed only when it holds no money, position or order.</p>
      <Message msg={msg} />
    </div>
  );
}

/** Moves positions between two accounts of the family at a price inside the band (the mark without one). */
function MoveForm({ accounts, onDone }: { accounts: Account[]; onDone: () => void }) {
  const main = accounts.find((a) => a.type === 'main');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [instrument, setInstrument] = useState('');
  const [amount, setAmount] = useState('');
  const [price, setPrice] = useState('');
  const [msg, setMsg] = useState<Msg>(null);
  const source = Number(from || main?.id);
  const target = Number(to || accounts.find((a) => a.id !== source)?.id);
  const move = () =>
    act(
      setMsg,
      () => priv('private/move_positions', { source_uid: source, target_uid: target, trades: [{ instrument_name: instrument, amount, ...(price !== '' ? { price } : {}) }] }).then(onDone),
      `Moved ${amount} ${instrument}`,
    );
  const pick = (value: number, set: (v: string) => void) => (
    <select value={String(value)} onChange={(e) => set(e.currentTarget.value)}>
      {accounts.map((a) => (
        <option key={a.id} value={String(a.id)}>
          {a.username}
        </option>
      ))}
    </select>
  );
  return (
    <div class="panel grow">
      <h2>Move positions</h2>
      <form class="inline" aria-label="Move positions" onSubmit={(e) => (e.preventDefault(), void move())}>
        <label>
          From
          {pick(source, setFrom)}
        </label>
        <label>
          To
          {pick(target, setTo)}
        </label>
        <label>
          Instrument
          <input size={22} value={instrument} onInput={(e) => setInstrument(e.currentTarget.value.trim())} />
        </label>
        <label>
          Amount
          <input inputMode="decimal" size={8} value={amount} onInput={(e) => setAmount(e.currentTarget.value.trim())} />
        </label>
        <label>
          Price
          <input inputMode="decimal" size={8} placeholder="mark" value={price} onInput={(e) => setPrice(e.currentTarget.value.trim())} />
        </label>
        <button type="submit" disabled={instrument === '' || !(Number(amount) > 0) || source === target}>
          Move
        </button>
      </form>
      <p class="muted">The amount is a part of the source&apos;s position (long or short), which the target takes on; both accounts&apos; margin is checked, no fee.</p>
      <Message msg={msg} />
    </div>
  );
}

function TransferHistory({ n, onChange }: { n: number; onChange: () => void }) {
  const stackRef = useStackLabels();
  const [currency, setCurrency] = useState('BTC');
  const [msg, setMsg] = useState<Msg>(null);
  const { data, error } = useLoad(() => priv<{ count: number; data: Transfer[] }>('private/get_transfers', { currency, count: 50 }), [currency, n]);
  const cancel = (t: Transfer) => act(setMsg, () => priv('private/cancel_transfer_by_id', { currency: t.currency, id: t.id }).then(onChange), `Transfer ${t.id} cancelled`);
  return (
    <div class="panel">
      <div class="row" style="justify-content:space-between">
        <h2>Transfers</h2>
        <select aria-label="Transfers currency" value={currency} onChange={(e) => setCurrency(e.currentTarget.value)}>
          {CURRENCIES.map((c) => (
            <option key={c}>{c}</option>
          ))}
        </select>
      </div>
      {error && <p class="error">{error}</p>}
      {data && data.data.length === 0 && <p class="muted">No transfers in {currency}.</p>}
      {data && data.data.length > 0 && (
        <table aria-label="Transfers" class="stack" ref={stackRef}>
          <thead>
            <tr>
              <th>Id</th>
              <th class="l">Time</th>
              <th class="l">Type</th>
              <th class="l">Direction</th>
              <th class="l">Other side</th>
              <th>Amount</th>
              <th class="l">State</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {data.data.map((t) => (
              <tr key={t.id} data-transfer-id={t.id}>
                <td>{t.id}</td>
                <td class="l">{new Date(t.created_timestamp).toISOString().slice(0, 19).replace('T', ' ')}</td>
                <td class="l">{t.type}</td>
                <td class="l">{t.direction}</td>
                <td class="l">{t.other_side}</td>
                <td>{fmt.coin(t.amount, decimalsOf(t.currency))}</td>
                <td class="l">{t.state}</td>
                <td>
                  {t.type === 'user' && t.direction === 'payment' && t.state === 'prepared' && (
                    <button type="button" onClick={() => void cancel(t)}>
                      Cancel
                    </button>
                  )}
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
