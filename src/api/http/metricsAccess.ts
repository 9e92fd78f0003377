// Who may read GET /metrics (issue 29, item 3). The metrics show users, orders and the journal: an
// operator's, not a client's. "The peer is loopback" used to be the test, and every same-host
// reverse proxy or gateway is a loopback peer, so anything that forwarded /metrics (or `/metrics/`,
// `/metrics?x=1`) served it to the internet. Now, on the API listener, in this order:
// - STRIKEBOOK_METRICS_PORT set: nobody (the metrics have a listener of their own, metricsListener.ts);
// - STRIKEBOOK_METRICS_PUBLIC=1: everyone (the operator said so);
// - STRIKEBOOK_METRICS_TOKEN set: a request bearing it (`Authorization: Bearer`), from any peer, and
//   nobody else;
// - production mode: nobody (set a token or a port);
// - sandbox mode: a loopback peer that is not a trusted proxy, on a request without any forwarding
//   header (a proxy that adds none must not be used in front of a sandbox that matters).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { isLoopback } from '../../app/metrics.ts';
import { viaProxy, type Cidr } from './clientAddress.ts';

export interface MetricsPolicy {
  public: boolean;
  token: string | null;
  /** /metrics is served on a listener of its own (STRIKEBOOK_METRICS_PORT). */
  ownListener: boolean;
  production: boolean;
  proxies: readonly Cidr[];
}

/** The policy of a config (src/app/config.ts). */
export function metricsPolicyOf(c: { metricsPublic: boolean; metricsToken?: string | null; metricsPort?: number | null; mode: string; proxyTrust?: { proxies: readonly Cidr[] } }): MetricsPolicy {
  return { public: c.metricsPublic, token: c.metricsToken ?? null, ownListener: c.metricsPort != null, production: c.mode === 'production', proxies: c.proxyTrust?.proxies ?? [] };
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** Whether `authorization` is `Bearer <token>`; compared in constant time (hashes of equal length). */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  if (authorization === undefined || !/^bearer /i.test(authorization)) return false;
  return timingSafeEqual(digest(authorization.slice(7).trim()), digest(token));
}

/** Whether the API listener serves /metrics to this request. */
export function metricsAllowed(p: MetricsPolicy, peer: string | undefined, headers: IncomingHttpHeaders): boolean {
  if (p.ownListener) return false;
  if (p.public) return true;
  if (p.token !== null) return bearerMatches(headers.authorization, p.token);
  if (p.production) return false;
  return isLoopback(peer) && !viaProxy(peer, headers, p.proxies);
}
