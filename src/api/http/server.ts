// HTTP transport: every registry method at its canonical path and the Deribit prefixes, by GET
// (query string) and POST (bare params or a JSON-RPC request), in the Deribit envelope. Fastify
// serves every request but plain POSTs, which the fast path in front of it answers (fastPath.ts).
import { createServer } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Services } from '../../app/services.ts';
import { BUILD_INFO } from '../../app/buildInfo.ts';
import { ERR } from '../../domain/errors.ts';
import { compileMethod, type CallOutput, type CompiledMethod } from '../rpc/dispatch.ts';
import type { MethodDef } from '../rpc/registry.ts';
import { validRpcId } from '../rpc/validate.ts';
import { NO_PROXIES, clientAddressOf } from './clientAddress.ts';
import { DOCS_CSP, docsPage, OPENAPI_PATH } from './docsPage.ts';
import { registerBodyMethodRoutes } from './bodyMethod.ts';
import { fastPath } from './fastPath.ts';
import { metricsAllowed, metricsPolicyOf } from './metricsAccess.ts';
import { startMetricsListener, type MetricsListener } from './metricsListener.ts';
import { DEFAULT_CONNECTION_LIMITS, checkingIntervalMs, limitConnections, type ConnectionCounts, type ConnectionLimits } from './connectionLimits.ts';
import { openApiDocument } from './openapi.ts';
import { envelopeText, errorOut, micros, type Envelope } from './envelope.ts';
import { rpcOverHttp } from './rpcOverHttp.ts';
import { requestIdOf, withRequestIds } from './requestIds.ts';
import { SECURITY_HEADERS, registerWebApp } from './webApp.ts';
import { healthBody, readyBody } from '../../app/haStatus.ts';
import {
  ALLOWED_VERBS,
  BODY_LIMIT,
  BAD_PERCENT_ENCODING,
  BODY_TOO_LARGE,
  MAX_PATH_PARAM_LENGTH,
  METHOD_NOT_ALLOWED,
  PATH_PARAM_TOO_LONG,
  UNSUPPORTED_CONTENT_TYPE,
  bodyKind,
  clientErrorHandler,
  malformedPercentEncoding,
  refusal,
} from './transportRefusals.ts';

export { BODY_LIMIT } from './transportRefusals.ts';

const PREFIXES = ['/v1/', '/api/v1/', '/api/v2/'];

/** Every HTTP path of a method, without the path-parameter forms. */
export function methodPaths(def: MethodDef): string[] {
  const names = [def.name, ...(def.aliases ?? [])];
  const out: string[] = [];
  for (const prefix of PREFIXES) for (const n of names) out.push(prefix + n);
  return out;
}

function send(reply: FastifyReply, env: Envelope, out: CallOutput, testnet: boolean): void {
  reply.code(out.status).type('application/json').send(envelopeText(env, out, testnet));
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
    const id = obj !== null && typeof obj === 'object' && !Array.isArray(obj) && 'jsonrpc' in obj && 'method' in obj ? (obj as { id?: unknown }).id : undefined;
    return validRpcId(id) ? id : null;
  } catch {
    return undefined;
  }
}

/** The connection bounds of the config (src/app/config.ts), defaults where it has none. */
/**
 * What /health adds for an operator (the admin console's status panel): the index feed (the console
 * offers "Set index" only with `manual`), the journal's retention and snapshot cadence, and the
 * snapshots taken since start. Nothing secret: settings and counts.
 */
export function storageStatus(s: Services): Record<string, unknown> {
  const c = s.snapshots.counts;
  const last = s.snapshots.last;
  return {
    mode: s.config.mode,
    index_feed: s.config.indexFeed,
    storage: s.config.databaseUrl ? 'postgres' : 'sqlite',
    journal: { retention: s.config.journalRetention ?? 'keep', snapshot_every: s.config.snapshotEvery },
    snapshots: {
      taken: c.inline + c.background,
      failed: c.failed,
      last_seq: last?.seq ?? null,
      last_bytes: last?.bytes ?? null,
      last_age_ms: last === null ? null : Math.max(0, s.ex.now - last.at),
    },
  };
}

