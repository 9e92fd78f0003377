// A background process's CPU priority. On a 2-core machine a process that replays hundreds of
// thousands of records (a background snapshot: snapshotProcess.ts, ~4 s of a core at 500,000
// records) takes a whole core for seconds, and the engine thread, the journal's writer and the
// clients' sockets wait for a core behind it. Such work has no deadline, so it runs at the lowest
// priority and takes what the engine leaves idle. Measured with bench/run.ts "http: crossing" (open
// loop at 12,000-15,000 orders/s, a snapshot due at seq 500,000 inside it): order p99 574 and 331 ms
// in runs where a snapshot at nice 0 finished in the window, 120 and 164 ms at nice 19, and 44-84 ms
// in runs with none (docs/performance.md, "Round three, seventh stop"). The price: under a load that
// keeps both cores busy, a snapshot waits, and the journal a restart replays grows meanwhile.
//
// Linux gives every thread its own nice value: setpriority(PRIO_PROCESS, tid) (what os.setPriority
// calls) changes one thread, named by its id (/proc/self/task lists them). Elsewhere a process has
// one priority for all its threads. Where neither works nothing changes and null says so.
import { readdirSync } from 'node:fs';
import os from 'node:os';

/** The lowest priority: nice 19 weighs 15 against nice 0's 1,024 in the Linux scheduler. */
export const BACKGROUND_NICE = 19;

/**
 * Moves every thread of this process to `nice` (a child process that runs only background work:
 * snapshotProcess.ts). Not the same as os.setPriority(0, ...), which on Linux moves the calling
 * thread alone: V8's platform threads, which run this process's garbage collection, were started
 * before any JavaScript ran, and kept their priority. Threads started later inherit the nice of the
 * thread that starts them. Returns the highest nice any thread runs at after the change (so 19 means
 * all of them), or null when the platform cannot tell.
 */
export function lowerThisProcessPriority(nice = BACKGROUND_NICE): number | null {
  if (process.platform !== 'linux') {
    try {
      // elsewhere a process has one priority for all its threads
      os.setPriority(0, nice);
      return os.getPriority(0);
    } catch {
      return null;
    }
  }
  try {
    let highest = -Infinity;
    for (const entry of readdirSync('/proc/self/task')) {
      const tid = Number(entry);
      os.setPriority(tid, nice);
      highest = Math.max(highest, os.getPriority(tid));
    }
    return Number.isFinite(highest) ? highest : null;
  } catch {
    return null;
  }
}
