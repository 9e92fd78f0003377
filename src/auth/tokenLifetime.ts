// The lifetime of an access token a client asks for with `expires:NUMBER` in its scope (Deribit:
// seconds), bounded by the server's maximum so a client cannot mint a token that never expires.
import { ERR, reject, type Reject } from '../domain/errors.ts';

const EXPIRES_RE = /^expires:(.*)$/;

/**
 * The lifetime in seconds: the default without an `expires:` token, else the number asked for,
 * capped at `max`. A value that is not a whole number of seconds from 1 is refused (-32602).
 */
export function tokenLifetimeSec(scope: string | undefined, def: number, max: number): { sec: number; asked: boolean } | Reject {
  if (scope === undefined) return { sec: def, asked: false };
  for (const t of scope.split(/\s+/)) {
    const m = EXPIRES_RE.exec(t);
    if (!m) continue;
    if (!/^\d{1,12}$/.test(m[1]!) || Number(m[1]) < 1) return reject(ERR.INVALID_PARAMS, 'expires in the scope must be a whole number of seconds, at least 1', 'scope');
    return { sec: Math.min(Number(m[1]), Math.max(max, def)), asked: true };
  }
  return { sec: def, asked: false };
}
