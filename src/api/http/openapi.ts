// The OpenAPI 3.1 document served at /docs/openapi.json, generated from the method registry so that
// it cannot drift from the routes: one canonical path per operation (`/api/v2/<name>`, the layout
// Deribit clients and code generators expect), the other prefixes and aliases named in its text.
import { CHANNELS } from '../ws/channels.ts';
import { readFileSync } from 'node:fs';
import { ERROR_TABLE } from '../rpc/errors.ts';
import type { MethodDef } from '../rpc/registry.ts';
import { projectPath } from '../../app/projectRoot.ts';

export const CANONICAL_PREFIX = '/api/v2/';
const ERROR_STATUSES = [400, 401, 403, 404, 429, 500];

type Json = Record<string, unknown>;

export interface OpenApiOptions {
  /** Every HTTP path a method answers at (server.ts `methodPaths`), for the descriptions. */
  pathsOf: (def: MethodDef) => string[];
  /** Defaults to package.json's version. */
  version?: string;
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    // a missing package.json (an unusual deployment) must not stop the server
    return '0.0.0';
  }
}

/**
 * A plain JSON copy of a TypeBox schema (which is JSON Schema): Object.entries leaves out TypeBox's
 * symbol keys, and `$id`s go because a schema inlined at several places would declare one id twice.
 */
function jsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(jsonSchema);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [k, v] of Object.entries(schema)) if (!(k === '$id' && typeof v === 'string')) out[k] = jsonSchema(v);
  return out;
}

/** Parameters a client must send: the validator fills in those with a default (Ajv useDefaults). */
function requiredParams(def: MethodDef, without?: string): string[] {
  const props = def.params.properties as Record<string, { default?: unknown }>;
  return (def.params.required ?? []).filter((p) => p !== without && props[p]?.default === undefined);
}

export function operationId(name: string): string {
  return name.replace(/[^A-Za-z0-9]+/g, '_');
}

function errorCodeList(): string {
  return Object.entries(ERROR_TABLE)
    .map(([code, info]) => `- \`${code}\` ${info.message} (HTTP ${info.status})`)
    .join('\n');
}

function components(): Json {
  const envelope = {
    jsonrpc: { const: '2.0' },
    id: { description: 'The JSON-RPC request id, echoed; absent for bare params and GET.' },
    usIn: { type: 'integer', description: 'Receipt time, microseconds since the epoch.' },
    usOut: { type: 'integer', description: 'Reply time, microseconds since the epoch.' },
    usDiff: { type: 'integer', description: 'usOut - usIn.' },
    testnet: { type: 'boolean', description: 'True unless the server runs in production mode.' },
  };
  const errorResponses: Json = {};
  for (const status of ERROR_STATUSES) {
    const codes = Object.entries(ERROR_TABLE).filter(([, i]) => i.status === status);
    errorResponses[`Error${status}`] = {
      description: codes.map(([c, i]) => `${c} ${i.message}`).join(', '),
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
    };
  }
  return {
    securitySchemes: {
      bearer: {
        type: 'http',
        scheme: 'bearer',
        description:
          'An access token from public/auth. API keys may instead send `Authorization: Basic base64(client_id:client_secret)` or ' +
          '`Authorization: deri-hmac-sha256 id=<client_id>,ts=<ms>,sig=<hex>,nonce=<str>`, where sig is the hex HMAC-SHA256, keyed by ' +
          'the client secret, of `ts\\nnonce\\nMETHOD\\nURI\\nbody\\n`. The token may also be sent as the `access_token` parameter.',
      },
    },
    schemas: {
      Envelope: {
        type: 'object',
        required: ['jsonrpc', 'result', 'usIn', 'usOut', 'usDiff', 'testnet'],
        properties: { ...envelope, result: { description: 'The operation result (Deribit shape).' } },
      },
      ErrorEnvelope: {
        type: 'object',
        required: ['jsonrpc', 'error', 'usIn', 'usOut', 'usDiff', 'testnet'],
        properties: { ...envelope, error: { $ref: '#/components/schemas/RpcError' } },
      },
      RpcError: {
        type: 'object',
        required: ['code', 'message'],
        description: `Clients read \`code\`; the HTTP status is a courtesy. Codes:\n${errorCodeList()}`,
        properties: {
          code: { type: 'integer', enum: Object.keys(ERROR_TABLE).map(Number) },
          message: { type: 'string' },
          data: { type: 'object', properties: { reason: { type: 'string' }, param: { type: 'string' } } },
        },
      },
    },
    responses: {
      Result: { description: 'Success', content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } } },
      ...errorResponses,
    },
  };
}

