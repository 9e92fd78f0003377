// JSON-RPC over HTTP to the public API (the same paths any client uses: /api/v2/{method}).
// Errors come back as RpcError carrying the API's code, message and data.reason, so screens can show
// "10009 not_enough_funds" in words.

/** The API's codes (API.md section 4) in words a person reads first; the code follows them. */
const WORDS: Record<number, string> = {
  [-32602]: 'A value is not valid',
  10000: 'Please sign in',
  10002: 'The amount is below the minimum',
  10004: 'No such order',
  10005: 'The price is below the allowed band',
  10007: 'The price is above the allowed band',
  10009: 'Not enough funds',
  10010: 'The order is already closed',
  10012: 'Trading in this instrument is closed',
  10020: 'Unknown or expired instrument',
  10021: 'The amount is not a multiple of the minimum',
  10023: 'The price is not valid',
  10028: 'Too many requests: wait a moment',
  10043: 'The price is not on the tick grid',
  11029: 'Not accepted',
  11030: 'Rejected',
  11054: 'A post-only order would have traded',
  13004: 'Wrong email or password',
  13009: 'Your session has expired: sign in again',
  13021: 'Not allowed',
};

export class RpcError extends Error {
  /** For 10028: how long the server asks the client to wait, ms. */
  retryAfterMs?: number;

  constructor(
    readonly code: number,
    readonly short: string,
    readonly reason?: string,
    readonly param?: string,
  ) {
    const detail = `${code} ${short}${reason && reason !== short ? `: ${reason}` : ''}${param ? ` (${param})` : ''}`;
    super(WORDS[code] ? `${WORDS[code]} (${detail})` : detail);
  }
}

interface Envelope {
  result?: unknown;
  error?: { code: number; message: string; data?: { reason?: string; param?: string; retry_after_ms?: number } };
}

let nextId = 1;

/** Calls `method` with a JSON-RPC body; `token` adds the bearer. Network failures become code 0. */
/** Times a call refused for the rate limit (10028) is sent again, each after the wait the server names. */
const RATE_LIMIT_RETRIES = 5;

export async function call<T = unknown>(method: string, params: Record<string, unknown> = {}, token?: string | null): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await callOnce<T>(method, params, token);
    } catch (err) {
      // the credit limits (docs/security.md) refuse a burst, e.g. a few quick reloads of a page
      // whose instrument lists are large: wait as told (retry_after_ms) and try again
      const wait = err instanceof RpcError && err.code === 10028 ? err.retryAfterMs : undefined;
      if (wait === undefined || attempt >= RATE_LIMIT_RETRIES) throw err;
      await new Promise((r) => setTimeout(r, Math.min(wait, 10_000)));
    }
  }
}

async function callOnce<T>(method: string, params: Record<string, unknown>, token?: string | null): Promise<T> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  let res: Response;
  try {
    res = await fetch(`/api/v2/${method}`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }) });
  } catch {
    throw new RpcError(0, 'network_error', 'the server cannot be reached');
  }
  let env: Envelope;
  try {
    env = (await res.json()) as Envelope;
  } catch {
    throw new RpcError(0, 'bad_response', `HTTP ${res.status}`);
  }
  if (env.error) throw Object.assign(new RpcError(env.error.code, env.error.message, env.error.data?.reason, env.error.data?.param), { retryAfterMs: env.error.data?.retry_after_ms });
  return env.result as T;
}

/** An error in words for the screen: the API's code first, as the issue asks. */
export function errorText(err: unknown): string {
  if (err instanceof RpcError) return err.message;
  return err instanceof Error ? err.message : String(err);
}
