/* global process, console, URL */
// Prints the test files for `npm run test:all`, the slowest first, then the rest in name order.
// node --test starts files in the order given, two at a time: a long file started last would run
// alone at the end while the other core idles, so the long ones go first (test/tools/slow-first.txt,
// rewritten from a timed run with `node --import tsx test/tools/slowest.ts --write-order`).
//   node test/tools/files.mjs [folder...]
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
const files = [];
const walk = (p) => {
  if (statSync(p).isDirectory()) for (const f of readdirSync(p)) walk(path.join(p, f));
  else if (p.endsWith('.test.ts')) files.push(p.split(path.sep).join('/'));
};
for (const a of process.argv.length > 2 ? process.argv.slice(2) : ['test']) walk(a);
files.sort();
const listed = existsSync(path.join(here, 'slow-first.txt'))
  ? readFileSync(path.join(here, 'slow-first.txt'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'))
  : [];
const all = new Set(files);
const first = listed.filter((f) => all.has(f));
const firstSet = new Set(first);
console.log([...first, ...files.filter((f) => !firstSet.has(f))].join('\n'));
