// The server's version, as package.json states it (public/test, public/hello): one place to bump.
import { readFileSync } from 'node:fs';

export const SERVER_VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
