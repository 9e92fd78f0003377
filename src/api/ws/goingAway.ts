// Closing WebSockets when the server stops (issue 30, docs/operations.md "Stopping a server"): each
// connection's requests already received are answered first (an order sent just before SIGTERM gets
// its answer, not a dropped connection), then it is closed with 1001 "going away", the code that
// tells a client to reconnect (to the standby that takes over, or to this server once restarted),
// instead of the 1006 of a cut connection. Bounded: a connection that does not finish or answer the
// close handshake in time is cut off.
import { WebSocket } from 'ws';

/** RFC 6455: the endpoint is going away (a server shutting down). */
export const GOING_AWAY = 1001;

/** How long the requests in flight may take to be answered before the connections close anyway, ms. */
export const DRAIN_MS = 5_000;
/** How long a client may take to answer the close frame, ms. */
const HANDSHAKE_MS = 1_000;

export interface DrainableConnection {
  readonly ws: WebSocket;
  /** Resolves once no request of the connection is waiting or running. */
  whenIdle(): Promise<void>;
}

function within(ms: number, work: Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([work.then(() => undefined), timeout]).finally(() => clearTimeout(timer));
}

/**
 * Waits (at most `drainMs`) until every connection has answered what it received, closes each with
 * 1001, waits for the close handshakes, cuts off what is left; `closed(c)` runs for each (the
 * connection's own cleanup: subscriptions, cancel-on-disconnect). New requests must be refused by
 * the caller meanwhile, or a busy connection would never become idle.
 */
export async function closeGoingAway<C extends DrainableConnection>(conns: readonly C[], closed: (c: C) => void, drainMs = DRAIN_MS): Promise<void> {
  await within(drainMs, Promise.all(conns.map((c) => c.whenIdle())));
  const handshakes = conns.map((c) => (c.ws.readyState === WebSocket.CLOSED ? Promise.resolve() : new Promise<void>((resolve) => c.ws.once('close', () => resolve()))));
  for (const c of conns) if (c.ws.readyState === WebSocket.OPEN) c.ws.close(GOING_AWAY, 'server shutting down');
  await within(HANDSHAKE_MS, Promise.all(handshakes));
  for (const c of conns) {
    if (c.ws.readyState !== WebSocket.CLOSED) c.ws.terminate();
    closed(c);
  }
}
