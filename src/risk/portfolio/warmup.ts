// Portfolio-margin sums brought up to date before a call reads them (issue 35: no engine turn over
// 2 ms from PM work). After an index tick, a mark move or a parameter change every PM account's
// scenario sums are stale; the liquidation scan rebuilds them in slices (src/engine/liquidation.ts),
// but a call can arrive for an account the scan has not reached yet. Its order check, summary or
// model switch would then rebuild the whole account inside its own turn: an 800-leg desk is
// several milliseconds of revaluation during which nothing else is matched.
//
// So the edge (src/api/rpc/dispatch.ts) asks `needs` before it runs a private call, and when the
// caller's sums are not complete waits for `ready`: the rebuild runs PM_STEP_UNITS of work per turn
// of the event loop, each in its own macrotask, and the call runs once they are complete, in the
// turn the last slice ends in (nothing can make them stale again between the two). Calls of one
// account that wait share one rebuild and run in the order they arrived.
//
// Only a cache is filled: what the engine decides, and so the journal and replay, does not change.
// A replayed or followed command still rebuilds in full where the live one found sums ready.
import { CURRENCY_CODES } from '../../domain/currency.ts';
import type { Exchange } from '../../engine/exchange.ts';
import type { User } from '../../engine/types.ts';
import { PM_STEP_UNITS } from './pmRisk.ts';

/** The pause between two slices of a rebuild: a macrotask, so I/O and timers run between them. */
export type YieldTurn = () => Promise<void>;

const nextTurn: YieldTurn = () => new Promise((resolve) => setImmediate(resolve));

export class PmWarmup {
  /** The rebuild in progress per account, shared by every call of that account that waits. */
  private readonly running = new Map<number, Promise<void>>();
  /** Calls that waited for a rebuild: tests tell a call that waited from one the scan made ready first. */
  waited = 0;

  constructor(
    private readonly ex: Exchange,
    private readonly yieldTurn: YieldTurn = nextTurn,
  ) {}

  /**
   * Whether a call of `userId` must wait for its sums: the account is on portfolio margin (or
   * `evenIfStandard`: a switch onto it reads the sums it would have) and some currency's sums are
   * not complete. Cheap: a model lookup and a validity check per currency.
   */
  needs(userId: number, evenIfStandard = false): boolean {
    const user = this.ex.users.get(userId);
    if (user === undefined) return false;
    if (!evenIfStandard && !this.ex.trading.risk.isPm(user)) return false;
    return !this.complete(user);
  }

  private complete(user: User): boolean {
    const pm = this.ex.trading.risk.pm;
    for (const c of CURRENCY_CODES) if (!pm.complete(user, c)) return false;
    return true;
  }

  /** Resolves, in a turn of its own, once the account's sums in every currency are complete. */
  ready(userId: number): Promise<void> {
    this.waited++;
    let r = this.running.get(userId);
    if (r === undefined) {
      r = this.rebuild(userId).finally(() => this.running.delete(userId));
      this.running.set(userId, r);
    }
    return r;
  }

  /** Resolves when every one of the accounts is ready at once (a block trade's two sides). */
  async readyAll(userIds: readonly number[], evenIfStandard = false): Promise<void> {
    for (;;) {
      const waiting = userIds.filter((id) => this.needs(id, evenIfStandard));
      if (waiting.length === 0) return;
      for (const id of waiting) await this.ready(id);
    }
  }

  private async rebuild(userId: number): Promise<void> {
    const pm = this.ex.trading.risk.pm;
    for (;;) {
      await this.yieldTurn();
      const user = this.ex.users.get(userId);
      if (user === undefined || this.complete(user)) return;
      // one slice: at most PM_STEP_UNITS of work over the currencies still incomplete (a tick
      // between two slices makes a finished currency stale again: it is picked up here)
      const start = pm.work;
      for (const c of CURRENCY_CODES) {
        if (pm.complete(user, c)) continue;
        if (!pm.refresh(user, c, PM_STEP_UNITS - (pm.work - start))) break;
      }
    }
  }
}

const perExchange = new WeakMap<Exchange, PmWarmup>();

/** The exchange's warm-up (one per engine, made on first use). */
export function pmWarmup(ex: Exchange): PmWarmup {
  let w = perExchange.get(ex);
  if (w === undefined) {
    w = new PmWarmup(ex);
    perExchange.set(ex, w);
  }
  return w;
}
