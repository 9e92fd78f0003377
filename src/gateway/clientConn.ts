// A client's WebSocket connection to a gateway, and a channel's subscribers (src/gateway/gateway.ts):
// what is kept per connection (its subscriptions, its upstream connection to the leader, its
// request queue, heartbeat and idle state) and its bounded writes.
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import type { ChannelSpec } from '../api/ws/channels.ts';
import { Reject, errorBody } from '../api/rpc/errors.ts';
import type { ErrorCode } from '../domain/errors.ts';

/** A JSON-RPC answer frame with `body` (`"result":...` or `"error":...`), as the leader sends it. */
export const envelope = (id: unknown, body: string) => `{"jsonrpc":"2.0","id":${JSON.stringify(id ?? null)},${body},"testnet":true}`;
/** The `"error":...` part of an answer. */
export const failure = (code: ErrorCode, reason?: string, param?: string) => `"error":${JSON.stringify(errorBody(new Reject(code, reason, param)))}`;

export interface Topic {
  channel: string;
  spec: ChannelSpec;
  userId: number | null;
  subs: Set<ClientConn>;
  /** ticker: the data last sent; quote: its best bid/ask; user.portfolio.{ccy}: the summary last sent */
  last?: string;
  /** user.portfolio: currencies whose summary is read again on the next tick */
  due?: Set<string>;
  /** user.portfolio: a read is under way */
  reading?: boolean;
}

export class ClientConn {
  /** The user of the connection's own login (public/auth on the socket), as the leader last confirmed it. */
  userId: number | null = null;
  readonly subs = new Map<string, Topic>();
  /** Private channel -> the credential it was subscribed with: the `access_token` param of its
   *  subscribe, or null for the connection's login (src/gateway/credentials.ts). */
  readonly credentials = new Map<string, string | null>();
  /** Credential (as in `credentials`; null: the login) -> whether the leader last said its scopes
   *  read trades and orders (`trade:read`): the trade channels stream only while it does. */
  readonly tradeRead = new Map<string | null, boolean>();
  /** Successful public/auth calls on the connection (a recheck begun before one does not judge it). */
  logins = 0;
  /** A recheck of this connection's credentials is under way. */
  rechecking = false;
  upstream: WebSocket | null = null;
  upstreamOpen: Promise<void> | null = null;
  /** The server the upstream was opened at (moved when the leader moves). */
  upstreamBase: string | null = null;
  /**
   * The leader holds state of this connection (a login, a token given as a param, a private call,
   * cancel-on-disconnect): its requests go on its own upstream, and losing that upstream closes
   * the client with 1012 so that it reconnects and logs in again.
   */
  stateful = false;
  /** Answers leave in request order: each forwarded request's answer waits for the one before. */
  replies: Promise<unknown> = Promise.resolve();
  /** upstream id -> [client id, resolve] */
  readonly waiting = new Map<number, { id: unknown; done: (text: string) => void }>();
  nextUp = 1;
  chain: Promise<unknown> = Promise.resolve();
  /** Forwarded requests not answered yet (a local request waits for them). */
  outstanding = new Set<Promise<unknown>>();
  /** Frames received and not yet handled (bounded like the leader's per-connection queue). */
  queued = 0;
  heartbeat: NodeJS.Timeout | null = null;
  awaitingTest = false;
  closed = false;
  corked = false;

  /** Something (a frame or a pong) arrived since the last idle check. */
  heard = true;

  constructor(
    readonly ws: WebSocket,
    readonly socket: Duplex,
    private readonly maxBuffered: number,
    readonly ip: string,
    /** X-Forwarded-For for this client's upstream requests (its address appended). */
    readonly xff: string,
    private readonly onOverflow: () => void,
  ) {}

  send(data: string | Buffer): void {
    if (this.closed) return;
    const len = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
    if (this.ws.bufferedAmount + len > this.maxBuffered) {
      this.overflow();
      return;
    }
    this.ws.send(data);
  }

  private cut = false;

  private overflow(): void {
    // counted once: frames keep coming until the terminated socket reports its close
    if (this.closed || this.cut) return;
    this.cut = true;
    this.onOverflow();
    this.ws.terminate();
  }

  sendFrame(frame: Buffer): void {
    if (this.closed || this.ws.readyState !== WebSocket.OPEN) return;
    if (this.ws.bufferedAmount + frame.length > this.maxBuffered) {
      this.overflow();
      return;
    }
    this.socket.write(frame);
  }
}
