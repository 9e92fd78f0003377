// The alert rules (deploy/prometheus/alerts.yml) and the dashboard (deploy/grafana/strikebook.json)
// read only metrics Strikebook exports: each metric an expression names is in a running server's
// /metrics, or (NATS and gateway metrics, which need NATS) registered by name in src/.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { ROOT, request, startServer, type TestServer } from '../helpers/server.ts';

const yaml = createRequire(import.meta.url)('js-yaml') as { load(text: string): unknown };

interface Rule {
  alert: string;
  expr: string;
  labels?: { severity?: string };
  annotations?: { summary?: string };
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = path.join(dir, n);
    return statSync(p).isDirectory() ? sourceFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Metric names an expression reads (PromQL functions and labels are lower-case words without our prefixes). */
function metricsOf(expr: string): string[] {
  return [...expr.matchAll(/\b(strikebook_[a-z_]+|process_[a-z_]+|nodejs_[a-z_]+|up)\b(?=\s*[{[)\s]|$)/g)].map((m) => m[1]);
}

describe('monitoring files', () => {
  let server: TestServer;
  const known = new Set<string>(['up']);
  before(async () => {
    server = await startServer();
    for (const line of (await request(server.url, '/metrics')).text.split('\n')) {
      const m = /^([a-z_]+)[{ ]/.exec(line);
      if (m) known.add(m[1]);
    }
    for (const f of sourceFiles(path.join(ROOT, 'src'))) {
      const text = readFileSync(f, 'utf8');
      for (const m of text.matchAll(/name: '(strikebook_[a-z_]+)'/g)) known.add(m[1]);
      // histograms written by src/app/latencyHistogram.ts appear once something was observed
      for (const m of text.matchAll(/histogramText\(\s*'(strikebook_[a-z_]+)'/g)) for (const suffix of ['_bucket', '_sum', '_count']) known.add(m[1] + suffix);
    }
  });
  after(() => server.stop());

  it('alert rules parse, each with an expression, a severity and a summary, over exported metrics', () => {
    const doc = yaml.load(readFileSync(path.join(ROOT, 'deploy/prometheus/alerts.yml'), 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> };
    const rules = doc.groups.flatMap((g) => g.rules);
    assert.ok(rules.length >= 10, `${rules.length} rules`);
    assert.equal(new Set(rules.map((r) => r.alert)).size, rules.length, 'alert names are unique');
    for (const r of rules) {
      assert.ok(r.expr && r.labels?.severity && r.annotations?.summary, r.alert);
      for (const m of metricsOf(r.expr)) assert.ok(known.has(m), `${r.alert}: ${m} is not a metric Strikebook exports`);
    }
    for (const name of ['StrikebookNoLeader', 'StrikebookIndexStale', 'StrikebookStandbyLagging', 'StrikebookDiskLow', 'StrikebookNatsDropping']) {
      assert.ok(rules.some((r) => r.alert === name), name);
    }
  });

  it('the Grafana dashboard is JSON with a datasource variable and panels over exported metrics', () => {
    const dash = JSON.parse(readFileSync(path.join(ROOT, 'deploy/grafana/strikebook.json'), 'utf8')) as { uid: string; panels: Array<{ title: string; targets: Array<{ expr: string }> }>; templating: { list: Array<{ type: string }> } };
    assert.equal(dash.uid, 'strikebook');
    assert.ok(dash.templating.list.some((v) => v.type === 'datasource'));
    assert.ok(dash.panels.length >= 10);
    for (const p of dash.panels) {
      assert.ok(p.targets.length > 0, p.title);
      for (const t of p.targets) for (const m of metricsOf(t.expr)) assert.ok(known.has(m), `${p.title}: ${m} is not a metric Strikebook exports`);
    }
  });
});
