// What production mode tells the people starting it: a trader's deposit says why it is refused, the
// bootstrap token reaches the terminal (stderr) and never the JSON log (stdout), a configured token is
// not printed at all, and a standby names the leader instead of printing a command it would refuse.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { bootstrapNotice, noticeOnTakeover } from '../../src/app/startup.ts';
import { newHaState } from '../../src/app/haStatus.ts';
import { loadConfig } from '../../src/app/config.ts';
import { ROOT, adminToken, freePort, login, ok, rpc, startServer, tempDir, type TestServer } from '../helpers/server.ts';

describe('a trader deposit in production', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ STRIKEBOOK_MODE: 'production' });
  });
  after(() => server.stop());

  it('is refused with 13021 saying deposits are sandbox-only and an administrator credits them', async () => {
    const admin = await adminToken(server.url);
    await ok(server.url, 'private/create_user', { email: 'trader@example.com', password: 'trader-password-1' }, admin);
    const trader = await login(server.url, 'trader@example.com', 'trader-password-1');
    const r = await rpc(server.url, 'private/deposit_collateral', { currency: 'BTC', amount: 1 }, trader);
    assert.equal(r.body.error.code, 13021);
    assert.match(r.body.error.data.reason, /^deposits_by_administrators_only: /, 'the reason a client matches on is kept');
    assert.match(r.body.error.data.reason, /sandbox/);
    assert.match(r.body.error.data.reason, /administrator credits/);
  });
});

describe('the first administrator notice', () => {
  it('goes to stderr with the generated token, and stdout (the JSON log) never holds the token', { timeout: 120_000 }, async (t) => {
    const dir = tempDir();
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    // no STRIKEBOOK_BOOTSTRAP_TOKEN: the server generates one
    const proc = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/app/main.ts')], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port), STRIKEBOOK_DATA_DIR: dir, STRIKEBOOK_INDEX_FEED: 'manual', STRIKEBOOK_DEMO_MAKER: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((r) => proc.on('exit', r));
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // a bound on a server that never starts, not a judgment of speed
    const deadline = Date.now() + 90_000;
    while (!/bootstrap_token/.test(stdout + stderr) && proc.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    proc.kill('SIGTERM');
    await exited;
    const token = /"bootstrap_token":"([^"]+)"/.exec(stdout + stderr)?.[1];
    assert.ok(token && token.length >= 16, `a generated token was printed: ${stdout}${stderr}`);
    assert.ok(stdout.includes('Strikebook listening'), 'the JSON log is on stdout');
    assert.ok(!stdout.includes(token), `stdout (the log a collector keeps) does not hold the token: ${stdout}`);
    for (const line of stdout.split('\n').filter((l) => l !== '')) assert.doesNotThrow(() => JSON.parse(line), `stdout is JSON lines only: ${line}`);
    assert.match(stderr, /curl -s -X POST http:\/\/127\.0\.0\.1:\d+\/v1\/private\/create_admin/);
  });

  it('does not print a configured token, only where it comes from', () => {
    const config = loadConfig({ STRIKEBOOK_BOOTSTRAP_TOKEN: 'operator-chosen-token-0123' });
    const text = bootstrapNotice({ bootstrapToken: 'operator-chosen-token-0123', config, ha: newHaState('leader', null, () => null) }, 'http://127.0.0.1:8080')!;
    assert.ok(!text.includes('operator-chosen-token-0123'));
    assert.match(text, /\$STRIKEBOOK_BOOTSTRAP_TOKEN/);
  });

  it('on a standby names the leader and prints no command it would refuse', () => {
    const config = loadConfig({});
    const follower = { leaderUrl: () => 'https://a.example:8080' } as never;
    const text = bootstrapNotice({ bootstrapToken: 'generated-token-0123456789', config, ha: newHaState('standby', follower, () => null) }, 'http://127.0.0.1:8081')!;
    assert.ok(!text.includes('generated-token-0123456789'));
    assert.ok(!text.includes('curl'));
    assert.match(text, /standby.*create the first administrator on the leader \(https:\/\/a\.example:8080\)/);
  });

  it('is printed by a standby once it takes over, with its own token, while no administrator exists', async () => {
    const config = loadConfig({});
    const follower = { leaderUrl: () => 'https://a.example:8080' } as never;
    let admin = false;
    const ex = { hasAdmin: () => admin } as never;
    const s = { bootstrapToken: 'standby-own-token-0123456789' as string | null, config, ex, ha: newHaState('standby', follower, () => null) };
    const written: string[] = [];
    const watch = noticeOnTakeover(s, 'https://b.example:8080', (t) => written.push(t), 10);
    try {
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(written, [], 'nothing while it is a standby');
      s.ha.role = 'leader';
      const deadline = Date.now() + 10_000;
      while (written.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      assert.equal(written.length, 1);
      assert.match(written[0], /curl -s -X POST https:\/\/b\.example:8080\/v1\/private\/create_admin .*standby-own-token-0123456789/);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(written.length, 1, 'once');
    } finally {
      watch.stop();
    }
    // an administrator the old leader created came with the journal: no notice
    admin = true;
    s.ha.role = 'standby';
    const quiet: string[] = [];
    const again = noticeOnTakeover(s, 'https://b.example:8080', (t) => quiet.push(t), 10);
    s.ha.role = 'leader';
    await new Promise((r) => setTimeout(r, 100));
    again.stop();
    assert.deepEqual(quiet, []);
  });

  it('is not printed once an administrator exists', () => {
    assert.equal(bootstrapNotice({ bootstrapToken: null, config: loadConfig({}), ha: newHaState('leader', null, () => null) }, 'http://x'), null);
  });
});
