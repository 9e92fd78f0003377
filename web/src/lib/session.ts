// The signed-in session: tokens from public/auth, kept in sessionStorage (survives a reload of the
// tab, is not shared with other tabs, is gone when the tab closes; docs/web.md weighs this against
// cookies and localStorage). The access token is refreshed with the refresh token (which rotates)
// before it expires, so a session stays alive while the tab is open.
import { call } from './rpc.ts';

export interface Tokens {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  scope: string;
}

export interface Session {
  email: string;
  access: string;
  refresh: string;
  /** When the access token expires (ms, the browser's clock). */
  expiresAt: number;
  admin: boolean;
}

const KEY = 'strikebook.session';
type Listener = (s: Session | null) => void;
const listeners = new Set<Listener>();
let current: Session | null = load();
let timer: ReturnType<typeof setTimeout> | undefined;

function load(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : null;
  } catch {
    return null;
  }
}

function set(s: Session | null): void {
  current = s;
  if (s) sessionStorage.setItem(KEY, JSON.stringify(s));
  else sessionStorage.removeItem(KEY);
  schedule();
  for (const l of listeners) l(s);
}

export function session(): Session | null {
  return current;
}

export function onSession(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

function fromTokens(email: string, t: Tokens): Session {
  return { email, access: t.access_token, refresh: t.refresh_token, expiresAt: Date.now() + t.expires_in * 1000, admin: t.scope.split(' ').includes('admin') };
}

export async function signIn(email: string, password: string): Promise<Session> {
  const t = await call<Tokens>('public/auth', { grant_type: 'password', username: email, password });
  const s = fromTokens(email, t);
  set(s);
  return s;
}

export async function signOut(): Promise<void> {
  const s = current;
  set(null);
  if (s) await call('private/logout', {}, s.access).catch(() => undefined);
}

let refreshing: Promise<void> | null = null;

/**
 * The access token to send now. A refresh revokes the token it replaces, so a call must not race
 * one: it waits for a refresh under way, or makes one first when the token is nearly spent (a tab
 * reopened after most of the hour), instead of being refused with 13009.
 */
export async function accessToken(): Promise<string | null> {
  const s = current;
  if (!s) return null;
  if (refreshing) await refreshing;
  else if (s.expiresAt - Date.now() < 60_000) await refresh();
  return current?.access ?? null;
}

/** Trades the refresh token for new tokens; a refused refresh ends the session. */
export function refresh(): Promise<void> {
  refreshing ??= doRefresh().finally(() => (refreshing = null));
  return refreshing;
}

async function doRefresh(): Promise<void> {
  const s = current;
  if (!s) return;
  try {
    const t = await call<Tokens>('public/auth', { grant_type: 'refresh_token', refresh_token: s.refresh });
    if (current === s) set(fromTokens(s.email, t));
  } catch (err) {
    // a network error keeps the session (retried soon); a refused token ends it
    if ((err as { code?: number }).code === 0) timer = setTimeout(() => void refresh(), 5000);
    else if (current === s) set(null);
  }
}

/** Refreshes at 80% of the access token's life (at once if it is nearly gone after a reload). */
function schedule(): void {
  if (timer !== undefined) clearTimeout(timer);
  timer = undefined;
  if (!current) return;
  const left = current.expiresAt - Date.now();
  const delay = Math.max(0, Math.min(left * 0.8, left - 60_000));
  timer = setTimeout(() => void refresh(), Math.min(delay, 2 ** 31 - 1));
}

schedule();
