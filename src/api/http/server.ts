// HTTP transport: every registry method at its canonical path and the Deribit prefixes, by GET
// (query string) and POST (bare params or a JSON-RPC request), in the Deribit envelope.
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Services } from '../../app/services.ts';
import { ERR } from '../../domain/errors.ts';
import { call, compileMethod, type CallOutput, type CompiledMethod } from '../rpc/dispatch.ts';
import { ERROR_TABLE } from '../rpc/errors.ts';
import type { MethodDef } from '../rpc/registry.ts';

/** Deribit's request size limit. */
export const BODY_LIMIT = 32 * 1024;
const PREFIXES = ['/v1/', '/api/v1/', '/api/v2/'];

/** Every HTTP path of a method, without the path-parameter forms. */
export function methodPaths(def: MethodDef): string[] {
  const names = [def.name, ...(def.aliases ?? [])];
  const out: string[] = [];
  for (const prefix of PREFIXES) for (const n of names) out.push(prefix + n);
  return out;
}

interface Envelope {
  id: unknown;
  usIn: number;
}

function micros(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

function envelopeText(env: Envelope, out: CallOutput, testnet: boolean): string {
  const usOut = micros();
  const head = env.id === undefined ? '{"jsonrpc":"2.0"' : `{"jsonrpc":"2.0","id":${JSON.stringify(env.id)}`;
  const body = out.error ? `,"error":${JSON.stringify(out.error)}` : `,"result":${JSON.stringify(out.result ?? null)}`;
  return `${head}${body},"usIn":${env.usIn},"usOut":${usOut},"usDiff":${usOut - env.usIn},"testnet":${testnet}}`;
}

function send(reply: FastifyReply, env: Envelope, out: CallOutput, testnet: boolean): void {
  reply.code(out.status).type('application/json').send(envelopeText(env, out, testnet));
}

/**
 * Requests Node's HTTP parser refuses before any route runs (a request line and headers over its
 * 16 KiB limit, e.g. a huge GET query string; malformed HTTP) still get the Deribit envelope.
 */
function clientErrorHandler(testnet: boolean) {
  return (err: Error & { code?: string }, socket: Duplex): void => {
    // a reset connection has nobody left to answer
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    if (socket.writable) {
      const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
      const out: CallOutput = {
        status: 400,
        error: {
          code: ERR.INVALID_REQUEST,
          message: tooLarge ? 'request entity too large' : ERROR_TABLE[ERR.INVALID_REQUEST].message,
          data: {
            reason: tooLarge ? 'request line and headers too large' : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request timeout' : 'malformed HTTP request',
          },
        },
      };
      const body = envelopeText({ id: undefined, usIn: micros() }, out, testnet);
      socket.write(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    }
    socket.destroy(err);
  };
}

function errorOut(code: keyof typeof ERROR_TABLE, reason?: string): CallOutput {
  const info = ERROR_TABLE[code];
  return { status: info.status, error: { code, message: info.message, ...(reason ? { data: { reason } } : {}) } };
}

/** Request body as received: kept raw (signatures are computed over it) and parsed by us. */
interface RawBody {
  raw: string;
}

/** The id of a JSON-RPC request body, so that even a request for an unknown method gets it echoed. */
function jsonRpcId(req: FastifyRequest): unknown {
  const raw = (req.body as RawBody | undefined)?.raw;
  if (req.method !== 'POST' || typeof raw !== 'string') return undefined;
  try {
    const obj: unknown = JSON.parse(raw);
    return obj !== null && typeof obj === 'object' && !Array.isArray(obj) && 'jsonrpc' in obj && 'method' in obj ? (obj as { id?: unknown }).id : undefined;
  } catch {
    return undefined;
  }
}

export function buildHttpServer(s: Services, methods: MethodDef[]): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: BODY_LIMIT,
    // Deribit clients send booleans and numbers as query strings; parsed per method by its schema
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    clientErrorHandler: clientErrorHandler(s.config.mode !== 'production'),
  });
  const testnet = s.config.mode !== 'production';

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: BODY_LIMIT }, (_req, body, done) => {
    done(null, { raw: body as string } satisfies RawBody);
  });

  const handle = (m: CompiledMethod) => async (req: FastifyRequest, reply: FastifyReply) => {
    const env: Envelope = { id: undefined, usIn: micros() };
    let params: Record<string, unknown>;
    let fromQuery = false;
    if (req.method === 'POST' && req.body && (req.body as RawBody).raw.trim() !== '') {
      let parsed: unknown;
      try {
        parsed = JSON.parse((req.body as RawBody).raw);
      } catch {
        return send(reply, env, errorOut(ERR.PARSE, 'body is not valid JSON'), testnet);
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        return send(reply, env, errorOut(ERR.INVALID_REQUEST, 'body must be a JSON object'), testnet);
      }
      const obj = parsed as Record<string, unknown>;
      if (obj.jsonrpc !== undefined && 'method' in obj) {
        env.id = obj.id;
        const p = obj.params ?? {};
        if (p === null || typeof p !== 'object' || Array.isArray(p)) {
          return send(reply, env, errorOut(ERR.INVALID_PARAMS, 'params must be an object'), testnet);
        }
        params = { ...(p as Record<string, unknown>) };
      } else params = obj;
    } else {
      params = { ...(req.query as Record<string, unknown>) };
      fromQuery = true;
    }
    const pathValue = (req.params as Record<string, string> | undefined)?.pathValue;
    if (m.def.pathParam && pathValue !== undefined) {
      // a path segment is text even when the body is JSON: an integer parameter is read as one
      const schema = (m.def.params.properties as Record<string, { type?: string }>)[m.def.pathParam];
      params[m.def.pathParam] = schema?.type === 'integer' && /^\d{1,15}$/.test(pathValue) ? Number(pathValue) : pathValue;
    }
    const out = await call(s, m, {
      params,
      fromQuery,
      credentials: {
        authorization: req.headers.authorization,
        accessToken: undefined,
        signed: { method: req.method, uri: req.url, body: (req.body as RawBody | undefined)?.raw ?? '' },
      },
      ip: req.ip,
    });
    send(reply, env, out, testnet);
  };

  for (const def of methods) {
    const compiled = compileMethod(def);
    const h = handle(compiled);
    for (const path of methodPaths(def)) {
      app.route({ method: ['GET', 'POST'], url: path, handler: h });
      if (def.pathParam) app.route({ method: ['GET', 'POST'], url: `${path}/:pathValue`, handler: h });
    }
  }

  app.get('/health', async (_req, reply) => {
    reply.type('application/json').send(JSON.stringify({ status: 'ok', seq: s.ex.seq }));
  });

  app.setNotFoundHandler((req, reply) => {
    send(reply, { id: jsonRpcId(req), usIn: micros() }, errorOut(ERR.METHOD_NOT_FOUND), testnet);
  });

  app.setErrorHandler((err: { code?: string; statusCode?: number }, req, reply) => {
    const env = { id: undefined, usIn: micros() };
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || err.statusCode === 413) {
      const info = ERROR_TABLE[ERR.INVALID_REQUEST];
      return send(reply, env, { status: 400, error: { code: ERR.INVALID_REQUEST, message: 'request entity too large', data: { reason: `body over ${BODY_LIMIT} bytes` } } }, testnet) ?? info;
    }
    if (err.statusCode && err.statusCode < 500) return send(reply, env, errorOut(ERR.INVALID_REQUEST, String((err as Error).message ?? 'bad request')), testnet);
    s.log.error({ err, url: req.url }, 'unexpected HTTP error');
    return send(reply, env, errorOut(ERR.INTERNAL), testnet);
  });

  return app;
}
