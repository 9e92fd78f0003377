// Requests refused before any method runs, answered in the Deribit envelope (API.md 1.2) with a
// section-4 code and the HTTP status that names the problem: 400 malformed, 405 method, 408 timeout,
// 413 body, 414 path parameter, 415 content type, 431 headers. Clients read `error.code`; the
// status tells proxies and people what went wrong.
import type { Duplex } from 'node:stream';
import { ERR } from '../../domain/errors.ts';
import type { CallOutput } from '../rpc/dispatch.ts';
import { ERROR_TABLE } from '../rpc/errors.ts';
import { envelopeText, micros } from './envelope.ts';

/** Deribit's request size limit. */
export const BODY_LIMIT = 32 * 1024;

/** The longest path parameter routed (an instrument name is ~25 characters, a currency 4). */
export const MAX_PATH_PARAM_LENGTH = 200;

/** What a verb other than these gets at a method's path (405, and in the Allow header). */
export const ALLOWED_VERBS = 'GET, POST, HEAD';

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/** A refusal: `code` from the error table with its message, a reason, and its own HTTP status. */
export function refusal(status: number, code: typeof ERR.INVALID_REQUEST | typeof ERR.INVALID_PARAMS | typeof ERR.METHOD_NOT_FOUND, reason: string, message?: string): CallOutput {
  return { status, error: { code, message: message ?? ERROR_TABLE[code].message, data: { reason } } };
}

export const BODY_TOO_LARGE = refusal(413, ERR.INVALID_REQUEST, `body over ${BODY_LIMIT} bytes`, 'request entity too large');
export const PATH_PARAM_TOO_LONG = refusal(414, ERR.INVALID_PARAMS, `path parameter over ${MAX_PATH_PARAM_LENGTH} characters`);
export const BAD_PERCENT_ENCODING = refusal(400, ERR.INVALID_REQUEST, 'malformed percent-encoding');
export const UNSUPPORTED_CONTENT_TYPE = refusal(415, ERR.INVALID_REQUEST, 'unsupported content type: send application/json (or a form, or text/plain holding JSON)');
export const METHOD_NOT_ALLOWED = refusal(405, ERR.INVALID_REQUEST, `method not allowed: use ${ALLOWED_VERBS}`);

/**
 * How a body is read, from its Content-Type: JSON (also as text/plain, and when the type is missing,
 * as curl and many SDKs send it), a form (`curl -d 'a=1'`: JSON text, or fields read like a query
 * string), or not at all.
 */
export type BodyKind = 'json' | 'form' | 'unsupported';

export function bodyKind(contentType: string | undefined): BodyKind {
  if (contentType === undefined) return 'json';
  const semi = contentType.indexOf(';');
  const media = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  if (media === '' || media === 'application/json' || media === 'text/plain') return 'json';
  if (media === 'application/x-www-form-urlencoded') return 'form';
  return 'unsupported';
}

/** A `%` not followed by two hex digits, or an escape that does not decode to UTF-8. */
export function malformedPercentEncoding(text: string): boolean {
  if (!text.includes('%')) return false;
  try {
    decodeURIComponent(text.replace(/\+/g, ' '));
    return false;
  } catch {
    return true;
  }
}

/**
 * Requests Node's HTTP parser refuses before any route runs (a request line and headers over its
 * 16 KiB limit, e.g. a huge GET query string; a request too slow to arrive; malformed HTTP) still get
 * the envelope, on a connection then closed.
 */
export function clientErrorHandler(testnet: boolean) {
  return (err: Error & { code?: string }, socket: Duplex): void => {
    // a reset connection has nobody left to answer
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    if (socket.writable) {
      const out =
        err.code === 'HPE_HEADER_OVERFLOW'
          ? refusal(431, ERR.INVALID_REQUEST, 'request line and headers too large', 'request entity too large')
          : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
            ? refusal(408, ERR.INVALID_REQUEST, 'request timeout')
            : refusal(400, ERR.INVALID_REQUEST, 'malformed HTTP request');
      const body = envelopeText({ id: undefined, usIn: micros() }, out, testnet);
      socket.write(`HTTP/1.1 ${out.status} ${STATUS_TEXT[out.status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    }
    socket.destroy(err);
  };
}
