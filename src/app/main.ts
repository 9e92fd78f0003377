// Server entry point. `npm start` execs its bundle, `node dist/server/main.js` (scripts/buildServer.ts);
// `node --import tsx src/app/main.ts` (`npm run start:dev`) runs it from the sources (docs/operations.md
// "Stopping a server": run it directly, or through npm, which passes SIGTERM on to it).
import { createLogger, startExchange } from './services.ts';
import { bootstrapNotice, noticeOnTakeover, serverConfigOrExit, startFailureLine } from './startup.ts';

/** How long kept-alive HTTP connections are still answered (with `Connection: close`) once a stop begins (src/app/shutdown.ts). */
const SHUTDOWN_LINGER_MS = 1_000;

async function main(): Promise<void> {
  // checked whole before anything is opened: a bad setting exits 2 with one line each
  const config = serverConfigOrExit();
  const log = createLogger(config);
  const app = await startExchange(config, log);
  const s = app.services;
  // storage, not DATABASE_URL: the URL may hold a password (the journal logs it without one)
  log.info({ url: app.url, mode: config.mode, storage: app.storage, role: s.ha.role, dataDir: config.dataDir, indexFeed: config.indexFeed }, `Strikebook listening on ${app.url}`);
  // printed once, on purpose, to the terminal (stderr), never to the JSON log on stdout
  const notice = bootstrapNotice(s, app.url);
  if (notice !== null) process.stderr.write(`\n${notice}\n`);
  noticeOnTakeover(s, app.url, (text) => process.stderr.write(text));
  let stopping = false;
  const shutdown = (signal: string) => {
    // a second signal while the stop is under way: the operator wants out now (nothing is lost that
    // was acknowledged: each answer went out only once its record was durable)
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting without waiting for the stop to finish');
      process.exit(1);
    }
    stopping = true;
    // logged once the stop has begun: new connections are refused from here on
    const closed = app.close({ lingerMs: SHUTDOWN_LINGER_MS });
    log.info({ signal }, 'shutting down');
    closed.then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
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
  console.error(startFailureLine(err) ?? err);
  process.exit(1);
});
