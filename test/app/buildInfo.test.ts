// Which build a server runs (GET /health's version, strikebook_build_info) and how old each index is
// (strikebook_index_age_seconds): what the runbook's upgrade steps and alert rules read.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, request, startServer, type TestServer } from '../helpers/server.ts';

const VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe('build info', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.stop());

  it("is in GET /health as the package's version", async () => {
    const h = await request(server.url, '/health');
    assert.equal(h.body.version, VERSION);
    assert.equal(h.body.role, 'leader');
  });

  it('is the strikebook_build_info metric, with the index age of each currency beside it', async () => {
    const text = (await request(server.url, '/metrics')).text;
    assert.ok(text.includes(`strikebook_build_info{version="${VERSION}",node="${process.version}"} 1`), text.slice(0, 300));
    const age = /strikebook_index_age_seconds\{currency="BTC",manual="1"\} ([\d.e+-]+)/.exec(text);
    assert.ok(age, 'the index age of BTC (a manual index in the test server)');
    assert.ok(Number(age[1]) >= 0);
  });
});
