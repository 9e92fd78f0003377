// The HTTP API through a gateway: every request src/gateway/paths.ts allows goes to the leader
// (src/gateway/leaderLocator.ts finds it) as it came: method, target, headers and body. So a signed
// request verifies there unchanged (deri-hmac-sha256 binds the method, the request target and the
// body), and the leader's answer, errors and limits included, is what the client gets.
// X-Forwarded-For carries the client's address (appended to any the client sent): a leader that
// trusts the gateway (STRIKEBOOK_TRUSTED_PROXIES) counts its per-address limits per client.
//
// Following the leader (issue 30): the body (at most the leader's 32 KiB) is kept until the answer
// comes, so a request can be sent again. A standby's 10040, a refused connection or a leader that
// does not answer within the forward timeout makes the gateway look for the leader; a request that
// never ran (10040, refused) is sent again to the one found, whatever it is; one that may have run
// (timeout, connection lost) only if it is a read. Whatever cannot be served is answered at once
// with a JSON-RPC error: 10040 (nothing ran, or a read: retry) or 11094 (outcome unknown).
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Logger } from 'pino';
import { Reject, errorBody } from '../api/rpc/errors.ts';
import { BODY_LIMIT } from '../api/http/transportRefusals.ts';
import { ERR, type ErrorCode } from '../domain/errors.ts';
import type { LeaderLocator } from './leaderLocator.ts';

/** Headers of one hop only (RFC 9110 7.6.1), never passed on; the body is sent whole with its own
 *  length, so the client's length and `Expect: 100-continue` are this hop's too. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'expect']);
/** Errors that mean the request never reached the leader: nothing ran there. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** Connections to the leader kept open for forwarded HTTP requests. */
const MAX_SOCKETS = 256;
/** Tries of one request: the server in use, then the leader found after each failure. */
const ATTEMPTS = 3;
/** A standby's refusal is small; a 503 body past this is passed on unread. */
const REFUSAL_MAX = 64 * 1024;

/** A call the gateway could not get answered: the JSON-RPC error to send instead. */
export class Unserved extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly reason: string,
    readonly status: number,
  ) {
    super(reason);
  }
}

/** The method a target names (`public/get_time` of `/api/v2/public/get_time/BTC?x`), or ''. */
export function methodOf(target: string): string {
  const m = /^\/(?:api\/v2|api\/v1|v1)\/((?:public|private)\/[a-z0-9_]+)/.exec(target);
  return m ? m[1]! : '';
}

/** Reads that change nothing: sent again after a timeout or a lost connection. */
export function isRead(method: string): boolean {
  return /^(?:public|private)\/get_/.test(method) || method === 'public/ticker' || method === 'public/test' || method === 'public/status';
}

export interface HttpForwarder {
  /** Forwards a client's request for `target` (from paths.ts) and writes the answer to `res`. */
  forward(req: IncomingMessage, res: ServerResponse, target: string): void;
  /**
   * Sends one JSON-RPC request `body` for `method` over HTTP on the pool of kept-alive connections
   * (a WebSocket client's call that needs no connection of its own); resolves with the answer text.
   * Rejects with Unserved when it cannot be answered.
   */
  call(method: string, body: string, forwardedFor: string): Promise<string>;
  close(): void;
}

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  /** The body when it was read (a 503, to see whether it is a standby's refusal), else the stream. */
  text: string | null;
  stream: IncomingMessage;
}

