// The page at /docs: the operations grouped by tag with their scope, and a link to the OpenAPI
// document. Plain HTML built once, with no scripts: an exchange's own origin should not load
// code from a CDN, and the JSON document is what tools read.
import { createHash } from 'node:crypto';
import type { MethodDef } from '../rpc/registry.ts';
import { CANONICAL_PREFIX } from './openapi.ts';
import { CHANNELS } from '../ws/channels.ts';

export const OPENAPI_PATH = '/docs/openapi.json';

const STYLE = 'body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}';

/**
 * The docs' Content-Security-Policy: nothing loads but the page's one inline style, allowed by its
 * hash; no script, no framing (clickjacking), no <base>, no form posts. Also sent with the OpenAPI
 * document, which a browser could otherwise be led to render.
 */
export const DOCS_CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function channelRows(): string {
  return CHANNELS.map((c) => {
    const params = Object.entries(c.params).map(([k, v]) => `${k}: ${v.join(' | ')}`).join('; ');
    return `<tr><td><code>${esc(c.channel)}</code></td><td>${c.access}</td><td>${esc(params)}</td><td>${esc(c.data)}</td></tr>`;
  }).join('\n');
}

export function docsPage(methods: MethodDef[]): string {
  const byTag = new Map<string, MethodDef[]>();
  for (const def of methods) {
    const tag = def.name.split('/')[0]!;
    byTag.set(tag, [...(byTag.get(tag) ?? []), def]);
  }
  const sections = [...byTag].map(([tag, defs]) => {
    const rows = defs
      .map((d) => {
        const path = CANONICAL_PREFIX + d.name + (d.pathParam ? ` (also /{${d.pathParam}})` : '');
        const aliases = d.aliases?.length ? d.aliases.join(', ') : '';
        return `<tr><td><code>${esc(d.name)}</code></td><td><code>${esc(d.scope)}</code>${d.optionalAuth ? ' (optional)' : ''}</td><td><code>${esc(path)}</code></td><td>${esc(aliases)}</td></tr>`;
      })
      .join('\n');
    return `<h2 id="${esc(tag)}">${esc(tag)}</h2>\n<table>\n<tr><th>operation</th><th>scope</th><th>path</th><th>aliases</th></tr>\n${rows}\n</table>`;
  });
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Strikebook API</title>
<style>${STYLE}</style>
</head><body>
<h1>Strikebook API</h1>
<p>OpenAPI 3.1 document: <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a>. Every operation answers at <code>/v1/</code>, <code>/api/v1/</code>
and <code>/api/v2/</code> followed by its name (and each alias), by GET (query string) or POST (JSON body). Scope <code>none</code> is public;
others need <code>Authorization: Bearer</code>, Basic or <code>deri-hmac-sha256</code> credentials.</p>
${sections.join('\n')}
<h2 id="channels">WebSocket channels</h2>
<p>At <code>/ws/api/v2</code> and <code>/v1/ws</code>, by <code>public/subscribe</code> (private ones by <code>private/subscribe</code>); also <code>public/get_channels</code>.</p>
<table>
<tr><th>channel</th><th>access</th><th>parameters</th><th>data</th></tr>
${channelRows()}
</table>
</body></html>
`;
}
