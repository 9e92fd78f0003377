// The one table mapping result codes to JSON-RPC messages and HTTP statuses (API.md 1.2 and 4).
import { ERR, type ErrorCode, Reject } from '../../domain/errors.ts';

interface ErrorInfo {
  message: string;
  status: number;
  /** a code Deribit gives several messages: the message of a reason (13907) */
  byReason?: Record<string, string>;
}

export const ERROR_TABLE: Record<ErrorCode, ErrorInfo> = {
  [ERR.PARSE]: { message: 'Parse error', status: 400 },
  [ERR.INVALID_REQUEST]: { message: 'Invalid request', status: 400 },
  [ERR.METHOD_NOT_FOUND]: { message: 'Method not found', status: 404 },
  [ERR.INVALID_PARAMS]: { message: 'Invalid params', status: 400 },
  [ERR.AUTHORIZATION_REQUIRED]: { message: 'authorization_required', status: 401 },
  [ERR.QTY_TOO_LOW]: { message: 'qty_too_low', status: 400 },
  [ERR.ORDER_NOT_FOUND]: { message: 'order_not_found', status: 400 },
  [ERR.PRICE_TOO_LOW]: { message: 'price_too_low', status: 400 },
  [ERR.PRICE_TOO_HIGH]: { message: 'price_too_high', status: 400 },
  [ERR.NOT_ENOUGH_FUNDS]: { message: 'not_enough_funds', status: 400 },
  [ERR.ALREADY_CLOSED]: { message: 'already_closed', status: 400 },
  [ERR.BOOK_CLOSED]: { message: 'book_closed', status: 400 },
  [ERR.INVALID_INSTRUMENT]: { message: 'invalid_or_unsupported_instrument', status: 400 },
  [ERR.INVALID_AMOUNT]: { message: 'invalid_amount', status: 400 },
  [ERR.INVALID_PRICE]: { message: 'invalid_price', status: 400 },
  [ERR.TOO_MANY_REQUESTS]: { message: 'too_many_requests', status: 429 },
  [ERR.RETRY]: { message: 'retry', status: 503 },
  [ERR.PRICE_WRONG_TICK]: { message: 'price_wrong_tick', status: 400 },
  [ERR.INVALID_ARGUMENTS]: { message: 'invalid_arguments', status: 400 },
  [ERR.OTHER_REJECT]: { message: 'other_reject', status: 400 },
  [ERR.POST_ONLY_REJECT]: { message: 'post_only_reject', status: 400 },
  [ERR.INTERNAL]: { message: 'internal_server_error', status: 500 },
  [ERR.INVALID_CREDENTIALS]: { message: 'invalid_credentials', status: 401 },
  [ERR.UNAUTHORIZED]: { message: 'unauthorized', status: 401 },
  [ERR.NOT_FOUND]: { message: 'not_found', status: 400 },
  [ERR.FORBIDDEN]: { message: 'forbidden', status: 403 },
  [ERR.SCOPE_EXCEEDED]: { message: 'scope_exceeded', status: 403 },
  [ERR.TOO_MANY_QUOTES_PER_BLOCK_RFQ]: { message: 'too_many_quotes_per_block_rfq', status: 400 },
  [ERR.TOO_MANY_QUOTES_PER_BLOCK_RFQ_SIDE]: { message: 'too_many_quotes_per_block_rfq_side', status: 400 },
  [ERR.BLOCK_RFQ_NOT_FULLY_FILLED]: { message: 'not_fully_filled', status: 400, byReason: { too_many_open_block_rfqs: 'too_many_open_block_rfqs' } },
  [ERR.QUOTE_CROSSED]: { message: 'quote_crossed', status: 400 },
};

export interface RpcErrorBody {
  code: number;
  message: string;
  data?: { reason?: string; param?: string; retry_after_ms?: number; leader?: string | null };
}

export function errorBody(r: Reject): RpcErrorBody {
  const info = ERROR_TABLE[r.code];
  const message = (r.reason !== undefined ? info.byReason?.[r.reason] : undefined) ?? info.message;
  const body: RpcErrorBody = { code: r.code, message: r.suffix ? `${message} ${r.suffix}` : message };
  if (r.reason !== undefined || r.param !== undefined) {
    body.data = {};
    if (r.reason !== undefined) body.data.reason = r.reason;
    if (r.param !== undefined) body.data.param = r.param;
  }
  if (r.retryAfterMs !== undefined) (body.data ??= {}).retry_after_ms = r.retryAfterMs;
  return body;
}

/**
 * A write sent to a standby: 10040 `retry` (ccxt: ExchangeNotAvailable, which a client retries),
 * with the leader's advertised URL in data.leader (null while no leader has announced one).
 */
export function standbyErrorBody(leaderUrl: string | null): RpcErrorBody {
  return { code: ERR.RETRY, message: ERROR_TABLE[ERR.RETRY].message, data: { reason: 'standby: send writes to the leader', leader: leaderUrl } };
}

export function httpStatus(r: Reject): number {
  return ERROR_TABLE[r.code].status;
}

export { Reject };
