// API keys: create with scopes (the secret is shown once, with a copy button), list, remove.
import { useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { priv, useLoad } from '../lib/live.ts';
import { errorText } from '../lib/rpc.ts';
import { useStackLabels } from '../lib/stack.ts';

interface ApiKey {
  id: number;
  client_id: string;
  client_secret?: string;
  scope: string;
  name: string;
  creation_timestamp: number;
}

const SCOPES = ['trade:read', 'trade:read_write', 'account:read', 'account:read_write'];

export function KeysScreen() {
  // on a phone the table stacks into label/value lines (lib/stack.ts)
  const stackRef = useStackLabels();
  const { data, reload } = useLoad(() => priv<ApiKey[]>('private/list_api_keys'), []);
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Set<string>>(new Set(['trade:read']));
  const [created, setCreated] = useState<ApiKey | null>(null);
  const [copied, setCopied] = useState(false);
  const [msg, setMsg] = useState<string | null>(null);

  const create = async () => {
    setMsg(null);
    setCopied(false);
    try {
      const k = await priv<ApiKey>('private/create_api_key', { scope: [...scopes].join(' '), name });
      setCreated(k);
      setName('');
      reload();
    } catch (e) {
      setMsg(errorText(e));
    }
  };
  const remove = async (id: number) => {
    setMsg(null);
    try {
      await priv('private/remove_api_key', { id });
      if (created?.id === id) setCreated(null);
      reload();
    } catch (e) {
      setMsg(errorText(e));
    }
  };
  const toggle = (s: string, on: boolean) => {
    const next = new Set(scopes);
    if (on) next.add(s);
    else next.delete(s);
    setScopes(next);
  };

  return (
    <>
      <h1>API keys</h1>
      <div class="panel">
        <h2>New key</h2>
        <form class="inline" onSubmit={(e) => (e.preventDefault(), void create())}>
          <label>
            Key name
            <input value={name} maxLength={64} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          {SCOPES.map((s) => (
            <label key={s} class="check">
              <input type="checkbox" checked={scopes.has(s)} onChange={(e) => toggle(s, e.currentTarget.checked)} /> {s}
            </label>
          ))}
          <button type="submit" class="primary" disabled={scopes.size === 0}>
            Create key
          </button>
        </form>
        {created?.client_secret && (
          <div role="status" aria-label="New key" style="margin-top:10px">
            <p>
              Client id <b class="secret">{created.client_id}</b>. The secret is shown only now:
            </p>
            <p class="secret" data-secret>
              {created.client_secret}
            </p>
            <button
              type="button"
              onClick={() =>
                void navigator.clipboard?.writeText(created.client_secret!).then(
                  () => setCopied(true),
                  () => setMsg('copying needs clipboard permission: select the text instead'),
                )
              }
            >
              Copy secret
            </button>{' '}
            {copied && <span class="ok">copied</span>}
          </div>
        )}
        {msg && <p class="error" role="alert">{msg}</p>}
      </div>
      <div class="panel">
        <h2>Your keys</h2>
        <table aria-label="API keys" class="stack" ref={stackRef}>
          <thead>
            <tr>
              <th class="l">Name</th>
              <th class="l">Client id</th>
              <th class="l">Scope</th>
              <th class="l">Created (UTC)</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {(data ?? []).map((k) => (
              <tr key={k.id} data-key-id={k.id} data-client-id={k.client_id}>
                <td class="l">{k.name}</td>
                <td class="l">{k.client_id}</td>
                <td class="l">{k.scope}</td>
                <td class="l">{fmt.utc(k.creation_timestamp)}</td>
                <td>
                  <button type="button" aria-label={`Remove key ${k.client_id}`} onClick={() => void remove(k.id)}>
                    Remove
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {data?.length === 0 && <p class="muted">No keys.</p>}
      </div>
    </>
  );
}
