// GET /metrics on a listener of its own (STRIKEBOOK_METRICS_PORT, on STRIKEBOOK_METRICS_HOST,
// 127.0.0.1 by default): a port the operator keeps off the proxies and the firewall, so reaching it
// is the permission, plus the token when one is set. It answers nothing else.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bearerMatches } from './metricsAccess.ts';

export interface MetricsSource {
  text(): Promise<string>;
  readonly contentType: string;
}

export interface MetricsListener {
  readonly url: string;
  close(): Promise<void>;
}

const NOT_FOUND = JSON.stringify({ jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' } });

export async function startMetricsListener(metrics: MetricsSource, port: number, host: string, token: string | null): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    req.resume();
    const path = (req.url ?? '').split('?')[0];
    if ((req.method !== 'GET' && req.method !== 'HEAD') || path !== '/metrics' || (token !== null && !bearerMatches(req.headers.authorization, token))) {
      res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' }).end(NOT_FOUND);
      return;
    }
    metrics.text().then(
      (text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  // a scrape is small and quick: nobody holds this port open
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const a = server.address() as AddressInfo;
  return {
    url: `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
