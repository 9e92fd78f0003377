// The shell: header (navigation, index, connection state, user), the routed screen, and the order
// ticket drawer that chain clicks open. Routes are listed in src/api/http/webApp.ts APP_ROUTES too.
import { useEffect, useRef } from 'preact/hooks';
import { useConnState, useSession, useSessionWaiting } from './lib/live.ts';
import { linkClick, navigate, useRoute } from './lib/router.ts';
import { signOut } from './lib/session.ts';
import { SetupScreen, SignInScreen, SignUpScreen } from './screens/auth.tsx';
import { ChainScreen } from './screens/chain.tsx';
import { InstrumentScreen } from './screens/instrument.tsx';
import { PortfolioScreen } from './screens/portfolio.tsx';
import { KeysScreen } from './screens/keys.tsx';
import { AdminScreen } from './screens/admin.tsx';
import { AccountsScreen } from './screens/accounts.tsx';
import { WalletScreen } from './screens/wallet.tsx';
import { RfqScreen } from './screens/rfq.tsx';
import { TicketDrawer } from './screens/ticket.tsx';
import { Toasts } from './screens/toasts.tsx';
import { closeTicket } from './lib/ticketStore.ts';
import { useTheme } from './lib/theme.ts';
import { useSound } from './lib/sound.ts';

const CONN_TEXT = { connecting: 'Connecting', open: 'Live', reconnecting: 'Reconnecting', closed: 'Offline' } as const;

function NavLink({ to, label, path }: { to: string; label: string; path: string }) {
  const active = path === to || path.startsWith(`${to}/`);
  return (
    <a href={to} class={active ? 'active' : ''} onClick={(e) => linkClick(e, to)}>
      {label}
    </a>
  );
}

export function App() {
  const route = useRoute();
  const s = useSession();
  // a new tab asks the open ones for their session before sending anyone to the sign-in screen
  const waiting = useSessionWaiting();
  const conn = useConnState();
  const [theme, toggleTheme] = useTheme();
  const [sound, toggleSound] = useSound();
  const path = route.path.replace(/\/$/, '') || '/';
  const publicOnly = path === '/signin' || path === '/signup' || path === '/setup';
  const needsLogin = !publicOnly && !s && !waiting;

  // where a tab was sent to the sign-in screen from: a session from another tab takes it back there
  const wanted = useRef<string | null>(null);
  useEffect(() => {
    if (path === '/' && (s || !waiting)) navigate(s ? '/chain/BTC' : '/signin', true);
    else if (needsLogin) {
      wanted.current = `${path}${location.search}`;
      navigate('/signin', true);
    } else if (s && path === '/signin' && wanted.current !== null) {
      const to = wanted.current;
      wanted.current = null;
      navigate(to, true);
    }
  }, [path, s, waiting]);
  // the chain's drawer does not follow the trader to other screens
  useEffect(() => {
    if (!path.startsWith('/chain')) closeTicket();
  }, [path]);

  let screen = null;
  if (path === '/signin') screen = <SignInScreen />;
  else if (path === '/signup') screen = <SignUpScreen />;
  else if (path === '/setup') screen = <SetupScreen />;
  else if (!s) screen = null;
  else if (path.startsWith('/chain')) screen = <ChainScreen currency={path.split('/')[2] || 'BTC'} expiry={Number(route.query.get('expiry')) || null} />;
  else if (path.startsWith('/instrument/')) screen = <InstrumentScreen name={decodeURIComponent(path.slice('/instrument/'.length))} />;
  else if (path === '/portfolio') screen = <PortfolioScreen />;
  else if (path === '/keys') screen = <KeysScreen />;
  else if (path === '/accounts') screen = <AccountsScreen />;
  else if (path === '/wallet') screen = <WalletScreen />;
  else if (path === '/rfq') screen = <RfqScreen />;
  else if (path.startsWith('/admin')) screen = s.admin ? <AdminScreen /> : <p class="error">This console is for administrators.</p>;
  else screen = <p>Nothing here. <a href="/chain/BTC" onClick={(e) => linkClick(e, '/chain/BTC')}>Go to the option chain</a>.</p>;

  return (
    <>
      <header class="top">
        <span class="brand">Strikebook</span>
        {s && (
          <nav aria-label="Main">
            <NavLink to="/chain/BTC" label="BTC chain" path={path} />
            <NavLink to="/chain/ETH" label="ETH chain" path={path} />
            <NavLink to="/portfolio" label="Portfolio" path={path} />
            <NavLink to="/rfq" label="Block RFQ" path={path} />
            <NavLink to="/accounts" label="Accounts" path={path} />
            <NavLink to="/wallet" label="Wallet" path={path} />
            <NavLink to="/keys" label="API keys" path={path} />
            {s.admin && <NavLink to="/admin" label="Admin" path={path} />}
          </nav>
        )}
        <span class="spacer" />
        <button type="button" class="link" onClick={toggleTheme} aria-pressed={theme === 'light'} aria-label="Light theme" title="Switch between the dark and the light theme">
          {theme === 'light' ? '☾ Dark' : '☀ Light'}
        </button>
        <button type="button" class="link" onClick={toggleSound} aria-pressed={sound} aria-label="Sound on fills" title="Play a short sound on each fill and liquidation (off by default)">
          {sound ? '♪ Sound on' : '♪ Sound off'}
        </button>
        <span class={`conn ${conn}`} role="status" aria-label="Connection" data-state={conn}>
          {CONN_TEXT[conn]}
        </span>
        {s && (
          <>
            <span class="muted email" aria-label="Account">
              {s.main ? `${s.email} (subaccount)` : s.email}
            </span>
            <button type="button" onClick={() => void signOut().then(() => navigate('/signin'))}>
              Log out
            </button>
          </>
        )}
      </header>
      {/* a switch of account (lib/session.ts switchAccount) remounts the screen, which reloads its data */}
      <main key={s?.email ?? ''}>{screen}</main>
      {s && <TicketDrawer />}
      <Toasts />
    </>
  );
}
