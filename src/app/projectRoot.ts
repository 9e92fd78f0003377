// The project's root directory (where package.json, config/ and web/dist are), found from this
// module's own location: `src/app/` when run from the sources through tsx, `dist/server/` when run
// from the server bundle (`npm start`, scripts/buildServer.ts), where every module shares one
// import.meta.url and paths relative to a source file's place would point elsewhere.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    const up = path.dirname(dir);
    // no package.json above: the layout of the sources (src/app/ two levels down)
    if (up === dir) return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
    dir = up;
  }
}

export const PROJECT_ROOT = findRoot();

/** A path under the project's root. */
export function projectPath(...parts: string[]): string {
  return path.join(PROJECT_ROOT, ...parts);
}
