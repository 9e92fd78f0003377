// A same-host reverse proxy for tests, as nginx with `proxy_set_header X-Forwarded-For
// $proxy_add_x_forwarded_for` behaves: every HTTP request and WebSocket upgrade is passed to the
// target from 127.0.0.1, with the client's address appended to X-Forwarded-For (or, with
// `header: 'forwarded'`, an RFC 7239 `for=` element appended to Forwarded).
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface ForwardingProxy {
  url: string;
  close(): Promise<void>;
}

function appended(req: IncomingMessage, header: 'x-forwarded-for' | 'forwarded'): Record<string, string | string[] | undefined> {
  const from = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
  const prev = req.headers[header];
  const hop = header === 'x-forwarded-for' ? from : from.includes(':') ? `for="[${from}]"` : `for=${from}`;
  return { ...req.headers, [header]: prev === undefined ? hop : `${prev}, ${hop}` };
}

export async function startForwardingProxy(target: string, opts: { header?: 'x-forwarded-for' | 'forwarded' } = {}): Promise<ForwardingProxy> {
  const header = opts.header ?? 'x-forwarded-for';
  const { port: targetPort } = new URL(target);
  const server = createServer((req, res) => {
    const up = httpRequest({ host: '127.0.0.1', localAddress: '127.0.0.1', port: Number(targetPort), method: req.method, path: req.url, headers: appended(req, header), agent: false }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  // upgraded sockets leave the server's books: closed by close() here
  const tunnels = new Set<{ destroy(): void }>();
  server.on('upgrade', (req, socket, head) => {
    const up = connect({ host: '127.0.0.1', localAddress: '127.0.0.1', port: Number(targetPort) }, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (const [k, v] of Object.entries(appended(req, header))) for (const x of Array.isArray(v) ? v : [v]) if (x !== undefined) lines.push(`${k}: ${x}`);
      up.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length > 0) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    tunnels.add(socket);
    const end = () => {
      tunnels.delete(socket);
      up.destroy();
      socket.destroy();
    };
    up.on('error', end);
    socket.on('error', end);
    socket.on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of [...tunnels]) t.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
