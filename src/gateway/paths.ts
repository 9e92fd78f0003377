// Which HTTP request targets a gateway forwards to the leader (issue 29, docs/security.md "Gateways").
// Only the paths of the public API and the web app, in one canonical spelling: the leader's router
// decodes percent escapes and may fold case or a trailing slash, and it serves operator endpoints
// (/metrics, /ready, /health) to loopback peers, which a same-host gateway is. So a target is
// decoded here, refused if any spelling trick is left in it (dot segments, empty segments,
// backslashes, escapes of anything but plain characters), and forwarded only when the decoded path is
// on the allow-list, rewritten to that decoded path: what the leader routes is what was checked.
import { APP_ROUTES } from '../api/http/webApp.ts';
import { OPENAPI_PATH } from '../api/http/docsPage.ts';

/** API method paths: a prefix, `public/` or `private/`, a method name, maybe a path parameter. */
const API = /^\/(?:api\/v2|api\/v1|v1)\/(?:public|private)\/[a-z0-9_]+(?:\/[A-Za-z0-9_.-]+)?$/;
/** Files of the built web app: hashed assets and the few top-level files (the icon). */
const ASSET = /^\/assets\/[A-Za-z0-9_.-]+$/;
const TOP_FILE = /^\/[A-Za-z0-9_-]+\.(?:svg|ico|png|webmanifest)$/;
/** Characters a forwarded path may hold once decoded (no `;`, `%`, `\`, spaces or controls). */
const PLAIN = /^[A-Za-z0-9_.\-/]*$/;

const exact = new Set<string>(['/docs', OPENAPI_PATH]);
const under: string[] = [];
for (const r of APP_ROUTES) {
  if (r.endsWith('/*')) under.push(r.slice(0, -1));
  else exact.add(r);
}

function allowed(path: string): boolean {
  if (exact.has(path) || API.test(path) || ASSET.test(path) || TOP_FILE.test(path)) return true;
  return under.some((p) => path.startsWith(p) && path.length > p.length && /^[A-Za-z0-9_.-]+$/.test(path.slice(p.length)));
}

/**
 * The target to send to the leader for a client's request target `raw` (path and query), or null
 * when the gateway must answer 404 itself.
 */
export function forwardTarget(raw: string): string | null {
  // origin-form only: an absolute or authority-form target, or `//host`, names no path of ours
  if (!raw.startsWith('/') || raw.startsWith('//')) return null;
  const q = raw.indexOf('?');
  const rawPath = q < 0 ? raw : raw.slice(0, q);
  const query = q < 0 ? '' : raw.slice(q);
  if (rawPath.includes('#')) return null;
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    return null;
  }
  if (!PLAIN.test(path)) return null;
  const segments = path.split('/').slice(1);
  // `//`, `/./`, `/../` and a trailing `/` are spellings of other paths
  if (segments.some((s, i) => s === '.' || s === '..' || (s === '' && !(i === 0 && path === '/')))) return null;
  if (!allowed(path)) return null;
  return path + query;
}
