// Runs the time-sensitive test files again with the exchange clock pinned at the hours that break
// things (issue 12): around the daily 08:00 expiry (inside its 30-minute delivery window too, issue
// 28), a Friday's last seconds, the last Friday of a quarter before its expiry, New Year's Eve, one
// instant drawn at random from a printed seed, and once on the real clock so that what pinning
// hides is still caught. The main `npm test` run pins a quiet hour (test/helpers/server.ts,
// DEFAULT_TEST_START). Exits non-zero when any run fails.
//
//   node --import tsx test/clockEdges.ts                      every start, a fresh random one
//   CLOCK_EDGE_SEED=1234 node --import tsx test/clockEdges.ts  the same random start again
//   node --import tsx test/clockEdges.ts 2026-03-11T07:45:00Z  only the starts named (any ISO instant, or `real`)
//   CLOCK_EDGE_JOBS=1 node --import tsx test/clockEdges.ts     one start at a time (default 2 side by side)
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { CLOCK_EDGES, TIME_SENSITIVE, randomStart } from './helpers/clockStarts.ts';

function counts(out: string): Record<string, number> {
  const r: Record<string, number> = {};
  for (const m of out.matchAll(/^# (tests|pass|fail|skipped|cancelled) (\d+)$/gm)) r[m[1]] = Number(m[2]);
  return r;
}

const only = process.argv.slice(2);
const seedText = process.env.CLOCK_EDGE_SEED;
if (seedText !== undefined && !/^\d{1,10}$/.test(seedText)) {
  console.error(`CLOCK_EDGE_SEED must be a non-negative integer, got ${JSON.stringify(seedText)}`);
  process.exit(2);
}
const seed = seedText !== undefined ? Number(seedText) : randomInt(2 ** 31);
const drawn = { start: randomStart(seed), why: `drawn at random from seed ${seed} (rerun: CLOCK_EDGE_SEED=${seed} npm run test:clock-edges)` };
const edges = only.length > 0 ? only.map((start) => CLOCK_EDGES.find((e) => e.start === start) ?? { start, why: 'named on the command line' }) : [...CLOCK_EDGES.slice(0, -1), drawn, CLOCK_EDGES[CLOCK_EDGES.length - 1]];
if (only.length === 0) console.log(`# clock edges: the random start is ${drawn.start}, seed ${seed} (CLOCK_EDGE_SEED=${seed} reruns it)`);
for (const e of edges) if (e.start !== 'real' && !Number.isFinite(Date.parse(e.start))) {
  console.error(`not an ISO instant: ${e.start}`);
  process.exit(2);
}
const jobsText = process.env.CLOCK_EDGE_JOBS ?? '2';
if (!/^[1-9]\d?$/.test(jobsText)) {
  console.error(`CLOCK_EDGE_JOBS must be a whole number from 1 to 99, got ${JSON.stringify(jobsText)}`);
  process.exit(2);
}
// The starts run CLOCK_EDGE_JOBS at a time (each one two files at a time): these files mostly wait
// on their servers' timers and sockets, not on the CPU, so two starts side by side take little more
// than one. Each start's output is printed whole, in the order of the starts, once it is done.
const jobs = Number(jobsText);

interface Outcome { stdout: string; stderr: string; status: number | null }

function runStart(start: string): Promise<Outcome> {
  return new Promise((resolve) => {
    // TAP named: `counts` reads its summary, and a piped child's default reporter is TAP on Node 20
    // but `spec` on Node 24, whose summary `counts` would not find (every start then showed FAIL)
    const args = ['--import', 'tsx', '--test', '--test-reporter=tap', '--test-concurrency=2', '--test-timeout=600000', ...TIME_SENSITIVE];
    const child = spawn(process.execPath, args, {
      env: { ...process.env, TEST_CLOCK_START: start },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
    child.on('close', (status) => resolve({ stdout, stderr, status }));
  });
}

const outcomes: Promise<Outcome>[] = [];
const deliver: ((o: Outcome) => void)[] = [];
for (let i = 0; i < edges.length; i++) outcomes.push(new Promise((resolve) => deliver.push(resolve)));
let next = 0;
const workers = Array.from({ length: Math.min(jobs, edges.length) }, async () => {
  while (next < edges.length) {
    const i = next++;
    deliver[i](await runStart(edges[i].start));
  }
});
const summary: string[] = [];
let failed = false;
for (let i = 0; i < edges.length; i++) {
  const edge = edges[i];
  const run = await outcomes[i];
  console.log(`\n# ---- time-sensitive tests, clock from ${edge.start} (${edge.why}) ----`);
  process.stdout.write(run.stdout);
  process.stderr.write(run.stderr);
  const c = counts(run.stdout);
  const ok = run.status === 0 && (c.fail ?? 1) === 0 && (c.tests ?? 0) > 0;
  failed ||= !ok;
  summary.push(`# clock ${edge.start.padEnd(20)} ${ok ? 'ok  ' : 'FAIL'} tests ${c.tests ?? '?'}, pass ${c.pass ?? '?'}, fail ${c.fail ?? '?'}, skipped ${c.skipped ?? '?'}`);
}
await Promise.all(workers);
console.log('\n# ---- time-sensitive tests at every pinned start ----');
for (const line of summary) console.log(line);
if (only.length === 0) console.log(`# the random start came from seed ${seed}: CLOCK_EDGE_SEED=${seed} npm run test:clock-edges reruns it`);
process.exit(failed ? 1 : 0);
