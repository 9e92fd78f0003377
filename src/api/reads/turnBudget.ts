// At most N expensive reads per event-loop turn (issue 14 finding 3). Sixteen clients asking for
// every instrument (1 MB each) ran back to back on the engine thread and another trader's order
// waited 436/873 ms (p50/p99) behind them. An expensive read that finds this turn's budget spent
// waits for a later turn, in arrival order; between turns Node serves the I/O that arrived (orders,
// cancels, cheap reads), so a flood of heavy reads delays them by at most N renders.

export class TurnBudget {
  private used = 0;
  private readonly waiting: Array<() => void> = [];
  private scheduled = false;
  /** Reads that had to wait for a later turn, since start (for tests and the bench). */
  deferred = 0;

  constructor(readonly perTurn: number) {}

  /** Resolves when the read may run: at once while this turn has budget, else in a later turn. */
  take(): Promise<void> {
    if (this.waiting.length === 0 && this.used < this.perTurn) {
      this.used++;
      this.schedule();
      return Promise.resolve();
    }
    this.deferred++;
    const p = new Promise<void>((resolve) => this.waiting.push(resolve));
    this.schedule();
    return p;
  }

  /** Runs `fn` once the budget allows. */
  async run<T>(fn: () => T | Promise<T>): Promise<T> {
    await this.take();
    return fn();
  }

  /** A new turn starts at the next check phase: the budget is renewed and the first waiters go. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.used = 0;
      while (this.used < this.perTurn && this.waiting.length > 0) {
        this.used++;
        this.waiting.shift()!();
      }
      if (this.used > 0) this.schedule();
    });
  }
}
