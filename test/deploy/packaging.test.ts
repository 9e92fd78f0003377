// The packaging (Dockerfile, deploy/compose.yaml, deploy/systemd): no Docker daemon runs here, so the
// files are checked for what the runbook promises: a multi-stage image that builds the web app,
// runs as a non-root user and starts node (not npm) under an init; a compose file with leader,
// standby, PostgreSQL, NATS and a gateway whose every variable is a known setting that the schema
// accepts; a systemd unit that starts node and does not restart a refused configuration.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { SETTING_BY_NAME, checkEnvironment, type Role } from '../../src/app/configSchema.ts';
import { ROOT } from '../helpers/server.ts';

// js-yaml is in node_modules already (ESLint's); a test-only reader, no new dependency
const yaml = createRequire(import.meta.url)('js-yaml') as { load(text: string): unknown };

const read = (p: string) => readFileSync(path.join(ROOT, p), 'utf8');

interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, unknown>;
}

/** ${VAR:?message} and ${VAR} as compose substitutes them, with a sample value for each variable. */
function substitute(value: string): string {
  const samples: Record<string, string> = { POSTGRES_PASSWORD: 'sample-password', STRIKEBOOK_BOOTSTRAP_TOKEN: 'sample-bootstrap-token-0123' };
  return value.replace(/\$\{([A-Z_]+)(:\?[^}]*)?\}/g, (_m, name: string) => {
    assert.ok(samples[name], `a sample for \${${name}}`);
    return samples[name];
  });
}

describe('the Dockerfile', () => {
  const text = read('Dockerfile');
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));

  it('builds in stages and builds the web app at image build time', () => {
    assert.ok(instructions.filter((l) => l.startsWith('FROM ')).length >= 2, 'multi-stage');
    assert.ok(instructions.some((l) => l.startsWith('RUN ') && l.includes('web/build.ts')), 'the web app is built by a RUN step');
    assert.ok(instructions.some((l) => l.startsWith('COPY --from=build') && l.includes('web/dist')), 'the built app is in the final image');
    assert.ok(instructions.some((l) => l.startsWith('RUN ') && l.includes('scripts/buildServer.ts')), 'the server bundle is built by a RUN step');
    assert.ok(instructions.some((l) => l.startsWith('COPY --from=build') && l.includes('dist/server')), 'the server bundle is in the final image');
  });

  it('runs as a non-root user, node under tini, never npm', () => {
    const finalStage = instructions.slice(instructions.map((l) => l.startsWith('FROM ')).lastIndexOf(true));
    const user = finalStage.filter((l) => l.startsWith('USER ')).pop();
    assert.ok(user && !/^USER\s+(root|0)\b/.test(user), `USER of the final stage: ${user}`);
    const entry = finalStage.filter((l) => l.startsWith('ENTRYPOINT ')).pop()!;
    assert.deepEqual(JSON.parse(entry.slice('ENTRYPOINT '.length)), ['/usr/bin/tini', '--']);
    const cmd = JSON.parse(finalStage.filter((l) => l.startsWith('CMD ')).pop()!.slice('CMD '.length)) as string[];
    assert.equal(cmd[0], 'node', 'CMD execs node (JSON form: no shell in between)');
    assert.deepEqual(cmd, ['node', 'dist/server/main.js'], 'the server bundle, built at image build time');
    assert.ok(!text.includes('npm start'), 'npm does not pass SIGTERM on');
  });

  it('builds and runs on one Node.js line that still gets security fixes', () => {
    const majors = instructions.filter((l) => l.startsWith('FROM ')).map((l) => /^FROM node:(\d+)[-\w.]*(\s|$)/.exec(l)?.[1]);
    assert.ok(majors.every((m) => m !== undefined), `every stage starts from an official node image: ${majors.join(', ')}`);
    // better-sqlite3 is compiled in the build stage: the run stage must load it with the same ABI
    assert.equal(new Set(majors).size, 1, `one Node.js major in every stage: ${majors.join(', ')}`);
    // Node 20 reached its end of life on 2026-04-30 (docs/performance.md, "Round three, sixteenth stop")
    assert.ok(Number(majors[0]) >= 22 && Number(majors[0]) % 2 === 0, `an LTS line after 20: node:${majors[0]}`);
  });

  it('leaves the tests, data and local modules out of the build context', () => {
    const ignored = read('.dockerignore').split('\n').map((l) => l.trim());
    for (const p of ['node_modules', 'data', 'web/dist', '.git', 'test']) assert.ok(ignored.includes(p), p);
  });
});

describe('deploy/compose.yaml', () => {
  const compose = yaml.load(read('deploy/compose.yaml')) as { services: Record<string, ComposeService> };
  const roles: Record<string, Role> = { leader: 'server', standby: 'server', gateway: 'gateway' };

  it('brings up a leader, a standby, PostgreSQL, NATS with JetStream and a gateway', () => {
    assert.deepEqual(Object.keys(compose.services).sort(), ['gateway', 'leader', 'nats', 'postgres', 'standby']);
    assert.ok(compose.services.nats.command!.includes('-js'), 'JetStream on');
    assert.ok(compose.services.leader.build, 'the leader builds the image the others run');
    for (const s of ['standby', 'gateway']) assert.equal(compose.services[s].image, compose.services.leader.image, s);
    assert.equal(compose.services.leader.environment!.DATABASE_URL, compose.services.standby.environment!.DATABASE_URL, 'one database: the second server is the standby');
  });

  it('sets only known settings, each accepted by the schema for its role, production mode included', () => {
    for (const [name, role] of Object.entries(roles)) {
      const env: Record<string, string> = {};
      for (const [k, v] of Object.entries(compose.services[name].environment ?? {})) {
        assert.ok(SETTING_BY_NAME.has(k), `${name}: ${k} is a setting`);
        assert.ok(SETTING_BY_NAME.get(k)!.roles.includes(role), `${name}: ${k} is read by a ${role}`);
        env[k] = substitute(String(v));
      }
      assert.deepEqual(checkEnvironment(env, role), [], name);
    }
    assert.equal(compose.services.leader.environment!.STRIKEBOOK_MODE, 'production');
    assert.notEqual(compose.services.leader.environment!.STRIKEBOOK_INDEX_FEED, 'simulated');
  });

  it('starts every Strikebook process with node, the gateway by its own entry', () => {
    assert.equal(compose.services.leader.command, undefined, "the image's CMD: node dist/server/main.js");
    assert.deepEqual(compose.services.gateway.command, ['node', '--import', 'tsx', 'src/gateway/main.ts']);
  });
});

describe('deploy/systemd/strikebook.service', () => {
  const unit = read('deploy/systemd/strikebook.service');
  const value = (key: string) => new RegExp(`^${key}=(.*)$`, 'm').exec(unit)?.[1];

  it('starts node directly as its own user, stops it with SIGTERM, and does not restart a refused configuration', () => {
    assert.match(value('ExecStart') ?? '', /^\/usr\/bin\/node dist\/server\/main\.js$/);
    assert.ok(value('User') && value('User') !== 'root');
    assert.equal(value('KillSignal'), 'SIGTERM');
    assert.equal(value('RestartPreventExitStatus'), '2');
  });
});
