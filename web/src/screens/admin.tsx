// The administrator's console: users, invite codes, the index and volatility, halting instruments,
// expiries and settlement history, the insurance account, and a health panel from /health and
// /metrics. Every action is an admin-scoped API call, the same a script would make.
import { useEffect, useState } from 'preact/hooks';
import { fitSmile, type Smile } from '../lib/smileFit.ts';
import * as fmt from '../lib/format.ts';
import { serverNow, syncClock } from '../lib/clock.ts';
import { priv, useLoad } from '../lib/live.ts';
import { call, errorText } from '../lib/rpc.ts';
import { useStackLabels } from '../lib/stack.ts';
import { NegativeBalances, RateLimits } from './adminLimits.tsx';
import { HealthPanel, Users, fetchHealth } from './adminStatus.tsx';
import { DepositDesk, WithdrawalQueue } from './adminWallet.tsx';

interface Invite {
  code: string;
  max_uses: number;
  uses: number;
  expires_at: number;
  note: string | null;
  creation_timestamp: number;
  revoked?: boolean;
}

/** A form's outcome line: the API's words on failure. */
function useAction() {
  const [msg, setMsg] = useState<{ ok: boolean; text: string } | null>(null);
  const run = async (fn: () => Promise<string>) => {
    setMsg(null);
    try {
      setMsg({ ok: true, text: await fn() });
    } catch (e) {
      setMsg({ ok: false, text: errorText(e) });
    }
  };
  const view = msg && (
    <p class={msg.ok ? 'ok' : 'error'} role={msg.ok ? 'status' : 'alert'}>
      {msg.text}
    </p>
  );
  return { run, view };
}

