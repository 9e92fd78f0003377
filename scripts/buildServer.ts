// Builds the server bundle `npm start` runs (dist/server/): the entry point and each worker thread's
// entry, each one ESM file with the project's own modules and its pure-JavaScript npm packages
// inside (BUNDLE_EXTERNAL: what stays in node_modules, and why). Why a bundle: started through tsx,
// every one of ~300 modules went through tsx's loader thread, ~0.6 s of a start (the restart bench:
// ~0.45 s less to serving from the bundle), and each worker thread loaded tsx again. Why the
// packages inside it too (issue 36, seventeenth stop): node's loader resolved, stat'ed, read and
// (for a CommonJS package imported from ESM) lexed ~400 files of fastify, ajv, ws and prom-client
// one by one, ~150 ms of a 0.6-0.7 s empty start. The sources stay the development and test entry
// (`node --import tsx src/app/main.ts`); both run the same code (src/journal/tsWorker.ts and
// src/app/projectRoot.ts find their files either way). `--if-stale` (npm start's prestart) builds
// only when the bundle is missing or older than a source file or the lockfile.
import { build } from 'esbuild';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { staleAgainst } from './staleness.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SERVER_DIST = path.join(ROOT, 'dist', 'server');
/** The entry point and every worker thread's entry (src/journal/tsWorker.ts starts them by name). */
const ENTRIES = ['src/app/main.ts', 'src/journal/journalWorker.ts', 'src/journal/walCheckpointer.ts', 'src/app/natsEventsWorker.ts', 'src/app/snapshotProcess.ts'];
/**
 * The packages left to node_modules: native addons (loaded from their compiled `.node` file), the
 * PostgreSQL and NATS clients (imported only when a server is configured for them, so a server on
 * SQLite never parses them: test/app/leanStart.test.ts), and pino (its transports start worker
 * threads that load pino's own files by path). Everything else a server imports is bundled;
 * test/deploy/bundle.test.ts checks that the bundle imports nothing else.
 */
export const BUNDLE_EXTERNAL = ['better-sqlite3', 'bufferutil', 'utf-8-validate', 'pg', 'pg-native', '@nats-io/*', 'pino'];
/**
 * The bundled CommonJS packages call `require` for node's built-in modules; an ESM file has none,
 * so the bundle makes one (esbuild's shim calls it when it exists).
 */
const REQUIRE_BANNER = "import { createRequire as __bundleCreateRequire } from 'node:module'; const require = __bundleCreateRequire(import.meta.url);";
const SOURCES = [path.join(ROOT, 'src'), path.join(ROOT, 'package-lock.json'), fileURLToPath(import.meta.url)];

export function serverBundleStale(): boolean {
  return staleAgainst(path.join(SERVER_DIST, 'main.js'), SOURCES);
}

/** What each output file of the bundle imports from outside it, written beside the bundle at each
 *  build: node's modules and BUNDLE_EXTERNAL, nothing else (test/deploy/bundle.test.ts). */
export const BUNDLE_IMPORTS = path.join(SERVER_DIST, 'imports.json');

export async function buildServer(): Promise<{ ms: number }> {
  const t0 = performance.now();
  const { metafile } = await build({
    entryPoints: ENTRIES.map((e) => path.join(ROOT, e)),
    outdir: SERVER_DIST,
    entryNames: '[name]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: BUNDLE_EXTERNAL,
    banner: { js: REQUIRE_BANNER },
    // stack traces name the source files with node --enable-source-maps
    sourcemap: 'linked',
    logLevel: 'warning',
    metafile: true,
  });
  const imports: Record<string, string[]> = {};
  for (const [file, out] of Object.entries(metafile.outputs)) {
    if (file.endsWith('.js')) imports[path.basename(file)] = [...new Set(out.imports.filter((i) => i.external).map((i) => i.path))].sort();
  }
  writeFileSync(BUNDLE_IMPORTS, JSON.stringify(imports, null, 2) + '\n');
  return { ms: performance.now() - t0 };
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--if-stale') && !serverBundleStale()) process.exit(0);
  const r = await buildServer();
  console.log(`server bundle built in ${r.ms.toFixed(0)} ms: ${path.relative(ROOT, SERVER_DIST)}/`);
}
