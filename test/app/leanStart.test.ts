// A server on SQLite does not load the PostgreSQL or NATS client packages (issue 36, restart to
// serving): they are imported where a configured connection is first made (postgresJournal.ts,
// standby.ts, natsEvents.ts), which took ~50 ms off every start. A static import of either package
// anywhere in the server's module graph brings that back and fails this test. Nor does a start
// compile any JSON schema: each validator is compiled at its first use (src/api/rpc/validate.ts,
// the block RFQ hedge check), since Ajv's first compile also compiles its meta-schema (~50 ms).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { ROOT, tempDir } from '../helpers/server.ts';

describe('a server on SQLite starts lean', () => {
  it('loads neither pg nor the NATS client, compiles no schema, and still serves', () => {
    const dataDir = tempDir('strikebook-lean-');
    try {
      const out = execFileSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/app/leanStartChild.ts'), dataDir], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
      const report = JSON.parse(out.trim().split('\n').pop()!) as { health: number; ajvCompiles: number; modules: string[] };
      assert.equal(report.health, 200);
      assert.equal(report.ajvCompiles, 0, 'schemas Ajv compiled from the first import to the first /health answer');
      // the probe itself works: the packages every server loads are listed
      assert.ok(report.modules.some((m) => m.includes(`${path.sep}node_modules${path.sep}fastify${path.sep}`)), 'fastify is among the loaded modules');
      const drivers = report.modules.filter((m) => /[\\/]node_modules[\\/](pg|pg-pool|pg-protocol|@nats-io)[\\/]/.test(m));
      assert.deepEqual(drivers, []);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
