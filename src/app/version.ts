// The server's version, as package.json states it (public/test, public/hello): one place to bump.
import { readFileSync } from 'node:fs';
import { projectPath } from './projectRoot.ts';

export const SERVER_VERSION: string = (JSON.parse(readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version;
