// The settings' schema (src/app/configSchema.ts) and loadConfig on it: ranges, unknown names with the
// nearest known one, what production requires and refuses, secrets never echoed, and the README's
// table generated from the schema.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/app/config.ts';
import { PENDING_NAMES, SETTINGS, checkEnvironment, configTable, nearestName } from '../../src/app/configSchema.ts';
import { ROOT } from '../helpers/server.ts';

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.problems;
  }
}

describe('the settings schema', () => {
  it('refuses an unknown STRIKEBOOK_ variable and names the nearest known one', () => {
    assert.deepEqual(problems({ STRIKEBOOK_SNAPHOT_EVERY: '10' }), ['unknown variable STRIKEBOOK_SNAPHOT_EVERY (did you mean STRIKEBOOK_SNAPSHOT_EVERY?)']);
    assert.deepEqual(problems({ STRIKEBOOK_MODES: 'production' }), ['unknown variable STRIKEBOOK_MODES (did you mean STRIKEBOOK_MODE?)']);
    assert.deepEqual(problems({ STRIKEBOOK_ZZZZZZZZZZZZZZZZZZZZZZZZZ: '1' }), ['unknown variable STRIKEBOOK_ZZZZZZZZZZZZZZZZZZZZZZZZZ'], 'no suggestion when nothing is near');
    assert.equal(nearestName('STRIKEBOOK_INDEX_SOURCE'), 'STRIKEBOOK_INDEX_SOURCES');
  });

  it('knows the variables of the tests and tools and the settings other work adds, so none is refused', () => {
    for (const name of ['STRIKEBOOK_TEST_DATABASE_URL', 'STRIKEBOOK_TEST_NATS_URL', 'STRIKEBOOK_PROP_SEED', ...PENDING_NAMES]) {
      assert.deepEqual(problems({ [name]: '1' }), [], name);
    }
    assert.deepEqual(problems({ UNRELATED_VARIABLE: 'x', PATH: '/bin' }), [], 'only STRIKEBOOK_ names are checked for typos');
  });

  it('gives every problem of one environment, one line each, naming its variable', () => {
    const p = problems({ PORT: '-1', STRIKEBOOK_WS_MAX_QUEUED: '1.5', STRIKEBOOK_INDEX_VOL: 'NaN', HOST: 'a b' });
    assert.deepEqual(p.map((l) => l.split(' ')[0]).sort(), ['HOST', 'PORT', 'STRIKEBOOK_INDEX_VOL', 'STRIKEBOOK_WS_MAX_QUEUED']);
    for (const l of p) assert.doesNotMatch(l, /\n/);
  });

  it('never echoes the value of a secret setting', () => {
    const p = problems({ DATABASE_URL: 'mysql://u:hunter2@h/db', STRIKEBOOK_BOOTSTRAP_TOKEN: 'short hunter2' });
    assert.equal(p.length, 2);
    for (const l of p) assert.doesNotMatch(l, /hunter2/);
  });

  it('quotes a control character escaped, so an error stays one line', () => {
    const [line] = problems({ STRIKEBOOK_MODE: 'prod\nuction' });
    assert.equal(line, 'STRIKEBOOK_MODE must be one of sandbox, production, got "prod\\x0auction"');
  });

  it('checks the gateway settings, with what a gateway requires', () => {
    assert.deepEqual(checkEnvironment({}, 'gateway'), ['NATS_URL is required for a gateway', 'STRIKEBOOK_LEADER_URL is required for a gateway']);
    assert.deepEqual(checkEnvironment({ NATS_URL: 'nats://a:4222,nats://b:4222', STRIKEBOOK_LEADER_URL: 'https://x.example' }, 'gateway'), []);
    // a gateway follows whichever of the leader and its standbys leads (src/gateway/leaderLocator.ts)
    assert.deepEqual(checkEnvironment({ NATS_URL: 'nats://a:4222', STRIKEBOOK_LEADER_URL: 'http://10.0.0.1:8080,http://10.0.0.2:8080' }, 'gateway'), []);
    assert.equal(checkEnvironment({ NATS_URL: 'nats://a:4222', STRIKEBOOK_LEADER_URL: 'http://10.0.0.1:8080,leader:8080' }, 'gateway').length, 1);
    assert.deepEqual(checkEnvironment({ NATS_URL: 'nats://a:4222', STRIKEBOOK_LEADER_URL: 'https://x.example', STRIKEBOOK_GATEWAY_RECHECK_MS: '5' }, 'gateway'), [
      'STRIKEBOOK_GATEWAY_RECHECK_MS must be an integer in [100, 3600000], got "5"',
    ]);
  });

  it('reads the defaults when nothing is set', () => {
    const c = loadConfig({});
    assert.deepEqual([c.port, c.host, c.mode, c.indexFeed, c.demoMaker, c.accessLog, c.indexAnnualVol, c.logLevel], [8080, '127.0.0.1', 'sandbox', 'simulated', true, false, 0.5, 'info']);
  });
});

