// A client's own WebSocket to the leader (issue 29 item 3, issue 30 item 2; docs/security.md
// "Gateways"). Opened only for a client the leader must know as a connection (a login, a token given
// as a param, private calls, cancel-on-disconnect); anonymous calls share the HTTP pool
// (src/gateway/forwarding.ts). Bounded in all (STRIKEBOOK_GATEWAY_MAX_UPSTREAMS) and per client
// address (STRIKEBOOK_GATEWAY_MAX_UPSTREAMS_PER_IP), so one address cannot take the gateway's
// connections to the leader (nor fill the leader's per-address cap when it does not trust the
// gateway). The upgrade request carries X-Forwarded-For with the client's address.
//
// Every call is answered: a request the gateway cannot send (no slot: 10028; the leader refuses or
// cannot be reached: 10040) or that gets no answer within the forward timeout (10040, and the
// gateway looks for the leader: a frozen one) is refused at once. When the leader moves, upstreams
// at the old server are closed; a client the leader knew is closed with 1012 (service restart: it
// reconnects and logs in again at the new leader, where its cancel-on-disconnect was already run for
// the closed connection), an anonymous one keeps its connection and gets a new upstream when needed.
import WebSocket from 'ws';
import type { Logger } from 'pino';
import { ERR } from '../domain/errors.ts';
import type { ClientConn } from './clientConn.ts';
import { Unserved, isRead } from './httpForward.ts';
import type { LeaderLocator } from './leaderLocator.ts';

export interface UpstreamLimits {
  /** Upstream WebSockets in all. */
  maxTotal: number;
  /** Upstream WebSockets for the clients of one address. */
  maxPerIp: number;
  /** A call unanswered this long (and an upgrade not done) counts as a stalled leader, ms. */
  timeoutMs: number;
}

/** WebSocket close code 1012, "service restart": the client should reconnect (RFC 6455 registry). */
export const CLOSE_RESTART = 1012;

