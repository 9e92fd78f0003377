// The Deribit envelope and the error table of API.md (sections 1.2 and 4), written out here rather
// than imported from src so that the tests pin the contract, not the implementation.
import assert from 'node:assert/strict';

/** Every error code of API.md section 4, with its message. */
export const API_ERRORS: Record<number, string> = {
  [-32700]: 'Parse error',
  [-32600]: 'Invalid request',
  [-32601]: 'Method not found',
  [-32602]: 'Invalid params',
  10000: 'authorization_required',
  10002: 'qty_too_low',
  10004: 'order_not_found',
  10005: 'price_too_low',
  10007: 'price_too_high',
  10009: 'not_enough_funds',
  10010: 'already_closed',
  10012: 'book_closed',
  10020: 'invalid_or_unsupported_instrument',
  10021: 'invalid_amount',
  10023: 'invalid_price',
  10028: 'too_many_requests',
  10043: 'price_wrong_tick',
  11029: 'invalid_arguments',
  11030: 'other_reject',
  11054: 'post_only_reject',
  11094: 'internal_server_error',
  13004: 'invalid_credentials',
  13009: 'unauthorized',
  13020: 'not_found',
  13021: 'forbidden',
  13403: 'scope_exceeded',
};

/** The HTTP status API.md 1.2 gives an error code. */
export function statusOf(code: number): number {
  if (code === 10000 || code === 13004 || code === 13009) return 401;
  if (code === 13021 || code === 13403) return 403;
  if (code === -32601) return 404;
  if (code === 10028) return 429;
  if (code === 11094) return 500;
  return 400;
}

export interface Reply {
  status: number;
  body: any;
}

/**
 * Asserts a well-formed Deribit envelope: jsonrpc "2.0", exactly one of result and error, integer
 * usIn/usOut/usDiff, boolean testnet, the id echoed (or absent), an error code from the API.md table
 * with its message, and the HTTP status that goes with the outcome (or `status`, for a transport refusal).
 */
export function assertEnvelope(r: Reply, opts: { id?: unknown; testnet?: boolean; where?: string; status?: number } = {}): void {
  const where = opts.where ? ` (${opts.where})` : '';
  const b = r.body;
  assert.ok(b !== null && typeof b === 'object' && !Array.isArray(b), `body is an object${where}`);
  assert.equal(b.jsonrpc, '2.0', `jsonrpc${where}`);
  assert.ok(('result' in b) !== ('error' in b), `exactly one of result and error${where}: ${JSON.stringify(b).slice(0, 300)}`);
  for (const k of ['usIn', 'usOut', 'usDiff']) assert.ok(Number.isSafeInteger(b[k]), `${k} is an integer${where}`);
  assert.equal(b.usDiff, b.usOut - b.usIn, `usDiff = usOut - usIn${where}`);
  assert.ok(b.usDiff >= 0, `usDiff >= 0${where}`);
  assert.equal(typeof b.testnet, 'boolean', `testnet is a boolean${where}`);
  if (opts.testnet !== undefined) assert.equal(b.testnet, opts.testnet, `testnet${where}`);
  if ('id' in opts) assert.deepEqual(b.id, opts.id, `id echoed${where}`);
  else assert.ok(!('id' in b), `no id without a JSON-RPC request${where}`);
  if ('error' in b) {
    const e = b.error;
    assert.ok(Number.isInteger(e.code), `error.code is an integer${where}`);
    assert.ok(e.code in API_ERRORS, `error code ${e.code} is in the API.md table${where}: ${JSON.stringify(e)}`);
    assert.equal(typeof e.message, 'string', `error.message${where}`);
    // Deribit appends details to some messages ("price_too_low 0.0123"); -32600 has two (API.md 4)
    const messages = e.code === -32600 ? ['Invalid request', 'request entity too large'] : [API_ERRORS[e.code]];
    assert.ok(messages.some((m) => e.message === m || e.message.startsWith(m + ' ')), `message of ${e.code} is "${messages.join('" or "')}"${where}: ${e.message}`);
    if (e.data !== undefined) assert.ok(e.data !== null && typeof e.data === 'object', `error.data is an object${where}`);
    assert.ok(!JSON.stringify(e).includes('    at '), `no stack trace in the body${where}`);
    // transport refusals (413, 414, 415, 431, 405) carry their own status; the test names it
    assert.equal(r.status, opts.status ?? statusOf(e.code), `HTTP status of error ${e.code}${where}`);
  } else {
    assert.equal(r.status, 200, `HTTP status of a success${where}`);
  }
}

/** Asserts an error reply with `code` (and, when given, data.reason / data.param). */
export function assertError(r: Reply, code: number, data: { reason?: string; param?: string } = {}, where = ''): void {
  assert.ok(r.body?.error, `expected error ${code}${where ? ` (${where})` : ''}, got ${JSON.stringify(r.body).slice(0, 400)}`);
  assert.equal(r.body.error.code, code, `error code${where ? ` (${where})` : ''}: ${JSON.stringify(r.body.error)}`);
  assert.equal(r.status, statusOf(code), `HTTP status for ${code}`);
  if (data.reason !== undefined) assert.equal(r.body.error.data?.reason, data.reason, `data.reason: ${JSON.stringify(r.body.error)}`);
  if (data.param !== undefined) assert.equal(r.body.error.data?.param, data.param, `data.param: ${JSON.stringify(r.body.error)}`);
}

/** Asserts a success reply and returns its result. */
export function assertOk(r: Reply, where = ''): any {
  assert.ok(r.body && 'result' in r.body, `expected success${where ? ` (${where})` : ''}, got ${r.status} ${JSON.stringify(r.body).slice(0, 400)}`);
  assert.equal(r.status, 200);
  return r.body.result;
}
