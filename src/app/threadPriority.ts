// A worker thread that only does background work (a snapshot's replay and serialization: seconds of
// a core) asks the kernel for the lowest scheduling priority, so that on a machine of few cores it
// takes the time the engine thread and the journal writer leave, not theirs. Linux keeps a nice
// value per thread and `setpriority(PRIO_PROCESS, 0, ...)`, which os.setPriority(0, ...) calls,
// applies to the calling thread only (man 2 setpriority, NOTES): the engine thread keeps its own.
// A thread created later by the engine thread inherits the engine thread's value, not this one's.
import { getPriority, setPriority, constants } from 'node:os';

/** Lowers the calling thread's priority as far as it goes; the value it runs at afterwards (or null where that cannot be read). */
export function lowerThisThreadPriority(): number | null {
  try {
    setPriority(0, constants.priority.PRIORITY_LOW);
    return getPriority(0);
  } catch {
    // not permitted, or not supported here: the thread runs at the process's priority
    return null;
  }
}
