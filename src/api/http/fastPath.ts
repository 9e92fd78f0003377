// The HTTP fast path in front of Fastify (see fastPath below for what it takes and why).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQueryString } from 'node:querystring';
import type { Services } from '../../app/services.ts';
import { ERR } from '../../domain/errors.ts';
import { DEFERRED_METHODS, type CompiledMethod } from '../rpc/dispatch.ts';
import { NO_PROXIES, clientAddressOf } from './clientAddress.ts';
import { envelopeText, errorOut, micros } from './envelope.ts';
import { rpcOverHttp, rpcOverHttpThen, type HttpAnswer, type HttpRpcRequest } from './rpcOverHttp.ts';
import { BODY_LIMIT, bodyKind, malformedPercentEncoding } from './transportRefusals.ts';
import { REQUEST_ID_HEADER, requestIdOf } from './requestIds.ts';

/** What Fastify's `reply.type('application/json')` sends, so both paths answer alike. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * The fast path: a POST to a method's own path with a body of declared length (what clients send
 * for every order and cancel), and a GET of a method's own path with a query string and no body
 * (what book and ticker pollers send), are answered without Fastify's routing, hooks and reply
 * objects, which cost the engine thread 3-5 us per request (about 12% of a durable order's CPU,
 * measured with 100 connections). Everything else (path parameters, trailing slashes, chunked or
 * oversized bodies, GET bodies, forms and other content types, query strings that do not
 * percent-decode, unknown paths, a server shutting down) goes to Fastify, which handles every
 * edge. Both paths end in rpcOverHttp, so a method answers the same either way;
 * test/api/httpFastPath.test.ts compares them.
 */
export function fastPath(
  s: Services,
  methods: ReadonlyMap<string, CompiledMethod>,
  isClosing: () => boolean,
  fallback: (req: IncomingMessage, res: ServerResponse) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  const trust = s.config.proxyTrust ?? NO_PROXIES;
  /** Writes the answer: every header in one flat list, which node writes as it is. (A header set
   *  before with setHeader made writeHead validate and merge each one again: ~1.5 us of a bare
   *  server's ~18 us per request, measured with autocannon on a bare node:http server both ways.) */
  const write = (req: IncomingMessage, res: ServerResponse, out: HttpAnswer) => {
    const headers: (string | number)[] = ['content-type', JSON_CONTENT_TYPE, 'content-length', Buffer.byteLength(out.text)];
    const id = requestIdOf(req);
    if (id !== undefined) headers.push(REQUEST_ID_HEADER, id);
    if (out.retryAfter !== undefined) headers.push('retry-after', out.retryAfter);
    res.writeHead(out.status, headers);
    res.end(out.text);
  };
  const answer = (req: IncomingMessage, res: ServerResponse, m: CompiledMethod, request: HttpRpcRequest) => {
    // buy and sell: answered from their durable batch, with no promise chain per order
    if (DEFERRED_METHODS.has(m.def.name)) {
      rpcOverHttpThen(s, m, request, (out) => write(req, res, out));
      return;
    }
    rpcOverHttp(s, m, request)
      .catch((err: unknown): HttpAnswer => {
        // call() turns handler failures into error replies; this is a bug in the transport itself
        s.log.error({ err, reqId: requestIdOf(req), path: req.url?.split('?')[0] }, 'unexpected HTTP error');
        return { status: 500, text: envelopeText({ id: undefined, usIn: micros() }, errorOut(ERR.INTERNAL), s.config.mode !== 'production') };
      })
      .then((out) => write(req, res, out));
  };
  /** Fastify answers the rest; the request's id is set first, as the fast path writes it in its own answers. */
  const slow = (req: IncomingMessage, res: ServerResponse) => {
    const id = requestIdOf(req);
    if (id !== undefined) res.setHeader(REQUEST_ID_HEADER, id);
    fallback(req, res);
  };
  /** A GET with no body and a query string that decodes: answered here; null when Fastify must. */
  const fastGet = (req: IncomingMessage): { m: CompiledMethod; query: Record<string, unknown> } | null => {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const m = methods.get(q < 0 ? url : url.slice(0, q));
    if (m === undefined || req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined || isClosing()) return null;
    const qs = q < 0 ? '' : url.slice(q + 1);
    if (malformedPercentEncoding(qs)) return null;
    return { m, query: { ...parseQueryString(qs) } };
  };
  return (req, res) => {
    if (req.method === 'GET') {
      const get = fastGet(req);
      if (get === null) {
        slow(req, res);
        return;
      }
      // nothing to read, but the request must end before the socket is read again
      req.resume();
      answer(req, res, get.m, {
        method: 'GET',
        url: req.url!,
        contentType: req.headers['content-type'],
        rawBody: undefined,
        query: get.query,
        pathValue: undefined,
        authorization: req.headers.authorization,
        ip: clientAddressOf(req, trust),
        requestId: requestIdOf(req),
      });
      return;
    }
    const m = req.method === 'POST' ? methods.get(req.url ?? '') : undefined;
    const length = Number(req.headers['content-length']); // NaN when absent
    // forms and other content types go to Fastify, which reads forms and refuses the rest
    if (m === undefined || !(length <= BODY_LIMIT) || req.headers['transfer-encoding'] !== undefined || bodyKind(req.headers['content-type']) !== 'json' || isClosing()) {
      slow(req, res);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
      const request: HttpRpcRequest = {
        method: 'POST',
        url: req.url!,
        contentType: req.headers['content-type'],
        rawBody,
        query: undefined,
        pathValue: undefined,
        authorization: req.headers.authorization,
        ip: clientAddressOf(req, trust),
        requestId: requestIdOf(req),
      };
      answer(req, res, m, request);
    });
  };
}
