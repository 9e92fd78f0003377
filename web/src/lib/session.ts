// The signed-in session: tokens from public/auth, kept in sessionStorage (survives a reload of the
// tab, is gone when the tab closes; docs/web.md weighs this against cookies and localStorage) and
// shared with the browser's other tabs of the app over a BroadcastChannel: a new tab asks the open
// ones for it, a sign-in or a refresh in one tab reaches the others, and a logout logs every tab out.
// The access token is refreshed with the refresh token (which rotates) before it expires, so a
// session stays alive while a tab is open.
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
  /**
   * A subaccount's session (public/exchange_token): the main account's session it came from, to go
   * back to. `email` is then the subaccount's username.
   */
  main?: { id: number; email: string; access: string; refresh: string; expiresAt: number; admin: boolean };
}

const KEY = 'strikebook.session';
type Listener = (s: Session | null) => void;
const listeners = new Set<Listener>();
let current: Session | null = load();
let timer: ReturnType<typeof setTimeout> | undefined;

/** What the tabs tell each other: a tab without a session asks, one with a session answers with it. */
type Message = { type: 'ask' } | { type: 'session'; session: Session } | { type: 'logout' };
const channel: BroadcastChannel | null = typeof BroadcastChannel === 'function' ? new BroadcastChannel('strikebook.session') : null;
/** How long a new tab waits for another tab's session before it shows the sign-in screen. */
const ASK_MS = 300;
/** True while a tab opened without a session waits for the other tabs' answer. */
let waiting = false;

function load(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : null;
  } catch {
    return null;
  }
}

/** A change made here: the other tabs take it too (a sign-in, a refresh). */
function set(s: Session | null): void {
  adopt(s);
  if (s) channel?.postMessage({ type: 'session', session: s } satisfies Message);
}

/** A change from here or from another tab. */
function adopt(s: Session | null): void {
  waiting = false;
  current = s;
  if (s) sessionStorage.setItem(KEY, JSON.stringify(s));
  else sessionStorage.removeItem(KEY);
  schedule();
  for (const l of listeners) l(s);
}

export function session(): Session | null {
  return current;
}

/** True while this tab, opened without a session, waits briefly for another tab's. */
export function waitingForSession(): boolean {
  return waiting;
}

