// The snapshot of a planned stop (issue 36, "restart to serving"). Once the last batch is durable,
// the state as of the last record is snapshotted, and the market read models (mark history,
// volume buckets, index minutes, volatility-index minutes: src/views/marketViews.ts) are saved
// beside it, tagged with the same seq. A restart after a planned stop then restores that snapshot
// and replays nothing; and the read models, which the journal alone can only rebuild from the
// latest snapshot on, come back whole.
//
// Consistency: the read models are written first (meta key MARKET_VIEWS_META), the snapshot after.
// Recovery loads them only when their seq is the seq of the snapshot it restores
// (src/app/recovery.ts): a crash between the two writes, or any later snapshot (a background one,
// or the next stop's), leaves them unused, and the replay rebuilds what it can as before. After a
// crash that follows a restart from such a snapshot, they still match it: the state and the read
// models are both that snapshot's plus the replay of what followed.
import type { Logger } from 'pino';
import type { MetaStore } from '../journal/journal.ts';
import type { Sequencer } from '../sequencer/sequencer.ts';
import type { MarketViews } from '../views/marketViews.ts';

/** Where the read models saved at a planned stop are kept (the journal's meta table). */
export const MARKET_VIEWS_META = 'market_views';

export interface PlannedStopParts {
  sequencer: Sequencer;
  views: MarketViews;
  meta: MetaStore;
  log: Logger;
}

/**
 * Snapshots the stopped sequencer's state with the read models; resolves once both are durable.
 * Call after `sequencer.stop()` and before the journal closes. A standby (it writes nothing) and a
 * sequencer whose journal failed are left alone; so is an empty journal.
 */
export async function snapshotAtStop(p: PlannedStopParts): Promise<{ seq: number; bytes: number } | null> {
  const seq = p.sequencer.appliedSeq;
  if (p.sequencer.isStandby || seq === 0) return null;
  const started = performance.now();
  try {
    await p.meta.setMeta(MARKET_VIEWS_META, p.views.save(seq));
  } catch (err) {
    // not fatal: the snapshot alone still spares the replay; the read models rebuild as after a crash
    p.log.error({ err }, 'market read models not saved at stop');
  }
  const taken = p.sequencer.takeSnapshot();
  if (taken === null) return null;
  await taken.saved;
  p.log.info({ seq: taken.seq, bytes: taken.bytes, ms: Math.round(performance.now() - started) }, 'snapshot at stop');
  return { seq: taken.seq, bytes: taken.bytes };
}
