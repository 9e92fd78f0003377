// The process's recent GC pauses, as intervals on performance.now()'s clock, from a 'gc'
// PerformanceObserver: what a piece of engine work timed by the wall clock may have had inside it.
// A scavenge falls into whatever piece is running when the young generation fills, which is mostly
// the allocation of the requests answered before it, so the engine's per-piece figures
// (strikebook_engine_work_seconds, src/app/metrics.ts) leave these pauses out; GC is counted on its
// own (nodejs_gc_duration_seconds) and in the event-loop delay (src/app/loopStalls.ts).
//
// Entries arrive after the pause, in a later turn; a reader holds its pieces until then. One log
// per process (GC is the process's), a fixed ring of the last GC_PAUSES_KEPT pauses: no allocation
// per pause beyond the observer's own entry.
import { PerformanceObserver } from 'node:perf_hooks';

export const GC_PAUSES_KEPT = 256;

const starts = new Float64Array(GC_PAUSES_KEPT);
const ends = new Float64Array(GC_PAUSES_KEPT);
let next = 0;
let kept = 0;
let observer: PerformanceObserver | null = null;

/** Starts logging this process's GC pauses (once; an observer keeps no process alive). */
export function watchGcPauses(): void {
  if (observer !== null) return;
  observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) recordGcPause(e.startTime, e.startTime + e.duration);
  });
  observer.observe({ entryTypes: ['gc'] });
}

/** Logs one pause (the observer's; tests log their own). */
export function recordGcPause(start: number, end: number): void {
  starts[next] = start;
  ends[next] = end;
  next = (next + 1) % GC_PAUSES_KEPT;
  if (kept < GC_PAUSES_KEPT) kept++;
}

/** Milliseconds of the logged pauses that fall inside [start, end]. */
export function gcWithin(start: number, end: number): number {
  let ms = 0;
  for (let i = 0; i < kept; i++) {
    const overlap = Math.min(end, ends[i]!) - Math.max(start, starts[i]!);
    if (overlap > 0) ms += overlap;
  }
  return ms;
}
