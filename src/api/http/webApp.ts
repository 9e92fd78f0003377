// The web app (issue 15, web/): the files Vite built into web/dist, served at `/` by the same
// server as the API. Read once at start into memory (about 250 KiB): no file system access, path
// walking or MIME guessing per request. Hashed assets are cached for a year; index.html is
// revalidated every time, so a new build is picked up on the next load. Every page carries a
// Content-Security-Policy without inline scripts or styles. Only the app's own routes fall back to
// index.html: any other unknown path keeps the API's 404 envelope.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { projectPath } from '../../app/projectRoot.ts';

export const WEB_DIST = projectPath('web', 'dist');

const CSP_REST = "img-src 'self' data:; style-src 'self'; script-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** A Host header that is a host name or an IP literal with an optional port, and nothing else. */
const HOST = /^(?:[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * The page's Content-Security-Policy for a request to `host`: it may connect to its own origin
 * only. `'self'` covers same-origin ws:/wss: in current browsers (CSP 3) but not in older ones, so
 * the WebSocket URL of the same host is named too, with both schemes: behind a proxy that ends TLS
 * the server sees http while the page is https. A Host that is not a plain host name adds nothing.
 */
export function cspFor(host: string | undefined): string {
  const self = host !== undefined && host.length <= 261 && HOST.test(host) ? ` ws://${host} wss://${host}` : '';
  return `default-src 'self'; connect-src 'self'${self}; ${CSP_REST}`;
}

/** The app's client-side routes (web/src/app.tsx): a reload on any of them must get the app. */
export const APP_ROUTES = ['/', '/signin', '/signup', '/setup', '/chain', '/chain/*', '/instrument/*', '/portfolio', '/accounts', '/wallet', '/rfq', '/keys', '/admin', '/admin/*'];

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

interface StaticFile {
  body: Buffer;
  type: string;
}

function readTree(dir: string, prefix: string, out: Map<string, StaticFile>): void {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) readTree(full, `${prefix}${name}/`, out);
    else out.set(`${prefix}${name}`, { body: readFileSync(full), type: TYPES[path.extname(name)] ?? 'application/octet-stream' });
  }
}

/** Every HTML or asset answer's headers besides the CSP (also on /docs: server.ts). */
export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

const commonHeaders = (req: FastifyRequest) => ({ ...SECURITY_HEADERS, 'content-security-policy': cspFor(req.headers.host) });

/** Registers the app's routes; without a build, `/` says how to make one. */
export function registerWebApp(app: FastifyInstance, distDir = WEB_DIST): void {
  const files = new Map<string, StaticFile>();
  if (existsSync(path.join(distDir, 'index.html'))) readTree(distDir, '/', files);
  const index = files.get('/index.html');

  const page = async (req: FastifyRequest, reply: FastifyReply) => {
    reply.headers(commonHeaders(req)).header('cache-control', 'no-cache');
    if (!index) return reply.code(503).type('text/plain; charset=utf-8').send('The web app is not built: run `npm run build:web` (npm ci and npm start do it).\n');
    return reply.type(index.type).send(index.body);
  };
  for (const route of APP_ROUTES) app.get(route, page);

  // hashed names: a changed file gets a new name, so it may be cached for good
  app.get('/assets/*', async (req, reply) => {
    const f = files.get(req.url.split('?')[0]);
    if (!f) return reply.callNotFound();
    return reply.headers(commonHeaders(req)).header('cache-control', 'public, max-age=31536000, immutable').type(f.type).send(f.body);
  });
  // unhashed files at the top of dist (the icon): cached for a day
  for (const [name, f] of files) {
    if (name.startsWith('/assets/') || name === '/index.html') continue;
    app.get(name, async (req, reply) => reply.headers(commonHeaders(req)).header('cache-control', 'public, max-age=86400').type(f.type).send(f.body));
  }
}
