// Child of leanStart.test.ts: starts the exchange on SQLite in this process (nothing of the test
// harness loaded, which may load pg for its own clean-up), answers /health once, and prints the
// CommonJS modules the process loaded as JSON lines of paths, and how many schemas Ajv compiled
// from the exchange's first import to the /health answer.
import { createRequire } from 'node:module';
import pino from 'pino';
import { Ajv } from 'ajv';

// Counted before the exchange's modules are imported (below, dynamically): a schema compiled when a
// module loads is counted too.
let ajvCompiles = 0;
const compile = Ajv.prototype.compile;
Ajv.prototype.compile = function (this: Ajv, ...args: Parameters<typeof compile>) {
  ajvCompiles++;
  return compile.apply(this, args);
} as typeof compile;
const { loadConfig } = await import('../../src/app/config.ts');
const { startExchange } = await import('../../src/app/services.ts');

const dataDir = process.argv[2]!;
const app = await startExchange(
  loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    STRIKEBOOK_DATA_DIR: dataDir,
    STRIKEBOOK_BOOTSTRAP_TOKEN: 'test-bootstrap-token-0123456789',
    STRIKEBOOK_INDEX_FEED: 'manual',
    STRIKEBOOK_DEMO_MAKER: '0',
    LOG_LEVEL: 'silent',
  }),
  pino({ level: 'silent' }),
);
const health = await fetch(`${app.url}/health`);
await app.close();
process.stdout.write(JSON.stringify({ health: health.status, ajvCompiles, modules: Object.keys(createRequire(import.meta.url).cache) }) + '\n');
