// Server entry point: `npm start`.
import { createLogger, startExchange } from './services.ts';
import { bootstrapNotice, noticeOnTakeover, serverConfigOrExit, startFailureLine } from './startup.ts';

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
  console.error(startFailureLine(err) ?? err);
  process.exit(1);
});