export function httpForwarder(leader: LeaderLocator, log: Logger, timeoutMs: number, poolSockets: number): HttpForwarder {
  const agents = { http: new HttpAgent({ keepAlive: true, maxSockets: MAX_SOCKETS }), https: new HttpsAgent({ keepAlive: true, maxSockets: MAX_SOCKETS }) };
  const pool = { http: new HttpAgent({ keepAlive: true, maxSockets: poolSockets }), https: new HttpsAgent({ keepAlive: true, maxSockets: poolSockets }) };

  /** One try at `base`: resolves with the answer's head (and a 503's body), rejects with the socket's error. */
  const once = (base: string, method: string, target: string, headers: OutgoingHttpHeaders, body: Buffer, shared: boolean): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const url = new URL(base);
      const https = url.protocol === 'https:';
      const agent = shared ? (https ? pool.https : pool.http) : https ? agents.https : agents.http;
      const up = (https ? httpsRequest : httpRequest)({ hostname: url.hostname, port: url.port, method, path: target, headers: { ...headers, 'content-length': body.length }, agent, timeout: timeoutMs }, (answer) => {
        if (answer.statusCode !== 503) return resolve({ status: answer.statusCode ?? 502, headers: answer.headers, text: null, stream: answer });
        const parts: Buffer[] = [];
        let size = 0;
        answer.on('data', (d: Buffer) => {
          size += d.length;
          if (size <= REFUSAL_MAX) parts.push(d);
        });
        answer.on('end', () => resolve({ status: 503, headers: answer.headers, text: Buffer.concat(parts).toString(), stream: answer }));
        answer.on('error', reject);
      });
      up.on('timeout', () => up.destroy(Object.assign(new Error('leader did not answer in time'), { code: 'ETIMEDOUT' })));
      up.on('error', reject);
      up.end(body);
    });

  /** Tries until an answer that is not a standby's refusal, following the leader (see the top). */
  const send = async (method: string, target: string, headers: OutgoingHttpHeaders, body: Buffer, shared: boolean): Promise<Answer> => {
    const read = isRead(methodOf(target));
    for (let attempt = 1; ; attempt++) {
      const base = await leader.settled();
      let a: Answer;
      try {
        a = await once(base, method, target, headers, body, shared);
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        // the server in use failed: the next requests go to the one that leads by then
        void leader.relocate(base);
        const sent = !NOT_SENT.has(err.code ?? '');
        if ((!sent || read) && attempt < ATTEMPTS) continue;
        if (!sent) throw new Unserved(ERR.RETRY, 'leader_unreachable', 503);
        if (err.code === 'ETIMEDOUT') throw new Unserved(ERR.RETRY, read ? 'leader_timeout' : 'leader_timeout_outcome_unknown', 503);
        // sent, maybe executed: the client must check (get_order_state, its label) before a retry
        log.warn({ err, target }, 'gateway: forwarded HTTP request failed');
        throw new Unserved(ERR.INTERNAL, 'leader_connection_lost_outcome_unknown', 502);
      }
      if (a.text !== null && a.text.includes('"code":10040')) {
        // a standby's refusal: nothing ran; the leader is elsewhere
        await leader.relocate(base);
        if (attempt < ATTEMPTS) continue;
      }
      return a;
    }
  };

  const refuse = (res: ServerResponse, u: Unserved) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(u.status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: errorBody(new Reject(u.code, u.reason)), testnet: true }));
  };

  /** The request's body, or null (answered) past the leader's limit. */
  const bodyOf = (req: IncomingMessage, res: ServerResponse): Promise<Buffer | null> =>
    new Promise((resolve) => {
      const parts: Buffer[] = [];
      let size = 0;
      let over = false;
      req.on('data', (d: Buffer) => {
        size += d.length;
        if (size > BODY_LIMIT) over = true;
        else parts.push(d);
      });
      req.on('end', () => {
        if (!over) return resolve(Buffer.concat(parts));
        refuse(res, new Unserved(ERR.INVALID_REQUEST, `body over ${BODY_LIMIT} bytes`, 413));
        resolve(null);
      });
      req.on('error', () => resolve(null));
    });

  return {
    forward(req, res, target) {
      const headers: OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = v;
      headers['x-forwarded-for'] = forwardedFor(req.headers['x-forwarded-for'], req.socket.remoteAddress);
      void (async () => {
        const body = await bodyOf(req, res);
        if (body === null) return;
        let a: Answer;
        try {
          a = await send(req.method ?? 'GET', target, headers, body, false);
        } catch (e) {
          if (e instanceof Unserved) return refuse(res, e);
          throw e;
        }
        const out: OutgoingHttpHeaders = {};
        for (const [k, v] of Object.entries(a.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) out[k] = v;
        res.writeHead(a.status, out);
        if (a.text !== null) res.end(a.text);
        else a.stream.pipe(res);
      })().catch((err: unknown) => {
        log.error({ err }, 'gateway: HTTP forwarding failed');
        res.destroy();
      });
    },
    async call(method, body, xff) {
      const headers = { 'content-type': 'application/json', 'x-forwarded-for': xff };
      const a = await send('POST', `/api/v2/${method}`, headers, Buffer.from(body), true);
      if (a.text !== null) return a.text;
      const parts: Buffer[] = [];
      for await (const d of a.stream) parts.push(d as Buffer);
      return Buffer.concat(parts).toString();
    },
    close() {
      for (const a of [agents.http, agents.https, pool.http, pool.https]) a.destroy();
    },
  };
}

/** X-Forwarded-For for a request from `peer` that came with `prior` (the client's address appended). */
export function forwardedFor(prior: string | string[] | undefined, peer: string | undefined): string {
  const from = peer ?? '';
  const before = Array.isArray(prior) ? prior.join(', ') : prior;
  return before !== undefined && before.trim() !== '' ? `${before}, ${from}` : from;
}