/** The GET and POST operations of one method at one path (`pathParam` set: its path form). */
function operations(def: MethodDef, opts: OpenApiOptions, pathParam?: string): Json {
  const id = operationId(def.name) + (pathParam ? `_by_path_${pathParam}` : '');
  const tag = def.name.split('/')[0]!;
  const required = requiredParams(def, pathParam);
  const props = Object.entries(def.params.properties as Record<string, unknown>).filter(([p]) => p !== pathParam);
  const others = opts.pathsOf(def).filter((p) => p !== CANONICAL_PREFIX + def.name);
  const description = [
    ...(def.summary ? [def.summary] : []),
    `Scope: \`${def.scope}\`${def.optionalAuth ? ' (credentials optional, decided by the parameters)' : ''}.`,
    `Also at ${others.map((p) => `\`${p}\``).join(', ')}${def.pathParam ? `, each also as \`<path>/{${def.pathParam}}\`` : ''}.`,
    'POST takes bare params or a JSON-RPC request `{"jsonrpc":"2.0","id":..,"method":"' + def.name + '","params":{..}}`.',
  ].join(' ');
  const pathParams = pathParam ? [{ name: pathParam, in: 'path', required: true, schema: jsonSchema((def.params.properties as Json)[pathParam]) }] : [];
  const responses: Json = { '200': { $ref: '#/components/responses/Result' } };
  for (const status of ERROR_STATUSES) responses[String(status)] = { $ref: `#/components/responses/Error${status}` };
  const security = def.optionalAuth ? [{}, { bearer: [] }] : def.scope !== 'none' ? [{ bearer: [] }] : undefined;
  const common = { tags: [tag], summary: def.name, description, 'x-scope': def.scope, ...(security ? { security } : {}), responses };
  const { required: _all, ...params } = jsonSchema(def.params) as Json;
  const body = { ...params, properties: Object.fromEntries(props.map(([p, s]) => [p, jsonSchema(s)])), ...(required.length ? { required } : {}) };
  return {
    get: {
      ...common,
      operationId: `${id}_get`,
      parameters: [...pathParams, ...props.map(([p, s]) => ({ name: p, in: 'query', required: required.includes(p), schema: jsonSchema(s) }))],
    },
    post: {
      ...common,
      operationId: id,
      ...(pathParams.length ? { parameters: pathParams } : {}),
      requestBody: { required: false, content: { 'application/json': { schema: body } } },
    },
  };
}

/** The document, built once when the server is built. */
export function openApiDocument(methods: MethodDef[], opts: OpenApiOptions): Json {
  const paths: Json = {};
  for (const def of methods) {
    paths[CANONICAL_PREFIX + def.name] = operations(def, opts);
    if (def.pathParam) paths[`${CANONICAL_PREFIX}${def.name}/{${def.pathParam}}`] = operations(def, opts, def.pathParam);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Strikebook',
      version: opts.version ?? packageVersion(),
      description:
        'Self-hosted options exchange, wire-compatible with Deribit API v2. Every operation answers at `/v1/`, `/api/v1/` and ' +
        '`/api/v2/` + its name, by GET (query string) or POST (JSON body), in the Deribit JSON-RPC envelope.',
    },
    servers: [{ url: '/' }],
    tags: [
      { name: 'public', description: 'Public operations (some account reads under public/ still need credentials).' },
      { name: 'private', description: 'Operations that need credentials (or decide from their parameters).' },
    ],
    paths,
    components: components(),
    // not an OpenAPI object: the WebSocket channels (also public/get_channels), for readers of this document
    'x-websocket-channels': CHANNELS,
  };
}