export function connectionLimitsOf(c: Services['config']): ConnectionLimits {
  const d = DEFAULT_CONNECTION_LIMITS;
  return {
    maxPerIp: c.maxConnectionsPerIp ?? d.maxPerIp,
    maxTotal: c.maxConnections ?? d.maxTotal,
    headersTimeoutMs: c.headersTimeoutMs ?? d.headersTimeoutMs,
    requestTimeoutMs: c.requestTimeoutMs ?? d.requestTimeoutMs,
    keepAliveTimeoutMs: c.keepAliveTimeoutMs ?? d.keepAliveTimeoutMs,
    trustedProxies: c.proxyTrust?.proxies ?? [],
  };
}

/** The metrics listener of an HTTP server built here, when STRIKEBOOK_METRICS_PORT gave it one. */
export const metricsListeners = new WeakMap<FastifyInstance, MetricsListener>();

/** The open connections of the HTTP servers built here (WebSockets included), for metrics and tests. */
export const connectionCounts = new WeakMap<FastifyInstance, ConnectionCounts>();

export function buildHttpServer(s: Services, methods: MethodDef[]): FastifyInstance {
  const fastMethods = new Map<string, CompiledMethod>();
  let closing = false;
  const limits = connectionLimitsOf(s.config);
  const trust = s.config.proxyTrust ?? NO_PROXIES;
  let counts: ConnectionCounts | null = null;
  const app = Fastify({
    // the node:http server, with the fast path in front of Fastify's own handler; its timeouts and
    // connection caps are ours (connectionLimits.ts), not Fastify's defaults (which time out nothing)
    serverFactory: (handler) => {
      const listener = withRequestIds(fastPath(s, fastMethods, () => closing, handler), { accessLog: s.config.accessLog, log: s.log });
      const server = createServer({ connectionsCheckingInterval: checkingIntervalMs(limits) }, listener);
      counts = limitConnections(server, limits);
      return server;
    },
    logger: false,
    bodyLimit: BODY_LIMIT,
    // Deribit clients send booleans and numbers as query strings; parsed per method by its schema
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_PARAM_LENGTH },
    clientErrorHandler: clientErrorHandler(s.config.mode !== 'production'),
    // the router's own refusals (a path parameter too long, a path that does not percent-decode)
    frameworkErrors: (err, _req, reply) => {
      send(reply, { id: undefined, usIn: micros() }, err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? PATH_PARAM_TOO_LONG : err.code === 'FST_ERR_BAD_URL' ? BAD_PERCENT_ENCODING : errorOut(ERR.INVALID_REQUEST), testnet);
    },
  });
  const testnet = s.config.mode !== 'production';
  /** Every method path, and the paths that take a path parameter after them: a wrong verb there is 405. */
  const methodPathSet = new Set<string>();
  const pathParamPrefixes = new Set<string>();
  for (const def of methods) {
    for (const path of methodPaths(def)) {
      methodPathSet.add(path);
      if (def.pathParam) pathParamPrefixes.add(path);
    }
  }
  const isMethodPath = (url: string): boolean => {
    const q = url.indexOf('?');
    const path = (q < 0 ? url : url.slice(0, q)).replace(/\/$/, '');
    if (methodPathSet.has(path)) return true;
    const slash = path.lastIndexOf('/');
    return slash > 0 && pathParamPrefixes.has(path.slice(0, slash));
  };

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: BODY_LIMIT }, (_req, body, done) => {
    done(null, { raw: body as string } satisfies RawBody);
  });

  // refused before the body is read: a declared body over the limit, a body of a type we do not
  // read (GET bodies too, which are otherwise ignored), a query string that does not percent-decode
  app.addHook('onRequest', async (req, reply) => {
    const length = req.headers['content-length'];
    if ((length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined) {
      if (Number(length) > BODY_LIMIT) return send(reply, { id: undefined, usIn: micros() }, BODY_TOO_LARGE, testnet);
      if (bodyKind(req.headers['content-type']) === 'unsupported') return send(reply, { id: undefined, usIn: micros() }, UNSUPPORTED_CONTENT_TYPE, testnet);
    }
    const q = req.url.indexOf('?');
    if (q >= 0 && malformedPercentEncoding(req.url.slice(q + 1))) return send(reply, { id: undefined, usIn: micros() }, BAD_PERCENT_ENCODING, testnet);
  });

  const handle = (m: CompiledMethod) => async (req: FastifyRequest, reply: FastifyReply) => {
    const out = await rpcOverHttp(s, m, {
      method: req.method,
      url: req.url,
      contentType: req.headers['content-type'],
      rawBody: (req.body as RawBody | undefined)?.raw,
      query: req.query as Record<string, unknown>,
      pathValue: (req.params as Record<string, string> | undefined)?.pathValue,
      authorization: req.headers.authorization,
      ip: clientAddressOf(req.raw, trust),
      requestId: requestIdOf(req.raw),
    });
    if (out.retryAfter !== undefined) reply.header('retry-after', out.retryAfter);
    reply.code(out.status).type('application/json').send(out.text);
  };

  /** Every method by name and alias, for requests that name it in the body (bodyMethod.ts). */
  const byName = new Map<string, CompiledMethod>();
  /** The handler of every method path that takes no path parameter (the wildcard routes' lookup). */
  const byPath = new Map<string, (req: FastifyRequest, reply: FastifyReply) => Promise<void>>();
  for (const def of methods) {
    const compiled = compileMethod(def);
    for (const n of [def.name, ...(def.aliases ?? [])]) byName.set(n, compiled);
    const h = handle(compiled);
    for (const path of methodPaths(def)) {
      fastMethods.set(path, compiled);
      // A route per path was ~1,000 routes: 0.15-0.2 s of every start in the router (find-my-way's
      // addNewRoute, a third of an empty server's start from the bundle). Only the few methods
      // with a path parameter keep routes of their own (the router decodes and bounds the
      // parameter); the rest are one wildcard route per prefix and a map.
      if (def.pathParam) {
        app.route({ method: ['GET', 'POST'], url: path, handler: h });
        app.route({ method: ['GET', 'POST'], url: `${path}/:pathValue`, handler: h });
      } else byPath.set(path, h);
    }
  }
  for (const prefix of PREFIXES) {
    app.route({
      method: ['GET', 'POST'],
      url: `${prefix}*`,
      handler: (req, reply) => {
        // the router's decoded rest of the path; a trailing slash is ignored, as for any route
        const rest = (req.params as { '*': string })['*'];
        const h = byPath.get(prefix + (rest.endsWith('/') ? rest.slice(0, -1) : rest));
        if (h !== undefined) return h(req, reply);
        // a path value the router would not take (over its length limit: a method's own
        // `:pathValue` route then gives way to this one) is refused as the router refuses it, and
        // so is a last segment longer than any path value may be
        const full = prefix + rest;
        let value = rest.length - rest.lastIndexOf('/') - 1;
        for (const p of pathParamPrefixes) if (full.startsWith(`${p}/`)) value = Math.max(value, full.length - p.length - 1);
        if (value > MAX_PATH_PARAM_LENGTH) return send(reply, { id: undefined, usIn: micros() }, PATH_PARAM_TOO_LONG, testnet);
        send(reply, { id: jsonRpcId(req), usIn: micros() }, errorOut(ERR.METHOD_NOT_FOUND), testnet);
      },
    });
  }

  registerBodyMethodRoutes(app, s, byName);

  // once closing, Fastify answers (503 and Connection: close on a kept-alive connection)
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });

  // role, lease and last commit, and on a standby how far behind the leader it is (docs/operations.md)
  app.get('/health', async (_req, reply) => {
    reply.type('application/json').send(JSON.stringify({ ...healthBody(s.ha, s.ex.seq), ...storageStatus(s), version: BUILD_INFO.version }));
  });
  // for load balancers: only the leader, holding its lease, takes traffic that writes
  app.get('/ready', async (_req, reply) => {
    const body = readyBody(s.ha);
    reply.code(body.ready ? 200 : 503).type('application/json').send(JSON.stringify(body));
  });
  // users and orders are an exchange's internals: operators only (metricsAccess.ts says who)
  const metricsPolicy = metricsPolicyOf(s.config);
  app.get('/metrics', async (req, reply) => {
    if (metricsAllowed(metricsPolicy, req.socket.remoteAddress, req.headers)) reply.type(s.metrics.contentType).send(await s.metrics.text());
    else send(reply, { id: undefined, usIn: micros() }, errorOut(ERR.METHOD_NOT_FOUND), testnet);
  });
  const metricsPort = s.config.metricsPort;
  if (metricsPort != null) {
    // its own listener opens and closes with this one; a port it cannot take fails the start
    let listener: MetricsListener | null = null;
    app.addHook('onReady', async () => {
      listener = await startMetricsListener(s.metrics, metricsPort, s.config.metricsHost ?? '127.0.0.1', s.config.metricsToken ?? null);
      metricsListeners.set(app, listener);
      s.log.info({ url: listener.url }, 'metrics listening');
    });
    app.addHook('onClose', async () => listener?.close());
  }
  // generated once from the registry, at the first request for them, so a request never rebuilds
  // them and a start does not build them (the OpenAPI document was ~25 ms of every start's CPU)
  let openApiText: string | null = null;
  let docsHtml: string | null = null;
  const docsHeaders = { ...SECURITY_HEADERS, 'content-security-policy': DOCS_CSP };
  app.get(OPENAPI_PATH, async (_req, reply) => {
    openApiText ??= JSON.stringify(openApiDocument(methods, { pathsOf: methodPaths }));
    return reply.headers(docsHeaders).type('application/json').send(openApiText);
  });
  app.get('/docs', async (_req, reply) => {
    docsHtml ??= docsPage(methods);
    return reply.headers(docsHeaders).type('text/html; charset=utf-8').send(docsHtml);
  });
  // the browser app (web/), on the same public API as any client
  registerWebApp(app);

  app.setNotFoundHandler((req, reply) => {
    if (req.method !== 'GET' && req.method !== 'POST' && req.method !== 'HEAD' && isMethodPath(req.url)) {
      reply.header('allow', ALLOWED_VERBS);
      return send(reply, { id: undefined, usIn: micros() }, METHOD_NOT_ALLOWED, testnet);
    }
    send(reply, { id: jsonRpcId(req), usIn: micros() }, errorOut(ERR.METHOD_NOT_FOUND), testnet);
  });

  app.setErrorHandler((err: { code?: string; statusCode?: number }, req, reply) => {
    const env = { id: undefined, usIn: micros() };
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || err.statusCode === 413) return send(reply, env, BODY_TOO_LARGE, testnet);
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || err.statusCode === 415) return send(reply, env, UNSUPPORTED_CONTENT_TYPE, testnet);
    if (err.statusCode && err.statusCode < 500) return send(reply, env, refusal(400, ERR.INVALID_REQUEST, String((err as Error).message ?? 'bad request')), testnet);
    s.log.error({ err, reqId: requestIdOf(req.raw), path: req.url.split('?')[0] }, 'unexpected HTTP error');
    return send(reply, env, errorOut(ERR.INTERNAL), testnet);
  });

  if (counts) connectionCounts.set(app, counts);
  return app;
}
