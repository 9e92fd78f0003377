// Bounds on TCP connections (issue 14 finding 4): how many one IP address and everyone together may
// hold open, and how long a connection may take to send its request or sit idle. WebSockets are
// HTTP connections that upgraded, so the same counts cover them.
//
// Without these, 20,000 idle connections exhausted the file descriptors and every other client
// timed out, and a socket that sent headers and one byte of a large body stayed open for ever.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { isTrustedProxy, type Cidr } from './clientAddress.ts';

export interface ConnectionLimits {
  /** Open connections from one IP address; one more is answered 429 and closed. */
  maxPerIp: number;
  /** Open connections in total; one more is answered 503 and closed. */
  maxTotal: number;
  /** The request line and headers must be complete within this, ms. */
  headersTimeoutMs: number;
  /** The whole request, body included, must be complete within this, ms. */
  requestTimeoutMs: number;
  /** A kept-alive connection waiting for its next request is closed after this, ms. */
  keepAliveTimeoutMs: number;
  /**
   * Peers exempt from `maxPerIp` (STRIKEBOOK_TRUSTED_PROXIES): a proxy's connections carry many
   * clients, each held to its own caps by its forwarded address (the WebSocket per-client cap, the
   * credit pools, the login back-off); the total cap still applies.
   */
  trustedProxies?: readonly Cidr[];
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxPerIp: 512,
  maxTotal: 8192,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 72_000,
};

/**
 * How often Node checks the header and request deadlines (it checks them on a timer, 30 s by
 * default, so a 10 s deadline could be met 40 s late): a quarter of the shorter one, at most 1 s.
 */
export function checkingIntervalMs(l: ConnectionLimits): number {
  return Math.max(5, Math.min(1000, Math.floor(Math.min(l.headersTimeoutMs, l.requestTimeoutMs) / 4)));
}

/** A refusal written on the raw socket (no request was read): a JSON-RPC envelope, then close. */
function refuse(socket: Socket, status: string, reason: string): void {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code: 10028, message: 'too_many_requests', data: { reason } } });
  // destroyed once written, so no request on it is ever read; a client that never reads the
  // refusal must not keep the descriptor either
  socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`, () => socket.destroy());
  socket.setTimeout(1000, () => socket.destroy());
}

export interface ConnectionCounts {
  readonly open: number;
  /** Connections refused since start (over either cap). */
  readonly refused: number;
  openFrom(ip: string): number;
}

/** Applies the timeouts to `server` and counts its connections, refusing those over a cap. */
export function limitConnections(server: Server, l: ConnectionLimits): ConnectionCounts {
  server.headersTimeout = l.headersTimeoutMs;
  // Node requires headersTimeout <= requestTimeout
  server.requestTimeout = Math.max(l.requestTimeoutMs, l.headersTimeoutMs);
  server.keepAliveTimeout = l.keepAliveTimeoutMs;
  const perIp = new Map<string, number>();
  let open = 0;
  let refused = 0;
  // a 'connection' listener added here runs after Node's own, which set up the HTTP parser
  server.on('connection', (socket: Socket) => {
    const ip = socket.remoteAddress ?? '';
    const mine = perIp.get(ip) ?? 0;
    if (open >= l.maxTotal) {
      refused++;
      return refuse(socket, '503 Service Unavailable', `the server holds its maximum of ${l.maxTotal} connections`);
    }
    if (mine >= l.maxPerIp && !isTrustedProxy(ip, l.trustedProxies ?? [])) {
      refused++;
      return refuse(socket, '429 Too Many Requests', `at most ${l.maxPerIp} connections from one address`);
    }
    open++;
    perIp.set(ip, mine + 1);
    socket.once('close', () => {
      open--;
      const n = (perIp.get(ip) ?? 1) - 1;
      if (n === 0) perIp.delete(ip);
      else perIp.set(ip, n);
    });
  });
  return {
    get open() {
      return open;
    },
    get refused() {
      return refused;
    },
    openFrom: (ip) => perIp.get(ip) ?? 0,
  };
}
