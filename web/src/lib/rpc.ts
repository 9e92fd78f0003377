// JSON-RPC over HTTP to the public API (the same paths any client uses: /api/v2/{method}).
// Errors come back as RpcError carrying the API's code, message and data.reason, so screens can show
// "10009 not_enough_funds" in words.

export class RpcError extends Error {
  constructor(
    readonly code: number,
    readonly short: string,
    readonly reason?: string,
    readonly param?: string,
  ) {
    super(`${code} ${short}${reason ? `: ${reason}` : ''}`);
  }
}

interface Envelope {
  result?: unknown;
  error?: { code: number; message: string; data?: { reason?: string; param?: string } };
}

let nextId = 1;

/** Calls `method` with a JSON-RPC body; `token` adds the bearer. Network failures become code 0. */
export async function call<T = unknown>(method: string, params: Record<string, unknown> = {}, token?: string | null): Promise<T> {
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
  if (env.error) throw new RpcError(env.error.code, env.error.message, env.error.data?.reason, env.error.data?.param);
  return env.result as T;
}

/** An error in words for the screen: the API's code first, as the issue asks. */
export function errorText(err: unknown): string {
  if (err instanceof RpcError) return err.message;
  return err instanceof Error ? err.message : String(err);
}
