// Whether a build's output is older than what it is built from: the `--if-stale` check of the web
// app's build (web/build.ts) and the server bundle's (scripts/buildServer.ts), run at every
// npm start and npm test, so it costs a few stat calls when nothing changed.
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** The newest modification time under `p` (the file itself, or everything in a directory). */
function newest(p: string): number {
  const st = statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let m = st.mtimeMs;
  for (const name of readdirSync(p)) m = Math.max(m, newest(path.join(p, name)));
  return m;
}

/** True when `output` is missing or any of `sources` (files or directories) changed after it. */
export function staleAgainst(output: string, sources: readonly string[]): boolean {
  if (!existsSync(output)) return true;
  const built = statSync(output).mtimeMs;
  return sources.some((s) => existsSync(s) && newest(s) > built);
}
