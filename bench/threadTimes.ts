// Where a server's threads spent a measured window (issue 36): for every thread of a process, the
// time it ran on a core and the time it was ready but waited in the run queue, from Linux's
// /proc/<pid>/task/<tid>/schedstat (nanoseconds, kept by the scheduler itself: no sampling, no cost
// to the process measured). The open loop's tail was a thread question: in its slow seconds the
// engine thread was not working, it was waiting for a core while V8's helper threads (concurrent
// marking of a major GC) and the journal writer ran (docs/performance.md, "Round three, sixth
// stop"). The engine thread is the task whose id is the process's; the others are node's worker
// threads (journal writer, checkpointer, snapshot) and V8's platform threads, which Linux names
// alike ("node"), so they are reported summed, with the busiest one beside the sum.
import { readFileSync, readdirSync } from 'node:fs';

/** Per thread id: nanoseconds run on a core, and waited ready in the run queue. */
export type ThreadTimes = Map<number, { runNs: number; waitNs: number }>;

/** Every thread's times now; an empty map where /proc is not there (not Linux) or the process is gone. */
export function readThreadTimes(pid: number | undefined): ThreadTimes {
  const out: ThreadTimes = new Map();
  if (pid === undefined) return out;
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ');
      out.set(Number(tid), { runNs: Number(run), waitNs: Number(wait) });
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return out;
}

/** What a window added: the engine (main) thread's run and wait, the other threads' run summed. */
export interface ThreadWindow {
  mainRunMs: number;
  mainWaitMs: number;
  othersRunMs: number;
  /** The busiest other thread's run time (the journal writer, under orders). */
  busiestOtherRunMs: number;
}

export const emptyWindow = (): ThreadWindow => ({ mainRunMs: 0, mainWaitMs: 0, othersRunMs: 0, busiestOtherRunMs: 0 });

/** Adds what happened between two readings of `pid`'s threads to `into`. A thread that started in
 *  the window counts from zero; one that ended in it is not counted (its last times are gone). */
export function addWindow(into: ThreadWindow, pid: number, before: ThreadTimes, after: ThreadTimes): void {
  let busiest = 0;
  for (const [tid, t] of after) {
    const b = before.get(tid) ?? { runNs: 0, waitNs: 0 };
    const runMs = (t.runNs - b.runNs) / 1e6;
    if (tid === pid) {
      into.mainRunMs += runMs;
      into.mainWaitMs += (t.waitNs - b.waitNs) / 1e6;
    } else {
      into.othersRunMs += runMs;
      busiest = Math.max(busiest, runMs);
    }
  }
  into.busiestOtherRunMs += busiest;
}

/** One line of a window's figures, or null when nothing was read (no /proc). */
export function threadWindowText(w: ThreadWindow, seconds: number): string | null {
  if (w.mainRunMs === 0 && w.mainWaitMs === 0) return null;
  const pct = (ms: number) => `${((ms / (seconds * 1000)) * 100).toFixed(0)}%`;
  return `engine thread ran ${(w.mainRunMs / 1000).toFixed(2)} s (${pct(w.mainRunMs)} of the window) and waited ready for a core ${(w.mainWaitMs / 1000).toFixed(2)} s (${pct(w.mainWaitMs)}); the process's other threads ran ${(w.othersRunMs / 1000).toFixed(2)} s (the busiest of them ${(w.busiestOtherRunMs / 1000).toFixed(2)} s)`;
}
