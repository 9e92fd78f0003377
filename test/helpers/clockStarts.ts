// The starts test/clockEdges.ts runs the time-sensitive test files from, and the files it runs.

export const CLOCK_EDGES: { start: string; why: string }[] = [
  { start: '2026-03-11T07:30:00Z', why: 'a Wednesday, as the 30-minute delivery window before the daily expiry opens' },
  { start: '2026-03-11T07:45:00Z', why: 'the same day, in the middle of the delivery window' },
  { start: '2026-03-11T07:59:00Z', why: "the same day, the delivery window's last minute" },
  { start: '2026-03-11T07:59:30Z', why: 'the same day, 30 s before the daily expiry' },
  { start: '2026-03-11T08:00:30Z', why: 'the same day, 30 s after the daily expiry' },
  { start: '2026-03-13T23:59:30Z', why: 'a Friday, 30 s before midnight' },
  { start: '2026-03-27T07:59:30Z', why: 'the last Friday of a quarter, 30 s before its expiry' },
  { start: '2026-12-31T23:59:30Z', why: "New Year's Eve, 30 s before the year turns" },
  { start: 'real', why: 'the wall clock' },
];

/** The files whose outcome could depend on the hour: they list, trade near marks, expire or settle. */
export const TIME_SENSITIVE = [
  'test/api/marketData.test.ts',
  'test/api/fundsSafety.test.ts',
  'test/api/liquidation.test.ts',
  'test/app/demoMaker.test.ts',
  'test/e2e/expiry.test.ts',
  'test/e2e/story.test.ts',
  'test/recovery/settlementCrash.test.ts',
  'test/ws/streams.test.ts',
  'test/ws/channels.test.ts',
];

/**
 * An instant of 2026 drawn from `seed` (mulberry32): any day, any second of it, so that over many
 * runs every hour is tried; the same seed gives the same instant.
 */
export function randomStart(seed: number): string {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const day = Math.floor(next() * 365);
  const second = Math.floor(next() * 86_400);
  return new Date(Date.UTC(2026, 0, 1) + day * 86_400_000 + second * 1000).toISOString().replace('.000Z', 'Z');
}

