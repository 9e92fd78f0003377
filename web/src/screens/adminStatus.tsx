// The administrator's users (balances, credit tier, Disable/Enable) and the server's status (leader
// or standby, lease, snapshots, journal retention, index feed) from /health and /metrics. Beside
// admin.tsx, which is long enough. Every action is an admin-scoped API call.
import { useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { priv, useLoad, useSession } from '../lib/live.ts';
import { errorText } from '../lib/rpc.ts';
import { useStackLabels } from '../lib/stack.ts';

export interface Health {
  status: string;
  seq: number;
  role: 'leader' | 'standby';
  term?: number;
  lease?: { held: boolean; age_ms: number; valid_for_ms: number };
  leader?: string;
  lag?: { seq: number; ms: number };
  last_commit_age_ms?: number | null;
  mode?: 'sandbox' | 'production';
  index_feed?: 'simulated' | 'manual' | 'venues';
  storage?: 'sqlite' | 'postgres';
  journal?: { retention: string; snapshot_every: number };
  snapshots?: { taken: number; failed: number; last_seq: number | null; last_bytes: number | null; last_age_ms: number | null };
  version?: string;
}

/** /health, read by the status panel and by the index form (which exists only for the manual feed). */
export function fetchHealth(): Promise<Health> {
  return fetch('/health').then((r) => r.json() as Promise<Health>);
}

interface UserRow {
  user_id: number;
  email: string;
  role: string;
  creation_timestamp: number;
  disabled: boolean;
  tier?: number;
  balances?: Record<string, number>;
}

const CURRENCIES = ['BTC', 'ETH', 'USDC'];

export function Users() {
  const stackRef = useStackLabels();
  const me = useSession();
  const { data, reload } = useLoad(() => priv<{ users: UserRow[]; total: number }>('private/list_users', { count: 100 }), []);
  const [msg, setMsg] = useState<{ ok: boolean; text: string } | null>(null);
  const toggle = async (u: UserRow) => {
    setMsg(null);
    try {
      await priv('private/set_user_disabled', { user_id: u.user_id, disabled: !u.disabled });
      setMsg({ ok: true, text: `${u.email} ${u.disabled ? 'enabled' : 'disabled'}` });
      reload();
    } catch (e) {
      setMsg({ ok: false, text: errorText(e) });
    }
  };
  return (
    <div class="panel grow">
      <h2>Users</h2>
      {data && data.total > data.users.length && <p class="muted">The first {data.users.length} of {data.total}.</p>}
      <table aria-label="Users" class="stack" ref={stackRef}>
        <thead>
          <tr>
            <th class="l">Id</th>
            <th class="l">Email</th>
            <th class="l">Role</th>
            <th>Tier</th>
            {CURRENCIES.map((c) => (
              <th key={c}>{c}</th>
            ))}
            <th class="l">Created (UTC)</th>
            <th class="l">State</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(data?.users ?? []).map((u) => (
            <tr key={u.user_id} class={u.disabled ? 'dim' : ''}>
              <td class="l">{u.user_id}</td>
              <td class="l">{u.email}</td>
              <td class="l">{u.role}</td>
              <td>{u.tier ?? '—'}</td>
              {CURRENCIES.map((c) => (
                <td key={c}>{u.balances ? fmt.coin(u.balances[c], c === 'USDC' ? 6 : 8) : '—'}</td>
              ))}
              <td class="l">{fmt.utc(u.creation_timestamp)}</td>
              <td class={u.disabled ? 'l error' : 'l'}>{u.disabled ? 'disabled' : 'active'}</td>
              <td class="l">
                {/* the server refuses an administrator disabling itself: not offered */}
                {u.email !== me?.email && (
                  <button type="button" onClick={() => void toggle(u)} aria-label={`${u.disabled ? 'Enable' : 'Disable'} ${u.email}`}>
                    {u.disabled ? 'Enable' : 'Disable'}
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {msg && (
        <p class={msg.ok ? 'ok' : 'error'} role={msg.ok ? 'status' : 'alert'}>
          {msg.text}
        </p>
      )}
    </div>
  );
}

/** Metric lines worth a glance, from the Prometheus text at /metrics (when the server lets this page read it: docs/security.md). */
const HEALTH_METRICS = ['strikebook_users', 'strikebook_open_orders', 'strikebook_instruments', 'strikebook_ws_connections', 'strikebook_journal_records_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_p99_seconds'];

const ago = (ms: number | null | undefined) => (ms === null || ms === undefined ? '—' : ms < 1000 ? `${ms} ms ago` : ms < 120_000 ? `${fmt.fixed(ms / 1000, 1)} s ago` : `${fmt.fixed(ms / 60_000, 0)} min ago`);
const mib = (b: number) => `${fmt.fixed(b / 1048576, 1)} MiB`;

export function HealthPanel() {
  const { data, error, reload } = useLoad(async () => {
    const [h, m] = await Promise.all([fetchHealth(), fetch('/metrics').then((r) => (r.ok ? r.text() : ''))]);
    const values = new Map<string, number>();
    for (const line of m.split('\n')) {
      if (line.startsWith('#') || !line) continue;
      const [key, value] = line.split(' ');
      const name = key.split('{')[0];
      if (HEALTH_METRICS.includes(name)) values.set(name, (values.get(name) ?? 0) + Number(value));
    }
    return { h, values, metrics: m !== '' };
  }, []);
  const h = data?.h;
  const snaps = h?.snapshots;
  return (
    <div class="panel grow">
      <div class="row" style="justify-content:space-between">
        <h2>Health</h2>
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </div>
      {error && <p class="error">{error}</p>}
      {data && h && (
        <dl class="kv" aria-label="Health">
          <dt>Status</dt>
          <dd class={h.status === 'ok' ? 'ok' : 'error'}>{h.status}</dd>
          <dt>Role</dt>
          <dd>
            {h.role}
            {h.term !== undefined && ` (term ${h.term})`}
            {h.role === 'standby' && h.leader && ` of ${h.leader}`}
          </dd>
          {h.lease && (
            <>
              <dt>Lease</dt>
              <dd class={h.lease.held ? '' : 'error'}>{h.lease.held ? `held, renewed ${ago(h.lease.age_ms)}, valid ${fmt.fixed(h.lease.valid_for_ms / 1000, 1)} s` : 'not held'}</dd>
            </>
          )}
          {h.lag && (
            <>
              <dt>Behind the leader</dt>
              <dd>
                {h.lag.seq} records, {fmt.fixed(h.lag.ms / 1000, 1)} s
              </dd>
            </>
          )}
          <dt>Journal seq</dt>
          <dd>{h.seq}</dd>
          {h.last_commit_age_ms !== undefined && (
            <>
              <dt>Last commit</dt>
              <dd>{ago(h.last_commit_age_ms)}</dd>
            </>
          )}
          {h.journal && (
            <>
              <dt>Journal</dt>
              <dd>
                {h.storage ?? ''} · retention {h.journal.retention} · snapshot every {h.journal.snapshot_every.toLocaleString('en-US')} records
              </dd>
            </>
          )}
          {snaps && (
            <>
              <dt>Snapshots</dt>
              <dd class={snaps.failed > 0 ? 'error' : ''}>
                {snaps.taken} since start{snaps.failed > 0 ? `, ${snaps.failed} failed` : ''}
                {snaps.last_seq !== null && `; last at seq ${snaps.last_seq}, ${mib(snaps.last_bytes ?? 0)}, ${ago(snaps.last_age_ms)}`}
              </dd>
            </>
          )}
          {h.index_feed && (
            <>
              <dt>Index feed</dt>
              <dd>{h.index_feed}</dd>
            </>
          )}
          {h.mode && (
            <>
              <dt>Mode</dt>
              <dd>
                {h.mode}
                {h.version ? ` · ${h.version}` : ''}
              </dd>
            </>
          )}
          {[...data.values].map(([k, v]) => (
            <>
              <dt key={`t${k}`}>{k}</dt>
              <dd key={`d${k}`}>{k.endsWith('_bytes') ? mib(v) : fmt.fixed(v, k.endsWith('_seconds') ? 4 : 0)}</dd>
            </>
          ))}
        </dl>
      )}
      {data && !data.metrics && <p class="muted">/metrics is for operators: a token or a port of its own (STRIKEBOOK_METRICS_TOKEN, STRIKEBOOK_METRICS_PORT); a sandbox also answers this host directly, not through a proxy.</p>}
    </div>
  );
}
