// The administrator's view of a user's credit rate limits (private/get_rate_limits, set with
// private/set_rate_limits: a tier, or back to the default) and of accounts below zero
// (private/list_negative_balances). Beside admin.tsx, which is long enough.
import { useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { priv, useLoad } from '../lib/live.ts';
import { errorText } from '../lib/rpc.ts';

interface Pool {
  max_credits: number;
  refill_per_sec: number;
  cost: number;
  credits: number;
}
interface Limits {
  user_id: number;
  enabled: boolean;
  tier: number;
  custom: boolean;
  matching_engine: Pool;
  non_matching_engine: Pool;
}

export function RateLimits() {
  const [user, setUser] = useState('');
  const [limits, setLimits] = useState<Limits | null>(null);
  const [tier, setTier] = useState('1');
  const [msg, setMsg] = useState<{ ok: boolean; text: string } | null>(null);
  const run = async (fn: () => Promise<Limits>, done: string) => {
    setMsg(null);
    try {
      const l = await fn();
      setLimits(l);
      setTier(String(l.tier));
      setMsg({ ok: true, text: done });
    } catch (e) {
      setMsg({ ok: false, text: errorText(e) });
    }
  };
  const userId = Number(user);
  const show = () => run(() => priv<Limits>('private/get_rate_limits', { user_id: userId }), `Limits of user ${userId}`);
  const set = (reset: boolean) => run(() => priv<Limits>('private/set_rate_limits', reset ? { user_id: userId, reset: true } : { user_id: userId, tier: Number(tier) }), reset ? 'Back to the default tier' : `Tier ${tier} set`);
  const pool = (p: Pool) => `${p.credits.toLocaleString('en-US')} of ${p.max_credits.toLocaleString('en-US')} credits, +${p.refill_per_sec.toLocaleString('en-US')}/s, ${p.cost} a request`;
  return (
    <div class="panel grow">
      <h2>Rate limits</h2>
      <form class="inline" onSubmit={(e) => (e.preventDefault(), void show())}>
        <label>
          User id
          <input inputMode="numeric" size={8} value={user} onInput={(e) => setUser(e.currentTarget.value.trim())} />
        </label>
        <button type="submit" disabled={!(userId > 0)}>
          Show limits
        </button>
      </form>
      {limits && (
        <>
          <dl class="kv" data-rate-limits={limits.user_id}>
            <dt>Limits on</dt>
            <dd>{limits.enabled ? 'yes' : 'no (STRIKEBOOK_RATE_LIMITS=0)'}</dd>
            <dt>Tier</dt>
            <dd>
              {limits.tier}
              {limits.custom ? ' (set by an administrator)' : ' (default)'}
            </dd>
            <dt>Matching engine</dt>
            <dd>{pool(limits.matching_engine)}</dd>
            <dt>Other requests</dt>
            <dd>{pool(limits.non_matching_engine)}</dd>
          </dl>
          <form class="inline" style="margin-top:8px" onSubmit={(e) => (e.preventDefault(), void set(false))}>
            <label>
              Tier
              <select value={tier} onChange={(e) => setTier(e.currentTarget.value)}>
                {[1, 2, 3, 4].map((t) => (
                  <option key={t} value={String(t)}>
                    {t}
                  </option>
                ))}
              </select>
            </label>
            <button type="submit">Set limits</button>
            <button type="button" onClick={() => void set(true)}>
              Reset to default
            </button>
          </form>
        </>
      )}
      {msg && (
        <p class={msg.ok ? 'ok' : 'error'} role={msg.ok ? 'status' : 'alert'}>
          {msg.text}
        </p>
      )}
    </div>
  );
}

interface Negative {
  accounts: { user_id: number; email: string; currency: string; balance: number }[];
  insurance_shortfalls: { currency: string; shortfall: number }[];
}

export function NegativeBalances() {
  const { data, error, reload } = useLoad(() => priv<Negative>('private/list_negative_balances'), []);
  const none = data && data.accounts.length === 0 && data.insurance_shortfalls.length === 0;
  return (
    <div class="panel grow">
      <div class="row" style="justify-content:space-between">
        <h2>Negative balances</h2>
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </div>
      {error && <p class="error">{error}</p>}
      {none && <p class="muted">No negative balances and no insurance shortfall.</p>}
      {data && !none && (
        <table aria-label="Negative balances">
          <thead>
            <tr>
              <th class="l">Account</th>
              <th class="l">Currency</th>
              <th>Below zero</th>
            </tr>
          </thead>
          <tbody>
            {data.accounts.map((a) => (
              <tr key={`${a.user_id}${a.currency}`}>
                <td class="l">
                  {a.email} ({a.user_id})
                </td>
                <td class="l">{a.currency}</td>
                <td class="ask">{fmt.coin(a.balance, a.currency === 'USDC' ? 6 : 8)}</td>
              </tr>
            ))}
            {data.insurance_shortfalls.map((s) => (
              <tr key={`ins${s.currency}`}>
                <td class="l">insurance account</td>
                <td class="l">{s.currency}</td>
                <td class="ask">{fmt.coin(-s.shortfall, s.currency === 'USDC' ? 6 : 8)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