export class Upstreams {
  private readonly open = new Set<ClientConn>();
  private readonly perIp = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly leader: LeaderLocator,
    private readonly log: Logger,
    private readonly limits: UpstreamLimits,
  ) {
    leader.onMove((to) => this.moveTo(to));
  }

  /** Upstream connections open or opening. */
  get count(): number {
    return this.total;
  }

  /** Sends `method` on `c`'s own upstream with a gateway id; resolves with the leader's answer text. */
  async call(c: ClientConn, method: string, params: unknown): Promise<string> {
    await this.connect(c);
    const up = c.upstream!;
    const base = c.upstreamBase!;
    const upId = c.nextUp++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (!c.waiting.delete(upId)) return;
        // a stalled leader (frozen, or cut off): the gateway looks for the one that leads
        void this.leader.relocate(base);
        reject(new Unserved(ERR.RETRY, isRead(method) ? 'leader_timeout' : 'leader_timeout_outcome_unknown', 503));
      }, this.limits.timeoutMs);
      c.waiting.set(upId, {
        id: upId,
        done: (text) => {
          clearTimeout(timer);
          resolve(text);
        },
      });
      up.send(JSON.stringify({ jsonrpc: '2.0', id: upId, method, params }));
    });
  }

  /** The client is gone: so is its upstream (the leader runs its cancel-on-disconnect). */
  release(c: ClientConn): void {
    c.upstream?.close();
  }

  private take(ip: string): void {
    this.total++;
    this.perIp.set(ip, (this.perIp.get(ip) ?? 0) + 1);
  }

  private give(ip: string): void {
    this.total--;
    const n = (this.perIp.get(ip) ?? 1) - 1;
    if (n <= 0) this.perIp.delete(ip);
    else this.perIp.set(ip, n);
  }

  private connect(c: ClientConn): Promise<void> {
    if (c.upstreamOpen) return c.upstreamOpen;
    if (this.total >= this.limits.maxTotal) return Promise.reject(new Unserved(ERR.TOO_MANY_REQUESTS, 'gateway_upstream_connections_exhausted', 429));
    if ((this.perIp.get(c.ip) ?? 0) >= this.limits.maxPerIp) return Promise.reject(new Unserved(ERR.TOO_MANY_REQUESTS, 'too_many_upstream_connections_from_address', 429));
    this.take(c.ip);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.give(c.ip);
      this.open.delete(c);
    };
    // at the server that leads once a search for it (after a failure) is over
    const opening = this.leader.settled().then(
      (base) =>
        new Promise<void>((resolve, reject) => {
          if (c.closed) {
            release();
            reject(new Unserved(ERR.RETRY, 'client_connection_closed', 503));
            return;
          }
          const up = new WebSocket(`${base.replace(/^http/, 'ws')}/ws/api/v2`, { perMessageDeflate: false, headers: { 'x-forwarded-for': c.xff }, handshakeTimeout: this.limits.timeoutMs });
          c.upstream = up;
          c.upstreamBase = base;
          this.open.add(c);
          let opened = false;
          up.once('open', () => {
            opened = true;
            resolve();
          });
          up.on('unexpected-response', (_req, res) => {
            // the leader refused the upgrade: its per-address cap (429) or a server that cannot take it
            res.resume();
            up.terminate();
            if (res.statusCode === 429) reject(new Unserved(ERR.TOO_MANY_REQUESTS, 'leader_refused_connection', 429));
            else {
              void this.leader.relocate(base);
              reject(new Unserved(ERR.RETRY, 'leader_refused_connection', 503));
            }
          });
          up.once('error', () => {
            if (opened) return;
            void this.leader.relocate(base);
            reject(new Unserved(ERR.RETRY, 'leader_unreachable', 503));
          });
          up.on('message', (raw) => {
            const text = raw.toString();
            const m = /^\{"jsonrpc":"2\.0","id":(\d+),/.exec(text);
            if (!m) return;
            // a standby's refusal: the leader moved; the gateway finds it and moves its upstreams
            if (text.includes('"code":10040')) void this.leader.relocate(base);
            const w = c.waiting.get(Number(m[1]));
            if (!w) return;
            c.waiting.delete(Number(m[1]));
            w.done(text);
          });
          up.on('close', (code, reason) => {
            release();
            for (const w of c.waiting.values()) w.done(`{"jsonrpc":"2.0","id":0,"error":{"code":${ERR.INTERNAL},"message":"internal_server_error","data":{"reason":"leader_connection_closed_outcome_unknown"}}}`);
            c.waiting.clear();
            if (!opened) {
              reject(new Unserved(ERR.RETRY, 'leader_unreachable', 503));
              return;
            }
            if (c.upstream !== up) return;
            c.upstream = null;
            c.upstreamOpen = null;
            c.upstreamBase = null;
            if (c.closed) return;
            const why = reason.toString();
            if (code === 1000 && why === 'logout') {
              // the leader ended the session: so does the gateway, as the leader would have
              c.ws.close(1000, 'logout');
              return;
            }
            // one that went away unasked may have handed over to a standby
            void this.leader.relocate(base);
            if (c.stateful) {
              // what the leader knew of this connection is gone: the client reconnects (never 1000,
              // which clients take as "done")
              this.log.info({ ip: c.ip, code, reason: why }, 'gateway: upstream closed; closing its client with 1012');
              c.ws.close(CLOSE_RESTART, 'service restart');
            }
          });
          up.on('error', () => undefined);
        }),
    );
    c.upstreamOpen = opening;
    opening.catch(() => {
      // the next request tries again (a new slot, maybe another server)
      if (c.upstreamOpen === opening) {
        c.upstreamOpen = null;
        c.upstream = null;
        c.upstreamBase = null;
      }
      release();
    });
    return opening;
  }

  /** The leader moved to `to`: upstreams at another server are closed (their close moves the client). */
  private moveTo(to: string): void {
    for (const c of [...this.open]) {
      // terminated, not closed: a frozen old leader would never answer a closing handshake
      if (c.upstreamBase !== null && c.upstreamBase !== to) c.upstream?.terminate();
    }
  }
}