describe('production mode', () => {
  const prod = { STRIKEBOOK_MODE: 'production' };

  it('requires the index feed to be named', () => {
    assert.deepEqual(problems(prod), ['STRIKEBOOK_INDEX_FEED is required in production mode']);
  });

  it('refuses the simulated index unless explicitly allowed', () => {
    const [line] = problems({ ...prod, STRIKEBOOK_INDEX_FEED: 'simulated' });
    assert.match(line, /^STRIKEBOOK_INDEX_FEED=simulated is refused in production mode: .*STRIKEBOOK_ALLOW_SIMULATED_INDEX=1/);
    assert.equal(loadConfig({ ...prod, STRIKEBOOK_INDEX_FEED: 'simulated', STRIKEBOOK_ALLOW_SIMULATED_INDEX: '1' }).indexFeed, 'simulated');
    assert.equal(loadConfig({ ...prod, STRIKEBOOK_INDEX_FEED: 'manual' }).indexFeed, 'manual');
  });

  it('requires the advertised URL of a server on PostgreSQL that listens on every interface', () => {
    const env = { ...prod, STRIKEBOOK_INDEX_FEED: 'manual', DATABASE_URL: 'postgres://u@db/x', HOST: '0.0.0.0' };
    assert.deepEqual(problems(env), ['STRIKEBOOK_ADVERTISED_URL is required in production mode with DATABASE_URL when HOST is a wildcard address (standbys name it to clients)']);
    assert.equal(loadConfig({ ...env, STRIKEBOOK_ADVERTISED_URL: 'https://a.example' }).advertisedUrl, 'https://a.example');
    assert.equal(loadConfig({ ...env, HOST: '10.0.0.5' }).advertisedUrl, null, 'a concrete address is a URL clients can reach');
  });

  it('runs no demo market maker, and refuses one asked for', () => {
    assert.equal(loadConfig({ ...prod, STRIKEBOOK_INDEX_FEED: 'manual' }).demoMaker, false);
    assert.deepEqual(problems({ ...prod, STRIKEBOOK_INDEX_FEED: 'manual', STRIKEBOOK_DEMO_MAKER: '1' }), ['STRIKEBOOK_DEMO_MAKER=1: the demo market maker cannot run in production mode']);
  });
});

describe('the venues index settings', () => {
  it('reads the sources with their optional base URLs', () => {
    const c = loadConfig({ STRIKEBOOK_INDEX_FEED: 'venues', STRIKEBOOK_INDEX_SOURCES: 'coinbase, kraken=http://127.0.0.1:9000/,bitstamp', STRIKEBOOK_INDEX_MIN_SOURCES: '3' });
    assert.deepEqual(c.indexSources, [
      { venue: 'coinbase', baseUrl: null },
      { venue: 'kraken', baseUrl: 'http://127.0.0.1:9000' },
      { venue: 'bitstamp', baseUrl: null },
    ]);
    assert.equal(c.indexMinSources, 3);
  });

  it('refuses unknown or repeated venues, sources fewer than the minimum, and none at all', () => {
    assert.match(problems({ STRIKEBOOK_INDEX_FEED: 'venues', STRIKEBOOK_INDEX_SOURCES: 'coinbase,coinbase' })[0], /^STRIKEBOOK_INDEX_SOURCES must be/);
    assert.match(problems({ STRIKEBOOK_INDEX_FEED: 'venues', STRIKEBOOK_INDEX_SOURCES: 'kraken=ftp://x' })[0], /^STRIKEBOOK_INDEX_SOURCES must be/);
    assert.deepEqual(problems({ STRIKEBOOK_INDEX_FEED: 'venues', STRIKEBOOK_INDEX_SOURCES: 'coinbase' }), ['STRIKEBOOK_INDEX_MIN_SOURCES=2 is more than the 1 venues of STRIKEBOOK_INDEX_SOURCES']);
    assert.deepEqual(problems({ STRIKEBOOK_INDEX_FEED: 'venues' }), ['STRIKEBOOK_INDEX_SOURCES is required with STRIKEBOOK_INDEX_FEED=venues']);
  });
});

describe('the README configuration table', () => {
  it('is the table generated from the schema, so it lists every setting', () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const m = /<!-- config-table:begin -->\n([\s\S]*?)\n<!-- config-table:end -->/.exec(readme);
    assert.ok(m, 'README.md has the config-table markers');
    assert.equal(m[1], configTable(), `README.md's table differs from the schema; replace it with:\n\n${configTable()}\n`);
    for (const s of SETTINGS) assert.ok(m[1].includes(`| \`${s.name}\` |`), s.name);
  });
});
