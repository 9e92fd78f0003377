// The references `npm run bench` measures beside issue 16's lines (bench/support.ts,
// bench/replayBench.ts). A bench is judged on these numbers, so a reference that broke silently (a
// sampler whose text the bench cannot read, slices run in the wrong order, a replay that keeps
// fewer records) would make a line look better or worse than it is. No timing is asserted here.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { LATENCY_BOUNDS_S } from '../../src/app/latencyHistogram.ts';
import { buckets } from '../../bench/openLoopBench.ts';
import { bareReplay } from '../../bench/replayBench.ts';
import { ALTERNATED_SLICES, alternated, freePort, spawnBareServer, startScript, startScriptNodeFlags, waitHttp, type LoadResult } from '../../bench/support.ts';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'strikebook-bench-refs-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));

test("the bare server's stall sampler is read as the server's own series, and it still answers its constant body", async () => {
  const port = await freePort();
  const bare = spawnBareServer(port, '{"jsonrpc":"2.0","result":"hello"}', 0, { stalls: true });
  try {
    await waitHttp(`http://127.0.0.1:${port}/`);
    const read = async () => buckets(await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text()), 'strikebook_event_loop_delay_seconds');
    const first = await read();
    // every bound of the server's histogram, then +Inf, cumulative
    assert.deepEqual([...first.keys()], [...LATENCY_BOUNDS_S.map(String), '+Inf']);
    const counts = [...first.values()];
    for (let i = 1; i < counts.length; i++) assert.ok(counts[i]! >= counts[i - 1]!, 'cumulative buckets');
    await new Promise((r) => setTimeout(r, 100));
    const later = await read();
    // a sample every 2 ms: 100 ms adds some (a loaded machine fires fewer, never none)
    assert.ok(later.get('+Inf')! > first.get('+Inf')!, `samples grew: ${first.get('+Inf')} -> ${later.get('+Inf')}`);
    assert.equal(await fetch(`http://127.0.0.1:${port}/any/path`, { method: 'POST', body: '{}' }).then((r) => r.text()), '{"jsonrpc":"2.0","result":"hello"}');
  } finally {
    bare.kill('SIGKILL');
  }
});

test('alternated slices run a, b, b, a, ... after one warm-up each, and pool requests over the whole time', async () => {
  const calls: string[] = [];
  const result = (total: number, p99: number): LoadResult => ({ rps: 0, p50: p99 / 2, p99, total, non2xx: 0, errors: 0 });
  let bSlice = 0;
  const runs = await alternated(
    { run: async (sec) => (calls.push(`a${sec}`), result(100 * sec, 5)), pid: undefined },
    { run: async (sec) => (calls.push(`b${sec}`), result(50 * sec, [3, 9, 4, 2][bSlice++ % 4] ?? 0)), pid: undefined },
    8,
  );
  assert.equal(ALTERNATED_SLICES, 4);
  assert.deepEqual(calls, ['a2', 'b2', 'a2', 'b2', 'b2', 'a2', 'a2', 'b2', 'b2', 'a2']);
  // warm-ups are not counted: 4 slices of 2 s each
  assert.equal(runs.a.pooled.total, 800);
  assert.equal(runs.a.pooled.rps, 100);
  assert.equal(runs.b.pooled.rps, 50);
  assert.equal(runs.b.pooled.p99, 9, "a percentile is the worst slice's");
  assert.equal(runs.a.slices.length, ALTERNATED_SLICES);
  assert.equal(runs.a.server, 'n/a', 'no process, no CPU figure');
});

test('the bare replay keeps every record of the journal it reads', () => {
  const dir = path.join(root, 'journal');
  const j = openSqliteJournal(dir);
  try {
    // more than one page of the reader (2,048 rows)
    const records = Array.from({ length: 5_000 }, (_, i) => ({ seq: i + 1, ts: 1_700_000_000_000 + i, cmd: `C|1|${i + 1}` }));
    j.append(records);
  } finally {
    j.close();
  }
  const reader = openSqliteJournal(dir, { readOnly: true });
  try {
    assert.equal(bareReplay(reader), 5_000);
  } finally {
    reader.close();
  }
});

test("the bench starts the server with npm start's command, whatever words come before node", () => {
  // npm start is `exec node [flags] dist/server/main.js`: reading the word after the first as a
  // flag once made every bench spawn `node node ...`, which is no server at all
  const start = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../../package.json'), 'utf8')).scripts.start as string;
  const flags = startScriptNodeFlags();
  assert.ok(flags.every((f) => f.startsWith('--')), `flags only: ${JSON.stringify(flags)}`);
  const script = startScript();
  assert.ok(start.endsWith(['node', ...flags, script].join(' ')), `${JSON.stringify([...flags, script])} are npm start's words after node: ${start}`);
  assert.ok(fs.existsSync(path.resolve(import.meta.dirname, '../..', script)), `${script} is built`);
});
