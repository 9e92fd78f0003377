// Parameter validation compiled once per method from its TypeBox schema. Query-string values
// arrive as strings and are coerced by the schema; JSON bodies are checked strictly. Parameters
// outside the schema are dropped before the handler sees them.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { TObject } from '@sinclair/typebox';
import { ERR, reject, type Reject } from '../../domain/errors.ts';

const coercing = new Ajv({ coerceTypes: true, removeAdditional: 'all', useDefaults: true, allErrors: false, strict: false });
const strict = new Ajv({ coerceTypes: false, removeAdditional: 'all', useDefaults: true, allErrors: false, strict: false });

export interface Validators {
  query: ValidateFunction;
  body: ValidateFunction;
}

/**
 * Compiled with `access_token` declared (any value): Deribit clients send it among the params of
 * every private call, and an undeclared key is deleted by `removeAdditional`, which turns the
 * params object into a slow dictionary: validating a private/buy took 1.4 us instead of 0.2, the
 * largest single cost of an order over WebSocket. `validateParams` blanks it instead.
 */
export function compileValidators(schema: TObject): Validators {
  const withToken = { ...schema, properties: { ...schema.properties, access_token: {} } };
  // Compiled at a method's first call, not at start (issue 36, restart to serving): compiling
  // every method's two validators was ~2 s of CPU of each start on these machines (ajv's code
  // generation, the largest piece of a start's profile), most of them for methods or forms (query
  // or body) a given server never serves. The first call of a method pays its compile once.
  let query: ValidateFunction | null = null;
  let body: ValidateFunction | null = null;
  return {
    get query() {
      return (query ??= coercing.compile(withToken));
    },
    get body() {
      return (body ??= strict.compile(withToken));
    },
  };
}

/**
 * Free text a client stores and others may display (labels, client order ids, notes): no control
 * characters (C0, DEL, C1: a NUL cuts strings in many tools, newlines forge log lines), no bidi
 * overrides or isolates (U+202A-U+202E, U+2066-U+2069: they make text read differently from what it
 * is) and no lone surrogates. describe() names the failure `control_or_bidi_character`.
 */
export const SAFE_TEXT_PATTERN = '^[^\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069\\p{Cs}]*$';

/**
 * A failed choice among literals (TypeBox's Type.Union of Type.Literal: anyOf of consts) in words: the
 * values it takes, from the branches' `const` errors, rather than Ajv's "must be equal to constant".
 */
function choiceReason(errors: ErrorObject[], at: string): string | null {
  const values = errors.filter((e) => e.keyword === 'const' && e.instancePath === at).map((e) => String((e.params as { allowedValue: unknown }).allowedValue));
  if (values.length === 0) return null;
  const shown = values.length > 12 ? [...values.slice(0, 12), '...'] : values;
  return `must be one of: ${shown.join(', ')}`;
}

function describe(err: ErrorObject, all: ErrorObject[] = [err]): { param: string; reason: string } {
  if (err.keyword === 'required') {
    const p = (err.params as { missingProperty: string }).missingProperty;
    return { param: p, reason: 'missing required parameter' };
  }
  const param = err.instancePath.replace(/^\//, '').split('/')[0] || '(params)';
  if (err.keyword === 'pattern' && (err.params as { pattern: string }).pattern === SAFE_TEXT_PATTERN) return { param, reason: 'control_or_bidi_character' };
  if (err.keyword === 'const' || err.keyword === 'anyOf') {
    const choice = choiceReason(all, err.instancePath);
    if (choice !== null) return { param, reason: choice };
  }
  return { param, reason: err.message ?? 'invalid value' };
}

/** Validates (and, for queries, coerces) params in place; returns a -32602 Reject on failure. */
export function validateParams(v: Validators, params: Record<string, unknown>, fromQuery: boolean): Reject | null {
  const fn = fromQuery ? v.query : v.body;
  if (fn(params)) {
    // read by the dispatcher already; a handler never sees it (an assignment keeps the object's shape)
    if (params.access_token !== undefined) params.access_token = undefined;
    return null;
  }
  const d = describe(fn.errors![0], fn.errors!);
  return reject(ERR.INVALID_PARAMS, d.reason, d.param);
}

/** The longest JSON-RPC `id` string accepted (Deribit clients send integers). */
export const MAX_RPC_ID_LENGTH = 256;

/**
 * Whether a JSON-RPC `id` is acceptable: absent, null, a finite number or a string of at most
 * MAX_RPC_ID_LENGTH characters (JSON-RPC 2.0 allows only these). Anything else (objects, arrays,
 * an 8,000-deep nesting) is refused with -32600 before the method runs, because it could not be
 * echoed safely in the reply, and a request whose reply cannot be sent must not execute.
 */
/** Why an id validRpcId refuses is refused (-32600's data.reason). */
export const BAD_RPC_ID_REASON = `id must be a number, a string of at most ${MAX_RPC_ID_LENGTH} characters, or null`;

export function validRpcId(id: unknown): boolean {
  return id === undefined || id === null || (typeof id === 'number' && Number.isFinite(id)) || (typeof id === 'string' && id.length <= MAX_RPC_ID_LENGTH);
}
