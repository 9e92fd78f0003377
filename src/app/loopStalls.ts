// How long the engine thread was held: a histogram of event-loop delays for GET /metrics.
//
// Node cannot time each event-loop turn cheaply, but it can see how late a timer fires: a timer due
// every SAMPLE_EVERY_MS that fires D ms late was kept waiting by D ms of work that did not yield
// (one long callback, or many callbacks of one loop iteration, or a GC pause). Any stall longer than
// the sampling interval is therefore seen, with its length; a request arriving during it waits as
// long. This is what issue 16's "no turn holds the engine for more than 2 ms" is judged on
// (bench/openLoopBench.ts reads it). perf_hooks.monitorEventLoopDelay measures the same thing but
// gives percentiles only, not the cumulative buckets Prometheus wants.
//
// One sampler per process (the event loop is the process's), started by the first exchange and
// shared by all of them (tests start many in one process); it is unref'd, so it never keeps a
// process alive. Cost: one timer callback per interval, ~1 us, 0.05% of a core.
import { LatencySeries } from './latencyHistogram.ts';

/** How often the sampler's timer is due, ms. Stalls shorter than this may go unseen. */
export const SAMPLE_EVERY_MS = 2;

let series: LatencySeries | null = null;

/** The process-wide event-loop delay series; starts the sampler on first use. */
export function loopStalls(): LatencySeries {
  if (series !== null) return series;
  const s = new LatencySeries('');
  series = s;
  let due = performance.now() + SAMPLE_EVERY_MS;
  const timer = setInterval(() => {
    const now = performance.now();
    s.observe(Math.max(0, now - due) / 1000);
    // Node reschedules an interval from when its callback ran, so the next one is due from now
    due = now + SAMPLE_EVERY_MS;
  }, SAMPLE_EVERY_MS);
  timer.unref();
  return s;
}
