// Starts a worker thread on a TypeScript module. A worker does not inherit the TypeScript loader
// the process was started with (`--import tsx`), so its entry registers tsx first and then imports
// the module.
import { Worker } from 'node:worker_threads';

export function startTsWorker(entry: URL, workerData: unknown): Worker {
  const tsxApi = import.meta.resolve('tsx/esm/api');
  const bootstrap = `import(${JSON.stringify(tsxApi)}).then(({ register }) => { register(); return import(${JSON.stringify(entry.href)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
}
