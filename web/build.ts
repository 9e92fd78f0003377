// Builds the web app into web/dist: one hashed script and stylesheet under assets/, index.html
// pointing at them, and the files of public/. esbuild bundles TSX (Preact's automatic JSX runtime)
// and CSS in well under a second; docs/web.md says why not Vite. `--if-stale` (npm start and npm
// test) builds only when dist is missing or older than a source file, so it costs a few stat calls.
import { build } from 'esbuild';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { staleAgainst } from '../scripts/staleness.ts';
import { fileURLToPath } from 'node:url';

const WEB = path.dirname(fileURLToPath(import.meta.url));
const DIST = path.join(WEB, 'dist');
const SOURCES = [path.join(WEB, 'src'), path.join(WEB, 'public'), path.join(WEB, 'index.html'), path.join(WEB, 'build.ts'), path.join(WEB, '..', 'package-lock.json')];

export function isStale(): boolean {
  return staleAgainst(path.join(DIST, 'index.html'), SOURCES);
}

export async function buildWeb(): Promise<{ ms: number; bytes: number }> {
  const t0 = performance.now();
  rmSync(DIST, { recursive: true, force: true });
  mkdirSync(DIST, { recursive: true });
  const result = await build({
    entryPoints: [path.join(WEB, 'src/main.tsx')],
    bundle: true,
    format: 'esm',
    target: 'es2022',
    minify: true,
    sourcemap: false,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    outdir: path.join(DIST, 'assets'),
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    metafile: true,
    logLevel: 'warning',
    legalComments: 'none',
  });
  const outputs = Object.keys(result.metafile.outputs);
  const asset = (ext: string) => {
    const f = outputs.find((o) => o.endsWith(ext));
    return f ? '/assets/' + path.basename(f) : null;
  };
  const js = asset('.js');
  const css = asset('.css');
  if (!js) throw new Error('esbuild produced no script');
  const tags = [css ? `<link rel="stylesheet" href="${css}" />` : '', `<script type="module" src="${js}"></script>`].filter(Boolean).join('\n    ');
  writeFileSync(path.join(DIST, 'index.html'), readFileSync(path.join(WEB, 'index.html'), 'utf8').replace('<!--assets-->', tags));
  if (existsSync(path.join(WEB, 'public'))) cpSync(path.join(WEB, 'public'), DIST, { recursive: true });
  let bytes = 0;
  for (const o of Object.values(result.metafile.outputs)) bytes += o.bytes;
  return { ms: Math.round(performance.now() - t0), bytes };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const ifStale = process.argv.includes('--if-stale');
  if (ifStale && !isStale()) process.exit(0);
  buildWeb().then(
    ({ ms, bytes }) => console.log(`web app built into web/dist in ${ms} ms (${Math.round(bytes / 1024)} KiB)`),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
