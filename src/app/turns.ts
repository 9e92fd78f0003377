// Work of the engine thread that is not a client's call, cut into event-loop turns (issue 16: no
// turn holds the engine for more than 2 ms). Orders that arrive meanwhile are served between them.

/**
 * Runs `steps` in order, one per event-loop turn (the next one from `setImmediate`, after the I/O
 * that came in), each passed to `around` (which times it); stops before a step once `stopped()`.
 */
export function runInTurns(steps: ReadonlyArray<() => void>, around: (step: () => void) => void, stopped: () => boolean, from = 0): void {
  if (stopped() || from >= steps.length) return;
  around(steps[from]!);
  setImmediate(() => runInTurns(steps, around, stopped, from + 1));
}
