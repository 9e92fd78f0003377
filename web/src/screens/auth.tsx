// Sign-in, sign-up with an invite code, and the first administrator (bootstrap token).
import { useState } from 'preact/hooks';
import { call, errorText } from '../lib/rpc.ts';
import { linkClick, navigate } from '../lib/router.ts';
import { signIn } from '../lib/session.ts';

function useForm() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

export function SignInScreen() {
  const f = useForm();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  return (
    <div class="center panel">
      <h1>Sign in</h1>
      <form class="stack" onSubmit={(e) => (e.preventDefault(), void f.run(async () => (await signIn(email, password), navigate('/chain/BTC'))))}>
        <label>
          Email
          <input type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <label>
          Password
          <input type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </label>
        <button class="primary" type="submit" disabled={f.busy}>
          Sign in
        </button>
        {f.error && <p class="error" role="alert">{f.error}</p>}
      </form>
      <p class="muted">
        New here? <a href="/signup" onClick={(e) => linkClick(e, '/signup')}>Sign up with an invite code</a>. First start of the exchange?{' '}
        <a href="/setup" onClick={(e) => linkClick(e, '/setup')}>Create the administrator</a>.
      </p>
    </div>
  );
}

export function SignUpScreen() {
  const f = useForm();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState(new URLSearchParams(location.search).get('code') ?? '');
  return (
    <div class="center panel">
      <h1>Sign up</h1>
      <form
        class="stack"
        onSubmit={(e) => (
          e.preventDefault(),
          void f.run(async () => {
            await call('private/create_user', { email, password, invite_code: code.trim() });
            await signIn(email, password);
            navigate('/portfolio');
          })
        )}
      >
        <label>
          Invite code
          <input required value={code} onInput={(e) => setCode(e.currentTarget.value)} />
        </label>
        <label>
          Email
          <input type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <label>
          Password (8 characters or more)
          <input type="password" autocomplete="new-password" minLength={8} required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </label>
        <button class="primary" type="submit" disabled={f.busy}>
          Create account
        </button>
        {f.error && <p class="error" role="alert">{f.error}</p>}
      </form>
      <p class="muted">
        Have an account? <a href="/signin" onClick={(e) => linkClick(e, '/signin')}>Sign in</a>.
      </p>
    </div>
  );
}

export function SetupScreen() {
  const f = useForm();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [token, setToken] = useState('');
  return (
    <div class="center panel">
      <h1>Create the administrator</h1>
      <p class="muted">Only while the exchange has no administrator: the bootstrap token is in the server's log (or STRIKEBOOK_BOOTSTRAP_TOKEN).</p>
      <form
        class="stack"
        onSubmit={(e) => (
          e.preventDefault(),
          void f.run(async () => {
            await call('private/create_admin', { email, password, bootstrap_token: token.trim() });
            await signIn(email, password);
            navigate('/admin');
          })
        )}
      >
        <label>
          Bootstrap token
          <input required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
        </label>
        <label>
          Email
          <input type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <label>
          Password (8 characters or more)
          <input type="password" autocomplete="new-password" minLength={8} required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </label>
        <button class="primary" type="submit" disabled={f.busy}>
          Create administrator
        </button>
        {f.error && <p class="error" role="alert">{f.error}</p>}
      </form>
    </div>
  );
}