function Invites() {
  // expiry is judged on the exchange's clock (a test server's is pinned), hence the clock sync
  const { data, reload } = useLoad(() => syncClock().then(() => priv<Invite[]>('private/list_invite_codes', { count: 100 })), []);
  const [uses, setUses] = useState('1');
  const [days, setDays] = useState('7');
  const [note, setNote] = useState('');
  const [code, setCode] = useState<string | null>(null);
  const a = useAction();
  // on a phone the table stacks into label/value lines (lib/stack.ts)
  const stackRef = useStackLabels();
  const generate = () =>
    a.run(async () => {
      const inv = await priv<Invite>('private/generate_invite_code', { max_uses: Number(uses), expires_in: Math.round(Number(days) * 86400), ...(note ? { note } : {}) });
      setCode(inv.code);
      reload();
      return `Invite code created (${inv.max_uses} use${inv.max_uses > 1 ? 's' : ''})`;
    });
  const copy = (c: string) =>
    a.run(async () => {
      // the sign-up link, which carries the code: what an invitee needs
      await navigator.clipboard.writeText(`${location.origin}/signup?code=${encodeURIComponent(c)}`);
      return 'Sign-up link copied';
    });
  const revoke = (c: string) =>
    a.run(async () => {
      await priv('private/revoke_invite_code', { code: c });
      reload();
      return 'Invite code revoked';
    });
  return (
    <div class="panel grow">
      <h2>Invite codes</h2>
      <form class="inline" onSubmit={(e) => (e.preventDefault(), void generate())}>
        <label>
          Uses
          <input type="number" min={1} max={10000} value={uses} onInput={(e) => setUses(e.currentTarget.value)} />
        </label>
        <label>
          Expires in (days)
          <input type="number" min={1} max={365} step="any" value={days} onInput={(e) => setDays(e.currentTarget.value)} />
        </label>
        <label>
          Note
          <input maxLength={128} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary">
          Generate invite
        </button>
      </form>
      {code && (
        <p>
          New code: <span class="secret" data-invite-code={code}>{code}</span>
        </p>
      )}
      {a.view}
      <table aria-label="Invite codes" class="stack" ref={stackRef}>
        <thead>
          <tr>
            <th class="l">Code</th>
            <th>Uses</th>
            <th class="l">Expires (UTC)</th>
            <th class="l">Note</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(data ?? []).map((i) => {
            // only a code that can still be used is worth revoking, copying or sharing
            const state = i.revoked ? 'revoked' : i.uses >= i.max_uses ? 'used' : i.expires_at <= serverNow() ? 'expired' : null;
            return (
              <tr key={i.code} data-invite={i.code}>
                <td class="l">
                  <code class="invite-code">{i.code}</code>
                </td>
                <td>
                  {i.uses}/{i.max_uses}
                </td>
                <td class="l">{fmt.utc(i.expires_at)}</td>
                <td class="l">{i.note ?? ''}</td>
                <td class="l">
                  {state ? (
                    <span class="muted">{state}</span>
                  ) : (
                    <>
                      <button type="button" onClick={() => void copy(i.code)}>
                        Copy
                      </button>{' '}
                      <a href={`/signup?code=${encodeURIComponent(i.code)}`}>Sign-up link</a>{' '}
                      <button type="button" onClick={() => void revoke(i.code)}>
                        Revoke
                      </button>
                    </>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** The smile of a currency from three marks of its latest expiry, near 0.9, 1 and 1.1 times the index. */
async function currentSmile(currency: string): Promise<Smile | null> {
  const list = await call<{ instrument_name: string; strike: number; expiration_timestamp: number; option_type: string }[]>('public/get_instruments', { currency, kind: 'option' });
  const calls = list.filter((i) => i.option_type === 'call');
  if (calls.length === 0) return null;
  const last = Math.max(...calls.map((i) => i.expiration_timestamp));
  const series = calls.filter((i) => i.expiration_timestamp === last);
  const F = (await call<{ index_price: number }>('public/get_index_price', { index_name: `${currency.toLowerCase()}_usd` })).index_price;
  const picks = [...new Map([0.9, 1, 1.1].map((x) => {
    const best = series.reduce((b, i) => (Math.abs(i.strike - x * F) < Math.abs(b.strike - x * F) ? i : b));
    return [best.strike, best] as const;
  })).values()];
  const tickers = await Promise.all(picks.map((i) => call<{ mark_iv: number }>('public/ticker', { instrument_name: i.instrument_name })));
  return fitSmile(F, picks.map((i, k) => ({ strike: i.strike, iv: tickers[k].mark_iv })));
}

function Market() {
  const idx = useAction();
  const vol = useAction();
  const halt = useAction();
  const [indexName, setIndexName] = useState('btc_usd');
  const [price, setPrice] = useState('');
  const [volCurrency, setVolCurrency] = useState('BTC');
  const [atm, setAtm] = useState('');
  const [skew, setSkew] = useState('');
  const [curv, setCurv] = useState('');
  // the form starts from the smile in force, read back from the marks (no method returns it)
  useEffect(() => {
    let alive = true;
    void currentSmile(volCurrency).then((sm) => {
      if (!alive || !sm) return;
      setAtm(String(sm.atm_vol));
      setSkew(String(sm.skew));
      setCurv(String(sm.curvature));
    });
    return () => void (alive = false);
  }, [volCurrency]);
  const [inst, setInst] = useState('');
  // "Set index" only where it works: the manual feed (an automatic feed's next print would overwrite it, and the API refuses it)
  const { data: health } = useLoad(fetchHealth, []);
  const { data: indices, reload } = useLoad(() => Promise.all(['btc_usd', 'eth_usd'].map((n) => call<{ index_price: number }>('public/get_index_price', { index_name: n }))), []);
  return (
    <div class="panel grow">
      <h2>Index, volatility, trading</h2>
      <p>
        Index: btc_usd <b>{fmt.usd(indices?.[0].index_price)}</b>, eth_usd <b>{fmt.usd(indices?.[1].index_price)}</b>
      </p>
      {health?.index_feed === 'manual' ? (
        <form
          class="inline"
          onSubmit={(e) => (
            e.preventDefault(),
            void idx.run(async () => {
              await priv('private/set_index_price', { index_name: indexName, price: fmt.parseInput(price) });
              reload();
              return `${indexName} set to ${price}`;
            })
          )}
        >
          <label>
            Index
            <select value={indexName} onChange={(e) => setIndexName(e.currentTarget.value)}>
              <option value="btc_usd">btc_usd</option>
              <option value="eth_usd">eth_usd</option>
            </select>
          </label>
          <label>
            Index price (USD)
            <input inputMode="decimal" value={price} onInput={(e) => setPrice(e.currentTarget.value)} />
          </label>
          <button type="submit">Set index (manual feed)</button>
        </form>
      ) : (
        health && (
          <p class="muted" aria-label="Index feed">
            The index comes from the {health.index_feed ?? 'automatic'} feed; setting it by hand needs STRIKEBOOK_INDEX_FEED=manual.
          </p>
        )
      )}
      {idx.view}
      <form
        class="inline"
        style="margin-top:10px"
        onSubmit={(e) => (
          e.preventDefault(),
          void vol.run(async () => {
            await priv('private/set_volatility', { currency: volCurrency, atm_vol: Number(atm), skew: Number(skew), curvature: Number(curv) });
            return `${volCurrency} smile set`;
          })
        )}
      >
        <label>
          Volatility currency
          <select value={volCurrency} onChange={(e) => setVolCurrency(e.currentTarget.value)}>
            <option>BTC</option>
            <option>ETH</option>
          </select>
        </label>
        <label>
          ATM vol (0.6 = 60%)
          <input inputMode="decimal" size={6} value={atm} onInput={(e) => setAtm(e.currentTarget.value)} />
        </label>
        <label>
          Skew
          <input inputMode="decimal" size={6} value={skew} onInput={(e) => setSkew(e.currentTarget.value)} />
        </label>
        <label>
          Curvature
          <input inputMode="decimal" size={6} value={curv} onInput={(e) => setCurv(e.currentTarget.value)} />
        </label>
        <button type="submit">Set volatility</button>
      </form>
      {vol.view}
      <form class="inline" style="margin-top:10px" onSubmit={(e) => e.preventDefault()}>
        <label>
          Instrument to halt or resume
          <input size={24} value={inst} onInput={(e) => setInst(e.currentTarget.value.trim())} placeholder="BTC-27MAR26-100000-C" />
        </label>
        <button type="button" onClick={() => void halt.run(async () => (await priv('private/halt_instrument', { instrument_name: inst }), `${inst} halted`))}>
          Halt
        </button>
        <button type="button" onClick={() => void halt.run(async () => (await priv('private/resume_instrument', { instrument_name: inst }), `${inst} resumed`))}>
          Resume
        </button>
      </form>
      {halt.view}
    </div>
  );
}

function Expiries() {
  const { data } = useLoad(
    () =>
      Promise.all([
        call<Record<string, number[]>>('public/get_expiration_timestamps', { currency: 'any' }),
        ...['btc_usd', 'eth_usd'].map((n) => call<{ data: { date: string; delivery_price: number }[] }>('public/get_delivery_prices', { index_name: n, count: 10 })),
      ]),
    [],
  );
  const [exp, btc, eth] = data ?? [];
  return (
    <div class="panel grow">
      <h2>Expiries and settlements</h2>
      <div class="row">
        {['BTC', 'ETH'].map((c) => (
          <div key={c} class="grow">
            <b>{c} expiries</b>
            <ul aria-label={`${c} expiries`}>
              {((exp as Record<string, number[]> | undefined)?.[c] ?? []).map((t) => (
                <li key={t}>
                  {fmt.expiryCode(t)} <span class="muted">{fmt.utc(t)}</span>
                </li>
              ))}
            </ul>
          </div>
        ))}
        {[
          ['btc_usd', btc],
          ['eth_usd', eth],
        ].map(([n, d]) => (
          <div key={n as string} class="grow">
            <b>{n as string} delivery prices</b>
            <table aria-label={`${n} settlements`}>
              <tbody>
                {((d as { data: { date: string; delivery_price: number }[] } | undefined)?.data ?? []).map((r) => (
                  <tr key={r.date}>
                    <td class="l">{r.date}</td>
                    <td>{fmt.usd(r.delivery_price)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {((d as { data: unknown[] } | undefined)?.data.length ?? 0) === 0 && <p class="muted">No settlements yet.</p>}
          </div>
        ))}
      </div>
    </div>
  );
}

function Insurance() {
  const { data } = useLoad(() => priv<{ currency: string; balance: number; shortfall: number; positions: unknown[] }[]>('private/get_insurance_fund', { count: 5 }), []);
  return (
    <div class="panel grow">
      <h2>Insurance account</h2>
      <table aria-label="Insurance account">
        <thead>
          <tr>
            <th class="l">Currency</th>
            <th>Balance</th>
            <th>Shortfall</th>
            <th>Positions held</th>
          </tr>
        </thead>
        <tbody>
          {(data ?? []).map((r) => (
            <tr key={r.currency}>
              <td class="l">{r.currency}</td>
              <td>{fmt.coin(r.balance, r.currency === 'USDC' ? 6 : 8)}</td>
              <td>{fmt.coin(r.shortfall, r.currency === 'USDC' ? 6 : 8)}</td>
              <td>{r.positions.length}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function AdminScreen() {
  return (
    <>
      <h1>Administration</h1>
      <Users />
      <WithdrawalQueue />
      <DepositDesk />
      <div class="row">
        <Invites />
        <Market />
      </div>
      <div class="row">
        <HealthPanel />
        <Insurance />
      </div>
      <div class="row">
        <Expiries />
      </div>
      <div class="row">
        <RateLimits />
        <NegativeBalances />
      </div>
    </>
  );
}