if (channel) {
  channel.onmessage = (e: MessageEvent<Message>) => {
    const m = e.data;
    if (m.type === 'ask') {
      if (current) channel.postMessage({ type: 'session', session: current } satisfies Message);
    } else if (m.type === 'session') {
      // the newest session wins: a refresh elsewhere (whose old tokens are revoked), or a new sign-in
      if (!current || m.session.expiresAt > current.expiresAt) adopt(m.session);
    } else if (m.type === 'logout') {
      if (current) adopt(null);
    }
  };
  if (!current) {
    waiting = true;
    channel.postMessage({ type: 'ask' } satisfies Message);
    setTimeout(() => {
      if (!waiting) return;
      waiting = false;
      for (const l of listeners) l(current);
    }, ASK_MS);
  }
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

/** Logs out here and in every other tab of this browser (their session is the same). */
export async function signOut(): Promise<void> {
  const s = current;
  set(null);
  channel?.postMessage({ type: 'logout' } satisfies Message);
  if (s) await endToken(s.access);
  // the main session kept during a switch: its access token may have expired, so renew it to end it
  const m = s?.main;
  if (m) await call<Tokens>('public/auth', { grant_type: 'refresh_token', refresh_token: m.refresh }).then((t) => call('private/logout', {}, t.access_token)).catch(() => undefined);
}

/**
 * Calls under way with each access token (lib/live.ts priv registers them). A token is revoked
 * only once its calls have been answered: a call sent just before a logout (a screen's reload as
 * the trader clicks Log out, or Back to the main account) could otherwise reach the server after
 * it, be refused with HTTP 401 and show the trader an error for nothing.
 */
const inFlight = new Map<string, Set<Promise<unknown>>>();
/** How long a logout or a refresh waits for the calls under way with the token it ends. */
const SETTLE_MS = 3000;

/** Registers `p`, a call sent with `token`, until it settles. */
export function track<T>(token: string, p: Promise<T>): Promise<T> {
  let calls = inFlight.get(token);
  if (!calls) inFlight.set(token, (calls = new Set()));
  calls.add(p);
  const done = () => {
    calls.delete(p);
    if (calls.size === 0 && inFlight.get(token) === calls) inFlight.delete(token);
  };
  p.then(done, done);
  return p;
}

/** Resolves when every call under way with `token` has been answered (at most SETTLE_MS). */
function settled(token: string): Promise<void> {
  const calls = inFlight.get(token);
  if (!calls || calls.size === 0) return Promise.resolve();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<void>((r) => (timer = setTimeout(r, SETTLE_MS)));
  return Promise.race([Promise.allSettled([...calls]).then(() => undefined), limit]).finally(() => clearTimeout(timer));
}

/** Logs out the session of `access` (no longer the current one) once its calls are answered. */
async function endToken(access: string): Promise<void> {
  await settled(access);
  await call('private/logout', {}, access).catch(() => undefined);
}

/**
 * Switches the session to one of the main account's subaccounts (public/exchange_token with the main
 * account's refresh token; the main session is kept to come back to), or back to the main account
 * (`id` null: its refresh token renews it, and the subaccount's session is logged out).
 */
export async function switchAccount(target: { id: number; username: string } | null, mainId?: number): Promise<void> {
  const s = current;
  if (!s) return;
  if (target === null) {
    const m = s.main;
    if (!m) return;
    const t = await call<Tokens>('public/auth', { grant_type: 'refresh_token', refresh_token: m.refresh });
    set(fromTokens(m.email, t));
    await endToken(s.access);
    return;
  }
  const m = s.main ?? { id: mainId ?? 0, email: s.email, access: s.access, refresh: s.refresh, expiresAt: s.expiresAt, admin: s.admin };
  const t = await call<Tokens>('public/exchange_token', { refresh_token: m.refresh, subject_id: target.id });
  const old = s.main ? s.access : null;
  set({ ...fromTokens(target.username, t), main: m });
  // a switch from one subaccount to another ends the first one's session
  if (old) await endToken(old);
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
  // the refresh revokes the access token it replaces: the calls under way with it are answered first
  // (new calls wait for the refresh: accessToken)
  await settled(s.access);
  if (current !== s) return;
  try {
    const t = await call<Tokens>('public/auth', { grant_type: 'refresh_token', refresh_token: s.refresh });
    if (current === s) set({ ...fromTokens(s.email, t), ...(s.main ? { main: s.main } : {}) });
  } catch (err) {
    // a network error keeps the session (retried soon); a refused token ends it, unless another tab
    // refreshed the same session a moment before (its new tokens are on their way here)
    if ((err as { code?: number }).code === 0) timer = setTimeout(() => void refresh(), 5000);
    else if (current === s) {
      channel?.postMessage({ type: 'ask' } satisfies Message);
      await new Promise((r) => setTimeout(r, 1000));
      if (current === s) adopt(null);
    }
  }
}

/** Refreshes at 80% of the access token's life (at once if it is nearly gone after a reload). */
function schedule(): void {
  if (timer !== undefined) clearTimeout(timer);
  timer = undefined;
  if (!current) return;
  const left = current.expiresAt - Date.now();
  // tabs sharing the session each keep a timer: a jitter of up to 5% of the life keeps them from
  // refreshing together (the first one's new tokens reach the others, whose timers move on)
  const delay = Math.max(0, Math.min(left * (0.8 - 0.05 * Math.random()), left - 60_000));
  timer = setTimeout(() => void refresh(), Math.min(delay, 2 ** 31 - 1));
}

schedule();
