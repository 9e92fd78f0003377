// The app's shared connections and hooks on them: the one WebSocket, the session, and helpers that
// subscribe a component to a channel for as long as it is on screen.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { LiveSocket, type ConnState } from './ws.ts';
import { notCaughtUp, overlay, withHeard, type OrderEvents } from './orderEvents.ts';
import type { Order } from './types.ts';
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
 * A reload trigger for a screen that shows a snapshot loaded over HTTP and kept fresh by change
 * events: it counts up (debounced by `debounceMs`) on every event of `channels` and whenever a
 * subscribe answer takes one of them. The latter closes the gap between a screen's first load and
 * its subscription being live (a change in between was in neither: an order placed then never
 * showed), and the same gap after every reconnect. Null channels are skipped (no session yet).
 */
export function useReloadOn(channels: (string | null)[], debounceMs = 50): number {
  const [n, setN] = useState(0);
  const key = channels.filter((c): c is string => c !== null).join('\n');
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bump = () => {
      clearTimeout(timer);
      timer = setTimeout(() => setN((x) => x + 1), debounceMs);
    };
    const offs = key === '' ? [] : key.split('\n').map((c) => live.subscribe(c, bump, (served) => served && bump()));
    return () => {
      clearTimeout(timer);
      for (const off of offs) off();
    };
  }, [key, debounceMs]);
  return n;
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

/**
 * A screen's own open orders kept live: its last `snapshot` (undefined until loaded) with the order
 * changes heard on `channel` (a user.changes channel) since then laid over it (lib/orderEvents.ts),
 * so a placed, edited or cancelled order shows without waiting for the reload. After a reconnect
 * changes may have been missed: what was heard is dropped and the reload decides.
 */
export function useLiveOrders(channel: string | null, snapshot: Order[] | undefined): Order[] | undefined {
  const epoch = useEpoch();
  const [events, setEvents] = useState<OrderEvents>(new Map());
  useChannel(channel, (d) => {
    const orders = (d as { orders?: Order[] }).orders;
    if (orders && orders.length > 0) setEvents((e) => withHeard(e, orders));
  });
  useEffect(() => setEvents(new Map()), [epoch, channel]);
  useEffect(() => {
    if (snapshot) setEvents((e) => (e.size === 0 ? e : notCaughtUp(e, snapshot)));
  }, [snapshot]);
  return useMemo(() => snapshot && (events.size === 0 ? snapshot : overlay(snapshot, events)), [snapshot, events]);
}
