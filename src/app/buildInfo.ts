// What this server is (docs/operations.md, "Upgrade and rollback"): its version from package.json,
// shown in GET /health and as the strikebook_build_info metric, so an operator sees which version
// each server of a fleet runs before and after an upgrade.
import { readFileSync } from 'node:fs';
import { projectPath } from './projectRoot.ts';

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    // a build without its package.json still serves; the version is then unknown, not a crash
    return 'unknown';
  }
}

export const BUILD_INFO = {
  version: packageVersion(),
  node: process.version,
} as const;
