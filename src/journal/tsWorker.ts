// Starts a worker thread, or a child process, on a TypeScript module. A worker does not inherit the
// TypeScript loader the process was started with (`--import tsx`), so its entry registers tsx first
// and then imports the module; a child process is given `--import tsx` itself. Run from the server
// bundle (`npm start`: dist/server/, scripts/buildServer.ts), every such entry is a bundle of its
// own beside this one, started as it is, without tsx.
import { fork, type ChildProcess } from 'node:child_process';
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

/**
 * A child process on `entry` with an IPC channel ('advanced' serialization: typed arrays cross as
 * bytes, not as JSON) and the parent's stdout and stderr. None of the parent's node flags are
 * passed on (a --cpu-prof or --inspect of the server is the server's own).
 */
export function startTsProcess(entry: URL): ChildProcess {
  const options = { serialization: 'advanced' as const, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] as ('ignore' | 'inherit' | 'ipc')[] };
  if (BUNDLED) return fork(fileURLToPath(new URL(`./${path.basename(fileURLToPath(entry), '.ts')}.js`, import.meta.url)), [], { ...options, execArgv: [] });
  return fork(fileURLToPath(entry), [], { ...options, execArgv: ['--import', 'tsx'] });
}
