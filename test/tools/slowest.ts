// Where the test suite's time goes: the slowest test files (and tests) of a `node --test` run.
//
//   node --import tsx test/tools/slowest.ts                         runs every test file as test:all does, then ranks them
//   node --import tsx test/tools/slowest.ts test/api test/ws/x.test.ts   only these files and folders
//   node --import tsx test/tools/slowest.ts --from times.jsonl       ranks a saved run
//   options: --top N (30), --tests (the slowest single tests too), --save times.jsonl (keep the run's
//   timings), --concurrency N (2, as test:all), --write-order (rewrite test/tools/slow-first.txt,
//   the order test/tools/files.mjs gives test:all, from this run: every file of 10 s or more, slowest first)
//
// A file's time is the sum of its top-level tests' durations (they run one after another; module
// loading is left out). On a loaded machine every number is inflated: read the ranking.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

interface Row { t: number; ok: boolean; file?: string; nesting: number; name: string; ms?: number; suite: boolean }

function testFiles(args: string[]): string[] {
  const files: string[] = [];
  const walk = (p: string): void => {
    if (statSync(p).isDirectory()) for (const f of readdirSync(p)) walk(path.join(p, f));
    else if (p.endsWith('.test.ts')) files.push(p);
  };
  for (const a of args.length > 0 ? args : ['test']) walk(a);
  return files.sort();
}

const fmt = (ms: number): string => `${(ms / 1000).toFixed(1).padStart(8)} s`;

function report(jsonl: string, top: number, tests: boolean, writeOrder: boolean): void {
  const rows: Row[] = jsonl.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Row);
  const rel = (f: string | undefined): string => (f ? path.relative(process.cwd(), f) : '?');
  const files = new Map<string, { ms: number; fail: number; tests: number }>();
  for (const r of rows) {
    const f = files.get(rel(r.file)) ?? { ms: 0, fail: 0, tests: 0 };
    if (r.nesting === 0) f.ms += r.ms ?? 0;
    if (!r.suite) f.tests++;
    if (!r.ok && !r.suite) f.fail++;
    files.set(rel(r.file), f);
  }
  const total = [...files.values()].reduce((s, f) => s + f.ms, 0);
  console.log(`# ${files.size} files, ${fmt(total).trim()} summed over the files (the wall time is lower with concurrency)`);
  console.log(`# slowest ${Math.min(top, files.size)} files:`);
  for (const [name, f] of [...files].sort((a, b) => b[1].ms - a[1].ms).slice(0, top)) console.log(`${fmt(f.ms)}  ${name} (${f.tests} tests${f.fail ? `, ${f.fail} FAILED` : ''})`);
  if (writeOrder) {
    const slow = [...files].filter(([, f]) => f.ms >= 10_000).sort((a, b) => b[1].ms - a[1].ms).map(([name]) => name);
    const head = '# Test files that start first in test:all (test/tools/files.mjs), slowest first; written by\n# node --import tsx test/tools/slowest.ts --write-order from a timed run of every file.\n';
    writeFileSync(path.join(path.dirname(new URL(import.meta.url).pathname), 'slow-first.txt'), `${head}${slow.join('\n')}\n`);
    console.log(`# wrote test/tools/slow-first.txt: ${slow.length} files`);
  }
  if (tests) {
    console.log(`# slowest ${top} tests:`);
    for (const r of rows.filter((x) => !x.suite).sort((a, b) => (b.ms ?? 0) - (a.ms ?? 0)).slice(0, top)) console.log(`${fmt(r.ms ?? 0)}  ${rel(r.file)} > ${r.name}`);
  }
}

const argv = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  if (i < 0) return undefined;
  const v = argv[i + 1];
  argv.splice(i, 2);
  return v;
};
const flag = (name: string): boolean => {
  const i = argv.indexOf(name);
  if (i >= 0) argv.splice(i, 1);
  return i >= 0;
};
const from = opt('--from');
const save = opt('--save') ?? path.join(mkdtempSync(path.join(tmpdir(), 'slowest-')), 'times.jsonl');
const top = Number(opt('--top') ?? 30);
const concurrency = Number(opt('--concurrency') ?? 2);
const tests = flag('--tests');
const writeOrder = flag('--write-order');
if (from !== undefined) {
  report(readFileSync(from, 'utf8'), top, tests, writeOrder);
} else {
  const files = testFiles(argv);
  const started = Date.now();
  const reporter = path.join(path.dirname(new URL(import.meta.url).pathname), 'fileTimes.mjs');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-timeout=1500000', `--test-reporter=${reporter}`, `--test-reporter-destination=${save}`, '--test-reporter=dot', '--test-reporter-destination=stdout', ...files],
    { stdio: 'inherit' },
  );
  child.on('close', (code) => {
    console.log(`\n# ${files.length} files in ${((Date.now() - started) / 1000).toFixed(0)} s of wall time, exit code ${code}; timings in ${save}`);
    report(readFileSync(save, 'utf8'), top, tests, writeOrder);
    process.exit(code ?? 1);
  });
}
