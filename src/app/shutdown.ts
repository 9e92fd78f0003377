// Stopping a running exchange (docs/operations.md "Stopping a server"; issue 30 item 4). Order
// matters: a standby stops following first; then requests already received are answered (HTTP
// requests in flight, and WebSocket requests, whose sockets then close with 1001), while from the
// first moment new connections are refused, every HTTP answer closes its connection and new
// WebSocket requests are refused; then no new timer commands; the idle connections close; the last
// batch is written; the journal closes. Every command applied is journaled before the process exits 0.
import type { ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { WsTransport } from '../api/ws/server.ts';
import type { Sequencer } from '../sequencer/sequencer.ts';

/** How long a shutdown waits for in-flight HTTP requests before closing their connections. */
const SHUTDOWN_GRACE_MS = 5_000;

export interface ShutdownParts {
  follower: { close(): Promise<void> } | null;
  ws: WsTransport;
  http: FastifyInstance;
  /** The market timers and the disk guard: no new commands of the server's own. */
  stopTimers(): void;
  sequencer: Sequencer;
  /** NATS events, background snapshots, the journal: closed in this order, after the last batch. */
  after: Array<() => Promise<void>>;
}

export interface ShutdownOptions {
  /**
   * How long kept-alive HTTP connections are still served (each answer with `Connection: close`)
   * before the idle ones are closed, ms. A client that sent a request on an idle kept-alive
   * connection just as the stop began gets its answer instead of a reset: the request is in the
   * socket before the server has read it, and closing the "idle" connection would cut it off.
   * 0 (tests in one process): closed at once.
   */
  lingerMs?: number;
  /** How long WebSocket requests received may take to be answered before the sockets close, ms. */
  wsDrainMs?: number;
}

export async function shutdownExchange(p: ShutdownParts, opts: ShutdownOptions = {}): Promise<void> {
  const server = p.http.server;
  // New connections are refused at once, before the first await (main.ts logs the stop after
  // this returns): the listening socket closes (net.Server's close, not http.Server's, which would
  // also cut the idle kept-alive connections the linger below serves). Fastify's close further
  // down closes it again, which it accepts.
  NetServer.prototype.close.call(server);
  await p.follower?.close();
  // from now on no answer keeps its connection open
  const noKeepAlive = (_req: unknown, res: ServerResponse) => {
    res.shouldKeepAlive = false;
  };
  server.prependListener('request', noKeepAlive);
  // sockets first: their cancel-on-disconnect commands still reach the journal
  const wsClosed = p.ws.close(opts.wsDrainMs);
  if ((opts.lingerMs ?? 0) > 0) await new Promise((r) => setTimeout(r, opts.lingerMs));
  await wsClosed;
  p.stopTimers();
  const httpClosed = p.http.close();
  // Fastify closes the connections that are idle when close() starts; a connection whose
  // request was still in flight goes idle only afterwards and would then be kept open for
  // keepAliveTimeout (72 s by default), holding up the shutdown that long. Close those as
  // they go idle, and after a grace period whatever is left: a client cut off then sees an
  // unknown outcome, as after a crash, and every command applied is written just below.
  const sweep = setInterval(() => server.closeIdleConnections(), 20);
  const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
  try {
    await httpClosed;
  } finally {
    clearInterval(sweep);
    clearTimeout(force);
  }
  await p.sequencer.stop();
  for (const step of p.after) await step();
}
