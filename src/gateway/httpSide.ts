// A gateway's HTTP listener, the requests that are not WebSocket upgrades: its own /health and
// /metrics, the public API and web app forwarded to the leader (src/gateway/httpForward.ts), and a
// 404 for every other target (src/gateway/paths.ts: no spelling of an operator endpoint reaches the
// leader through a gateway).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { Reject, errorBody } from '../api/rpc/errors.ts';
import { ERR } from '../domain/errors.ts';
import type { HttpForwarder } from './httpForward.ts';
import { forwardTarget } from './paths.ts';

export interface HttpSide {
  /** The body of GET /health, and whether the gateway is healthy (200) or not (503). */
  health(): { ok: boolean; body: Record<string, unknown> };
  register: Registry;
  forwarder: HttpForwarder;
}

export function httpHandler(side: HttpSide): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const raw = req.url ?? '';
    const path = raw.split('?')[0];
    if (path === '/health') {
      const h = side.health();
      res.writeHead(h.ok ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify(h.body));
      return;
    }
    if (path === '/metrics') {
      side.register.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': side.register.contentType });
          res.end(text);
        },
        () => res.writeHead(500).end(),
      );
      return;
    }
    const target = forwardTarget(raw);
    if (target === null) {
      // drained, not read: the connection may be kept for the client's next request
      req.resume();
      res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: errorBody(new Reject(ERR.METHOD_NOT_FOUND, 'not_found')), testnet: true }));
      return;
    }
    side.forwarder.forward(req, res, target);
  };
}
