// Server entry point: `npm start`.
import { ConfigError, loadConfig } from './config.ts';
import { createLogger, startExchange } from './services.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`configuration error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config);
  const app = await startExchange(config, log);
  const s = app.services;
  // storage, not DATABASE_URL: the URL may hold a password (the journal logs it without one)
  log.info({ url: app.url, mode: config.mode, storage: app.storage, role: s.ha.role, dataDir: config.dataDir, indexFeed: config.indexFeed }, `Strikebook listening on ${app.url}`);
  if (s.bootstrapToken !== null) {
    // Printed once, on purpose: it is the only way to create the first administrator.
    const cmd = `curl -s -X POST ${app.url}/v1/private/create_admin -H 'Content-Type: application/json' -d '{"email":"admin@example.com","password":"change-me-please","bootstrap_token":"${s.bootstrapToken}"}'`;
    console.log(`\nNo administrator yet. Create the first one with:\n\n  ${cmd}\n`);
  }
  const shutdown = (signal: string) => {
    log.info({ signal }, 'shutting down');
    app.close().then(
      () => process.exit(0),
      (err) => {
        log.error({ err }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
