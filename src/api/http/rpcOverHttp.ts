// One HTTP request to one registry method, transport-neutral: the params from the body (bare or a
// JSON-RPC request) or the query string, the call, and the Deribit envelope (API.md 1.2). Used by
// both HTTP paths: Fastify's routes and the fast path in front of them (fastPath.ts).
import { parse as parseQueryString } from 'node:querystring';
import type { Services } from '../../app/services.ts';
import { replyCost } from '../../app/credits.ts';
import { ERR } from '../../domain/errors.ts';
import { call, callDeferred, settleCall, type CallInput, type CallOutput, type CompiledMethod } from '../rpc/dispatch.ts';
import type { CallSink } from '../rpc/registry.ts';
import { DEFERRED } from '../../sequencer/sequencer.ts';
import { BAD_RPC_ID_REASON, validRpcId } from '../rpc/validate.ts';
import { envelopeText, errorOut, micros, type Envelope } from './envelope.ts';
import { BAD_PERCENT_ENCODING, bodyKind, malformedPercentEncoding } from './transportRefusals.ts';

export { BODY_LIMIT } from './transportRefusals.ts';

/** One HTTP request to one registry method, as both HTTP paths (fast and Fastify) see it. */
export interface HttpRpcRequest {
  method: string;
  /** the raw request target (what a deri-hmac-sha256 signature covers) */
  url: string;
  /** the Content-Type header: a form body that is not JSON text is read like a query string */
  contentType: string | undefined;
  rawBody: string | undefined;
  /** the parsed query string; GET requests and POSTs with an empty body take their params from it */
  query: Record<string, unknown> | undefined;
  pathValue: string | undefined;
  authorization: string | undefined;
  ip: string;
  /** src/api/http/requestIds.ts */
  requestId?: string;
}

/**
 * The status and envelope text of a call's outcome. A module function rather than a closure per
 * request: under tsx every named closure is also passed through its `__name` helper.
 */
function answer(env: Envelope, out: CallOutput, testnet: boolean, s?: Services): HttpAnswer {
  const text = envelopeText(env, out, testnet);
  // a big reply costs credits by its size (src/app/credits.ts); string length is a close, cheap bound
  if (s !== undefined && out.charge !== undefined) s.credits.charge(out.charge, replyCost(text.length));
  const wait = out.error?.data?.retry_after_ms;
  return wait === undefined ? { status: out.status, text } : { status: out.status, text, retryAfter: String(Math.ceil(wait / 1000)) };
}

/** What both HTTP paths send: a status, the envelope text and, on 10028, a Retry-After (seconds). */
export interface HttpAnswer {
  status: number;
  text: string;
  retryAfter?: string;
}

/** Parses the params (body or query), calls the method and renders the Deribit envelope. */
export async function rpcOverHttp(s: Services, m: CompiledMethod, req: HttpRpcRequest): Promise<HttpAnswer> {
  const testnet = s.config.mode !== 'production';
  const p = prepare(m, req, testnet);
  if (!(p instanceof PreparedCall)) return p;
  return answer(p.env, await call(s, m, p.input), testnet, s);
}

/**
 * rpcOverHttp for the methods whose handler hands its command to `Sequencer.submitThen`
 * (DEFERRED_METHODS: buy and sell): `done` gets the answer once the command is durable, from the
 * batch itself (HttpDeferredCall), as the WebSocket's orders are answered. No promise chain per
 * order (rpcOverHttp's, call()'s and the handler's) lives until the batch is durable, for every
 * scavenge meanwhile to copy. The answer is the one rpcOverHttp gives (test/api/httpFastPath.test.ts).
 */
export function rpcOverHttpThen(s: Services, m: CompiledMethod, req: HttpRpcRequest, done: (answer: HttpAnswer) => void): void {
  const testnet = s.config.mode !== 'production';
  const p = prepare(m, req, testnet);
  if (!(p instanceof PreparedCall)) return done(p);
  const sink = new HttpDeferredCall(s, m, p.env, testnet, req.requestId, done);
  const now = callDeferred(s, m, p.input, sink);
  if (now === DEFERRED) return;
  if (!(now instanceof Promise)) return done(answer(p.env, now, testnet, s));
  now.then(
    (out) => done(answer(p.env, out, testnet, s)),
    (err: unknown) => done(answer(p.env, callFailure(s, err, req.requestId), testnet)),
  );
}

