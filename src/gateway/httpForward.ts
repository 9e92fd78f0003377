// The HTTP API through a gateway: every request but the gateway's own /health and /metrics goes to
// the leader (src/gateway/leaderLocator.ts finds it) as it came: method, path and query, headers
// and body, streamed both ways. So a signed request verifies there unchanged (deri-hmac-sha256
// binds the method, the request target and the body), and the leader's answer, errors and limits
// included, is what the client gets. The leader sees the gateway as the client's address (it does
// not trust X-Forwarded-For, which is set for its logs): per-address limits of anonymous callers
// are shared by the gateway's clients, as for the WebSocket requests it forwards.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Logger } from 'pino';
import { Reject, errorBody } from '../api/rpc/errors.ts';
import { ERR, type ErrorCode } from '../domain/errors.ts';
import type { LeaderLocator } from './leaderLocator.ts';

/** Headers of one hop only (RFC 9110 7.6.1), never passed on. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);
/** Errors that mean the request never reached the leader: nothing ran there. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** Connections to the leader kept open for the next requests. */
const MAX_SOCKETS = 256;

export interface HttpForwarder {
  forward(req: IncomingMessage, res: ServerResponse): void;
  close(): void;
}

export function httpForwarder(leader: LeaderLocator, log: Logger, timeoutMs: number): HttpForwarder {
  const agents = { http: new HttpAgent({ keepAlive: true, maxSockets: MAX_SOCKETS }), https: new HttpsAgent({ keepAlive: true, maxSockets: MAX_SOCKETS }) };
  const refuse = (res: ServerResponse, status: number, code: ErrorCode, reason: string) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: errorBody(new Reject(code, reason)), testnet: true }));
  };
  return {
    forward(req, res) {
      void leader.settled().then((base) => {
        const url = new URL(base);
        const https = url.protocol === 'https:';
        const headers: OutgoingHttpHeaders = {};
        for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = v;
        const from = req.socket.remoteAddress ?? '';
        headers['x-forwarded-for'] = typeof req.headers['x-forwarded-for'] === 'string' ? `${req.headers['x-forwarded-for']}, ${from}` : from;
        const up = (https ? httpsRequest : httpRequest)(
          { hostname: url.hostname, port: url.port, method: req.method, path: req.url, headers, agent: https ? agents.https : agents.http, timeout: timeoutMs },
          (answer) => {
            const out: OutgoingHttpHeaders = {};
            for (const [k, v] of Object.entries(answer.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) out[k] = v;
            res.writeHead(answer.statusCode ?? 502, out);
            answer.pipe(res);
          },
        );
        up.on('timeout', () => up.destroy(Object.assign(new Error('leader did not answer in time'), { code: 'ETIMEDOUT' })));
        up.on('error', (err: NodeJS.ErrnoException) => {
          // the server in use failed: the next requests go to the one that leads by then
          void leader.relocate();
          if (NOT_SENT.has(err.code ?? '')) refuse(res, 503, ERR.RETRY, 'leader_unreachable');
          else {
            // sent, maybe executed: the client must check (get_order_state, its label) before a retry
            log.warn({ err, url: req.url }, 'gateway: forwarded HTTP request failed');
            refuse(res, 502, ERR.INTERNAL, 'leader_connection_lost_outcome_unknown');
          }
        });
        req.pipe(up);
      });
    },
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
