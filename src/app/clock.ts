// Clocks at the edge. The engine never reads a clock: the sequencer stamps each command with one.
import type { Clock } from '../sequencer/sequencer.ts';

export const systemClock: Clock = { now: () => Date.now() };

/**
 * Test-only clock (STRIKEBOOK_TEST_CLOCK=1). It runs from a start time: the wall clock, or a pinned
 * instant (STRIKEBOOK_TEST_START) from which it advances with real elapsed time, so a test's catalog,
 * marks, bands and expiries are the same whenever it runs, and a start at 07:59:30 really crosses
 * the 08:00 expiry 30 s later. Once `set` (private/set_test_time) it stands still at the time set
 * and moves only forward, by `set`: an index set "at 07:40" is stamped 07:40:00.000, so the delivery
 * TWAP a test computes by hand is the engine's to the cent.
 */
export class TestClock implements Clock {
  private fixed: number | null = null;
  /** Added to the elapsed monotonic time; the wall clock's reading when not pinned. */
  private base: number;
  private readonly started = performance.now();

  constructor(readonly pinnedStart: number | null = null) {
    this.base = pinnedStart ?? Date.now();
  }

  now(): number {
    return this.fixed ?? this.base + Math.floor(performance.now() - this.started);
  }

  /** Moves the clock to `ts` (ms) and stops it there; refuses to go back. */
  set(ts: number): boolean {
    if (ts < this.now()) return false;
    this.fixed = ts;
    return true;
  }

  /**
   * After a restart, the exchange's time (from its journal) may be ahead of this clock. A pinned
   * clock goes on running from there; an unpinned one stands still there, as it stood when it was
   * set ahead of the wall clock before the restart.
   */
  resumeFrom(ts: number): void {
    if (ts <= this.now()) return;
    if (this.pinnedStart === null || this.fixed !== null) this.fixed = ts;
    else this.base += ts - this.now();
  }
}
