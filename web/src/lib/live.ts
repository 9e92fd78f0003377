// The app's shared connections and hooks on them: the one WebSocket, the session, and helpers that
// subscribe a component to a channel for as long as it is on screen.
import { useEffect, useState } from 'preact/hooks';
import { LiveSocket, type ConnState } from './ws.ts';
import { accessToken, onSession, session, track, waitingForSession, type Session } from './session.ts';
import { call, RpcError } from './rpc.ts';

export const live = new LiveSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws/api/v2`);
live.setToken(session()?.access ?? null);
onSession((s) => live.setToken(s?.access ?? null));

export function useSession(): Session | null {
  const [s, set] = useState(session());
  // a session another tab sent between the first render and this effect would be missed: read it again
  useEffect(() => {
    set(session());
    return onSession(set);
  }, []);
  return s;
}

/** True while a tab opened without a session waits for another tab's (lib/session.ts). */
export function useSessionWaiting(): boolean {
  const [w, set] = useState(waitingForSession());
  useEffect(() => {
    set(waitingForSession());
    return onSession(() => set(waitingForSession()));
  }, []);
  return w;
}

export function useConnState(): ConnState {
  const [s, set] = useState(live.state);
  useEffect(() => live.onState(set), []);
  return s;
}

/** The socket's open count: effects that list it re-run (reload snapshots) after every reconnect. */
export function useEpoch(): number {
  const [e, set] = useState(live.epoch);
  useEffect(() => live.onState(() => set(live.epoch)), []);
  return e;
}

/**
 * Subscribes to `channel` while mounted (null: none). Returns true once the server's subscribe
 * answer has left the channel out (a server does so for the channels it does not carry),
 * false again when a later answer (after a reconnect) takes it.
 */
export function useChannel(channel: string | null, handler: (data: unknown) => void): boolean {
  const [refused, setRefused] = useState(false);
  useEffect(() => {
    setRefused(false);
    return channel ? live.subscribe(channel, handler, (served) => setRefused(!served)) : undefined;
  }, [channel]);
  return refused;
}

/**
 * A private call with the session's token, registered until answered (a logout or a refresh waits
 * for it: lib/session.ts). Without a session nothing is sent: a screen's last reload as the trader
 * logs out would only be refused (HTTP 401).
 */
export function priv<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
  return accessToken().then((token) => (token ? track(token, call<T>(method, params, token)) : Promise.reject(new RpcError(10000, 'authorization_required', 'signed out'))));
}

/** Loads `fn` when `deps` change (and after a reconnect); `reload` runs it again. */
export function useLoad<T>(fn: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: string | null; reload: () => void } {
  const epoch = useEpoch();
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [n, setN] = useState(0);
  useEffect(() => {
    let alive = true;
    fn().then(
      (d) => alive && (setData(d), setError(null)),
      (e: unknown) => alive && setError(e instanceof Error ? e.message : String(e)),
    );
    return () => void (alive = false);
  }, [...deps, epoch, n]);
  return { data, error, reload: () => setN((x) => x + 1) };
}

/** Whether live figures are stale: the socket dropped and has not come back (not the first connect). */
export function useStale(): boolean {
  const s = useConnState();
  return s === 'reconnecting' || s === 'closed';
}