/** A deferred order's answer, made when its batch is durable (Sequencer.submitThen settles it). */
class HttpDeferredCall implements CallSink {
  started = 0;
  charge: CallSink['charge'] = undefined;

  constructor(
    readonly s: Services,
    readonly m: CompiledMethod,
    readonly env: Envelope,
    readonly testnet: boolean,
    readonly requestId: string | undefined,
    readonly done: (answer: HttpAnswer) => void,
  ) {}

  settle(reply: unknown, ok: boolean): void {
    let out: HttpAnswer;
    try {
      out = answer(this.env, settleCall(this.s, this.m, this, reply, ok), this.testnet, this.s);
    } catch (err) {
      out = answer(this.env, callFailure(this.s, err, this.requestId), this.testnet);
    }
    this.done(out);
  }
}

/** What a failure of the transport itself answers (call() answers a handler's): 11094, logged. */
function callFailure(s: Services, err: unknown, requestId: string | undefined): CallOutput {
  s.log.error({ err, reqId: requestId }, 'unexpected HTTP error');
  return errorOut(ERR.INTERNAL);
}

/** A request ready for its call: the envelope's start and the call's input (a class, so that
 *  `instanceof` tells it from an early answer). */
class PreparedCall {
  constructor(
    readonly env: Envelope,
    readonly input: CallInput,
  ) {}
}

/** The call's input from the request, or the answer that refuses it (bad JSON, a bad id, bad params). */
function prepare(m: CompiledMethod, req: HttpRpcRequest, testnet: boolean): PreparedCall | HttpAnswer {
  const env: Envelope = { id: undefined, usIn: micros() };
  let params: Record<string, unknown>;
  let fromQuery = false;
  const body = req.method === 'POST' && req.rawBody !== undefined ? req.rawBody.trim() : '';
  if (body !== '' && body[0] !== '{' && bodyKind(req.contentType) === 'form') {
    // `curl -d 'currency=BTC'`: fields as in a query string, coerced by the schema the same way
    if (malformedPercentEncoding(body)) return answer(env, BAD_PERCENT_ENCODING, testnet);
    params = { ...parseQueryString(body) };
    fromQuery = true;
  } else if (body !== '') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return answer(env, errorOut(ERR.PARSE, 'body is not valid JSON'), testnet);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return answer(env, errorOut(ERR.INVALID_REQUEST, 'body must be a JSON object'), testnet);
    }
    const obj = parsed as Record<string, unknown>;
    if (obj.jsonrpc !== undefined && 'method' in obj) {
      if (!validRpcId(obj.id)) {
        env.id = null;
        return answer(env, errorOut(ERR.INVALID_REQUEST, BAD_RPC_ID_REASON), testnet);
      }
      env.id = obj.id;
      const p = obj.params ?? {};
      if (p === null || typeof p !== 'object' || Array.isArray(p)) {
        return answer(env, errorOut(ERR.INVALID_PARAMS, 'params must be an object'), testnet);
      }
      // not a spread copy: see the WebSocket server's handle() (validating one was 90x slower)
      params = p as Record<string, unknown>;
    } else params = obj;
  } else {
    params = { ...req.query };
    fromQuery = true;
  }
  if (m.def.pathParam && req.pathValue !== undefined) {
    // a path segment is text even when the body is JSON: an integer parameter is read as one
    const schema = (m.def.params.properties as Record<string, { type?: string }>)[m.def.pathParam];
    params[m.def.pathParam] = schema?.type === 'integer' && /^\d{1,15}$/.test(req.pathValue) ? Number(req.pathValue) : req.pathValue;
  }
  return new PreparedCall(env, {
    params,
    fromQuery,
    credentials: {
      authorization: req.authorization,
      accessToken: undefined,
      signed: { method: req.method, uri: req.url, body: req.rawBody ?? '' },
    },
    ip: req.ip,
    requestId: req.requestId,
  });
}
