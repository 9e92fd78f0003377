// Starts a worker thread on a TypeScript module. A worker does not inherit the TypeScript loader
// the process was started with (`--import tsx`), so its entry registers tsx first and then imports
// the module. Run from the server bundle (`npm start`: dist/server/, scripts/buildServer.ts), every
// worker entry is a bundle of its own beside this one, started as it is, without tsx.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

/** Whether this code runs from the server bundle (a .js file) rather than from the sources. */
export const BUNDLED = import.meta.url.endsWith('.js');

export function startTsWorker(entry: URL, workerData: unknown): Worker {
  if (BUNDLED) return new Worker(new URL(`./${path.basename(fileURLToPath(entry), '.ts')}.js`, import.meta.url), { workerData });
  const tsxApi = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
}
