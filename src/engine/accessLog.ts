// The access log of each account (Deribit private/get_access_log, issue 31): every login (a token
// issued by public/auth, any grant) with the address it came from. Exchange state, written by the
// `issue_token` command that carries the address (`ip`), so replay rebuilds it; the newest
// MAX_ACCESS_LOG entries per account are kept.
import type { Exchange } from './exchange.ts';

export const MAX_ACCESS_LOG = 100;

export interface AccessEntry {
  id: number;
  ts: number;
  ip: string;
  /** how the login was made: password, refresh_token, client_credentials, client_signature */
  grant: string;
}

export function recordAccess(ex: Exchange, userId: number, ip: string, grant: string): AccessEntry {
  const e: AccessEntry = { id: ex.nextAccessId++, ts: ex.now, ip, grant };
  let list = ex.accessLog.get(userId);
  if (!list) ex.accessLog.set(userId, (list = []));
  list.push(e);
  if (list.length > MAX_ACCESS_LOG) list.shift();
  return e;
}
