// Issue 36's judged lines: each a figure of Strikebook beside a reference measured in the same run,
// judged by its ratio (or, for the engine-work count, by itself). A section returns the lines it
// measured with its report (`judged`); bench/run.ts prints them all again at the end of the run as
// one table, in the order, so that a run's log gives the table directly.

/** The lines, in its order; a section's `JudgedLine.id` is one of these keys. */
export const JUDGED_LINES = {
  httpCrossing: { line: 'crossing orders over HTTP', reference: 'bare node:http', target: '>= 0.5' },
  httpResting: { line: 'resting orders over HTTP', reference: 'bare node:http', target: '>= 0.6' },
  wsOrders: { line: 'orders over WebSocket', reference: 'ws echo server', target: '>= 0.6' },
  openLoopP99: { line: 'open loop at half of the measured capacity: order p99', reference: 'bare server on the same schedule', target: '<= 3x' },
  loopStalls: { line: 'event-loop samples past 2 ms on that schedule', reference: "the bare server's, same sampler", target: '<= 2x' },
  engineWork: { line: 'engine-work pieces over 2 ms (market tick, liquidation scan, PM recompute, fan-out)', reference: '-', target: '0' },
  replay: { line: 'journal replay', reference: 'bareReplay over the same journal', target: '>= 0.5' },
  fanout: { line: 'fan-out p99, 1,000 connections, raw book + trades', reference: 'a bare ws server writing the same frames to the same clients', target: '<= 1.5x' },
  restart: { line: 'restart to serving (1M-record journal, snapshot every 500k)', reference: "the same journal's bare read", target: '<= 3x' },
} as const;

export type JudgedId = keyof typeof JUDGED_LINES;

/** One measured line: Strikebook's figure, the reference's, and the verdict. */
export interface JudgedLine {
  id: JudgedId;
  /** Strikebook's figure with its unit, e.g. "13,200 req/s" */
  value: string;
  /** the reference's figure with its unit ("-" for the count without one) */
  reference: string;
  /** value / reference (the count itself for `engineWork`) */
  ratio: number;
  pass: boolean;
}

/** What a section returns: its report, its verdict, and the lines it measured. */
export interface SectionResult {
  lines: string[];
  ok: boolean;
  judged?: JudgedLine[];
}

/** A ratio judged against a lower bound (`value / reference >= min`). */
export function atLeast(id: JudgedId, value: number, reference: number, unit: string, min: number): JudgedLine {
  const ratio = reference > 0 ? value / reference : NaN;
  return { id, value: figure(value, unit), reference: figure(reference, unit), ratio, pass: ratio >= min };
}

/** A ratio judged against an upper bound (`value / reference <= max`). For a count (no `unit`) a
 *  reference of 0 (the bare server held past 2 ms not once) is taken as 1, so that the ratio stays
 *  a number; the figures are printed as they are. */
export function atMost(id: JudgedId, value: number, reference: number, unit: string, max: number): JudgedLine {
  const floor = unit === '' ? Math.max(reference, 1) : reference;
  const ratio = floor > 0 ? value / floor : NaN;
  return { id, value: figure(value, unit), reference: figure(reference, unit), ratio, pass: Number.isFinite(ratio) && ratio <= max };
}

/** `line` as the section prints it: the wording, the two figures, the ratio, the target, the verdict. */
export function judgedText(j: JudgedLine): string {
  const d = JUDGED_LINES[j.id];
  const verdict = j.pass ? 'PASS' : 'FAIL';
  if (j.reference === '-') return `${d.line}: ${j.value} (target ${d.target}): ${verdict}`;
  return `${d.line}: ${j.value} vs ${d.reference} ${j.reference} = ${ratioText(j)} (target ${d.target}): ${verdict}`;
}

function ratioText(j: JudgedLine): string {
  return JUDGED_LINES[j.id].target.endsWith('x') ? `${j.ratio.toFixed(2)}x` : j.ratio.toFixed(3);
}

function figure(v: number, unit: string): string {
  const n = Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(2);
  return unit === '' ? n : `${n} ${unit}`;
}

/** The count that must be 0 (`engineWork`): the ratio column holds the count itself. */
export function zero(id: JudgedId, count: number, what: string): JudgedLine {
  return { id, value: `${count} ${what}`, reference: '-', ratio: count, pass: count === 0 };
}

/** The end-of-run table: every issue line, measured or not (a section not run, or one that threw). */
export function summaryTable(judged: JudgedLine[]): string[] {
  const rows = Object.entries(JUDGED_LINES).map(([id, d]) => {
    const j = judged.filter((x) => x.id === id);
    if (j.length === 0) return `| ${d.line} | not measured | ${d.reference} | - | - | ${d.target} | - |`;
    // a line measured twice in one run (not today) is judged by its worst
    const worst = j.find((x) => !x.pass) ?? j[0]!;
    const ratio = worst.id === 'engineWork' ? String(worst.ratio) : ratioText(worst);
    return `| ${d.line} | ${worst.value} | ${d.reference} | ${worst.reference} | ${ratio} | ${d.target} | ${worst.pass ? 'PASS' : 'FAIL'} |`;
  });
  return ['| line | value | reference | reference value | ratio | target | verdict |', '|---|---|---|---|---|---|---|', ...rows];
}
