// The starts of the clock-edge stage (test/clockEdges.ts): the delivery window is covered, and the
// random start is reproducible from its printed seed and can land at any hour.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CLOCK_EDGES, randomStart } from '../helpers/clockStarts.ts';

describe('clock-edge starts', () => {
  it('include starts inside the 30-minute delivery window before the daily 08:00 expiry', () => {
    const inWindow = CLOCK_EDGES.filter((e) => e.start !== 'real').map((e) => new Date(e.start)).filter((d) => d.getUTCHours() === 7 && d.getUTCMinutes() >= 30);
    const minutes = inWindow.map((d) => d.getUTCMinutes());
    for (const m of [30, 45, 59]) assert.ok(minutes.includes(m), `a start at 07:${m}`);
  });

  it('draw the same instant from the same seed, and different instants from different seeds', () => {
    assert.equal(randomStart(1234), randomStart(1234));
    assert.match(randomStart(1234), /^2026-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const starts = new Set(Array.from({ length: 50 }, (_, k) => randomStart(k)));
    assert.ok(starts.size >= 49, `${starts.size} distinct starts of 50`);
  });

  it('draw starts over every hour of the day and every month of the year', () => {
    const hours = new Set<number>();
    const months = new Set<number>();
    for (let seed = 0; seed < 2000; seed++) {
      const d = new Date(randomStart(seed));
      assert.equal(d.getUTCFullYear(), 2026);
      hours.add(d.getUTCHours());
      months.add(d.getUTCMonth());
    }
    assert.equal(hours.size, 24);
    assert.equal(months.size, 12);
  });
});
