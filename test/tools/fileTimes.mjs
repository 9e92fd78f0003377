// A node:test reporter (plain JavaScript: node loads reporters before tsx) that writes one JSON
// line per finished test: its file, nesting, name, duration, and the wall-clock time it ended.
// test/tools/slowest.ts runs the suite with it and ranks the files.
//   node --import tsx --test --test-reporter=./test/tools/fileTimes.mjs --test-reporter-destination=times.jsonl ...
export default async function* fileTimes(source) {
  for await (const ev of source) {
    if (ev.type !== 'test:pass' && ev.type !== 'test:fail') continue;
    const d = ev.data ?? {};
    yield `${JSON.stringify({ t: Date.now(), ok: ev.type === 'test:pass', file: d.file, nesting: d.nesting, name: d.name, ms: d.details?.duration_ms, suite: d.details?.type === 'suite' })}\n`;
  }
}
