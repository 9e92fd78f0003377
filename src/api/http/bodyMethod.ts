// JSON-RPC over POST with the method named in the body (Deribit clients that POST every call to
// `/api/v2`), single requests and bounded batches. Each request runs through rpcOverHttp like a POST to
// the method's own path, so it answers, authenticates and charges alike.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../app/services.ts';
import { ERR } from '../../domain/errors.ts';
import type { CompiledMethod } from '../rpc/dispatch.ts';
import { BAD_RPC_ID_REASON, validRpcId } from '../rpc/validate.ts';
import { envelopeText, errorOut, micros } from './envelope.ts';
import { rpcOverHttp, type HttpAnswer, type HttpRpcRequest } from './rpcOverHttp.ts';

/** The paths a body-named request is POSTed to (a trailing slash is ignored by the router). */
export const BODY_METHOD_PATHS = ['/api/v2', '/api/v1', '/v1'];

/**
 * Most requests one batch may hold. Deribit serves no batches; ours run one after another on one
 * HTTP request, so the bound keeps one request from holding a connection for long (each call is still
 * charged its own rate-limit credits).
 */
export const MAX_BATCH = 20;

function refused(testnet: boolean, id: unknown, code: Parameters<typeof errorOut>[0], reason: string): HttpAnswer {
  const out = errorOut(code, reason);
  return { status: out.status, text: envelopeText({ id, usIn: micros() }, out, testnet) };
}

/** One request object of the body (or of a batch); `raw` is its text as received, for signatures. */
async function one(s: Services, byName: ReadonlyMap<string, CompiledMethod>, req: HttpRpcRequest, msg: unknown, raw: string): Promise<HttpAnswer> {
  const testnet = s.config.mode !== 'production';
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) return refused(testnet, null, ERR.INVALID_REQUEST, 'request must be a JSON object');
  const obj = msg as Record<string, unknown>;
  if (!validRpcId(obj.id)) return refused(testnet, null, ERR.INVALID_REQUEST, BAD_RPC_ID_REASON);
  if (typeof obj.method !== 'string') return refused(testnet, obj.id, ERR.INVALID_REQUEST, 'method is required');
  const name = obj.method.startsWith('/') ? obj.method.slice(1) : obj.method;
  const m = byName.get(name);
  if (m === undefined) {
    const out = errorOut(ERR.METHOD_NOT_FOUND);
    return { status: out.status, text: envelopeText({ id: obj.id, usIn: micros() }, out, testnet) };
  }
  // rpcOverHttp reads a body as JSON-RPC when it has `jsonrpc` and `method`; a client may leave out `jsonrpc`
  const rawBody = obj.jsonrpc === undefined ? JSON.stringify({ jsonrpc: '2.0', ...obj }) : raw;
  return rpcOverHttp(s, m, { ...req, rawBody, query: undefined, pathValue: undefined });
}

/** The answer to a POST of a body-named request or a batch of them. */
export async function bodyMethodAnswer(s: Services, byName: ReadonlyMap<string, CompiledMethod>, req: HttpRpcRequest): Promise<HttpAnswer> {
  const testnet = s.config.mode !== 'production';
  const raw = req.rawBody ?? '';
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return refused(testnet, undefined, ERR.PARSE, 'body is not valid JSON');
  }
  if (!Array.isArray(parsed)) return one(s, byName, req, parsed, raw);
  if (parsed.length === 0) return refused(testnet, null, ERR.INVALID_REQUEST, 'a batch holds at least one request');
  if (parsed.length > MAX_BATCH) return refused(testnet, null, ERR.INVALID_REQUEST, `a batch holds at most ${MAX_BATCH} requests`);
  const texts: string[] = [];
  let retryAfter: string | undefined;
  // one after another, in the order sent: a batch's orders reach the book in its order
  for (const msg of parsed) {
    const a = await one(s, byName, req, msg, JSON.stringify(msg));
    texts.push(a.text);
    retryAfter ??= a.retryAfter;
  }
  const text = `[${texts.join(',')}]`;
  return retryAfter === undefined ? { status: 200, text } : { status: 200, text, retryAfter };
}

/** Registers POST at BODY_METHOD_PATHS on the Fastify app (the fast path passes these to Fastify). */
export function registerBodyMethodRoutes(app: FastifyInstance, s: Services, byName: ReadonlyMap<string, CompiledMethod>): void {
  const handler = async (req: FastifyRequest, reply: FastifyReply) => {
    const out = await bodyMethodAnswer(s, byName, {
      method: 'POST',
      url: req.url,
      contentType: req.headers['content-type'],
      rawBody: (req.body as { raw?: string } | undefined)?.raw,
      query: undefined,
      pathValue: undefined,
      authorization: req.headers.authorization,
      ip: req.ip,
    });
    if (out.retryAfter !== undefined) reply.header('retry-after', out.retryAfter);
    reply.code(out.status).type('application/json').send(out.text);
  };
  for (const path of BODY_METHOD_PATHS) app.route({ method: 'POST', url: path, handler });
}
