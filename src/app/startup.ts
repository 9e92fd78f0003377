// What the entry points do before anything is opened (the configuration, checked whole: every
// problem one line naming its variable, exit code 2, no stack trace) and what a started server tells
// the operator on the terminal rather than in the structured log.
import { accessSync, constants, mkdirSync } from 'node:fs';
import { loadCatalogConfig } from '../market/catalog.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { checkEnvironment } from './configSchema.ts';
import type { Services } from './services.ts';

/** Exit code of a start refused for its configuration (sysexits' EX_USAGE is 64; 2 is what the README promised). */
export const CONFIG_EXIT_CODE = 2;

/** Checks what loadConfig cannot from the text alone: the catalog parses, the data directory is writable. */
export function preflight(config: Config): void {
  try {
    loadCatalogConfig(config.catalogPath ?? undefined);
  } catch (err) {
    throw new ConfigError(`STRIKEBOOK_CATALOG: ${(err as Error).message.replace(/\s+/g, ' ')}`);
  }
  if (config.indexFeed === 'venues') {
    const currencies = loadCatalogConfig(config.catalogPath ?? undefined).currencies.map((c) => c.currency);
    // the adapters name pairs by the catalog's currency codes (BTC-USD, XBTUSD, btcusd, BTCUSDT)
    const odd = currencies.filter((c) => !/^[A-Z]{2,10}$/.test(c));
    if (odd.length > 0) throw new ConfigError(`STRIKEBOOK_INDEX_SOURCES: the catalog's currencies ${odd.join(', ')} cannot be named to a venue`);
  }
  if (config.databaseUrl === null) {
    try {
      mkdirSync(config.dataDir, { recursive: true });
      accessSync(config.dataDir, constants.W_OK);
    } catch (err) {
      throw new ConfigError(`STRIKEBOOK_DATA_DIR ${config.dataDir} is not a writable directory (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
}

function refuse(problems: string[]): never {
  for (const p of problems) process.stderr.write(`configuration error: ${p}\n`);
  process.exit(CONFIG_EXIT_CODE);
}

/** The server's configuration, or exit 2 with one line per problem. */
export function serverConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    const config = loadConfig(env);
    preflight(config);
    return config;
  } catch (err) {
    if (err instanceof ConfigError) refuse(err.problems);
    throw err;
  }
}

/** The gateway's settings checked by the same schema, or exit 2 with one line per problem. */
export function checkGatewayEnvOrExit(env: NodeJS.ProcessEnv = process.env): void {
  const problems = checkEnvironment(env, 'gateway');
  if (problems.length > 0) refuse(problems);
}

/**
 * A standby that takes over while no administrator exists prints the leader's notice then: the old
 * leader's generated token went with it, and this server's own is the one create_admin now takes.
 * Watches the role (the takeover is in services.ts); stops once it has printed or `stop()` is called.
 */
export function noticeOnTakeover(s: Pick<Services, 'bootstrapToken' | 'config' | 'ha' | 'ex'>, url: string, write: (text: string) => void, everyMs = 1_000): { stop(): void } {
  if (s.ha.role !== 'standby') return { stop() {} };
  const timer = setInterval(() => {
    if (s.ha.role !== 'leader') return;
    clearInterval(timer);
    // an administrator created on the old leader reached this server as a followed command
    if (s.ex.hasAdmin()) return;
    const notice = bootstrapNotice(s, url);
    if (notice !== null) write(`\n${notice}\n`);
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/**
 * One line for a start that failed on the system (the port taken, no permission, an unreachable
 * database), which an operator fixes without reading a stack; null for anything else (a bug: its
 * stack is wanted).
 */
export function startFailureLine(err: unknown): string | null {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (typeof e?.code !== 'string' || !/^E[A-Z]+$/.test(e.code)) return null;
  const where = e.address !== undefined ? ` ${e.address}${e.port !== undefined ? `:${e.port}` : ''}` : '';
  const hint = e.code === 'EADDRINUSE' ? ' (PORT is taken: another process listens there)' : e.code === 'EACCES' ? ' (PORT needs privileges: use one above 1023)' : '';
  return `cannot start: ${e.syscall ?? 'error'} ${e.code}${where}${hint}`;
}

/**
 * What the terminal is told when no administrator exists yet. The token is a secret: it goes to
 * stderr (the terminal, or the supervisor's console), never to the JSON log on stdout. An operator
 * who set STRIKEBOOK_BOOTSTRAP_TOKEN knows it and is not shown it. A standby refuses create_admin
 * (a write), so it names the leader instead.
 */
export function bootstrapNotice(s: Pick<Services, 'bootstrapToken' | 'config' | 'ha'>, url: string): string | null {
  if (s.bootstrapToken === null) return null;
  if (s.ha.role === 'standby') {
    const leader = s.ha.follower?.leaderUrl() ?? null;
    return `No administrator yet. This server is a standby and refuses create_admin: create the first administrator on the leader${leader ? ` (${leader})` : ''}, with the command it printed.`;
  }
  const token = s.config.bootstrapToken !== null ? '$STRIKEBOOK_BOOTSTRAP_TOKEN' : s.bootstrapToken;
  const quote = s.config.bootstrapToken !== null ? '"' : "'";
  const body = `{"email":"admin@example.com","password":"change-me-please","bootstrap_token":"${token}"}`;
  const data = quote === '"' ? `"${body.replace(/"/g, '\\"')}"` : `'${body}'`;
  return `No administrator yet. Create the first one with:\n\n  curl -s -X POST ${url}/v1/private/create_admin -H 'Content-Type: application/json' -d ${data}\n`;
}
