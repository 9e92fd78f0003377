// Builds the server bundle `npm start` runs (dist/server/): the entry point and each worker thread's
// entry, each one ESM file with the project's own modules inside and its npm packages left to
// node_modules. Why: started through tsx, every one of ~300 modules went through tsx's loader
// thread, ~0.6 s of a start (the restart bench: ~0.45 s less to serving from the bundle), and each
// worker thread loaded tsx again. The sources stay the development and test entry
// (`node --import tsx src/app/main.ts`); both run the same code (src/journal/tsWorker.ts and
// src/app/projectRoot.ts find their files either way). `--if-stale` (npm start's prestart) builds
// only when the bundle is missing or older than a source file or the lockfile.
import { build } from 'esbuild';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { staleAgainst } from './staleness.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SERVER_DIST = path.join(ROOT, 'dist', 'server');
/** The entry point and every worker thread's entry (src/journal/tsWorker.ts starts them by name). */
const ENTRIES = ['src/app/main.ts', 'src/journal/journalWorker.ts', 'src/journal/walCheckpointer.ts', 'src/app/natsEventsWorker.ts', 'src/app/snapshotProcess.ts'];
const SOURCES = [path.join(ROOT, 'src'), path.join(ROOT, 'package-lock.json'), fileURLToPath(import.meta.url)];

export function serverBundleStale(): boolean {
  return staleAgainst(path.join(SERVER_DIST, 'main.js'), SOURCES);
}

export async function buildServer(): Promise<{ ms: number }> {
  const t0 = performance.now();
  await build({
    entryPoints: ENTRIES.map((e) => path.join(ROOT, e)),
    outdir: SERVER_DIST,
    entryNames: '[name]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    // stack traces name the source files with node --enable-source-maps
    sourcemap: 'linked',
    logLevel: 'warning',
  });
  return { ms: performance.now() - t0 };
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--if-stale') && !serverBundleStale()) process.exit(0);
  const r = await buildServer();
  console.log(`server bundle built in ${r.ms.toFixed(0)} ms: ${path.relative(ROOT, SERVER_DIST)}/`);
}
