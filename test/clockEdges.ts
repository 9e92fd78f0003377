// Runs the time-sensitive test files again with the exchange clock pinned at the hours that break
// things (issue 12): just before and after the daily 08:00 expiry, a Friday's last seconds, the
// last Friday of a quarter before its expiry, New Year's Eve, and once on the real clock so that
// what pinning hides is still caught. The main `npm test` run pins a quiet hour
// (test/helpers/server.ts, DEFAULT_TEST_START). Exits non-zero when any run fails.
import { spawnSync } from 'node:child_process';

export const CLOCK_EDGES: { start: string; why: string }[] = [
  { start: '2026-03-11T07:59:30Z', why: 'a Wednesday, 30 s before the daily expiry' },
  { start: '2026-03-11T08:00:30Z', why: 'the same day, 30 s after the daily expiry' },
  { start: '2026-03-13T23:59:30Z', why: 'a Friday, 30 s before midnight' },
  { start: '2026-03-27T07:59:30Z', why: 'the last Friday of a quarter, 30 s before its expiry' },
  { start: '2026-12-31T23:59:30Z', why: "New Year's Eve, 30 s before the year turns" },
  { start: 'real', why: 'the wall clock' },
];

/** The files whose outcome could depend on the hour: they list, trade near marks, expire or settle. */
export const TIME_SENSITIVE = [
  'test/api/marketData.test.ts',
  'test/api/fundsSafety.test.ts',
  'test/api/liquidation.test.ts',
  'test/app/demoMaker.test.ts',
  'test/e2e/expiry.test.ts',
  'test/e2e/story.test.ts',
  'test/recovery/settlementCrash.test.ts',
  'test/ws/streams.test.ts',
  'test/ws/channels.test.ts',
];

function counts(out: string): Record<string, number> {
  const r: Record<string, number> = {};
  for (const m of out.matchAll(/^# (tests|pass|fail|skipped|cancelled) (\d+)$/gm)) r[m[1]] = Number(m[2]);
  return r;
}

const only = process.argv.slice(2);
const edges = only.length > 0 ? CLOCK_EDGES.filter((e) => only.includes(e.start)) : CLOCK_EDGES;
const summary: string[] = [];
let failed = false;
for (const edge of edges) {
  console.log(`\n# ---- time-sensitive tests, clock from ${edge.start} (${edge.why}) ----`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-timeout=600000', ...TIME_SENSITIVE], {
    env: { ...process.env, TEST_CLOCK_START: edge.start },
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  process.stdout.write(run.stdout);
  process.stderr.write(run.stderr);
  const c = counts(run.stdout);
  const ok = run.status === 0 && (c.fail ?? 1) === 0 && (c.tests ?? 0) > 0;
  failed ||= !ok;
  summary.push(`# clock ${edge.start.padEnd(20)} ${ok ? 'ok  ' : 'FAIL'} tests ${c.tests ?? '?'}, pass ${c.pass ?? '?'}, fail ${c.fail ?? '?'}, skipped ${c.skipped ?? '?'}`);
}
console.log('\n# ---- time-sensitive tests at every pinned start ----');
for (const line of summary) console.log(line);
process.exit(failed ? 1 : 0);
