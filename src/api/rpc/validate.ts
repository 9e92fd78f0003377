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

export function compileValidators(schema: TObject): Validators {
  return { query: coercing.compile(schema), body: strict.compile(schema) };
}

function describe(err: ErrorObject): { param: string; reason: string } {
  if (err.keyword === 'required') {
    const p = (err.params as { missingProperty: string }).missingProperty;
    return { param: p, reason: 'missing required parameter' };
  }
  const param = err.instancePath.replace(/^\//, '').split('/')[0] || '(params)';
  return { param, reason: err.message ?? 'invalid value' };
}

/** Validates (and, for queries, coerces) params in place; returns a -32602 Reject on failure. */
export function validateParams(v: Validators, params: Record<string, unknown>, fromQuery: boolean): Reject | null {
  const fn = fromQuery ? v.query : v.body;
  if (fn(params)) return null;
  const d = describe(fn.errors![0]);
  return reject(ERR.INVALID_PARAMS, d.reason, d.param);
}
