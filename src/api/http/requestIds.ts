// Request ids (docs/operations.md, "Logs"): every HTTP answer carries `x-request-id`, the client's
// own when it sent a well-formed one (a proxy's, to follow a request across hops), else one made
// here. The same id is the correlation id of an 11094 answer and of its log line, and, with
// STRIKEBOOK_ACCESS_LOG=1, of the one access-log line per request.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';

export const REQUEST_ID_HEADER = 'x-request-id';

/** What a client's id may look like: short, and nothing a log reader could mistake for structure. */
const CLIENT_ID = /^[A-Za-z0-9._:-]{1,64}$/;

const ID = Symbol('requestId');
type WithId = IncomingMessage & { [ID]?: string };

/** A per-process prefix and a counter: unique enough to find a request in one server's log, and cheap. */
const prefix = `${process.pid.toString(36)}${Date.now().toString(36).slice(-4)}-`;
let counter = 0;

/** The id `withRequestIds` gave this request (undefined outside it). */
export function requestIdOf(req: IncomingMessage): string | undefined {
  return (req as WithId)[ID];
}

/**
 * Wraps the HTTP server's request listener: names each request (`requestIdOf`) and with `accessLog`
 * logs one line when the answer is sent. The listener writes the id in the answer's headers
 * (fastPath.ts: in its own answers' header list, and with setHeader before Fastify answers), so
 * that writeHead need not merge a header set before it. The path is logged without its query
 * string: a GET `public/auth` carries the password or client secret there.
 */
export function withRequestIds(
  listener: (req: IncomingMessage, res: ServerResponse) => void,
  opts: { accessLog: boolean; log: Logger },
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const given = req.headers[REQUEST_ID_HEADER];
    const id = typeof given === 'string' && CLIENT_ID.test(given) ? given : prefix + (++counter).toString(36);
    (req as WithId)[ID] = id;
    if (opts.accessLog) {
      const started = performance.now();
      res.once('finish', () => {
        const url = req.url ?? '';
        const q = url.indexOf('?');
        opts.log.info(
          { reqId: id, method: req.method, path: q < 0 ? url : url.slice(0, q), status: res.statusCode, ms: Math.round((performance.now() - started) * 100) / 100, ip: req.socket.remoteAddress },
          'request',
        );
      });
    }
    listener(req, res);
  };
}
