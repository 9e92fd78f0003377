// What an old generation of a given size adds to every scavenge on this machine
// (docs/performance.md, "Round three, sixteenth stop").
//
// `node --import tsx bench/oldSpaceWalk.ts [MB...]` starts one child per size (with --expose-gc). Each
// keeps that many MB of small objects alive (so they are in the old generation), then allocates
// short-lived garbage with a small survivor set, and prints its scavenges' pauses. On Node 20 a
// scavenge walks the list of every old-generation page to collect those with old-to-new slots
// (V8 11.3, `ScavengerCollector::CollectGarbage`); each page header is a cache and TLB miss, which
// on these nested-virtualisation guests costs ~0.8 us: ~3 ms per scavenge for 700 MB of old space.
// Not judged: it tells what the server's live heap costs each of its scavenges, on the runtime in use.
import { spawnSync } from 'node:child_process';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';

const OBJECTS_PER_MB = 16_384; // a 4-field object literal is 48-64 B
const CHURN = 3_000_000;
const SURVIVORS = 2_000; // in-flight objects that live across a scavenge, like open requests

function child(mb: number): void {
  const kept: object[] = [];
  for (let i = 0; i < mb * OBJECTS_PER_MB; i++) kept.push({ a: i, b: i + 1, c: null, d: null });
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  gc();
  gc();
  const pauses: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      // a 'gc' entry's detail says which collector ran (Node's typings leave `detail` out)
      const detail = (e as PerformanceEntry & { detail?: { kind?: number } }).detail;
      if (detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) pauses.push(e.duration);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  const live: unknown[] = new Array(SURVIVORS);
  let sink = 0;
  for (let r = 0; r < CHURN; r++) {
    const o = { x: r, y: [r, r + 1], z: 'k' + (r & 1023) };
    live[r % SURVIVORS] = o;
    sink += o.y.length;
  }
  setTimeout(() => {
    observer.disconnect();
    pauses.sort((a, b) => a - b);
    const q = (f: number) => (pauses.length ? pauses[Math.floor(f * (pauses.length - 1))].toFixed(2) : '-');
    const old = getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
    const oldMb = old ? Math.round(old.space_size / 2 ** 20) : 0;
    console.log(
      `kept ${mb} MB (old space ${oldMb} MB, ${Math.round(oldMb * 4)} pages of 256 KiB): ${pauses.length} scavenges, ` +
        // `sink` and `kept` are read here so that the compiler can drop neither the churn's
        // allocations nor the kept objects before the pauses are counted
        `pause p10 ${q(0.1)} p50 ${q(0.5)} p90 ${q(0.9)} ms` + (sink > 0 && kept.length >= 0 ? '' : '.'),
    );
  }, 50);
}

if (process.argv[2] === '--child') {
  child(Number(process.argv[3]));
} else {
  const sizes = process.argv.slice(2).map(Number).filter((n) => n >= 0);
  console.log(`node ${process.version}: scavenge pauses against the size of the old generation`);
  for (const mb of sizes.length ? sizes : [0, 200, 800]) {
    const r = spawnSync(process.execPath, ['--expose-gc', '--max-old-space-size=4096', '--import', 'tsx', import.meta.filename, '--child', String(mb)], {
      encoding: 'utf8',
    });
    process.stdout.write(r.stdout || r.stderr);
  }
}
