// How long the engine thread was held: histograms of event-loop delays for GET /metrics.
//
// Node cannot time each event-loop turn cheaply, but it can see how late a timer fires: a timer due
// every SAMPLE_EVERY_MS that fires D ms late was kept waiting by D ms of work that did not yield
// (one long callback, or many callbacks of one loop iteration, or a GC pause). Any stall longer than
// the sampling interval is therefore seen, with its length; a request arriving during it waits as
// long. This is what issue 16's "no turn holds the engine for more than 2 ms" is judged on
// (bench/openLoopBench.ts reads it). perf_hooks.monitorEventLoopDelay measures the same thing but
// gives percentiles only, not the cumulative buckets Prometheus wants.
//
// A late timer also counts time the thread was ready but not running: on a machine with more busy
// processes than cores the kernel deschedules it for tens of ms, which no change to the engine can
// shorten. So a second series bounds each delay by the CPU the whole process used in that sampling
// interval (getrusage, a few us): a stall of D ms during which the process used C ms of CPU held the
// thread with work (or GC) for at most min(D, C) ms. It over-counts when other threads (journal
// writer, GC helpers) ran meanwhile, never under-counts CPU work, and does not see a thread blocked
// in a synchronous system call, which the delay series does.
//
// One sampler per process (the event loop is the process's), started by the first exchange and
// shared by all of them (tests start many in one process); it is unref'd, so it never keeps a
// process alive. Cost: one timer callback per interval, ~3 us, 0.15% of a core.
//
// CPU profiles of the server put 1-6% of the engine thread on process.cpuUsage(). Timed around the
// call under the durable-orders bench, it took ~4 us (it sums every thread's CPU), but ~1% of calls
// took over 100 us of wall time: the thread was descheduled and resumed on the syscall's return,
// which a sampling profiler books to the call. Its own cost is ~0.2% of the thread: not a lever.
import { LatencySeries } from './latencyHistogram.ts';

/** How often the sampler's timer is due, ms. Stalls shorter than this may go unseen. */
export const SAMPLE_EVERY_MS = 2;

export interface LoopStalls {
  /** Wall-clock delay of each sample: what a request arriving in the stall waited. */
  delay: LatencySeries;
  /** The same delay bounded by the process CPU of its interval: the engine's own share of it. */
  busy: LatencySeries;
}

let stalls: LoopStalls | null = null;

/** The stall share of one sample: the delay, bounded by the CPU used in the interval (seconds). */
export function busyShare(delayMs: number, cpuMs: number): number {
  return Math.max(0, Math.min(delayMs, cpuMs)) / 1000;
}

/** The process-wide event-loop delay series; starts the sampler on first use. */
export function loopStalls(): LoopStalls {
  if (stalls !== null) return stalls;
  const s: LoopStalls = { delay: new LatencySeries(''), busy: new LatencySeries('') };
  stalls = s;
  let due = performance.now() + SAMPLE_EVERY_MS;
  let cpu = process.cpuUsage();
  const timer = setInterval(() => {
    const now = performance.now();
    const delayMs = Math.max(0, now - due);
    const cpuNow = process.cpuUsage();
    const cpuMs = (cpuNow.user - cpu.user + cpuNow.system - cpu.system) / 1000;
    cpu = cpuNow;
    s.delay.observe(delayMs / 1000);
    s.busy.observe(busyShare(delayMs, cpuMs));
    // Node reschedules an interval from when its callback ran, so the next one is due from now
    due = now + SAMPLE_EVERY_MS;
  }, SAMPLE_EVERY_MS);
  timer.unref();
  return s;
}
