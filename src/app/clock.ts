// Clocks at the edge. The engine never reads a clock: the sequencer stamps each command with one.
import type { Clock } from '../sequencer/sequencer.ts';

export const systemClock: Clock = { now: () => Date.now() };

/**
 * Test-only clock (STRIKEBOOK_TEST_CLOCK=1): real time until it is first set, then it stands still
 * at the time set and moves only forward, by `set` (private/set_test_time). Standing still makes a
 * test's timeline exact: an index set "at 07:40" is stamped 07:40:00.000, so the delivery TWAP a
 * test computes by hand is the engine's to the cent.
 */
export class TestClock implements Clock {
  private fixed: number | null = null;
  now(): number {
    return this.fixed ?? Date.now();
  }
  /** Moves the clock to `ts` (ms); refuses to go back. */
  set(ts: number): boolean {
    if (ts < this.now()) return false;
    this.fixed = ts;
    return true;
  }
}
