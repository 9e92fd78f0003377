// The real entry points (`node src/app/main.ts`, `node src/gateway/main.ts`) started with bad
// settings: each is refused with exit code 2 and one line naming the variable, no stack trace, and
// before the journal is opened (the data directory stays empty).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import path from 'node:path';
import { ROOT, tempDir } from '../helpers/server.ts';

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs an entry point with exactly `env` (plus PATH and HOME); kills it if it has not exited by the deadline. */
function run(entry: string, env: Record<string, string>): Promise<Exit> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, entry)], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // a bound on a process that never exits (a setting silently taken), not a judgment of speed
    const deadline = setTimeout(() => proc.kill('SIGKILL'), 60_000);
    proc.on('exit', (code) => {
      clearTimeout(deadline);
      resolve({ code, stdout, stderr });
    });
  });
}

const lines = (s: string) => s.split('\n').filter((l) => l.trim() !== '');

const SERVER_CASES: Array<[string, Record<string, string>, RegExp]> = [
  ['a port that is not a number', { PORT: 'eighty' }, /^configuration error: PORT must be an integer in \[0, 65535\], got "eighty"$/],
  ['a simulated index vol that is not a number', { STRIKEBOOK_INDEX_VOL: 'high' }, /^configuration error: STRIKEBOOK_INDEX_VOL must be a number/],
  ['an unknown log level', { LOG_LEVEL: 'loud' }, /^configuration error: LOG_LEVEL must be one of fatal, error, warn, info/],
  ['a catalog file that does not exist', { STRIKEBOOK_CATALOG: '/nonexistent/catalog.json' }, /^configuration error: STRIKEBOOK_CATALOG: catalog config \/nonexistent\/catalog.json: cannot read/],
  ['a misspelled variable', { STRIKEBOOK_SNAPHOT_EVERY: '1000' }, /^configuration error: unknown variable STRIKEBOOK_SNAPHOT_EVERY \(did you mean STRIKEBOOK_SNAPSHOT_EVERY\?\)$/],
  ['a database URL of another database', { DATABASE_URL: 'mysql://root:hunter2@db/x' }, /^configuration error: DATABASE_URL must be a postgres\/postgresql URL$/],
  ['production on the simulated index', { STRIKEBOOK_MODE: 'production', STRIKEBOOK_INDEX_FEED: 'simulated' }, /^configuration error: STRIKEBOOK_INDEX_FEED=simulated is refused in production mode/],
  ['production without an index feed named', { STRIKEBOOK_MODE: 'production' }, /^configuration error: STRIKEBOOK_INDEX_FEED is required in production mode$/],
  ['the venues index without sources', { STRIKEBOOK_INDEX_FEED: 'venues' }, /^configuration error: STRIKEBOOK_INDEX_SOURCES is required with STRIKEBOOK_INDEX_FEED=venues$/],
  ['a venue nobody has an adapter for', { STRIKEBOOK_INDEX_FEED: 'venues', STRIKEBOOK_INDEX_SOURCES: 'coinbase,mtgox' }, /^configuration error: STRIKEBOOK_INDEX_SOURCES must be comma-separated venues/],
];

describe('the server entry point refuses bad settings', () => {
  for (const [what, env, line] of SERVER_CASES) {
    it(`exits 2 with one line for ${what}, before the journal is opened`, { timeout: 90_000 }, async () => {
      const dir = tempDir();
      try {
        const r = await run('src/app/main.ts', { STRIKEBOOK_DATA_DIR: dir, PORT: '0', LOG_LEVEL: 'warn', ...env });
        assert.equal(r.code, 2, `exit code; stderr: ${r.stderr}`);
        assert.deepEqual(lines(r.stderr).length, 1, `one line: ${r.stderr}`);
        assert.match(lines(r.stderr)[0], line);
        assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
        assert.doesNotMatch(r.stderr, /hunter2/, 'a secret is never echoed');
        assert.equal(r.stdout, '');
        assert.deepEqual(readdirSync(dir), [], 'nothing was opened in the data directory');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  it('names every bad setting of one start, one line each', { timeout: 90_000 }, async () => {
    const dir = tempDir();
    try {
      const r = await run('src/app/main.ts', { STRIKEBOOK_DATA_DIR: dir, PORT: '99999', STRIKEBOOK_RATE_LIMITS: 'yes' });
      assert.equal(r.code, 2);
      assert.deepEqual(
        lines(r.stderr).map((l) => l.split(' ')[2]),
        ['PORT', 'STRIKEBOOK_RATE_LIMITS'],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a start the system refuses', () => {
  it('exits 1 with one line when the port is taken, naming PORT', { timeout: 90_000 }, async (t) => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    t.after(() => taken.close());
    const dir = tempDir();
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const port = String((taken.address() as AddressInfo).port);
    const r = await run('src/app/main.ts', { STRIKEBOOK_DATA_DIR: dir, PORT: port, HOST: '127.0.0.1', STRIKEBOOK_INDEX_FEED: 'manual', STRIKEBOOK_DEMO_MAKER: '0', LOG_LEVEL: 'warn' });
    assert.equal(r.code, 1, r.stderr);
    assert.deepEqual(lines(r.stderr), [`cannot start: listen EADDRINUSE 127.0.0.1:${port} (PORT is taken: another process listens there)`]);
  });
});

describe('the gateway entry point refuses bad settings', () => {
  const base = { STRIKEBOOK_LEADER_URL: 'http://127.0.0.1:1', NATS_URL: 'nats://127.0.0.1:1', PORT: '0' };

  it('exits 2 with one line for a misspelled variable, naming the one meant', { timeout: 90_000 }, async () => {
    const r = await run('src/gateway/main.ts', { ...base, STRIKEBOOK_GATEWAY_RECHEK_MS: '500' });
    assert.equal(r.code, 2, r.stderr);
    assert.deepEqual(lines(r.stderr), ['configuration error: unknown variable STRIKEBOOK_GATEWAY_RECHEK_MS (did you mean STRIKEBOOK_GATEWAY_RECHECK_MS?)']);
  });

  it('exits 2 with one line for a leader URL that is not one', { timeout: 90_000 }, async () => {
    const r = await run('src/gateway/main.ts', { ...base, STRIKEBOOK_LEADER_URL: 'leader:8080' });
    assert.equal(r.code, 2, r.stderr);
    assert.deepEqual(lines(r.stderr), ['configuration error: STRIKEBOOK_LEADER_URL must be http(s) URLs without credentials, comma-separated (the leader and its standbys), got "leader:8080"']);
  });
});
