// Latency histograms for /metrics, kept as plain counters on the request path and written out in
// Prometheus' text format at scrape time. prom-client's Histogram.observe() hashes its labels on
// every call (~150-300 ns); this is a short scan of the bucket bounds and an increment.

/** Upper bounds of the buckets, in seconds: a 0.1 ms engine step up to multi-second stalls. */
export const LATENCY_BOUNDS_S = [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5] as const;

export class LatencySeries {
  /** Per bucket, not cumulative; the last one is above the largest bound (+Inf). */
  private readonly counts = new Float64Array(LATENCY_BOUNDS_S.length + 1);
  private sum = 0;
  private n = 0;

  constructor(readonly labels: string) {}

  observe(seconds: number): void {
    let i = 0;
    while (i < LATENCY_BOUNDS_S.length && seconds > LATENCY_BOUNDS_S[i]!) i++;
    this.counts[i]!++;
    this.sum += seconds;
    this.n++;
  }

  /** The series' `_bucket`, `_sum` and `_count` lines. */
  lines(name: string): string[] {
    const out: string[] = [];
    const sep = this.labels === '' ? '' : ',';
    let cumulative = 0;
    for (let i = 0; i <= LATENCY_BOUNDS_S.length; i++) {
      cumulative += this.counts[i]!;
      const le = i < LATENCY_BOUNDS_S.length ? String(LATENCY_BOUNDS_S[i]) : '+Inf';
      out.push(`${name}_bucket{${this.labels}${sep}le="${le}"} ${cumulative}`);
    }
    const braces = this.labels === '' ? '' : `{${this.labels}}`;
    out.push(`${name}_sum${braces} ${this.sum}`, `${name}_count${braces} ${this.n}`);
    return out;
  }
}

/** One histogram metric in the exposition format: HELP, TYPE and the lines of each series. */
export function histogramText(name: string, help: string, series: Iterable<LatencySeries>): string {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} histogram`];
  for (const s of series) lines.push(...s.lines(name));
  return `${lines.join('\n')}\n`;
}
