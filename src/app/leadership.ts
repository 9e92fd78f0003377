// A leader that lost its leadership lease (src/journal/postgresLease.ts) steps down: its journal
// already refuses every write and the acknowledgement of any write still in flight, /ready answers
// 503 for a moment (load balancers see it go, rather than only a refused connection), then the
// process exits 70, as after a failed write, and its supervisor restarts it, as a standby now.
import type { Logger } from 'pino';
import type { HaState } from './haStatus.ts';

/** How long a leader that lost its lease keeps answering /ready 503 before it exits, ms. */
export const STEP_DOWN_GRACE_MS = 1_000;
/** The exit code of a server that stopped because it cannot go on writing (as a failed journal write). */
export const EXIT_STEPPED_DOWN = 70;

export function stepDown(err: Error, log: Logger, ha: HaState | null, exit: (code: number) => void = (code) => process.exit(code)): void {
  if (ha !== null) {
    if (ha.fenced !== null) return;
    ha.fenced = err.message;
  }
  log.fatal({ err }, 'lost the leadership lease: acknowledging nothing more; stepping down');
  setTimeout(() => exit(EXIT_STEPPED_DOWN), STEP_DOWN_GRACE_MS);
}
