// Result codes of the domain. The engine returns a Reject (never throws) for anything a client can
// cause; exceptions are bugs. api/rpc maps each code to its JSON-RPC message and HTTP status.

export const ERR = {
  PARSE: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  AUTHORIZATION_REQUIRED: 10000,
  QTY_TOO_LOW: 10002,
  ORDER_NOT_FOUND: 10004,
  PRICE_TOO_LOW: 10005,
  PRICE_TOO_HIGH: 10007,
  NOT_ENOUGH_FUNDS: 10009,
  ALREADY_CLOSED: 10010,
  BOOK_CLOSED: 10012,
  INVALID_INSTRUMENT: 10020,
  INVALID_AMOUNT: 10021,
  INVALID_PRICE: 10023,
  TOO_MANY_REQUESTS: 10028,
  /** A standby answers writes with it, naming the leader (docs/api-notes.md, "Standby"). */
  RETRY: 10040,
  PRICE_WRONG_TICK: 10043,
  INVALID_ARGUMENTS: 11029,
  OTHER_REJECT: 11030,
  POST_ONLY_REJECT: 11054,
  INTERNAL: 11094,
  INVALID_CREDENTIALS: 13004,
  UNAUTHORIZED: 13009,
  NOT_FOUND: 13020,
  FORBIDDEN: 13021,
  SCOPE_EXCEEDED: 13403,
  /** Block RFQ (Deribit's codes): open quotes on one RFQ, and of one maker on one side of it. */
  TOO_MANY_QUOTES_PER_BLOCK_RFQ: 13905,
  TOO_MANY_QUOTES_PER_BLOCK_RFQ_SIDE: 13906,
  /**
   * Deribit uses 13907 for two things: an acceptance its matched quotes cannot fill in full
   * (`not_fully_filled`) and a taker's open RFQs at their limit (`too_many_open_block_rfqs`); the
   * message follows the reason (src/api/rpc/errors.ts).
   */
  BLOCK_RFQ_NOT_FULLY_FILLED: 13907,
  /** A maker's quote would cross its own quote on the other side of the same RFQ. */
  QUOTE_CROSSED: 13910,
} as const;

export type ErrorCode = (typeof ERR)[keyof typeof ERR];

export class Reject {
  constructor(
    readonly code: ErrorCode,
    readonly reason?: string,
    readonly param?: string,
    /** Appended to the message, Deribit style ("price_too_high 0.0125"). */
    readonly suffix?: string,
    /** For 10028: when the client may try again (data.retry_after_ms, HTTP Retry-After). */
    readonly retryAfterMs?: number,
  ) {}
}

export function reject(code: ErrorCode, reason?: string, param?: string, suffix?: string): Reject {
  return new Reject(code, reason, param, suffix);
}

/** 10028 too_many_requests with the wait before the next attempt may pass. */
export function tooManyRequests(reason: string, retryAfterMs: number): Reject {
  return new Reject(ERR.TOO_MANY_REQUESTS, reason, undefined, undefined, Math.max(1, Math.ceil(retryAfterMs)));
}

export function isReject(x: unknown): x is Reject {
  return x instanceof Reject;
}
