// Clocks at the edge. The engine never reads a clock: the sequencer stamps each command with one.
import type { Clock } from '../sequencer/sequencer.ts';

export const systemClock: Clock = { now: () => Date.now() };

/** Test-only clock (STRIKEBOOK_TEST_CLOCK=1): real time plus an offset that only moves forward. */
export class TestClock implements Clock {
  private offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  /** Moves the clock to `ts` (ms); refuses to go back. */
  set(ts: number): boolean {
    const delta = ts - this.now();
    if (delta < 0) return false;
    this.offset += delta;
    return true;
  }
}
